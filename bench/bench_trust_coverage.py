"""Do the score intervals of tasks/evaluate/intervals.py cover? DL21's 60 distinct systems, simulated LLM judges.

Real LLM labels on DL21's pool do not exist here, so each seed simulates one: the per-grade confusion matrix
P(LLM label | human grade) of one of the 33 real LLMJudge submissions (their labels against the human labels of the
4,423 LLMJudge test pairs; labels past 3 clipped to 3, as `--out-of-range clip` does), applied to every pair of
DL21's human qrels (seed s uses submission s mod 33, sorted by name). For each share of the pool (2%, 5%, 10%,
20%) a human sample is drawn (draw_human_sample: by topic, the same seed) and every system gets a 90% interval per
method; the truth is its nDCG@10 under the full human qrels (ir_measures). The simulated judge has no confidences:
the calibrated variant gets one confidence for every pair, so it calibrates per LLM label only. Also Kendall's tau
of the systems (human vs LLM labels) with bootstrap intervals over topics, checked against tau on all topics.

    PYTHONPATH=. .venv/bin/python bench/bench_trust_coverage.py [--seeds 33] [--share 0.02 ...]   # ~4 min
    PYTHONPATH=. .venv/bin/python bench/bench_trust_coverage.py --doc bench/results/trust-coverage-DATE.json

Writes bench/results/trust-coverage-<date>.json (with the command), then docs/evaluate.md's `bench-generated`
tables from the newest result; tests/test_bench_trust_coverage.py checks the doc against the committed result.
Data from ../shared/data (PERAS_DATA_DIR).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from bench.common import RESULTS, ROOT, finish, headline, machine, versions
from peras.settings import load_settings
from tasks.evaluate.intervals import IntervalSpec, draw_human_sample, pool_intervals
from tasks.evaluate.intervals_input import Pool, Systems, prepare_pool, prepare_systems
from tasks.evaluate.ranking import score_systems
from tasks.shared.readers import read_qrels
from tasks.shared.run_files import read_runs

NAME = "trust-coverage"
SHARES = (0.02, 0.05, 0.10, 0.20)
MEASURE = "nDCG@10"
DOC = ROOT / "docs" / "evaluate.md"
DOC_BLOCK = re.compile(
    r"(<!-- bench-generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- end bench-generated -->)", re.S
)
ALPHA = 0.10
GRADES = 4
TAU_RESAMPLES = 1000
# The 63 official DL21 submissions less their near-duplicates (../shared/data/README.md): pash_f2 and pash_f3 equal
# pash_f1 in the top 10 of every judged topic, pash_r3 is close to pash_r2; the three rankllm-* first-stage lists
# are not official submissions (and rankllm-BM25 equals p_bm25).
LEFT_OUT = ("pash_f2", "pash_f3", "pash_r3", "rankllm-BM25", "rankllm-BM25_RM3", "rankllm-SPLADE_P_P_ENSEMBLE_DISTIL")


def human_qrels(data: Path) -> pl.DataFrame:
    """DL21's human qrels: query_id, doc_id, relevance, sorted by query_id, doc_id."""
    rows = read_qrels(data / "dl21" / "2021.qrels.pass.final.txt").qrels
    return pl.DataFrame(
        [(r.query_id, r.doc_id, r.relevance) for r in rows], schema=["query_id", "doc_id", "relevance"], orient="row"
    ).sort("query_id", "doc_id")  # the pool's order: simulated labels line up with its arrays


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


def one_seed(seed: int, qrels, confusion, base: tuple[Pool, Systems, np.ndarray], truth: np.ndarray, shares):
    """Coverage and width per share and method for one simulated judge (one row per share x method), and tau's.

    base: the pool of the human labels, the systems, their per-topic scores under the human labels."""
    pool, systems, human_scores = base
    llm = simulate(qrels, confusion, np.random.default_rng(seed))
    confidence = llm.with_columns(confidence=pl.lit(100.0))
    llm_scores = topic_scores(pool, systems, np.searchsorted(pool.grades, llm["relevance"].to_numpy()))
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
    return rows, tau_interval(seed, human_scores, llm_scores)


def topic_scores(pool: Pool, systems: Systems, grade: np.ndarray) -> np.ndarray:
    """nDCG@10 per system and topic (S, Q) when the pool's pairs have these grade indices (exact: whole counts)."""
    dcg = (systems.weight * pool.gain[grade]) @ pool.topic_matrix
    ideal, _ = pool.ideal(pool.topic_matrix.T @ pool.at_least[grade])
    return np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), 0.0)


def kendall_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between the rows of x and of y (B, S): one value per row (scipy's on each row, tested)."""
    i, j = np.triu_indices(x.shape[1], k=1)
    dx, dy = np.sign(x[:, i] - x[:, j]), np.sign(y[:, i] - y[:, j])
    untied = np.sqrt((dx != 0).sum(axis=1) * (dy != 0).sum(axis=1).astype(float))
    return (dx * dy).sum(axis=1) / untied


def bootstrap_tau(rng: np.random.Generator, human: np.ndarray, llm: np.ndarray, topics: np.ndarray) -> np.ndarray:
    """The 5th and 95th percentiles of tau over TAU_RESAMPLES resamples (with replacement) of `topics`."""
    draws = topics[rng.integers(0, topics.size, size=(TAU_RESAMPLES, topics.size))]
    weights = np.zeros((TAU_RESAMPLES, human.shape[1]))
    np.add.at(weights, (np.arange(TAU_RESAMPLES)[:, None], draws), 1.0 / topics.size)
    return np.quantile(kendall_rows(weights @ human.T, weights @ llm.T), [ALPHA / 2, 1 - ALPHA / 2])


def tau_interval(seed: int, human: np.ndarray, llm: np.ndarray) -> dict[str, Any]:
    """Do bootstrap intervals of tau (over all topics; over a seeded half of them) contain tau on all topics?

    human, llm: per-topic scores (S, Q); tau: Kendall's tau-b between the systems' mean scores under human and LLM
    labels. Per scope, the percentile interval (the 5th and 95th percentiles of the resampled taus) and the basic
    one (2 tau - those percentiles, which undoes a bias of the resampled taus). Over every topic an interval should
    at least contain the tau it resamples; over half the topics it is what a study of fewer topics would report.
    """
    rng = np.random.default_rng([seed, 1])
    n_topics = human.shape[1]
    truth = float(kendall_rows(human.mean(axis=1)[None], llm.mean(axis=1)[None])[0])
    found: dict[str, Any] = {"seed": seed, "tau_all_topics": truth}
    scopes = {"all_topics": np.arange(n_topics), "half": np.sort(rng.choice(n_topics, n_topics // 2, replace=False))}
    for scope, topics in scopes.items():
        point = float(kendall_rows(human[:, topics].mean(axis=1)[None], llm[:, topics].mean(axis=1)[None])[0])
        low, high = bootstrap_tau(rng, human, llm, topics)
        found[f"{scope}_tau"] = point
        for kind, (lower, upper) in {"percentile": (low, high), "basic": (2 * point - high, 2 * point - low)}.items():
            found[f"{scope}_{kind}"] = [float(lower), float(upper), bool(lower <= truth <= upper)]
    return found


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


def tau_table(result: dict[str, Any]) -> str:
    """The markdown table of tau's bootstrap intervals: per scope (all topics, half of them) and kind."""
    tau = result["tau_summary"]
    lines = [
        "| bootstrap over | interval | contains tau on all topics | mean width | mean tau there |",
        "|---|---|---|---|---|",
    ]
    for scope, title in (("all_topics", "all 53 topics"), ("half", "a seeded half (26 topics)")):
        for kind in ("percentile", "basic"):
            found = tau[f"{scope}_{kind}"]
            lines.append(f"| {title} | {kind} | {found['coverage']:.3f} | {found['mean_width']:.3f} | "
                         f"{tau[f'{scope}_mean_tau']:.3f} |")  # fmt: skip
    return "\n".join(lines)


def doc_tables(result: dict[str, Any], name: str) -> dict[str, str]:
    """docs/evaluate.md's generated blocks from one result file (`name`: its path in the repo)."""
    source = f"From `{name}` ({result['seeds']} seeds, {result['n_systems']} systems), made by `{result['command']}`:"
    return {
        "trust-coverage": f"{source}\n\n{coverage_table(result['summary'])}",
        "trust-tau": tau_table(result),
    }


def render_doc(doc: str, tables: dict[str, str]) -> str:
    """The doc with each of this benchmark's blocks replaced (not the blocks scripts/evaluate_doc_numbers.py owns)."""
    return DOC_BLOCK.sub(lambda m: f"{m[1]}{tables[m['name']]}\n{m[4]}", doc)


def latest_result() -> Path:
    """The newest committed result of this benchmark (names sort by date, then serial)."""

    def key(path: Path) -> tuple[str, int]:
        stem = path.stem.removeprefix(f"{NAME}-")  # 2026-12-02 or 2026-12-02-2
        return stem[:10], int(stem[11:] or 1)

    return max(RESULTS.glob(f"{NAME}-*.json"), key=key)


def write_doc(path: Path) -> None:
    """Rewrite docs/evaluate.md's blocks from the result file `path`."""
    result = json.loads(path.read_text(encoding="utf-8"))
    tables = doc_tables(result, str(path.resolve().relative_to(ROOT)))
    DOC.write_text(render_doc(DOC.read_text(encoding="utf-8"), tables), encoding="utf-8")


def run(seeds: int, shares: tuple[float, ...]) -> dict[str, Any]:
    """Every seed and share; the per-seed rows, the summary and the headline."""
    data = load_settings().data_dir
    start = time.perf_counter()
    qrels = human_qrels(data)
    runs = distinct_runs(data, qrels["query_id"].unique())
    judges = confusions(data)
    scores = score_systems(runs, qrels, [MEASURE]).filter(pl.col("query_id") == "all")
    pool = prepare_pool(qrels, qrels.head(2).vstack(qrels.tail(2)), MEASURE)  # the human labels' pool
    systems = prepare_systems(runs, pool)
    truth = scores.sort("system")["value"].to_numpy()
    assert scores.sort("system")["system"].to_list() == systems.names
    human_scores = topic_scores(pool, systems, pool.llm)
    assert np.abs(human_scores.mean(axis=1) - truth).max() < 1e-9  # the arrays score as ir_measures does
    loaded = time.perf_counter() - start
    names = sorted(judges)
    rows, taus = [], []
    for seed in range(seeds):
        base = (pool, systems, human_scores)
        found, tau = one_seed(seed, qrels, judges[names[seed % len(names)]], base, truth, shares)
        rows += found
        taus.append(tau | {"judge": names[seed % len(names)]})
    summary = summarise(rows)
    tau_summary: dict[str, Any] = {"resamples": TAU_RESAMPLES}
    for scope in ("all_topics", "half"):
        tau_summary[f"{scope}_mean_tau"] = float(np.mean([t[f"{scope}_tau"] for t in taus]))
        for kind in ("percentile", "basic"):
            found = np.array([t[f"{scope}_{kind}"] for t in taus], dtype=float)
            tau_summary[f"{scope}_{kind}"] = {
                "coverage": float(found[:, 2].mean()),
                "mean_width": float((found[:, 1] - found[:, 0]).mean()),
            }
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
        "tau_summary": tau_summary,
        "per_seed": rows,
        "tau_per_seed": taus,
        "headline": headlines(summary, tau_summary),
    }


def headlines(summary: list[dict[str, Any]], tau: dict[str, Any]) -> list[dict[str, Any]]:
    """PPI's coverage and width against the human-only interval's per share, and tau's coverage."""
    alone = {r["share"]: r["mean_width"] for r in summary if r["method"] == "human_only"}
    rows = []
    for r in (r for r in summary if r["method"] == "ppi"):
        share, ratio = f"{r['share']:.0%}", r["mean_width"] / alone[r["share"]]
        rows.append(headline(f"PPI coverage at {share}", r["coverage"], "", ">= 0.90", r["coverage"] >= 0.9))
        rows.append(headline(f"PPI / human-only width at {share}", ratio, "x", "< 1", ratio < 1))
    for scope in ("all_topics", "half"):
        for kind in ("percentile", "basic"):
            value = tau[f"{scope}_{kind}"]["coverage"]
            name = f"tau {kind} interval ({scope.replace('_', ' ')}) covers"
            rows.append(headline(name, value, "", ">= 0.90", value >= 0.9))
    return rows


def main() -> None:
    """Run, print the coverage table, write the JSON result and docs/evaluate.md's tables from it."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=33, help="simulated judges (one per seed; default 33)")
    parser.add_argument("--share", type=float, action="append", help="human sample shares (default 2/5/10/20%%)")
    parser.add_argument("--doc", type=Path, help="only rewrite docs/evaluate.md's tables from this result file")
    args = parser.parse_args()
    if args.doc:
        write_doc(args.doc)
        return
    started = machine()
    result = run(args.seeds, tuple(args.share or SHARES))
    print(coverage_table(result["summary"]))
    print(tau_table(result))
    finish(NAME, result, started)
    write_doc(latest_result())


if __name__ == "__main__":
    main()
