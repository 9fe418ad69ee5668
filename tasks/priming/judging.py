"""The batch-judging engine: one chunk of batches asked with async concurrency, every result journaled.

Each batch is one request; the answer must be a JSON object with one 0-3 score per passage. An answer that
does not read (tasks/priming/prompt.py) is regenerated at most 4 times and then recorded as a parse
failure with its reason; it is never scored. Requests already answered (same model, messages, parameters)
are served from the warehouse and never sent again. Requests go to llm_requests with purpose 'batch';
batch outcomes go to the shard's judgment lines (loaded into priming_batches).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from peras.errors import RequestRejected
from peras.llm.client import LLMClient
from peras.prompting import Personality, prompt_hash, request_hash
from peras.warehouse import now
from tasks.engine.shards import ShardWriter, run_bounded
from tasks.judge.judging import MAX_REGENERATIONS, ChunkStats
from tasks.priming.prompt import BatchParse, build_batch_messages, parse_batch_answer

CONDITIONS = ("HT", "LT")


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One batch to ask: a trial's prologue (HT or LT) followed by its epilogue, under one personality."""

    query_id: str
    trial: int
    n_prologue: int
    n_epilogue: int
    personality: str
    condition: str
    doc_ids: tuple[str, ...]


@dataclass(frozen=True)
class BatchConfig:
    """How every batch of a run is asked (recorded in priming_runs.params)."""

    run_id: str
    model: str
    backend: str
    sampling: dict[str, Any]
    max_tokens: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    extra_body: dict[str, Any] = field(default_factory=dict)

    def params(self) -> dict[str, Any]:
        """Request parameters: the prompt file's sampling, plus penalties and caps when set."""
        params = dict(self.sampling)
        optional = {
            "max_tokens": self.max_tokens,
            "frequency_penalty": self.frequency_penalty,
            "presence_penalty": self.presence_penalty,
        }
        params |= {key: value for key, value in optional.items() if value is not None}
        if self.extra_body:
            params["extra_body"] = dict(self.extra_body)
        return params


class BatchJudge:
    """Asks the batches of one chunk against one client, writing every result to a shard."""

    def __init__(
        self,
        client: LLMClient,
        config: BatchConfig,
        personalities: dict[str, Personality],
        queries: dict[str, str],
        texts: dict[str, str],
        cache: dict[str, str],
        writer: ShardWriter,
        on_item: Callable[[], None] | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.personalities = personalities
        self.queries = queries
        self.texts = texts
        self.cache = cache
        self.writer = writer
        self.on_item = on_item
        self.stats = ChunkStats()

    async def run(self, items: list[BatchItem], concurrency: int) -> ChunkStats:
        """Ask every batch, at most `concurrency` at a time, in the order given."""
        await run_bounded(items, concurrency, self.judge_batch)
        return self.stats

    async def judge_batch(self, item: BatchItem) -> None:
        """Ask one batch and journal its outcome (scores, or the failure and why)."""
        passages = [(doc_id, self.texts[doc_id]) for doc_id in item.doc_ids]
        messages = build_batch_messages(self.personalities[item.personality], self.queries[item.query_id], passages)
        try:
            request_id, parsed = await self.ask(messages, item.doc_ids)
            row = {"request_id": request_id, "scores": parsed.scores, "reason": None if parsed.ok else parsed.reason}
            row["status"] = "ok" if parsed.ok else "parse_failure"
        except RequestRejected as exc:
            row = {"request_id": None, "scores": None, "status": "error", "reason": str(exc)[:500]}
        self._write_batch(item, row)

    async def ask(self, messages: list[dict[str, str]], doc_ids: tuple[str, ...]) -> tuple[str, BatchParse]:
        """Send the request (unless already answered), regenerating unreadable answers up to 4 times."""
        params = self.config.params()
        request_id = request_hash(self.config.model, messages, params, 0)
        cached = self.cache.get(request_id)
        if cached is not None:
            self.stats.n_cached += 1
            return request_id, parse_batch_answer(cached, doc_ids)
        texts: list[str] = []
        started = time.perf_counter()
        for _ in range(1 + MAX_REGENERATIONS):
            result = await self.client.chat(messages, params)
            self.stats.n_sent += 1
            texts.append(result.text)
            parsed = parse_batch_answer(result.text, doc_ids)
            if parsed.ok:
                break
        self.writer.request(
            {
                "request_id": request_id,
                "model": self.config.model,
                "backend": self.config.backend,
                "prompt_hash": prompt_hash(messages),
                "purpose": "batch",
                "params": params,
                "messages": messages,
                "raw_text": result.text,
                "attempts": len(texts),
                "attempt_texts": texts,
                "parsed_value": None,  # the scores are in priming_batches; raw_text re-reads to them
                "parse_status": "ok" if parsed.ok else "parse_failure",
                "parse_reason": None if parsed.ok else parsed.reason,
                "logprobs": None,
                "prompt_tokens": result.prompt_tokens,
                "completion_tokens": result.completion_tokens,
                "cached_tokens": result.cached_tokens,
                "latency_ms": (time.perf_counter() - started) * 1000.0,
                "created_at": now().isoformat(),
            }
        )
        self.cache[request_id] = result.text
        return request_id, parsed

    def _write_batch(self, item: BatchItem, row: dict[str, Any]) -> None:
        self.stats.n_items += 1
        if row["status"] != "ok":
            self.stats.n_failures += 1
        self.writer.judgment(
            {
                "priming_run_id": self.config.run_id,
                "query_id": item.query_id,
                "trial": item.trial,
                "n_prologue": item.n_prologue,
                "n_epilogue": item.n_epilogue,
                "personality": item.personality,
                "condition": item.condition,
                "doc_ids": list(item.doc_ids),
                "scores": list(row["scores"]) if row["scores"] is not None else None,
                "status": row["status"],
                "reason": row["reason"],
                "request_id": row["request_id"],
                "judged_at": now().isoformat(),
            }
        )
        if self.on_item is not None:
            self.on_item()
