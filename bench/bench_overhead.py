"""Benchmark 2: what the pipeline itself costs, against a server that answers instantly.

DL19 (9,260 pairs, from ../shared/data) x 11 personalities, without CoT, verbalized confidence: 101,860 judgments,
203,720 requests, through `peras judge` end to end (its own process: imports, Prefect flow and tasks against a
running Prefect server, planning, the HTTP client, shards, loading into DuckDB, the gate). The server is
`support.fake_openai` (a benchmark fixture: CRC32 of the prompt picks the answer; no model) in its own process.
Target: >= 1,000 judgments/s end to end on 2 cores, so that a GPU server doing ~100 judgments/s is never held back.

A second run on a copy of the freshly ingested warehouse is sampled with py-spy (100 Hz, on-CPU stacks of every
thread) to say where the time goes.

    .venv/bin/python bench/bench_overhead.py [--no-profile]   # writes bench/results/overhead-<date>.json
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import (  # noqa: E402
    finish,
    headline,
    machine,
    peras_command,
    peras_env,
    timed,
    versions,
)
from support.fake_openai import DEFAULT_MODEL, fake_openai_process  # noqa: E402
from support.prefect_server import prefect_server  # noqa: E402

COLLECTION, PERSONALITIES, TARGET_PER_S = "dl19", 11, 1000.0
SAMPLE_HZ = 100
PROFILE_OUT = Path(tempfile.gettempdir()) / "peras-overhead-profile.txt"  # collapsed stacks, for flamegraph.pl
# Which stage a sample belongs to: the innermost frame of its stack that matches one of these needles.
STAGES = (
    ("request ids: sha256 of canonical JSON", ("request_hash", "_canonical_json")),
    ("prompt rendering", ("build_label_messages", "build_confidence_messages")),
    ("shard journaling", ("tasks/engine/shards.py",)),
    ("HTTP client and response parsing", ("peras/llm/",)),
    ("judging engine (scheduling, records)", ("tasks/judge/judging.py",)),
    ("planning and answer cache", ("plan_work", "load_cached_answers", "load_pairs")),
    ("loading shards into DuckDB", ("load_shards",)),
    ("gate and summary", ("check_judge_run", "summarize")),
    ("Prefect (flow/task engine, API, events)", ("prefect/",)),
    ("imports and start-up", ("<module>",)),
)


def judge_args(base_url: str, run_name: str) -> list[str]:
    """The judge command of the benchmark."""
    return [
        "judge",
        COLLECTION,
        "--cot",
        "without",
        "--base-url",
        base_url,
        "--model",
        DEFAULT_MODEL,
        "--run-name",
        run_name,
    ]


def count_judgments(warehouse: Path, run_name: str) -> int:
    """Judgments stored for the run (what the gate let through)."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        row = con.execute(
            "select count(*) from judgments j join judge_runs r using (run_id) where r.run_name = $run_name",
            {"run_name": run_name},
        ).fetchone()
        return int(row[0]) if row else 0
    finally:
        con.close()


def profile_run(command: list[str], env: dict[str, str], raw: Path) -> dict[str, Any]:
    """Sample the command with py-spy (only the thread holding the GIL: where Python time goes), keep the
    collapsed stacks in `raw`; return shares by stage and the top self-time frames."""
    py_spy = shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")
    if py_spy is None:
        return {"skipped": "py-spy is not installed (pip install -e .[bench])"}
    subprocess.run(
        [py_spy, "record", "--gil", "--rate", str(SAMPLE_HZ), "--format", "raw", "--output", str(raw), "--", *command],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return summarize_profile(raw.read_text().splitlines())


def summarize_profile(lines: list[str]) -> dict[str, Any]:
    """Collapsed stacks ("a;b;c count") to stage shares and the 15 heaviest self-time frames."""
    stages: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    total = 0
    for line in lines:
        stack, _, count_text = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_text)
        total += count
        frames = stack.split(";")
        leaves[_short(frames[-1])] += count
        stages[_stage(frames)] += count
    return {
        "samples": total,
        "python_busy_s": round(total / SAMPLE_HZ, 1),  # seconds some thread held the GIL; the rest is C or waiting
        "stage_share": {k: round(v / total, 3) for k, v in stages.most_common()} if total else {},
        "top_self": [{"frame": k, "share": round(v / total, 3)} for k, v in leaves.most_common(15)] if total else [],
    }


def _stage(frames: list[str]) -> str:
    # The innermost frame that belongs to a stage names the work (a socket write inside the client is the client's).
    for frame in reversed(frames):
        for name, needles in STAGES:
            if any(needle in frame for needle in needles):
                return name
    return "other (threads, event loop, GC)"


def _short(frame: str) -> str:
    # "func (path/to/module.py:123)" -> "func (module.py)"
    func, _, where = frame.partition(" (")
    return f"{func} ({Path(where.split(':')[0]).name})" if where else func


def run(profile: bool = True, profile_out: Path = PROFILE_OUT) -> dict[str, Any]:
    """Ingest DL19, judge it against the instant server (timed), then again under py-spy; return the result."""
    with (
        tempfile.TemporaryDirectory(prefix="peras-bench-") as tmp_name,
        prefect_server(Path(tmp_name) / "prefect") as api_url,
        fake_openai_process() as base_url,
    ):
        tmp = Path(tmp_name)
        warehouse = tmp / "timed" / "peras.duckdb"
        env = peras_env(tmp / "prefect", api_url, warehouse)
        timed(peras_command("ingest", COLLECTION), env)
        profiled_warehouse = tmp / "profiled" / "peras.duckdb"
        profiled_warehouse.parent.mkdir()
        shutil.copy(warehouse, profiled_warehouse)
        print(f"judging {COLLECTION} x {PERSONALITIES} personalities against the instant server ...", flush=True)
        wall, cpu, output = timed(peras_command(*judge_args(base_url, "bench-overhead")), env)
        n = count_judgments(warehouse, "bench-overhead")
        shards = [f for f in (warehouse.parent / "shards").rglob("*") if f.is_file()]
        storage = {"warehouse_bytes": warehouse.stat().st_size, "shards_bytes": sum(f.stat().st_size for f in shards)}
        profile = (
            profile_run(
                peras_command(*judge_args(base_url, "bench-overhead")),
                peras_env(tmp / "prefect", api_url, profiled_warehouse),
                profile_out,
            )
            if profile
            else {"skipped": "--no-profile"}
        )
    rate = n / wall
    return {
        "versions": versions(),
        "workload": {
            "collection": COLLECTION,
            "personalities": PERSONALITIES,
            "cot": "without",
            "confidence_method": "verbalized",
            "judgments": n,
            "requests": 2 * n,
        },
        "wall_s": round(wall, 2),
        "cpu_s_peras": round(cpu, 2),
        "judgments_per_s": round(rate, 1),
        "requests_per_s": round(2 * rate, 1),
        "storage_after_run": storage | {"warehouse_bytes_per_judgment": round(storage["warehouse_bytes"] / n)},
        "cli_output_tail": output.strip().splitlines()[-8:],
        "profile": profile | {"collapsed_stacks": str(profile_out)} if profile else profile,
        "headline": [
            headline(
                "pipeline overhead (instant server)",
                rate,
                "judg/s",
                f">= {TARGET_PER_S:,.0f} judg/s",
                rate >= TARGET_PER_S,
            )
        ],
    }


def main() -> None:
    """Run, print the table and where the time went, write the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-profile", action="store_true", help="skip the py-spy run")
    args = parser.parse_args()
    started = machine()
    result = run(profile=not args.no_profile)
    print(
        f"{result['workload']['judgments']:,} judgments in {result['wall_s']} s "
        f"({result['judgments_per_s']:,} judgments/s; peras used {result['cpu_s_peras']} CPU s)"
    )
    for stage, share in result["profile"].get("stage_share", {}).items():
        print(f"  {share:6.1%}  {stage}")
    finish("overhead", result, started)


if __name__ == "__main__":
    main()
