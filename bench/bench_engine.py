"""The asking engine against its ceiling, its memory, and two runs sharing one endpoint.

1. Ceiling: DL19 pairs under the default personality, no CoT, verbalized confidence (label, then confidence),
   against the scripted server answering after 50-450 ms (uniform, like a busy GPU server), at concurrency 64 and
   512. The ceiling is a bare asyncio loop over PERAS's own HTTP transport (no cache, no journal, no warehouse)
   sending the same prompts in the same order at the same concurrency; the pipeline is `peras judge` on a fresh
   warehouse. Throughput is judgments per second over the asking span: from the first request sent to the last
   answer (for the pipeline: from its llm_requests rows, created_at minus latency for the first), so Prefect's
   and the server's start-up are left out of both. Rounds alternate bare and pipeline; median and spread reported.
2. Memory: peak RSS of `peras judge dl19 --cot without` (11 personalities) against the instant server at 900,
   4,630 and 9,260 pairs (9,900 / 50,930 / 101,860 judgments): it must stay flat and <= 500 MB.
3. Rerun: the 50,930 judgments of 2. judged again into the same warehouse under a new run name (every answer
   stored, nothing sent): its wall time is the look-ups of stored answers.
4. Sharing: two runs (two models) on one endpoint with a 64-slot budget, alone and then at once: they finish
   together, in about the time of both runs' work at the shared budget, not one after the other.

    .venv/bin/python bench/bench_engine.py [--rounds 3] [--pairs 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb  # noqa: E402

from bench.common import finish, headline, machine, peras_command, peras_env, versions  # noqa: E402
from peras.llm.parsing import parse_confidence, parse_label  # noqa: E402
from peras.llm.transport import make_transport  # noqa: E402
from peras.prompting import sampling_params, select_personalities  # noqa: E402
from peras.sql import run_sql  # noqa: E402
from peras.warehouse import connect  # noqa: E402
from support.prefect_server import free_port, prefect_server  # noqa: E402
from tasks.judge.prompt import build_confidence_messages, build_label_messages  # noqa: E402

MODEL = "bench-model"
TARGET = 0.95


def start_server(latency: tuple[int, int] | None, models: list[str]) -> tuple[subprocess.Popen[str], str]:
    """The scripted server in its own process (so it never shares the measured process's CPU time)."""
    port = free_port()
    command = [sys.executable, "-m", "support.fake_openai", "--port", str(port), "--models", *models]
    if latency:
        command += ["--latency", str(latency[0]), str(latency[1])]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[1])
    assert process.stdout is not None
    url = process.stdout.readline().strip()  # printed once it listens
    return process, url


def ingest(env: dict[str, str]) -> None:
    """DL19 from the shared data into the warehouse named by env."""
    subprocess.run(peras_command("ingest", "dl19"), env=env, check=True, capture_output=True, text=True)


def dl19_pairs(warehouse: Path, n_pairs: int) -> list[tuple[str, str]]:
    """The first n DL19 pairs' query and passage texts, in the judge stage's order."""
    with connect(warehouse, read_only=True) as con:
        params = {"collection_id": "dl19", "subset_name": None, "limit_pairs": n_pairs}
        rows = run_sql(con, "judge/select_pairs", params).fetchall()
    return [(query, passage) for _, _, query, passage, _ in rows]


async def bare_loop(url: str, pairs: list[tuple[str, str]], concurrency: int) -> dict[str, float]:
    """The ceiling: PERAS's transport, a semaphore, label then confidence per pair; nothing stored."""
    default = select_personalities(["default"])[0]
    transport = make_transport(url, None, 600.0)
    label_params = sampling_params("label_nocot")
    confidence_params = sampling_params("confidence")
    queue = list(reversed(pairs))
    first_sent: list[float] = []
    last_answer = 0.0

    async def post(messages: list[dict[str, str]], params: dict[str, Any]) -> str:
        nonlocal last_answer
        if not first_sent:
            first_sent.append(time.perf_counter())
        status, _, content = await transport.chat({"model": MODEL, "messages": messages, **params})
        last_answer = time.perf_counter()
        assert status == 200, content[:200]
        return str(json.loads(content)["choices"][0]["message"]["content"])

    async def worker() -> None:
        while queue:
            query, passage = queue.pop()
            label = parse_label(await post(build_label_messages(default, query, passage, False), label_params), False)
            assert label.ok
            answer = await post(build_confidence_messages(default, query, passage, int(label.value)), confidence_params)
            assert parse_confidence(answer).ok

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    await transport.aclose()
    return {"judgments": len(pairs), "span_s": last_answer - first_sent[0]}


def default_judge_command(url: str, model: str, n_pairs: int, concurrency: int, *extra: str) -> list[str]:
    """`peras judge` on the first DL19 pairs under the default personality, no CoT: the runs this benchmark times."""
    return peras_command(
        "judge", "dl19", "--personality", "default", "--cot", "without", "--limit-pairs", str(n_pairs),
        "--base-url", url, "--model", model, "--concurrency", str(concurrency), *extra,
    )  # fmt: skip


def pipeline_run(env: dict[str, str], url: str, n_pairs: int, concurrency: int, run_name: str) -> dict[str, float]:
    """`peras judge` on the same pairs and prompts; the asking span read back from its request rows."""
    command = default_judge_command(url, MODEL, n_pairs, concurrency, "--run-name", run_name)
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, capture_output=True, text=True)
    wall = time.perf_counter() - started
    con = duckdb.connect(env["PERAS_WAREHOUSE"], read_only=True)
    try:
        span, n = con.execute(
            "select epoch(max(r.created_at) - min(r.created_at - to_milliseconds(r.latency_ms))), count(*) "
            "from llm_requests r join judge_runs j on j.run_id = r.run_id where j.run_name = $name",
            {"name": run_name},
        ).fetchone()
    finally:
        con.close()
    return {"judgments": n / 2, "span_s": float(span), "wall_s": wall}


def ceiling(base: Path, env: dict[str, str], concurrency: int, n_pairs: int, rounds: int) -> dict[str, Any]:
    """Alternate bare and pipeline rounds against a 50-450 ms server; median throughputs and their ratio."""
    server, url = start_server((50, 450), [MODEL])
    try:
        pairs = dl19_pairs(base, n_pairs)
        bare, pipe = [], []
        for index in range(rounds):
            result = asyncio.run(bare_loop(url, pairs, concurrency))
            bare.append(result["judgments"] / result["span_s"])
            fresh = base.with_name(f"ceiling-{concurrency}-{index}.duckdb")
            shutil.copy(base, fresh)
            run = pipeline_run(env | {"PERAS_WAREHOUSE": str(fresh)}, url, n_pairs, concurrency, f"c{concurrency}")
            pipe.append(run["judgments"] / run["span_s"])
            print(f"  concurrency {concurrency} round {index + 1}: bare {bare[-1]:.1f}/s, pipeline {pipe[-1]:.1f}/s")
    finally:
        server.terminate()
        server.wait(10)
    ratio = statistics.median(pipe) / statistics.median(bare)
    return {
        "concurrency": concurrency,
        "judgments": n_pairs,
        "bare_per_s": [round(x, 1) for x in bare],
        "pipeline_per_s": [round(x, 1) for x in pipe],
        "bare_median": round(statistics.median(bare), 1),
        "pipeline_median": round(statistics.median(pipe), 1),
        "ratio": round(ratio, 3),
        "ratio_spread": [
            round(min(p / b for p, b in zip(pipe, bare, strict=True)), 3),
            round(max(p / b for p, b in zip(pipe, bare, strict=True)), 3),
        ],
    }


def timed_judge(env: dict[str, str], warehouse: Path, url: str, n_pairs: int, run_name: str) -> tuple[float, float]:
    """Peak RSS (MB) and wall time (s), by GNU time, of `peras judge dl19 --cot without` over 11 personalities."""
    command = [
        "/usr/bin/time",
        "-f",
        "%M %e",
        *peras_command(
            "judge",
            "dl19",
            "--all-topics",  # the preset's default is its balanced subset (5,268 pairs): 9,260 needs all
            "--cot",
            "without",
            "--limit-pairs",
            str(n_pairs),
            "--base-url",
            url,
            "--model",
            MODEL,
            "--run-name",
            run_name,
        ),
    ]
    done = subprocess.run(
        command, env=env | {"PERAS_WAREHOUSE": str(warehouse)}, capture_output=True, text=True, check=True
    )
    kilobytes, seconds = done.stderr.strip().splitlines()[-1].split()
    return round(int(kilobytes) / 1024, 1), float(seconds)


def peak_rss(base: Path, env: dict[str, str], n_pairs: int) -> dict[str, Any]:
    """Peak RSS (GNU time) of a DL19 x 11 personalities run against the instant server."""
    server, url = start_server(None, [MODEL])
    fresh = base.with_name(f"rss-{n_pairs}.duckdb")
    shutil.copy(base, fresh)
    try:
        rss, wall = timed_judge(env, fresh, url, n_pairs, f"rss{n_pairs}")
    finally:
        server.terminate()
        server.wait(10)
    return {"pairs": n_pairs, "judgments": n_pairs * 11, "peak_rss_mb": rss, "wall_s": wall}


def cached_rerun(base: Path, env: dict[str, str], n_pairs: int) -> dict[str, Any]:
    """A second run of the same judgments into the same warehouse, at the default concurrency: every answer is
    stored, so it sends nothing and its time is the look-ups of stored answers (and start-up)."""
    server, url = start_server(None, [MODEL])
    warehouse = base.with_name(f"rerun-{n_pairs}.duckdb")
    shutil.copy(base, warehouse)
    try:
        fresh_rss, fresh_wall = timed_judge(env, warehouse, url, n_pairs, "first")
        requests = count_requests(warehouse)
        rerun_rss, rerun_wall = timed_judge(env, warehouse, url, n_pairs, "again")
        assert count_requests(warehouse) == requests, "the rerun sent requests"
    finally:
        server.terminate()
        server.wait(10)
        warehouse.unlink(missing_ok=True)
    return {
        "pairs": n_pairs,
        "judgments": n_pairs * 11,
        "stored_requests": requests,
        "fresh_wall_s": fresh_wall,
        "fresh_peak_rss_mb": fresh_rss,
        "rerun_wall_s": rerun_wall,
        "rerun_peak_rss_mb": rerun_rss,
    }


def count_requests(warehouse: Path) -> int:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return int(con.execute("select count(*) from llm_requests").fetchone()[0])
    finally:
        con.close()


def sharing(base: Path, env: dict[str, str], n_pairs: int) -> dict[str, Any]:
    """Two runs on one endpoint (a 64-slot budget shared by every run on the machine): alone, then together."""
    server, url = start_server((50, 450), ["model-a", "model-b"])
    slots = Path(tempfile.mkdtemp(prefix="peras-slots-"))
    try:

        def launch(model: str, tag: str) -> subprocess.Popen[str]:
            fresh = base.with_name(f"share-{tag}-{model}.duckdb")
            shutil.copy(base, fresh)
            command = default_judge_command(url, model, n_pairs, 64)
            return subprocess.Popen(
                command,
                env=env | {"PERAS_WAREHOUSE": str(fresh), "PERAS_ENDPOINT_SLOTS_DIR": str(slots)},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )

        def wait(process: subprocess.Popen[str], started: float) -> float:
            _, err = process.communicate()
            assert process.returncode == 0, err
            return time.perf_counter() - started

        alone = {}
        for model in ("model-a", "model-b"):
            started = time.perf_counter()
            alone[model] = wait(launch(model, "alone"), started)
        started = time.perf_counter()
        both = [launch("model-a", "both"), launch("model-b", "both")]
        together = {model: wait(p, started) for model, p in zip(("model-a", "model-b"), both, strict=True)}
    finally:
        server.terminate()
        server.wait(10)
        shutil.rmtree(slots, ignore_errors=True)
    return {
        "pairs_per_run": n_pairs,
        "alone_s": {k: round(v, 1) for k, v in alone.items()},
        "together_s": {k: round(v, 1) for k, v in together.items()},
        "sum_alone_s": round(sum(alone.values()), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=1000, help="DL19 pairs for the ceiling (x2 requests)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[64, 512], help="ceiling concurrencies")
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=["ceiling", "memory", "rerun", "sharing"], help="parts to leave out"
    )
    args = parser.parse_args()
    started = machine()
    random.seed(0)
    with tempfile.TemporaryDirectory(prefix="peras-bench-engine-") as tmp, prefect_server(Path(tmp) / "prefect") as api:
        base = Path(tmp) / "base.duckdb"
        env = peras_env(Path(tmp) / "prefect", api, base)
        ingest(env)
        result: dict[str, Any] = {"versions": versions()}
        if "ceiling" not in args.skip:
            result["ceiling"] = [
                ceiling(base, env, c, args.pairs * max(1, c // 128), args.rounds) for c in args.concurrency
            ]
        if "memory" not in args.skip:
            result["memory"] = [peak_rss(base, env, n) for n in (900, 4630, 9260)]
        if "rerun" not in args.skip:
            result["rerun"] = cached_rerun(base, env, 4630)
        if "sharing" not in args.skip:
            result["sharing"] = sharing(base, env, args.pairs // 2)
    rows = [
        headline(
            f"judge / bare transport, 50-450 ms, concurrency {c['concurrency']}",
            c["ratio"],
            "x",
            f">= {TARGET}",
            c["ratio"] >= TARGET,
        )
        for c in result.get("ceiling", [])
    ]
    if "memory" in result:
        rss = [m["peak_rss_mb"] for m in result["memory"]]
        rows.append(
            headline(
                "peak RSS at 9,900 / 50,930 / 101,860 judgments", max(rss), "MB", "<= 500 and flat", max(rss) <= 500
            )
        )
    if "rerun" in result:
        rerun = result["rerun"]
        rows.append(
            headline(
                f"rerun of {rerun['judgments']:,} stored judgments (all answers stored), wall",
                rerun["rerun_wall_s"],
                "s",
                "report",
                True,
            )
        )
    if "sharing" in result:
        share = result["sharing"]
        slowest = round(max(share["together_s"].values()) / share["sum_alone_s"], 2)
        rows.append(headline("two runs on one endpoint, together (slowest) / sum alone", slowest, "x", "report", True))
    result["headline"] = rows
    finish("engine", result, started)


if __name__ == "__main__":
    main()
