"""The judging engine: one chunk of work items judged with async concurrency, every result journaled.

A work item is (pair, personality, CoT setting, confidence method). For each, the label request goes
first; then the confidence comes from the method:
- verbalized: a second request (same personality) states the label and asks for 0-100;
- logprob: the label token's top log-probabilities over 0-3 (p of the chosen label x 100, and the
  probability-weighted expected score);
- sampling: n label requests at temperature 0.7 (seeds 0..n-1); majority label (ties: the lower label),
  confidence = share of votes x 100, expected score = mean vote.
An answer that does not parse is regenerated (at most 4 times) and then stored as a parse failure with
its raw text and reason; it never becomes a label. Requests already answered (same model, messages and
parameters) are served from the warehouse and never sent again.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from peras.errors import RequestRejected
from peras.llm.client import LLMClient
from peras.llm.parsing import (
    ParseResult,
    label_logprob_scores,
    label_token_top_logprobs,
    parse_confidence,
    parse_label,
)
from peras.prompting import (
    Personality,
    build_confidence_messages,
    build_label_messages,
    request_hashes,
    sampling_params,
)
from peras.warehouse import now
from tasks.engine.shards import ShardWriter, run_bounded

MAX_REGENERATIONS = 4
METHODS = ("verbalized", "logprob", "sampling")


@dataclass(frozen=True, slots=True)
class WorkItem:
    """One judgment to make."""

    query_id: str
    doc_id: str
    personality: str
    cot: bool
    method: str


@dataclass(frozen=True)
class JudgeConfig:
    """Everything about how to ask, fixed for a run (recorded in judge_runs.params)."""

    run_id: str
    model: str
    backend: str
    max_tokens_label: int | None = None
    max_tokens_cot: int | None = None
    max_tokens_confidence: int | None = None
    n_samples: int = 10
    sampling_temperature: float = 0.7
    top_logprobs: int = 5
    extra_body: dict[str, Any] = field(default_factory=dict)

    def label_params(self, cot: bool, method: str) -> dict[str, Any]:
        """Request parameters of the label request (temperature 0, top_p 1 from the prompt file)."""
        params = sampling_params("label_cot" if cot else "label_nocot")
        limit = self.max_tokens_cot if cot else self.max_tokens_label
        if limit is not None:
            params["max_tokens"] = limit
        if method == "logprob":
            params |= {"logprobs": True, "top_logprobs": self.top_logprobs}
        if method == "sampling":
            params["temperature"] = self.sampling_temperature
        if self.extra_body:
            params["extra_body"] = dict(self.extra_body)
        return params

    def confidence_params(self) -> dict[str, Any]:
        """Request parameters of the post-hoc confidence request."""
        params = sampling_params("confidence")
        if self.max_tokens_confidence is not None:
            params["max_tokens"] = self.max_tokens_confidence
        if self.extra_body:
            params["extra_body"] = dict(self.extra_body)
        return params


@dataclass
class Answer:
    """A parsed answer (possibly from the warehouse cache)."""

    request_id: str
    value: float | None
    ok: bool
    reason: str
    logprobs: list[dict[str, Any]] | None = None


@dataclass
class ChunkStats:
    """What a chunk did: items judged, requests sent and served from cache, failures."""

    n_items: int = 0
    n_sent: int = 0
    n_cached: int = 0
    n_failures: int = 0


class ChunkJudge:
    """Judges the items of one chunk against one client, writing every result to a shard."""

    def __init__(
        self,
        client: LLMClient,
        config: JudgeConfig,
        personalities: dict[str, Personality],
        texts: dict[tuple[str, str], tuple[str, str]],
        cache: dict[str, Answer],
        writer: ShardWriter,
        on_item: Callable[[], None] | None = None,
    ) -> None:
        self.client = client
        self.config = config
        self.personalities = personalities
        self.texts = texts
        self.cache = cache
        self.writer = writer
        self.on_item = on_item
        self.stats = ChunkStats()

    async def run(self, items: list[WorkItem], concurrency: int) -> ChunkStats:
        """Judge every item, at most `concurrency` at a time, in the order given (shared prefixes together)."""
        await run_bounded(items, concurrency, self.judge_item)
        return self.stats

    async def judge_item(self, item: WorkItem) -> None:
        """Label, then confidence by the item's method; one judgment row either way."""
        personality = self.personalities[item.personality]
        query, document = self.texts[(item.query_id, item.doc_id)]
        messages = build_label_messages(personality, query, document, item.cot)
        params = self.config.label_params(item.cot, item.method)
        row: dict[str, Any]
        try:
            if item.method == "sampling":
                row = await self._by_sampling(item, messages, params)
            else:
                row = await self._by_label_then_confidence(
                    item, personality, query, document, messages, params
                )
        except RequestRejected as exc:
            row = {"status": "error", "reason": str(exc)[:500]}
        self._write_judgment(item, row)

    async def _by_label_then_confidence(
        self,
        item: WorkItem,
        personality: Personality,
        query: str,
        document: str,
        messages: list[dict[str, str]],
        params: dict[str, Any],
    ) -> dict[str, Any]:
        label = await self.ask(messages, params, "label", lambda text: parse_label(text, item.cot))
        row: dict[str, Any] = {"label_request_id": label.request_id}
        if not label.ok:
            return row | {"status": "label_parse_failure", "reason": label.reason}
        value = int(label.value)  # type: ignore[arg-type]
        row["label"] = value
        if item.method == "logprob":
            scores = label_logprob_scores(label_token_top_logprobs(label.logprobs, value))
            if scores.p_chosen is None:
                return row | {"status": "confidence_parse_failure", "reason": f"logprob: {scores.reason}"}
            return row | {
                "status": "ok",
                "confidence": 100.0 * scores.dist[value],  # type: ignore[index]
                "expected_score": scores.expected_score,
            }
        confidence_messages = build_confidence_messages(personality, query, document, value)
        confidence = await self.ask(
            confidence_messages, self.config.confidence_params(), "confidence", parse_confidence
        )
        row["confidence_request_id"] = confidence.request_id
        if not confidence.ok:
            return row | {"status": "confidence_parse_failure", "reason": confidence.reason}
        return row | {"status": "ok", "confidence": float(confidence.value)}  # type: ignore[arg-type]

    async def _by_sampling(
        self, item: WorkItem, messages: list[dict[str, str]], params: dict[str, Any]
    ) -> dict[str, Any]:
        answers = await asyncio.gather(
            *(
                self.ask(
                    messages,
                    params | {"seed": index},
                    "label",
                    lambda text: parse_label(text, item.cot),
                    index,
                )
                for index in range(self.config.n_samples)
            )
        )
        votes = [int(a.value) for a in answers if a.ok]  # type: ignore[arg-type]
        row: dict[str, Any] = {"label_request_id": answers[0].request_id}
        if not votes:
            return row | {"status": "label_parse_failure", "reason": f"no parseable sample of {len(answers)}"}
        counts = Counter(votes)
        label = max(counts, key=lambda k: (counts[k], -k))
        return row | {
            "status": "ok",
            "label": label,
            "confidence": 100.0 * counts[label] / len(answers),
            "expected_score": sum(votes) / len(votes),
        }

    async def ask(
        self,
        messages: list[dict[str, str]],
        params: dict[str, Any],
        purpose: str,
        parse: Callable[[str], ParseResult],
        sample_index: int = 0,
    ) -> Answer:
        """Send a request (unless already answered), regenerating unparseable answers up to 4 times."""
        request_id, prompt_id = request_hashes(self.config.model, messages, params, sample_index)
        cached = self.cache.get(request_id)
        if cached is not None:
            self.stats.n_cached += 1
            return cached
        texts: list[str] = []
        started = time.perf_counter()
        for _ in range(1 + MAX_REGENERATIONS):
            result = await self.client.chat(messages, params)
            self.stats.n_sent += 1
            texts.append(result.text)
            parsed = parse(result.text)
            if parsed.ok:
                break
        logprobs = result.logprobs[0] if result.logprobs else None
        answer = Answer(request_id, parsed.value, parsed.ok, parsed.reason, logprobs)
        self.writer.request(
            {
                "request_id": request_id,
                "model": self.config.model,
                "backend": self.config.backend,
                "prompt_hash": prompt_id,
                "purpose": purpose,
                "params": params,
                "messages": messages,
                "raw_text": result.text,
                "attempts": len(texts),
                "attempt_texts": texts,
                "parsed_value": parsed.value,
                "parse_status": "ok" if parsed.ok else "parse_failure",
                "parse_reason": None if parsed.ok else parsed.reason,
                "logprobs": logprobs,
                "prompt_tokens": result.prompt_tokens,
                "completion_tokens": result.completion_tokens,
                "cached_tokens": result.cached_tokens,
                "latency_ms": (time.perf_counter() - started) * 1000.0,
                "created_at": now().isoformat(),
            }
        )
        self.cache[request_id] = answer
        return answer

    def _write_judgment(self, item: WorkItem, row: dict[str, Any]) -> None:
        self.stats.n_items += 1
        if row.get("status") != "ok":
            self.stats.n_failures += 1
        self.writer.judgment(
            {
                "run_id": self.config.run_id,
                "query_id": item.query_id,
                "doc_id": item.doc_id,
                "personality": item.personality,
                "cot": item.cot,
                "confidence_method": item.method,
                "label": row.get("label"),
                "confidence": row.get("confidence"),
                "expected_score": row.get("expected_score"),
                "status": row["status"],
                "reason": row.get("reason"),
                "label_request_id": row.get("label_request_id"),
                "confidence_request_id": row.get("confidence_request_id"),
                "judged_at": now().isoformat(),
            }
        )
        if self.on_item is not None:
            self.on_item()
