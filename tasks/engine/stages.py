"""What the LLM stages (priming, pairwise, personas, fuse; judge's sampling) share on their side of the engine contract.

`HeldPlan`: a plan held whole (a stage's run is thousands of items, not millions), minus the items with a stored
outcome. `ask_outcome`: one request for one outcome row, with the value read, or the failure and why.
`ask_samples` and `majority`: the overconfidence study's MP (multiple prompting), n sampled answers to one request
and the reply most of them chose, with its share as the confidence (judge's 'sampling' method, pairwise's 'mp').
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, TypeVar

from peras.errors import RequestRejected
from tasks.engine.spec import Answer, Ask, AskFn, Fetch
from tasks.engine.stage import StageDeclaration, declaration, sql_of

K = TypeVar("K")
# The Polars type of a declared column type (others: as Polars infers them from the values).
POLARS_TYPES = {"varchar": "Utf8", "integer": "Int32", "bigint": "Int64", "double": "Float64", "boolean": "Boolean"}


def item_key(kind: str, item: Any) -> tuple[Any, ...]:
    """What identifies an item within a run, the declared keys in order (what `select_done` returns before the
    status): its own `key`, or else its declaration's keys read from the item's
    attributes of those names (so a stage does not restate its keys by hand)."""
    own = getattr(item, "key", None)
    return tuple(own) if own is not None else tuple(getattr(item, column.name) for column in declaration(kind).keys)


def declared_frame(stage: StageDeclaration, items: Sequence[Any]) -> Any:
    """The planned items as the gate reads them: the declaration's keys and planned columns, read from each item's
    attributes of those names (what a `HeldItems` recipe gives when it has no `planned_frame` of its own)."""
    import polars as pl  # here: the engine's other users never need it (a command's fixed cost, issue 35)

    names = [column.name for column in (*stage.keys, *stage.planned)]
    types = {column.name: POLARS_TYPES.get(column.type) for column in (*stage.keys, *stage.planned)}
    schema = {name: getattr(pl, kind) for name, kind in types.items() if kind is not None}
    rows = [{name: getattr(item, name) for name in names} for item in items]
    if len(schema) < len(names):
        return pl.DataFrame(rows) if rows else pl.DataFrame({name: [] for name in names})
    return pl.DataFrame(rows, schema=schema)


@dataclass
class HeldPlan(Generic[K]):
    """The planned items of a run without a stored outcome, in plan order.

    kind: the stage (its declaration's `select_done`: the run's stored outcomes, keys then status, for `$run_id`).
    With `with_failures`, items whose stored outcome is a failure are planned again (retry_failed).
    """

    kind: str
    run_id: str
    planned: list[K]
    failures_pending: bool = False

    def with_failures(self) -> HeldPlan[K]:
        """The same plan, with the items whose stored outcome failed (unreadable, refused) to do again."""
        return replace(self, failures_pending=True)

    def pending(self, fetch: Fetch) -> list[K]:
        """The planned items with no stored outcome yet (or a failed one, when failures are pending)."""
        rows = fetch(sql_of(self.kind, "select_done"), {"run_id": self.run_id})
        done = {tuple(key) for *key, status in rows if not (self.failures_pending and status != "ok")}
        return [item for item in self.planned if item_key(self.kind, item) not in done]

    def count(self, fetch: Fetch) -> int:
        """Items still to ask."""
        return len(self.pending(fetch))

    def items(self, fetch: Fetch) -> Iterator[K]:
        """Items still to ask, in plan order."""
        yield from self.pending(fetch)


async def ask_outcome(
    ask: AskFn, spec: Ask, row: dict[str, Any], columns: tuple[str, ...], read: Callable[[Answer], dict[str, Any]]
) -> dict[str, Any]:
    """Ask `spec` for the outcome `row`: `read(answer)` fills `columns` (a stage may keep what a failure read), with
    status 'ok' or 'parse_failure' (and why); a refused request leaves `columns` empty with status 'error'. A `read`
    that finds a failure beyond the answer's text (pairwise LogP: no option among the log-probabilities) returns its
    own `status` and `reason`, which win (a status other than 'parse_failure': the request itself was read)."""
    try:
        answer = await ask(spec)
    except RequestRejected as exc:
        return (
            row | dict.fromkeys(columns) | {"request_id": exc.request_id, "status": "error", "reason": str(exc)[:500]}
        )
    found = read(answer)
    outcome = {
        "request_id": answer.request_id,
        "status": "ok" if answer.ok else "parse_failure",
        "reason": None if answer.ok else answer.reason,
    }
    return row | found | outcome | {key: found[key] for key in ("status", "reason") if key in found}


# Samples of one request asked at once: a huge sample count is asked batch by batch (a request budget stops it),
# never planned whole (50,000,000 pending requests were a MemoryError).
SAMPLE_BATCH = 64


async def ask_samples(ask: AskFn, spec: Ask, n: int) -> list[Answer]:
    """`n` samples of `spec` (whose parameters sample, e.g. temperature 0.7): sample i is sent with seed i and
    sample_index i, SAMPLE_BATCH at a time. Every sample of a batch ends before a failure (a refused request) is
    raised: a sibling still asking after its item was given up would journal its answer after the run's journal
    closed (a shard left behind)."""
    answers: list[Answer] = []
    for start in range(0, n, SAMPLE_BATCH):
        stop = min(start + SAMPLE_BATCH, n)
        settled = await asyncio.gather(
            *(ask(replace(spec, params=spec.params | {"seed": i}, sample_index=i)) for i in range(start, stop)),
            return_exceptions=True,
        )
        for result in settled:
            if isinstance(result, BaseException):
                raise result
            answers.append(result)
    return answers


V = TypeVar("V", bound=Hashable)


def majority(votes: Sequence[V], n_asked: int, tie_break: Callable[[V], Any]) -> tuple[V, float] | None:
    """MP's reply and confidence (the overconfidence study, section 3.1): the value most votes chose, and 100 x its
    votes / the samples asked (an unreadable sample counts in the denominator: it did not choose the reply). Among
    values with as many votes, the one `tie_break` ranks highest (the study is silent on ties). None without votes."""
    if not votes:
        return None
    counts = Counter(votes)
    value = max(counts, key=lambda v: (counts[v], tie_break(v)))
    return value, 100.0 * counts[value] / n_asked
