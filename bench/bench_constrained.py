"""Benchmark: what constrained decoding costs and what it buys on the embedded llama.cpp server (issue 30).

The same stage commands on the shipped sample, each run twice in one fresh warehouse: `--answer-format free` and
`--answer-format constrained` (the embedded server's llama.cpp grammars and JSON schemas), under different run names
(a constrained and a free request are different requests: nothing is shared). For each run: wall time, whether the
gate passed, and from the run's request rows, per prompt: answers, requests sent (regenerations included), answers
unreadable at the first attempt and after the regenerations, completion tokens; judgments/s and tokens/s.

    .venv/bin/python bench/bench_constrained.py [--workloads pairwise,judge-nocot,...] [--pairs N] [--cot-pairs N]
        [--cell-timeout S] [--warehouse PATH]
    # writes bench/results/constrained-<date>.json; workloads: see WORKLOADS. Every command runs under `nice -n 10`;
    # a command still running after --cell-timeout s is stopped and recorded so (its stored answers still count).
    # judge-nocot also gives Cohen's kappa of its free and constrained labels against the sample's qrels.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_ceiling import sample_warehouse  # noqa: E402
from bench.common import RESULTS, finish, headline, machine, peras_command, versions  # noqa: E402

FORMATS = ("free", "constrained")
JUDGE = ("judge_runs", "run_id")
# name -> (the command's arguments before the run name and sizes, its runs table, the table's run id column)
WORKLOADS: dict[str, tuple[list[str], tuple[str, str]]] = {
    "judge-nocot": (["judge", "sample", "--cot", "without", "--personality", "default"], JUDGE),
    "judge-cot": (["judge", "sample", "--cot", "with", "--personality", "default"], JUDGE),
    **{
        f"judge-{method}": (
            ["judge", "sample", "--cot", "without", "--personality", "default", "--confidence-method", method],
            JUDGE,
        )
        for method in ("self", "certainty", "logprob", "sampling")
    },
    "pairwise": (
        ["pairwise", "sample", "--pairs-per-topic", "1", "--personality", "default"],
        ("pairwise_runs", "pairwise_run_id"),
    ),
    **{
        f"pairwise-{prompt}": (
            ["pairwise", "sample", "--pairs-per-topic", "1", "--personality", "default", "--prompt", prompt],
            ("pairwise_runs", "pairwise_run_id"),
        )
        for prompt in ("tie", "self", "all")
    },
    # the eleven built-in personas (the check has no persona filter): one item per domain, two samples, and a
    # request budget (--budget) stop it early; the answers it got are counted
    "personas-check": (["personas", "check", "--samples", "2"], ("persona_check_runs", "check_run_id")),
    # the fuser over the free judge-nocot run's judgments (run it first)
    "fuse": (["fuse", "--collection", "sample", "--runs", "bench-free-judge-nocot"], ("fuse_runs", "fuse_run_id")),
    # one topic, one setting; the sample's topics have fewer than 12 passages per level
    "priming": (
        ["priming", "sample", "--limit-topics", "1", "--min-per-level", "1", "--setting", "2,2"],
        ("priming_runs", "priming_run_id"),
    ),
}


def sizes(workload: str, options: argparse.Namespace) -> list[str]:
    """How small a workload is asked (the command's own size options)."""
    if workload == "judge-cot":
        return ["--limit-pairs", str(options.cot_pairs)]
    if workload == "judge-sampling":
        return ["--limit-pairs", str(options.pairs), "--n-samples", "3"]
    if workload.startswith("judge"):
        return ["--limit-pairs", str(options.pairs)]
    if workload == "personas-check":
        return ["--items-per-domain", "1", "--request-budget", str(options.budget)]
    if workload == "fuse":
        return ["--pairs", str(options.pairs)]
    if workload == "priming":
        return ["--trials", "2"]
    return []


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


PURPOSES = {"bfi2": "bfi2_item", "batch": "batch_umbrela", "fuse": "fuser"}


def run_one(
    env: dict[str, str], warehouse: Path, workload: str, answer_format: str, options: argparse.Namespace
) -> dict[str, Any]:
    """One stage command under one answer format; its wall time, exit, load and per-prompt counts. A command still
    running after --cell-timeout seconds is stopped (its process group) and recorded as not finished."""
    args, (runs_table, run_id_column) = WORKLOADS[workload]
    name = f"bench-{answer_format}-{workload}"
    command = peras_command(*args, *sizes(workload, options), "--run-name", name, "--answer-format", answer_format)
    print(f"{workload} {answer_format}: {' '.join(command[1:])} ...", flush=True)
    load_before = round(os.getloadavg()[0], 2)
    started = time.perf_counter()
    # Output to files, not pipes: a process the command leaves behind (Prefect's ephemeral server) would hold a pipe
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        process = subprocess.Popen(  # noqa: S603
            ["nice", "-n", "10", *command], env=env, stdout=out, stderr=err, text=True, start_new_session=True
        )
        try:
            process.wait(timeout=options.cell_timeout)
            stopped = False
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGINT)  # as Ctrl-C: what was answered is kept
            process.wait()
            stopped = True
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    said = [line for line in stderr.splitlines() if "answer format:" in line]
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        found = con.execute(
            f"select {run_id_column} from {runs_table} where run_name = ?",  # noqa: S608
            [name],
        ).fetchone()
        rows = con.execute(
            "select purpose, messages, parse_status, attempts, http_requests, completion_tokens from llm_requests"
            " where run_id = ?",
            [found[0] if found else ""],
        ).fetchall()
    finally:
        con.close()
    prompts: dict[str, dict[str, int]] = {}
    for purpose, messages, status, attempts, http, tokens in rows:  # http: requests sent, retries included
        content = json.loads(messages)[-1]["content"] if isinstance(messages, str) else messages[-1]["content"]
        counts = prompts.setdefault(
            PURPOSES.get(purpose) or prompt_of(purpose, content),
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
        "exit_code": None if stopped else process.returncode,
        "stopped_after_s": options.cell_timeout if stopped else None,
        "last_line": (stderr.strip().splitlines() or stdout.strip().splitlines() or [""])[-1][:300],
        "answer_format_said": said[-1].split("answer format:", 1)[1].strip() if said else None,
        "wall_s": round(wall, 1),
        "load_average_1min": [load_before, round(os.getloadavg()[0], 2)],
        "answers": answers,
        "answers_per_s": round(answers / wall, 3),
        "completion_tokens_per_s": round(tokens / wall, 2),
        "prompts": prompts,
    }
    print(f"  {json.dumps(result)}", flush=True)
    return result


def kappa(warehouse: Path) -> dict[str, Any]:
    """Cohen's kappa (unweighted, 4 labels) of judge-nocot's free and constrained labels against the sample's qrels,
    and between the two, over the pairs both read."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = con.execute(
            "select q.query_id, q.doc_id, q.relevance, f.label, c.label from qrels q"
            " join judgments f on f.query_id = q.query_id and f.doc_id = q.doc_id"
            " join judgments c on c.query_id = q.query_id and c.doc_id = q.doc_id"
            " join judge_runs fr on fr.run_id = f.run_id and fr.run_name = 'bench-free-judge-nocot'"
            " join judge_runs cr on cr.run_id = c.run_id and cr.run_name = 'bench-constrained-judge-nocot'"
            " where q.collection_id = 'sample' and f.label is not null and c.label is not null"
            " and f.confidence_method = 'verbalized' and c.confidence_method = 'verbalized'"
            " order by q.query_id, q.doc_id"
        ).fetchall()
    finally:
        con.close()
    qrels, free, constrained = ([r[i] for r in rows] for i in (2, 3, 4))
    return {
        "pairs": len(rows),
        "kappa_free_vs_qrels": cohen_kappa(free, qrels),
        "kappa_constrained_vs_qrels": cohen_kappa(constrained, qrels),
        "kappa_free_vs_constrained": cohen_kappa(free, constrained),
        "labels": [{"pair": f"{r[0]}/{r[1]}", "qrel": r[2], "free": r[3], "constrained": r[4]} for r in rows],
    }


def cohen_kappa(a: list[int], b: list[int]) -> float | None:
    """Unweighted Cohen's kappa over labels 0-3 (None without pairs; 1.0 or 0.0 when chance agreement is 1)."""
    n = len(a)
    if n == 0:
        return None
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    chance = sum((a.count(k) / n) * (b.count(k) / n) for k in range(4))
    if chance == 1.0:
        return 1.0 if observed == 1.0 else 0.0
    return round((observed - chance) / (1 - chance), 3)


@contextmanager
def warehouse_of(path: Path | None) -> Iterator[tuple[Path, dict[str, str]]]:
    """An existing warehouse holding the ingested sample (this environment's Prefect), else a fresh one."""
    if path is None:
        with sample_warehouse() as found:
            yield found
    else:
        yield path, {**os.environ, "PERAS_WAREHOUSE": str(path)}


def run(workloads: list[str], options: argparse.Namespace, partial: Path | None = None) -> dict[str, Any]:
    """Every workload free, then constrained, in one warehouse; after each, what is measured so far to `partial`."""
    measured: dict[str, dict[str, Any]] = {}
    agreement: dict[str, Any] | None = None
    with warehouse_of(options.warehouse) as (warehouse, env):
        for workload in workloads:
            measured[workload] = {fmt: run_one(env, warehouse, workload, fmt, options) for fmt in FORMATS}
            if workload == "judge-nocot":
                agreement = kappa(warehouse)
                print(f"  kappa: {json.dumps(agreement)}", flush=True)
            if partial is not None:
                partial.write_text(json.dumps({"runs": measured, "kappa": agreement}, indent=2) + "\n")
    return summarised(workloads, options, measured, agreement)


def summarised(
    workloads: list[str], options: argparse.Namespace, measured: dict[str, Any], agreement: dict[str, Any] | None
) -> dict[str, Any]:
    """The result: sizes, runs, kappa and the headline rows."""
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
    if agreement is not None:
        for key in ("kappa_free_vs_qrels", "kappa_constrained_vs_qrels", "kappa_free_vs_constrained"):
            value = agreement[key]
            rows.append(headline(f"judge-nocot {key}", -9.0 if value is None else value, "", "report", True))
    sized = {w: " ".join(sizes(w, options)) for w in workloads}
    return {
        "versions": versions(),
        "workload": {"collection": "sample", "sizes": sized, "workloads": workloads},
        "runs": measured,
        "kappa": agreement,
        "headline": rows,
    }


def main() -> None:
    """Run, print the table, write the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", default="pairwise,judge-nocot,judge-cot", help=f"of {', '.join(WORKLOADS)}")
    parser.add_argument("--pairs", type=int, default=6, help="judge and fuse workloads: sample pairs [6]")
    parser.add_argument("--cot-pairs", type=int, default=3, help="judge-cot: sample pairs [3]")
    parser.add_argument("--budget", type=int, default=24, help="personas-check: its request budget [24]")
    parser.add_argument("--cell-timeout", type=float, default=900.0, help="stop a command after this many s [900]")
    parser.add_argument("--warehouse", type=Path, help="an existing warehouse with the sample [a fresh one]")
    options = parser.parse_args()
    workloads = options.workloads.split(",")
    unknown = [w for w in workloads if w not in WORKLOADS]
    if unknown:
        raise SystemExit(f"unknown workload {unknown[0]}; known: {', '.join(WORKLOADS)}")
    started = machine()
    finish("constrained", run(workloads, options, RESULTS / "constrained-partial.json"), started)


if __name__ == "__main__":
    main()
