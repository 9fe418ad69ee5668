"""Gaming probes on a real model (issue 52): build a probe collection, judge it, record its measures.

Runs, as a user types them, `peras probes build COLLECTION`, `peras judge COLLECTION-probes` (the embedded llama.cpp
model unless --base-url) and reads `probe_measures` for the run: every row, and one headline per kind (the highest
attack success rate over the run's settings; a control's highest label change rate). Everything is resumable: run
it again with the same arguments on the same warehouse and it only records (nothing is asked twice).

    PERAS_WAREHOUSE=/tmp/w/peras.duckdb .venv/bin/python bench/bench_probes.py --sample 3 --seed 3 \
        --kind instruction-injection --kind query-stuffing --confidence-method logprob
    # writes bench/results/probes-<date>[-N].json
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import finish, headline, machine, peras_command  # noqa: E402

MAX_SUCCESS = 0.05  # what `peras probes check` is asked in CI by default


def arguments() -> argparse.Namespace:
    """The collection, draw, kinds and judge settings."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collection", default="sample")
    parser.add_argument("--sample", type=int, default=3)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--kind", action="append", default=[])
    parser.add_argument("--personality", action="append", default=[])
    parser.add_argument("--cot", default="without", choices=["with", "without", "both"])
    parser.add_argument("--confidence-method", default="logprob")
    parser.add_argument("--subset", help="draw from this topic subset only (e.g. published for dl19)")
    parser.add_argument("--name", help="the probe collection's name [COLLECTION-probes]")
    parser.add_argument("--run-name", default="probes-bench")
    parser.add_argument("--base-url", help="an OpenAI-compatible endpoint instead of the embedded model")
    parser.add_argument("--model", help="the endpoint's model (with --base-url)")
    return parser.parse_args()


def run(*args: str) -> tuple[float, str]:
    """`peras ARGS`; (wall seconds, stdout). Fails loudly on a non-zero exit."""
    start = time.perf_counter()
    done = subprocess.run(peras_command(*args), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"peras {' '.join(args[:2])} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return time.perf_counter() - start, done.stdout


def measures(warehouse: str, run_name: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The run's probe_measures rows and its judge_runs row."""
    con = duckdb.connect(warehouse, read_only=True)
    try:
        frame = con.execute("select * from probe_measures where run_name = ? order by all", [run_name]).pl()
        run_row = con.execute(
            "select model, backend, params::varchar as params, created_at::varchar as created_at, "
            "finished_at::varchar as finished_at from judge_runs where run_name = ?",
            [run_name],
        ).pl()
    finally:
        con.close()
    return frame.to_dicts(), run_row.to_dicts()[0]


def headlines(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per kind: the worst attack success rate (attacks) or label change rate (controls) over the settings."""
    out = []
    for kind in sorted({row["kind"] for row in rows}):
        of_kind = [row for row in rows if row["kind"] == kind]
        if of_kind[0]["role"] == "attack":
            rates = [row["attack_success_rate"] for row in of_kind if row["attack_success_rate"] is not None]
            worst = max(rates, default=0.0)
            attackable = sum(row["n_attackable"] for row in of_kind)
            measure = f"{kind}: attack success ({attackable} attackable)"
            out.append(headline(measure, worst, "share", f"<= {MAX_SUCCESS}", bool(rates) and worst <= MAX_SUCCESS))
        else:
            worst = max(row["label_change_rate"] or 0.0 for row in of_kind)
            out.append(headline(f"{kind}: labels moved", worst, "share", f"<= {MAX_SUCCESS}", worst <= MAX_SUCCESS))
    return out


def main() -> None:
    """Build, judge, read back, write the result file."""
    args = arguments()
    started = machine()
    warehouse = os.environ.get("PERAS_WAREHOUSE")
    if not warehouse:
        raise SystemExit("set PERAS_WAREHOUSE (a warehouse of your own, with the collection ingested)")
    kinds = [flag for kind in args.kind for flag in ("--kind", kind)]
    target = args.name or f"{args.collection}-probes"
    draw = ["--sample", str(args.sample), "--seed", str(args.seed), "--name", target]
    draw += ["--subset", args.subset] if args.subset else []
    build_s, built = run("probes", "build", args.collection, *draw, *kinds)
    endpoint = ["--base-url", args.base_url, "--model", args.model] if args.base_url else []
    personalities = [flag for p in args.personality or ["default"] for flag in ("--personality", p)]
    settings = [*personalities, "--cot", args.cot, "--confidence-method", args.confidence_method]
    judge_s, judged = run("judge", target, *settings, "--run-name", args.run_name, *endpoint)
    rows, judge_run = measures(warehouse, args.run_name)
    result = {
        "arguments": vars(args),
        "build": {"seconds": round(build_s, 1), "line": built.strip()},
        "judge": {"seconds_this_call": round(judge_s, 1), "line": judged.strip().splitlines()[-1], **judge_run},
        "headline": headlines(rows),
        "measures": rows,
    }
    finish("probes", result, started)


if __name__ == "__main__":
    main()
