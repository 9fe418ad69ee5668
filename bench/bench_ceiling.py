"""Benchmark 1: how close `peras judge` comes to what the embedded llama.cpp server can do.

Workload: the shipped sample (40 pairs) x 11 personalities, without CoT, verbalized confidence: 440 judgments,
880 requests, the prompts and request parameters `peras judge sample --cot without` sends (max_tokens caps of the
embedded model, cache_prompt), ordered as peras orders them (personality, then pair), with the same number of
judgments in flight (settings.concurrency).

- Ceiling: a bare asyncio loop over the OpenAI client against a llama-server started exactly as peras starts it
  (timed from the first request to the last answer; server start not counted).
- Pipeline: `peras judge sample --cot without` end to end in its own process (start-up, Prefect flow and tasks
  against a running Prefect server, starting the embedded server, planning, shards, loading, the gate) on a
  freshly ingested warehouse.

Target: pipeline >= 0.95 x ceiling in judgments per second.

    .venv/bin/python bench/bench_ceiling.py [--pairs N]    # writes bench/results/ceiling-<date>.json
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (  # noqa: E402
    finish,
    headline,
    machine,
    peras_command,
    peras_env,
    sample_pairs_argument,
    timed,
    versions,
)
from peras.llm.parsing import parse_confidence, parse_label  # noqa: E402
from peras.local_model import local_server  # noqa: E402
from peras.prompting import Personality, sampling_params, select_personalities  # noqa: E402
from peras.settings import load_settings  # noqa: E402
from peras.sql import run_sql  # noqa: E402
from peras.warehouse import connect  # noqa: E402
from support.prefect_server import prefect_server  # noqa: E402
from tasks.judge.prompt import build_confidence_messages, build_label_messages  # noqa: E402
from tasks.judge.runs import EMBEDDED_MAX_TOKENS  # noqa: E402

TARGET_RATIO = 0.95


@dataclass(frozen=True)
class Job:
    """One judgment: a label request, then a confidence request for that label."""

    personality: Personality
    query: str
    passage: str


@dataclass
class LoopStats:
    """What the bare loop measured, summed over requests from llama.cpp's per-response `timings`."""

    judgments: int = 0
    requests: int = 0
    wall_s: float = 0.0
    prompt_tokens_processed: int = 0  # timings.prompt_n: tokens the server had to evaluate
    prompt_tokens_cached: int = 0  # timings.cache_n: tokens reused from the slot's KV cache
    prompt_ms: float = 0.0
    predicted_tokens: int = 0
    predicted_ms: float = 0.0
    labels: list[int | None] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready numbers (labels summarised as a count per value)."""
        counts = {str(k): self.labels.count(k) for k in (0, 1, 2, 3, None)}
        return {
            "judgments": self.judgments,
            "requests": self.requests,
            "wall_s": round(self.wall_s, 2),
            "judgments_per_s": round(self.judgments / self.wall_s, 3) if self.wall_s else None,
            "prompt_tokens_processed": self.prompt_tokens_processed,
            "prompt_tokens_cached": self.prompt_tokens_cached,
            "prompt_s": round(self.prompt_ms / 1000, 2),
            "predicted_tokens": self.predicted_tokens,
            "predicted_s": round(self.predicted_ms / 1000, 2),
            "label_counts": counts,
        }


def sample_jobs(warehouse: Path, n_pairs: int, shuffle_seed: int | None = None) -> list[Job]:
    """Every personality x the first n sample pairs as peras loads them, in peras's order (or shuffled)."""
    with connect(warehouse, read_only=True) as con:  # the judge stage's own query, in its order
        params = {"collection_id": "sample", "subset_name": None, "limit_pairs": n_pairs}
        rows = run_sql(con, "judge/select_pairs", params).fetchall()
    jobs = [Job(p, query, passage) for p in select_personalities(None) for _, _, query, passage, _ in rows]
    if shuffle_seed is not None:
        random.Random(shuffle_seed).shuffle(jobs)
    return jobs


async def bare_loop(base_url: str, model: str, jobs: list[Job], concurrency: int) -> LoopStats:
    """The ceiling: the OpenAI client, a semaphore, label then confidence per job; nothing stored."""
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=base_url, api_key="unused", max_retries=0, timeout=600)
    stats = LoopStats()
    gate = asyncio.Semaphore(concurrency)
    label_params = sampling_params("label_nocot") | {"max_tokens": EMBEDDED_MAX_TOKENS["label"]}
    confidence_params = sampling_params("confidence") | {"max_tokens": EMBEDDED_MAX_TOKENS["confidence"]}
    extra = {"cache_prompt": True}

    async def ask(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        response = await client.chat.completions.create(
            model=model,
            messages=messages,
            extra_body=extra,
            **params,  # type: ignore[arg-type]
        )
        timings = (response.model_extra or {}).get("timings") or {}
        stats.requests += 1
        stats.prompt_tokens_processed += int(timings.get("prompt_n", 0))
        stats.prompt_tokens_cached += int(timings.get("cache_n", 0))
        stats.prompt_ms += float(timings.get("prompt_ms", 0.0))
        stats.predicted_tokens += int(timings.get("predicted_n", 0))
        stats.predicted_ms += float(timings.get("predicted_ms", 0.0))
        return response.choices[0].message.content or ""

    async def judge(job: Job) -> None:
        async with gate:
            label = parse_label(
                await ask(build_label_messages(job.personality, job.query, job.passage, False), label_params), cot=False
            ).value
            if label is not None:
                text = await ask(
                    build_confidence_messages(job.personality, job.query, job.passage, int(label)), confidence_params
                )
                parse_confidence(text)
            stats.labels.append(None if label is None else int(label))
            stats.judgments += 1

    start = time.perf_counter()
    await asyncio.gather(*(judge(job) for job in jobs))
    stats.wall_s = time.perf_counter() - start
    await client.close()
    return stats


def ceiling(jobs: list[Job]) -> LoopStats:
    """Start the embedded server as peras does, run the bare loop over the jobs, stop the server."""
    settings = load_settings()
    with local_server(settings) as server:
        return asyncio.run(bare_loop(server.base_url, server.model, jobs, settings.concurrency))


@contextlib.contextmanager
def sample_warehouse() -> Iterator[tuple[Path, dict[str, str]]]:
    """A running Prefect server and a fresh warehouse holding the ingested sample; yields (warehouse, env)."""
    with (
        tempfile.TemporaryDirectory(prefix="peras-bench-") as tmp_name,
        prefect_server(Path(tmp_name) / "prefect") as api_url,
    ):
        tmp = Path(tmp_name)
        env = peras_env(tmp / "prefect", api_url, tmp / "peras.duckdb")
        timed(peras_command("ingest", "sample"), env)
        yield tmp / "peras.duckdb", env


def pipeline(env: dict[str, str], n_pairs: int) -> dict[str, Any]:
    """`peras judge sample --cot without` end to end, in its own process."""
    wall, cpu, output = timed(
        peras_command(
            "judge", "sample", "--cot", "without", "--limit-pairs", str(n_pairs), "--run-name", "bench-ceiling"
        ),
        env,
    )
    n = 11 * n_pairs
    return {
        "judgments": n,
        "wall_s": round(wall, 2),
        "cpu_s_peras": round(cpu, 2),
        "judgments_per_s": round(n / wall, 3),
        "cli_output_tail": output.strip().splitlines()[-6:],
    }


def run(n_pairs: int = 40) -> dict[str, Any]:
    """Ceiling, then pipeline, on the same pairs; the ratio of their rates is the result."""
    with sample_warehouse() as (warehouse, env):
        print(f"ceiling: bare OpenAI-client loop, 11 x {n_pairs} judgments on the embedded server ...", flush=True)
        bare = ceiling(sample_jobs(warehouse, n_pairs)).as_dict()
        print(f"  {bare['wall_s']} s ({bare['judgments_per_s']} judgments/s)", flush=True)
        print("pipeline: peras judge sample --cot without ...", flush=True)
        piped = pipeline(env, n_pairs)
        print(f"  {piped['wall_s']} s ({piped['judgments_per_s']} judgments/s)", flush=True)
    ratio = piped["judgments_per_s"] / bare["judgments_per_s"]
    return {
        "versions": versions(),
        "workload": {
            "collection": "sample",
            "pairs": n_pairs,
            "personalities": 11,
            "cot": "without",
            "confidence_method": "verbalized",
            "concurrency": load_settings().concurrency,
            "max_tokens": EMBEDDED_MAX_TOKENS,
        },
        "ceiling": bare,
        "pipeline": piped,
        "ratio": round(ratio, 3),
        "headline": [
            headline("pipeline / ceiling (embedded llama.cpp)", ratio, "x", f">= {TARGET_RATIO}", ratio >= TARGET_RATIO)
        ],
    }


def main() -> None:
    """Run, print the table, write the JSON result."""
    pairs = sample_pairs_argument(__doc__.splitlines()[0])
    started = machine()
    result = run(pairs)
    finish("ceiling", result, started)


if __name__ == "__main__":
    main()
