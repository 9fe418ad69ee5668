"""The asking engine: every stage that talks to an LLM runs its items through this.

A stage hands over a plan (items, streamed) and a handler that turns an item into `Ask`s and their `Answer`s into
an outcome row. The engine owns the rest:
- bounded async sending: `concurrency x URLs` requests in flight for the whole run (the client holds a slot per
  request), no barrier between chunks; as many items are worked on as requests may be in flight, plus one for each
  that waits on something other than a slot (a look-up of stored answers, another item's identical request, a
  retry's back-off), up to MAX_STALLED more (`Workers`, tasks/engine/workers.py): a small concurrency does not
  serialise the look-ups (a fully cached rerun at concurrency 8 once looked up 8 at a time), and against a fast
  server no item waits for a slot (256 items held for 8 slots cost each request ~15 us of the loop's CPU, a fifth
  of it, in the queue's wake-ups);
- the answer cache: an identical request (model, messages, parameters, sample index) is answered from the
  warehouse, whatever its purpose. A stored failure (unreadable, refused) is reused only by the run that stored
  it, unless `retry_failed`; any other run asks again and the new answer replaces it (the old one is kept);
- regeneration: an unreadable answer is asked again up to the Ask's limit, each time with another seed and, for a
  greedy request, at temperature 0.7 (`regeneration_params`), every attempt's text and parameters recorded;
- journaling to shards (tasks/engine/shards.py), loaded into the warehouse as they fill (so progress is visible),
  at most once every `load_interval_s` (the shards that fill meanwhile are loaded together, with the file opened
  once: against a fast server a load per shard took CPU from the asking), the first that long after the asking
  began, the last as it ends; with the outcomes that contradict a stored answer left out and asked again in a
  further pass;
- progress, counts, and the run-wide request budget.
In batch mode (`batch`, tasks/engine/batch.py) a pass sends nothing: answers come from collected batch lines, and
an item whose requests are not answered yet waits for the next round (no outcome is journaled for it).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from peras import lake
from peras.errors import BudgetReached, RequestRejected
from peras.llm.client import LLMClient
from peras.llm.constraints import FREE, AnswerShape, constrain
from peras.llm.priority import item_step
from peras.prompting import request_hashes
from peras.warehouse import now_text
from tasks.engine.batch import BatchRound, Deferred
from tasks.engine.journaled import request_row
from tasks.engine.shards import ShardJournal, load_closed_shards, shard_dir
from tasks.engine.spec import Answer, Ask, EngineStats, Plan, RunIdentity, Stage, Tried, regeneration_params
from tasks.engine.store import AnswerCache, StoredAnswer, WarehouseThread
from tasks.engine.workers import Workers

MAX_PASSES = 3  # a pass after the first only re-derives outcomes from stored answers
_END = object()


class Engine:
    """Runs one stage's plan for one run against one client."""

    _loop: asyncio.AbstractEventLoop  # the pass's, set as it starts

    def __init__(
        self,
        client: LLMClient | None,
        identity: RunIdentity,
        stage: Stage,
        warehouse: Path,
        shards_root: Path,
        concurrency: int,
        rows_per_shard: int,
        retry_failed: bool = False,
        on_item: Callable[[], None] | None = None,
        on_shard: Callable[[EngineStats], None] | None = None,
        batch: BatchRound | None = None,
        answer_format: str = FREE,
        thread: WarehouseThread | None = None,
        load_interval_s: float = 0.0,
    ) -> None:
        self.client = client
        self.batch = batch
        self.identity = identity
        self.stage = stage
        self.warehouse = warehouse
        self.shards_root = shards_root
        self.concurrency = concurrency
        self.rows_per_shard = rows_per_shard
        self.retry_failed = retry_failed
        self.on_lake = lake.is_lake(warehouse)
        self.on_item = on_item
        self.on_shard = on_shard
        self.answer_format = answer_format  # the constraint dialect (peras/llm/constraints.py); 'free': none
        self.stats = EngineStats()
        self.thread = thread or WarehouseThread(warehouse)  # closed when the run ends
        self.cache = AnswerCache(self.thread, identity.model)
        self._in_flight: dict[str, asyncio.Future[Answer] | None] = {}
        self._last_constraint: tuple[dict[str, Any], AnswerShape, dict[str, Any]] | None = None
        # Answers this engine journaled whose shard is not loaded yet (the cache cannot see them), and the ids of
        # the requests it got a failure for: an identical request asked later in the run reuses that failure, never
        # resends (an answer that reads is always reused; keeping only failures keeps this small on a long run).
        self._unloaded: dict[str, StoredAnswer] = {}
        self._failed_now: set[str] = set()
        self._loads: list[asyncio.Future[int]] = []
        self._journal: ShardJournal | None = None
        # Closed shards waiting for the next load (their files), the requests journaled and not loaded when the last
        # of them closed (a superset of those in them: what an earlier close saw is in it or loaded since), the task
        # loading them, and the earliest time the next load may start (set as the asking starts).
        self.load_interval_s = load_interval_s
        self._closed_shards: list[list[Path]] = []
        self._closed_ids: list[str] = []
        self._loading: asyncio.Task[int] | None = None
        self._next_load_at: float | None = None
        self._asking_ended = asyncio.Event()
        self._workers = Workers(concurrency)  # started by each pass
        if client is not None:
            client.on_wait = self._workers.waiting

    async def run(self, plan: Plan) -> EngineStats:
        """Ask every item of the plan; repeat for items whose outcomes were refused at loading."""
        try:
            await self.thread.call(self.cache.refresh)
            while self.stats.passes < MAX_PASSES:
                if self.stats.passes > 0:
                    # Counted from here: fetch queues its query on the warehouse thread and waits, so calling it
                    # on that thread would wait forever. Answers stored since the run began (those that outvoted
                    # this run's at loading) are read again, so the pass derives from them instead of asking.
                    if plan.count(self.thread.fetch) == 0:
                        break
                    await self.thread.call(self.cache.refresh)
                self.stats.passes += 1
                dropped_before = self.stats.n_dropped
                await self._one_pass(plan.items(self.thread.fetch))
                if self.stats.n_dropped == dropped_before and not self._may_have_lost_outcomes():
                    break
        finally:
            self.thread.close()
        return self.stats

    def _may_have_lost_outcomes(self) -> bool:
        """Whether outcomes this pass stored may have left the run since (so what is left is counted again).

        On a lake, another run's loader may bring a request both stored back to one after this run's last load, and
        a judgment of this run built on the copy that went leaves it (sql/judge/drop_on_replaced_copies.sql).
        Not when failures are asked again (they stay planned) or a batch round is waiting (deferred items too).
        """
        return self.on_lake and not self.retry_failed and self.stats.n_deferred == 0

    async def _one_pass(self, items: Iterator[Any]) -> None:
        self._loop = asyncio.get_running_loop()  # kept: asking for it costs a getpid() on Python 3.11, per request
        self._asking_ended.clear()
        if self._next_load_at is None:
            self._next_load_at = time.monotonic() + self.load_interval_s
        journal = ShardJournal(
            shard_dir(self.shards_root, self.identity), self.identity, self.rows_per_shard, on_closed=self._closed
        )
        self._journal = journal
        spent: list[BudgetReached] = []

        async def worker() -> None:
            while not spent and not workers.surplus():
                item = next(items, _END)  # one shared iterator: each item is taken by exactly one worker
                if item is _END:
                    return
                item_step.set(0)  # its requests count from 0: the later ones go before other items' first ones
                try:
                    row = await self.stage.handle(item, self.ask)
                except BudgetReached as exc:  # items in flight finish; no new item starts
                    spent.append(exc)
                    return
                except Deferred:  # batch mode: its answers come in a later round
                    self.stats.n_deferred += 1
                    continue
                self._finish(journal, row)

        workers = self._workers
        workers.start(worker)
        try:
            await workers.wait()
            if spent:
                raise spent[0]
        finally:
            await workers.stop()
            await self._settle_in_flight()
            self._asking_ended.set()  # a load waiting for its time starts now
            journal.close()
            results = await asyncio.gather(*self._loads, return_exceptions=True)
            self._loads.clear()
            errors = [result for result in results if isinstance(result, BaseException)]
            if errors:
                raise errors[0]

    async def _settle_in_flight(self) -> None:
        """Wait for requests a stage left running (a sibling of a failed one): each journals its answer, and it must
        do so before the journal closes, or it would open a shard nobody loads."""
        while self._in_flight:
            pending = [asyncio.shield(self._in_flight_future(request_id)) for request_id in list(self._in_flight)]
            await asyncio.gather(*pending, return_exceptions=True)

    def _closed(self, files: list[Path]) -> None:
        """A shard closed: it waits for the next load (started here unless one is under way or waiting)."""
        self._closed_shards.append(files)
        self._closed_ids = list(self._unloaded)
        if self._loading is None:
            self._loading = asyncio.get_running_loop().create_task(self._load_closed())
            self._loads.append(self._loading)

    async def _load_closed(self) -> int:
        """Load the closed shards, together, once the interval since the last load has passed (at once when the
        asking has ended); again while shards closed during a load."""
        dropped = 0
        try:
            while self._closed_shards:
                wait_s = (self._next_load_at or 0.0) - time.monotonic()
                if wait_s > 0 and not self._asking_ended.is_set():
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(wait_s):
                            await self._asking_ended.wait()
                shards, ids = self._closed_shards, self._closed_ids
                self._closed_shards, self._closed_ids = [], []
                self._next_load_at = time.monotonic() + self.load_interval_s
                dropped += await self._load(shards, ids)
        finally:
            self._loading = None
        return dropped

    async def _load(self, shards: list[list[Path]], request_ids: list[str]) -> int:
        dropped = await self.thread.call(
            self.thread.write, load_closed_shards, self.warehouse, self.shards_root, self.identity, shards
        )
        # Loaded: the cache answers for these requests from now on.
        self.cache.add(request_ids)
        for request_id in request_ids:
            self._unloaded.pop(request_id, None)
        self.stats.n_dropped += dropped
        self.stats.n_items -= dropped  # asked again in the next pass, counted there: an item counts once
        if self.on_shard is not None:
            await self.thread.call(self.thread.write, self.on_shard, self.stats)
        return dropped

    def _finish(self, journal: ShardJournal, row: dict[str, Any]) -> None:
        self.stats.n_items += 1
        if row.get("status") != "ok":
            self.stats.n_failures += 1
        row["judged_at"] = now_text()  # the stage's row, journaled and dropped: stamped in place
        journal.outcome(row)
        if self.on_item is not None:
            self.on_item()

    async def ask(self, spec: Ask) -> Answer:
        """The answer to one request: from the warehouse if stored (and usable), else asked now.

        The Ask's answer shape becomes part of its parameters first (in the run's dialect), so the constraint is
        in the cache key, the stored parameters and the body sent (peras/llm/constraints.py)."""
        if spec.shape is not None:
            params = self._constrained(spec.params, spec.shape)
            if params is not spec.params:  # else nothing to add (the 'free' dialect): the Ask is kept as it is
                spec = spec.constrained(params)
        request_id, prompt_hash = request_hashes(self.identity.model, spec.messages, spec.params, spec.sample_index)
        step = item_step.get()
        item_step.set(step + 1)  # this item's next request waits for a slot ahead of items not yet this far
        if request_id in self._in_flight:  # the same request, asked by another item and not answered yet
            self.stats.n_cached += 1
            self._workers.stall()
            try:
                return await asyncio.shield(self._in_flight_future(request_id))
            finally:
                self._workers.unstall()
        self._in_flight[request_id] = None  # a future only once somebody waits for it: most requests have nobody
        try:
            answer = await self._answer(spec, request_id, prompt_hash)
        except BaseException as exc:
            future = self._in_flight.pop(request_id)
            if future is not None:
                future.set_exception(exc)
                future.exception()  # retrieved: a waiter may be gone (cancelled) and must not leave a warning
            raise
        future = self._in_flight.pop(request_id)
        if future is not None:
            future.set_result(answer)
        return answer

    def _constrained(self, params: dict[str, Any], shape: AnswerShape) -> dict[str, Any]:
        """`constrain` in the run's dialect, remembered for the last parameters and shape (identical objects): a stage
        asks with a few shared parameter sets, item after item, and each request built the same copy again (0.5-5 us
        a request by dialect; an Ask's parameters never change once built)."""
        last = self._last_constraint
        if last is not None and last[0] is params and last[1] is shape:
            return last[2]
        found = constrain(params, shape, self.answer_format)
        self._last_constraint = (params, shape, found)
        return found

    def _in_flight_future(self, request_id: str) -> asyncio.Future[Answer]:
        """The future a request in flight resolves for those waiting on it (made by the first of them)."""
        future = self._in_flight[request_id]
        if future is None:
            future = self._in_flight[request_id] = self._loop.create_future()
        return future

    async def _answer(self, spec: Ask, request_id: str, prompt_hash: str) -> Answer:
        stored = self._unloaded.get(request_id)
        if stored is None and self.cache.might_have(request_id):  # else certainly not stored: no look-up to await
            self._workers.stall()
            try:
                stored = await self.cache.get(request_id)
            finally:
                self._workers.unstall()
        if stored is not None and self._usable(request_id, stored):
            self.stats.n_cached += 1
            if stored.parse_status == "refused":
                raise RequestRejected(stored.parse_reason or "refused", request_id=request_id)
            return Answer(request_id, spec.parse(stored.raw_text or ""), stored.raw_text or "", stored.logprobs, True)
        if self.batch is not None:
            return self.batch.answer(self, spec, request_id, prompt_hash)
        return await self._send(spec, request_id, prompt_hash)

    def _usable(self, request_id: str, stored: StoredAnswer) -> bool:
        """Answers that read are always reused; failures by the run that stored them (unless retrying them), and
        always by the engine that got them: a failure is asked again at most once per run."""
        if stored.parse_status == "ok" or request_id in self._failed_now:
            return True
        return stored.run_id == self.identity.run_id and not self.retry_failed

    async def _send(self, spec: Ask, request_id: str, prompt_hash: str) -> Answer:
        tried = Tried(spec, request_id, prompt_hash)
        result = None
        assert self.client is not None, "online mode asks through a client"
        try:
            for attempt in range(1 + spec.regenerations):
                params = regeneration_params(spec.params, attempt)
                tried.sent.append(params)
                result = await self.client.chat(spec.messages, params)
                self.stats.n_sent += 1
                tried.http += result.attempts
                tried.texts.append(result.text)
                parsed = spec.parse(result.text)
                if parsed.ok:
                    break
        except RequestRejected as exc:
            tried.http += getattr(exc, "http_requests", 1)
            raise self.record_refusal(tried, str(exc)) from exc
        except BaseException as exc:
            # No answer (the server failed, the budget ran out, the run stopped): nothing to reuse, but what was
            # sent is journaled as 'unanswered' (kept in llm_request_history), so a resume's budget counts it.
            tried.http += getattr(exc, "http_requests", 0)
            if tried.http:
                self._journal_request(tried, None, None, "unanswered", (str(exc) or type(exc).__name__)[:500])
            raise
        finally:
            self.stats.n_http += tried.http
        assert result is not None
        return self.record_answer(tried, result, parsed)

    def record_refusal(self, tried: Tried, reason: str) -> RequestRejected:
        """Journal a refused request (online: HTTP 400/413/422; batch: such a line); the error to raise."""
        self._journal_request(tried, None, None, "refused", reason[:500])
        return RequestRejected(reason, request_id=tried.request_id)

    def record_answer(self, tried: Tried, result: Any, parsed: Any) -> Answer:
        """Journal a request's answer (the last attempt's result, every attempt's text and parameters); the Answer."""
        logprobs = result.logprobs[0] if result.logprobs else None
        value = getattr(parsed, "value", None)
        self._journal_request(
            tried,
            result,
            value if isinstance(value, int | float) and not isinstance(value, bool) else None,
            "ok" if parsed.ok else "parse_failure",
            None if parsed.ok else parsed.reason,
            logprobs,
            getattr(parsed, "confidence", None) if parsed.ok else None,
        )
        return Answer(tried.request_id, parsed, result.text, logprobs, False)

    def _journal_request(
        self,
        tried: Tried,
        result: Any,
        value: float | None,
        status: str,
        reason: str | None,
        logprobs: list[dict[str, Any]] | None = None,
        confidence: float | None = None,
    ) -> None:
        request_id = tried.request_id
        assert self._journal is not None
        if status != "unanswered":
            raw = result.text if result is not None else None
            self._unloaded[request_id] = StoredAnswer(raw, logprobs, status, reason, self.identity.run_id)
            if status != "ok":
                self._failed_now.add(request_id)
        self._journal.request(request_row(self.identity, tried, result, value, status, reason, logprobs, confidence))
