"""Do the score intervals of tasks/evaluate/intervals.py cover? DL21's 60 distinct systems, simulated LLM judges.

Real LLM labels on DL21's pool do not exist here, so each seed simulates one: the per-grade confusion matrix
P(LLM label | human grade) of one of the 33 real LLMJudge submissions (their labels against the human labels of the
4,423 LLMJudge test pairs; labels past 3 clipped to 3, as `--out-of-range clip` does), applied to every pair of
DL21's human qrels (seed s uses submission s mod 33, sorted by name). For each share of the pool (2%, 5%, 10%,
20%) a human sample is drawn (draw_human_sample, the same seed) and every system gets a 90% interval per method;
the truth is its nDCG@10 under the full human qrels (ir_measures). The simulated judge has no confidences: the
calibrated variant gets one confidence for every pair, so it calibrates per LLM label only.

    PYTHONPATH=. .venv/bin/python bench/bench_trust_coverage.py [--seeds 33] [--share 0.02 ...]

Writes bench/results/trust-coverage-<date>.json (with the command); docs/evaluate.md's coverage table is rendered
from it by `coverage_table` (tests/test_evaluate_intervals_doc.py checks the doc against the committed result).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from bench.common import RESULTS, finish, headline, machine, versions
from peras.settings import load_settings
from tasks.evaluate.intervals import IntervalSpec, draw_human_sample, pool_intervals
from tasks.evaluate.intervals_input import prepare_pool, prepare_systems
from tasks.evaluate.ranking import score_systems
from tasks.shared.readers import read_qrels
from tasks.shared.run_files import read_runs

NAME = "trust-coverage"
SHARES = (0.02, 0.05, 0.10, 0.20)
MEASURE = "nDCG@10"
ALPHA = 0.10
GRADES = 4
# The 63 official DL21 submissions less their near-duplicates (../shared/data/README.md): pash_f2 and pash_f3 equal
# pash_f1 in the top 10 of every judged topic, pash_r3 is close to pash_r2; the three rankllm-* first-stage lists
# are not official submissions (and rankllm-BM25 equals p_bm25).
LEFT_OUT = ("pash_f2", "pash_f3", "pash_r3", "rankllm-BM25", "rankllm-BM25_RM3", "rankllm-SPLADE_P_P_ENSEMBLE_DISTIL")


def human_qrels(data: Path) -> pl.DataFrame:
    """DL21's human qrels: query_id, doc_id, relevance."""
    rows = read_qrels(data / "dl21" / "2021.qrels.pass.final.txt").qrels
    return pl.DataFrame(
        [(r.query_id, r.doc_id, r.relevance) for r in rows], schema=["query_id", "doc_id", "relevance"], orient="row"
    )


def distinct_runs(data: Path, topics: pl.Series) -> pl.DataFrame:
    """The 60 distinct systems' runs on the judged topics, each named by its file (the rankllm files share a tag)."""
    frames = []
    for path in sorted((data / "dl21" / "runs").glob("*.run.gz")):
        name = path.name.removesuffix(".run.gz")
        if name not in LEFT_OUT:
            run = read_runs([path]).filter(pl.col("query_id").is_in(topics.implode()))
            frames.append(run.with_columns(system=pl.lit(name)))
    return pl.concat(frames)


def confusions(data: Path) -> dict[str, np.ndarray]:
    """Per LLMJudge submission, P(label | human grade) on the test pairs (rows: human grade 0-3)."""
    schema = {"query_id": pl.String, "x": pl.String, "doc_id": pl.String, "relevance": pl.Int64}

    def read(path: Path) -> pl.DataFrame:
        return pl.read_csv(path, separator=" ", has_header=False, schema=schema).drop("x")

    human = read(data / "llmjudge" / "llmjudge_test_qrel_idx.txt")
    out = {}
    for path in sorted((data / "llmjudge" / "judge-runs").glob("*.txt")):
        llm = read(path)
        both = human.join(llm, on=["query_id", "doc_id"], suffix="_llm")
        matrix = np.zeros((GRADES, GRADES))
        np.add.at(matrix, (both["relevance"].to_numpy(), np.clip(both["relevance_llm"].to_numpy(), 0, 3)), 1.0)
        out[path.stem] = matrix / matrix.sum(axis=1, keepdims=True)
    return out


def simulate(qrels: pl.DataFrame, confusion: np.ndarray, rng: np.random.Generator) -> pl.DataFrame:
    """LLM labels for every pair: each drawn from the confusion row of its human grade."""
    cumulative = confusion.cumsum(axis=1)[qrels["relevance"].to_numpy()]
    labels = (rng.random((qrels.height, 1)) > cumulative).sum(axis=1)
    return qrels.with_columns(relevance=pl.Series(np.minimum(labels, GRADES - 1)))


def one_seed(seed: int, qrels, confusion, systems, truth: np.ndarray, shares) -> list[dict[str, Any]]:
    """Coverage and width per share and method for one simulated judge (one row per share x method)."""
    llm = simulate(qrels, confusion, np.random.default_rng(seed))
    confidence = llm.with_columns(confidence=pl.lit(100.0))
    rows = []
    for share in shares:
        sample = draw_human_sample(qrels, share, seed)
        pool = prepare_pool(llm, sample, MEASURE)
        found = pool_intervals(pool, systems, IntervalSpec(MEASURE, ALPHA), confidence)
        for (method,), part in found.partition_by("method", as_dict=True, maintain_order=True).items():
            lower, upper = part["lower"].to_numpy(), part["upper"].to_numpy()
            rows.append(
                {
                    "seed": seed,
                    "share": share,
                    "method": method,
                    "covered": int(((lower <= truth) & (truth <= upper)).sum()),
                    "systems": len(truth),
                    "mean_width": float((upper - lower).mean()),
                    "mean_abs_error": float(np.abs(part["estimate"].to_numpy() - truth).mean()),
                }
            )
    return rows


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per share and method: coverage over seeds x systems, mean width, mean |estimate - truth|."""
    frame = pl.DataFrame(rows)
    summary = frame.group_by("share", "method", maintain_order=True).agg(
        coverage=pl.col("covered").sum() / pl.col("systems").sum(),
        worst_seed_coverage=(pl.col("covered") / pl.col("systems")).min(),
        mean_width=pl.col("mean_width").mean(),
        mean_abs_error=pl.col("mean_abs_error").mean(),
        seeds=pl.len(),
    )
    return summary.sort("share", "method").to_dicts()


def coverage_table(summary: list[dict[str, Any]]) -> str:
    """The markdown table docs/evaluate.md shows: one row per share, coverage and width per method."""
    methods = ("ppi", "calibrated_ppi", "human_only")
    by = {(r["share"], r["method"]): r for r in summary}
    head = "| human sample | " + " | ".join(f"{m} coverage | {m} width" for m in methods) + " |"
    lines = [head, "|---" * (1 + 2 * len(methods)) + "|"]
    for share in sorted({r["share"] for r in summary}):
        cells = [f"{by[share, m]['coverage']:.3f} | {by[share, m]['mean_width']:.3f}" for m in methods]
        lines.append(f"| {share:.0%} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def run(seeds: int, shares: tuple[float, ...]) -> dict[str, Any]:
    """Every seed and share; the per-seed rows, the summary and the headline."""
    data = load_settings().data_dir
    start = time.perf_counter()
    qrels = human_qrels(data)
    runs = distinct_runs(data, qrels["query_id"].unique())
    judges = confusions(data)
    scores = score_systems(runs, qrels, [MEASURE]).filter(pl.col("query_id") == "all")
    systems = prepare_systems(runs, prepare_pool(qrels, qrels.head(2).vstack(qrels.tail(2)), MEASURE))
    truth = scores.sort("system")["value"].to_numpy()
    assert scores.sort("system")["system"].to_list() == systems.names
    loaded = time.perf_counter() - start
    names = sorted(judges)
    rows = []
    for seed in range(seeds):
        rows += one_seed(seed, qrels, judges[names[seed % len(names)]], systems, truth, shares)
    summary = summarise(rows)
    ppi = [r for r in summary if r["method"] == "ppi"]
    alone = {r["share"]: r["mean_width"] for r in summary if r["method"] == "human_only"}
    return {
        "command": " ".join(["PYTHONPATH=. .venv/bin/python", *sys.argv]),
        "versions": versions("ir-measures", "scipy"),
        "n_systems": len(systems.names),
        "n_pairs": qrels.height,
        "judges": names,
        "seeds": seeds,
        "shares": list(shares),
        "measure": MEASURE,
        "alpha": ALPHA,
        "load_s": round(loaded, 1),
        "total_s": round(time.perf_counter() - start, 1),
        "summary": summary,
        "per_seed": rows,
        "headline": [
            headline(f"PPI coverage at {r['share']:.0%}", r["coverage"], "", ">= 0.90", r["coverage"] >= 0.9)
            for r in ppi
        ]  # fmt: skip
        + [
            headline(
                f"PPI / human-only width at {r['share']:.0%}",
                r["mean_width"] / alone[r["share"]],
                "x",
                "< 1",
                r["mean_width"] < alone[r["share"]],
            )
            for r in ppi
        ],  # fmt: skip
    }


def main() -> None:
    """Run, print the coverage table, write the JSON result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=33, help="simulated judges (one per seed; default 33)")
    parser.add_argument("--share", type=float, action="append", help="human sample shares (default 2/5/10/20%%)")
    args = parser.parse_args()
    started = machine()
    result = run(args.seeds, tuple(args.share or SHARES))
    print(coverage_table(result["summary"]))
    finish(NAME, result, started)


if __name__ == "__main__":
    assert RESULTS  # the results folder bench.common writes to
    main()
