"""`peras trust` for real on LLMJudge: real LLM labels (submissions to the challenge, imported) and the built runs.

Issue 50 item 5 asks for the trust study run on what exists. LLMJudge has human labels for its whole test pool and
33 real LLM label sets, so each study can be checked against the truth: this ingests LLMJudge into a private
warehouse, imports the chosen submissions, builds the eleven bm25s runs (`peras build-runs`), then runs `peras trust`
for every submission x human-sample share x seed and reads the stored studies back (`trust_systems`,
`trust_summary`): per share and method, how often a system's 90% interval holds its full human nDCG@10, the mean
width, and the mean absolute error of the estimate. The commands are the ones a user types; nothing is simulated.

    .venv/bin/python bench/bench_trust_llmjudge.py [--seeds 10] [--shares 5%,10%,20%] [--judge RMITIR-GPT4o ...]
    # writes bench/results/trust-llmjudge-<date>[-N].json
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import finish, headline, machine, peras_command, peras_env, timed, versions  # noqa: E402
from peras.settings import load_settings  # noqa: E402
from support.prefect_server import prefect_server  # noqa: E402

JUDGES = ("RMITIR-GPT4o", "willia-umbrela1", "NISTRetrieval-instruct0")
COVERAGE_SQL = """
select m.run_name, t.human_sample, s.method, count(*) as n, round(avg(s.covers_human::int), 3) as coverage,
       round(avg(s.width), 3) as mean_width, round(avg(abs(s.estimate - s.human_score)), 3) as mean_abs_error
from trust_systems s join trust_studies t using (study_id) join trust_summary m using (study_id)
group by all order by 1, 2, 3
"""
TAU_SQL = """
select run_name, round(avg(kendall_tau), 3) as kendall_tau, round(avg(tau_ap), 3) as tau_ap,
       round(avg(n_flips), 1) as n_flips
from trust_summary group by all order by 1
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--shares", default="5%,10%,20%")
    parser.add_argument("--judge", action="append", help="a submission's file name without .txt (repeatable)")
    parser.add_argument("--bootstrap", type=int, default=200)
    args = parser.parse_args()
    started = machine()
    judges = args.judge or list(JUDGES)
    data = load_settings().data_dir / "llmjudge" / "judge-runs"
    with tempfile.TemporaryDirectory() as tmp, prefect_server(Path(tmp) / "prefect") as api_url:
        env = peras_env(Path(tmp) / "prefect", api_url, Path(tmp) / "w.duckdb")
        timed(peras_command("ingest", "llmjudge"), env)
        for judge in judges:
            timed(peras_command("import-judgments", str(data / f"{judge}.txt"), "--name", judge, "--collection",
                                "llmjudge"), env)  # fmt: skip
        timed(peras_command("build-runs", "--collection", "llmjudge", "--output-dir", f"{tmp}/runs"), env)
        runs = sorted(str(p) for p in Path(f"{tmp}/runs").glob("*.run"))
        wall: list[float] = []
        for judge in judges:
            for share in args.shares.split(","):
                for seed in range(args.seeds):
                    seconds, _, _ = timed(peras_command("trust", "llmjudge", *runs, "--run", judge, "--human-sample",
                                                        share, "--seed", str(seed), "--bootstrap",
                                                        str(args.bootstrap)), env)  # fmt: skip
                    wall.append(seconds)
        coverage = query(env, COVERAGE_SQL)
        taus = query(env, TAU_SQL)
    rows = [
        headline(
            f"{r['run_name']} {r['human_sample']} {r['method']}: coverage of 90% intervals",
            r["coverage"],
            "share",
            ">= 0.90",
            r["coverage"] >= 0.9,
        )  # fmt: skip
        for r in coverage
    ]
    result = {
        "benchmark": "trust-llmjudge",
        "versions": versions(),
        "args": vars(args) | {"judge": judges},
        "systems": [Path(r).stem for r in runs],
        "coverage": coverage,
        "mean_tau": taus,
        "trust_command_seconds": {"median": sorted(wall)[len(wall) // 2], "n": len(wall)},
        "headline": rows,
    }
    finish("trust-llmjudge", result, started)


def query(env: dict[str, str], sql: str) -> list[dict[str, Any]]:
    """Rows of a query on the bench's warehouse, through `peras sql --format json`."""
    _, _, out = timed(peras_command("sql", sql, "--format", "json"), env)
    return list(json.loads(out))


if __name__ == "__main__":
    main()
