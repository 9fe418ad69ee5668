"""What the small LLM stages (priming, pairwise, personas, fuse) share on their side of the engine contract.

`HeldPlan`: a plan held whole (a stage's run is thousands of items, not millions), minus the items with a stored
outcome. `ask_outcome`: one request for one outcome row, with the value read, or the failure and why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any, Generic, Protocol, TypeVar

from peras.errors import RequestRejected
from tasks.engine.spec import Answer, Ask, AskFn, Fetch
from tasks.engine.stage import sql_of


class Keyed(Protocol):
    """A planned item: its key is the declared stage's keys, in order (what `select_done` returns before the status)."""

    @property
    def key(self) -> tuple[Any, ...]: ...


K = TypeVar("K", bound=Keyed)


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
        return [item for item in self.planned if item.key not in done]

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
    status 'ok' or 'parse_failure' (and why); a refused request leaves `columns` empty with status 'error'."""
    try:
        answer = await ask(spec)
    except RequestRejected as exc:
        return (
            row | dict.fromkeys(columns) | {"request_id": exc.request_id, "status": "error", "reason": str(exc)[:500]}
        )
    return (
        row
        | read(answer)
        | {
            "request_id": answer.request_id,
            "status": "ok" if answer.ok else "parse_failure",
            "reason": None if answer.ok else answer.reason,
        }
    )
