"""Benchmark: what constrained decoding costs and what it buys on the embedded llama.cpp server (issue 30).

The same stage commands on the shipped sample, each run twice in one fresh warehouse: `--answer-format free` and
`--answer-format constrained` (the embedded server's llama.cpp grammars and JSON schemas), under different run names
(a constrained and a free request are different requests: nothing is shared). For each run: wall time, whether the
gate passed, and from the run's request rows, per prompt: answers, requests sent (regenerations included), answers
unreadable at the first attempt and after the regenerations, completion tokens; judgments/s and tokens/s.

    .venv/bin/python bench/bench_constrained.py [--workloads pairwise,judge-nocot,...] [--pairs N]
    # writes bench/results/constrained-<date>.json; workloads: see WORKLOADS
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_ceiling import sample_warehouse  # noqa: E402
from bench.common import finish, headline, machine, peras_command, versions  # noqa: E402

FORMATS = ("free", "constrained")
# name -> (the command's arguments before the run name, its runs table, its run id column, its items table)
WORKLOADS: dict[str, tuple[list[str], str, str, str]] = {
    "pairwise": (
        ["pairwise", "sample", "--pairs-per-topic", "1", "--personality", "default"],
        "pairwise_runs",
        "pairwise_run_id",
        "pairwise_answers",
    ),
    "pairwise-all": (
        ["pairwise", "sample", "--pairs-per-topic", "1", "--personality", "default", "--prompt", "all"],
        "pairwise_runs",
        "pairwise_run_id",
        "pairwise_answers",
    ),
    "judge-nocot": (["judge", "sample", "--cot", "without", "--personality", "default"], "judge_runs", "", ""),
    "judge-cot": (["judge", "sample", "--cot", "with", "--personality", "default"], "judge_runs", "", ""),
    "judge-self": (
        ["judge", "sample", "--cot", "without", "--personality", "default", "--confidence-method", "self"],
        "judge_runs",
        "",
        "",
    ),
    "judge-certainty": (
        ["judge", "sample", "--cot", "without", "--personality", "default", "--confidence-method", "certainty"],
        "judge_runs",
        "",
        "",
    ),
    "judge-logprob": (
        ["judge", "sample", "--cot", "without", "--personality", "default", "--confidence-method", "logprob"],
        "judge_runs",
        "",
        "",
    ),
}


def prompt_of(purpose: str, content: str) -> str:
    """Which prompt a stored request asked (its purpose and the prompt's own words)."""
    if purpose == "pairwise":
        return (
            "pairwise_tie"
            if "[[C]]" in content
            else "self_pairwise"
            if '"selected_output"' in content
            else ("pairwise_certainty")
        )
    if purpose == "label":
        joint = "self" if '"confidence_score": number' in content else "certainty" if "[[X]]" in content else "label"
        return f"{joint}_{'cot' if 'Split this problem into steps' in content else 'nocot'}"
    return purpose


def run_one(env: dict[str, str], warehouse: Path, workload: str, answer_format: str, pairs: int) -> dict[str, Any]:
    """One stage command under one answer format; its wall time, gate and per-prompt counts."""
    args, runs_table, _, _ = WORKLOADS[workload]
    name = f"bench-{answer_format}-{workload}"
    limit = ["--limit-pairs", str(pairs)] if args[0] == "judge" else []
    command = peras_command(*args, *limit, "--run-name", name, "--answer-format", answer_format)
    print(f"{workload} {answer_format}: {' '.join(command[1:])} ...", flush=True)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    said = [line for line in done.stderr.splitlines() if "answer format:" in line]
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        run_id = con.execute(f"select * from {runs_table} where run_name = ?", [name]).fetchone()  # noqa: S608
        rows = con.execute(
            "select purpose, messages, parse_status, attempts, http_requests, completion_tokens from llm_requests"
            " where run_id = ?",
            [run_id[0] if run_id else ""],
        ).fetchall()
    finally:
        con.close()
    prompts: dict[str, dict[str, int]] = {}
    for purpose, messages, status, attempts, http, tokens in rows:  # http: requests sent, retries included
        content = json.loads(messages)[-1]["content"] if isinstance(messages, str) else messages[-1]["content"]
        counts = prompts.setdefault(
            prompt_of(purpose, content),
            {"answers": 0, "requests": 0, "unreadable_first": 0, "unreadable_final": 0, "completion_tokens": 0},
        )
        counts["answers"] += 1
        counts["requests"] += int(http or 0)
        counts["unreadable_first"] += int(status != "ok" or (attempts or 0) > 1)
        counts["unreadable_final"] += int(status != "ok")
        counts["completion_tokens"] += int(tokens or 0)
    answers = sum(c["answers"] for c in prompts.values())
    tokens = sum(c["completion_tokens"] for c in prompts.values())
    result = {
        "command": " ".join(command[1:]),
        "exit_code": done.returncode,
        "last_line": (done.stderr.strip().splitlines() or done.stdout.strip().splitlines() or [""])[-1][:300],
        "answer_format_said": said[-1].split("answer format:", 1)[1].strip() if said else None,
        "wall_s": round(wall, 1),
        "answers": answers,
        "answers_per_s": round(answers / wall, 3),
        "completion_tokens_per_s": round(tokens / wall, 2),
        "prompts": prompts,
    }
    print(f"  {json.dumps(result)}", flush=True)
    return result


def run(workloads: list[str], pairs: int) -> dict[str, Any]:
    """Every workload free, then constrained, in one fresh warehouse."""
    measured: dict[str, dict[str, Any]] = {}
    with sample_warehouse() as (warehouse, env):
        for workload in workloads:
            measured[workload] = {fmt: run_one(env, warehouse, workload, fmt, pairs) for fmt in FORMATS}
    rows = []
    for workload, by_format in measured.items():
        free, constrained = by_format["free"], by_format["constrained"]
        for fmt, result in by_format.items():
            first = sum(c["unreadable_first"] for c in result["prompts"].values())
            share = 100 * first / max(1, result["answers"])
            rows.append(headline(f"{workload} {fmt}: unreadable at first attempt", share, "%", "report", True))
        ratio = constrained["answers_per_s"] / free["answers_per_s"] if free["answers_per_s"] else 0.0
        rows.append(headline(f"{workload}: answers/s constrained / free", ratio, "x", "report", True))
        passed = constrained["exit_code"] == 0
        rows.append(headline(f"{workload} constrained: gate passed", float(passed), "", "1", passed))
    return {
        "versions": versions(),
        "workload": {"collection": "sample", "pairs": pairs, "workloads": workloads},
        "runs": measured,
        "headline": rows,
    }


def main() -> None:
    """Run, print the table, write the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="pairwise,judge-nocot,judge-cot", help=f"of {', '.join(WORKLOADS)}")
    parser.add_argument("--pairs", type=int, default=40, help="judge workloads: sample pairs (1-40; default 40)")
    options = parser.parse_args()
    workloads = options.workloads.split(",")
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        raise SystemExit(f"unknown workload {unknown[0]}; known: {', '.join(WORKLOADS)}")
    started = machine()
    finish("constrained", run(workloads, options.pairs), started)


if __name__ == "__main__":
    main()
