"""What a stage hands the asking engine and what it gets back.

A stage (judge, priming, ...) turns each of its work items into one or more `Ask`s (messages, parameters, how to
read the answer) and turns the `Answer`s into its outcome row. Everything else is the engine's: the answer cache,
sending, regeneration, journaling, loading and the failure record (tasks/engine/engine.py).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from peras.llm.constraints import AnswerShape, constrain
from peras.prompting import Personality

MAX_REGENERATIONS = 4  # an unreadable answer is asked again at most this many times
REGENERATION_TEMPERATURE = 0.7  # a regeneration of a greedy (temperature 0) request samples at this temperature
REGENERATION_SEED_STEP = 1000  # regeneration k of a request with seed s is sent with seed s + k * this


def regeneration_params(params: dict[str, Any], attempt: int) -> dict[str, Any]:
    """The parameters of attempt `attempt` (0 = the request as asked). A regeneration must be able to change the
    answer: at temperature 0 the same request returns the same text, so regeneration k samples (at the request's
    temperature if it samples, else at 0.7) with seed s + 1000 k (s = the request's seed, 0 if none)."""
    if attempt == 0:
        return params
    temperature = params.get("temperature") or REGENERATION_TEMPERATURE
    seed = int(params.get("seed") or 0) + attempt * REGENERATION_SEED_STEP
    return params | {"temperature": temperature, "seed": seed}


def request_params(
    base: dict[str, Any], *, max_tokens: int | None = None, extra_body: dict[str, Any] | None = None, **optional: Any
) -> dict[str, Any]:
    """A stage's request parameters: a copy of `base` (a prompt file's sampling), then `max_tokens` and the
    `optional` keys that are set (not None), in that order, then a copy of `extra_body` when it is not empty."""
    params = dict(base)
    params |= {key: value for key, value in ({"max_tokens": max_tokens} | optional).items() if value is not None}
    if extra_body:
        params["extra_body"] = dict(extra_body)
    return params


class Parsed(Protocol):
    """What a parse function returns: ok, the value read (any JSON-able) and, if not ok, why."""

    @property
    def ok(self) -> bool: ...

    @property
    def reason(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ParsedValue:
    """A generic parse result for stages whose value is not a single number."""

    value: Any
    ok: bool
    reason: str


def sent_params(params: dict[str, Any], shape: AnswerShape | None, answer_format: str) -> dict[str, Any]:
    """What a request is sent with: its parameters with its answer shape's constraint in the run's answer format (the
    endpoint's dialect, or 'free'). The engine sends every Ask so (its `_constrained` is this call, remembered); a
    stage that records or gates on what it sends (the judge's label parameters) reads it here, never writing a
    constraint itself (docs/architecture.md, "One option, one path")."""
    return constrain(params, shape, answer_format)


# Not frozen: built once or twice a request, and a frozen dataclass costs ~1 us more to build (issue 35); never
# changed once built.
@dataclass(slots=True)
class Ask:
    """One request a stage wants answered."""

    messages: list[dict[str, str]]
    params: dict[str, Any]
    purpose: str  # recorded: 'label', 'confidence', 'batch', ...
    parse: Callable[[str], Any]  # raw text -> Parsed (with .ok, .reason and a value attribute)
    sample_index: int = 0
    regenerations: int = MAX_REGENERATIONS
    shape: AnswerShape | None = None  # the answer's constraint, added to params in the run's dialect by the engine

    def constrained(self, params: dict[str, Any]) -> Ask:
        """This request with its constraint written into `params` (the engine's, per request: built directly,
        `dataclasses.replace` costs four times as much)."""
        return Ask(self.messages, params, self.purpose, self.parse, self.sample_index, self.regenerations, None)


# Not frozen: built once or twice a request, and a frozen dataclass costs ~1 us more to build (issue 35); never
# changed once built.
@dataclass(slots=True)
class Answer:
    """A parsed answer, asked now or served from the warehouse."""

    request_id: str
    parsed: Any  # the parse function's result
    text: str
    logprobs: list[dict[str, Any]] | None
    from_cache: bool

    @property
    def ok(self) -> bool:
        """The answer was read."""
        return bool(self.parsed.ok)

    @property
    def reason(self) -> str:
        """Why it could not be read (or how it was)."""
        return str(self.parsed.reason)


AskFn = Callable[[Ask], Awaitable[Answer]]


@dataclass(slots=True)
class Tried:
    """One request's attempts as the engine journals them, online or from batch lines: what was asked, each
    attempt's text and parameters, the HTTP requests they took (batch: lines that ran), and when asking began."""

    spec: Ask
    request_id: str
    prompt_hash: str
    texts: list[str] = field(default_factory=list)
    sent: list[dict[str, Any]] = field(default_factory=list)
    http: int = 0
    started: float = field(default_factory=time.perf_counter)


class Stage(Protocol):
    """A stage that asks an LLM: builds requests for an item and turns their answers into one outcome row."""

    kind: str  # 'judge', 'priming': names the shard folder and the outcome loader (sql/<kind>/merge_outcomes.sql)

    async def handle(self, item: Any, ask: AskFn) -> dict[str, Any]:
        """The outcome row of one item (the engine adds run and warehouse identity, time and status counts)."""
        ...


ConfigT = TypeVar("ConfigT")


@dataclass
class PersonaStage(Generic[ConfigT]):
    """What a stage that asks under personalities holds first: how it asks (its config) and the personalities by
    code; the stage adds what its requests show."""

    config: ConfigT
    personalities: dict[str, Personality]


@dataclass
class PassageStage(PersonaStage[ConfigT]):
    """A stage whose requests show a query and passages: their texts by query_id and doc_id."""

    queries: dict[str, str]
    texts: dict[str, str]


# Runs a read-only query on the engine's warehouse thread: a SQL file's name, or statements (a declared stage's).
Fetch = Callable[[str | list[str], dict[str, Any]], list[tuple[Any, ...]]]


class Plan(Protocol):
    """The items still to do, streamed: counted first, then iterated (both may read the warehouse)."""

    def count(self, fetch: Fetch) -> int: ...

    def items(self, fetch: Fetch) -> Iterator[Any]: ...


@runtime_checkable
class RetryingPlan(Protocol):
    """A plan that can also give the items whose stored outcome is a failure (a run resumed with retry_failed)."""

    def with_failures(self) -> Plan: ...


@dataclass(frozen=True)
class Attempt:
    """One attempt at one part of a fanned-out run: its commits are accepted only while it is the part's current
    attempt (sql/migrations/V580__run_attempts.sql)."""

    part: str
    number: int


@dataclass(frozen=True)
class RunIdentity:
    """Which warehouse and which run a journal line belongs to (verified when shards are loaded); for a part of a
    fanned-out run, also which attempt commits (an attempt superseded by a newer one commits nothing)."""

    warehouse_id: str
    kind: str
    run_id: str
    run_name: str
    model: str
    backend: str
    attempt: Attempt | None = None


@dataclass
class EngineStats:
    """What a run's asking did: items finished, requests sent, answers reused, failures."""

    n_items: int = 0
    n_sent: int = 0
    n_http: int = 0
    n_cached: int = 0
    n_failures: int = 0
    n_dropped: int = 0  # outcomes refused at loading (contradicting a stored answer) and asked again
    n_deferred: int = 0  # batch mode: items waiting for answers of a later round
    passes: int = 0
    notices: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Plain counts for summaries."""
        return {
            "n_items": self.n_items,
            "n_sent": self.n_sent,
            "n_http": self.n_http,
            "n_cached": self.n_cached,
            "n_failures": self.n_failures,
            "n_dropped": self.n_dropped,
            "n_deferred": self.n_deferred,
            "passes": self.passes,
        }
