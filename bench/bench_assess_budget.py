"""Which pairs should people judge? Every `peras assess plan` strategy x human budget, on LLMJudge and DL21.

Simulated assessors answer with the human qrels: a plan's pairs get their human label, every other pair keeps the
chosen judge's label (the hybrid qrels of tasks/assess/hybrid.py). Per setting (bench/bench_assess_data.py), seed,
strategy and budget (2, 5, 10, 20, 30% of the pool): Cohen's kappa of the hybrid labels against the human ones, and
Kendall's tau and tau-AP of the systems' nDCG@10 ranking under the hybrid qrels against the human qrels' ranking
(tasks/evaluate/ranking.py's tau_ap; nDCG@10 with bench_trust_coverage.topic_scores, checked against ir_measures).
The pairs are picked by tasks/assess/plan.py's own code (next_pairs); seed s chooses the judge (s x 7 mod 33 of the
sorted names) and orders equal scores; the combined strategy is measured with every subset of its signals.

    PYTHONPATH=. .venv/bin/python bench/bench_assess_budget.py [--seeds 5] [--setting dl21 ...]   # ~8 min loaded
    PYTHONPATH=. .venv/bin/python bench/bench_assess_budget.py --doc bench/results/assess-budget-DATE.json

Writes bench/results/assess-budget-<date>.json (with the command), then docs/assess.md's `bench-generated` table.
Data from ../shared/data (PERAS_DATA_DIR).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any
from unittest.mock import patch

import numpy as np
import polars as pl
from sklearn.metrics import cohen_kappa_score

from bench.bench_assess_data import Setting, dl21, llmjudge, plan_pool
from bench.bench_trust_coverage import kendall_rows, render_doc, topic_scores
from bench.common import RESULTS, ROOT, finish, headline, machine, versions
from peras.settings import load_settings
from tasks.assess.plan import SIGNALS, Strategy, next_pairs, signals_in
from tasks.assess.plan import STRATEGIES as PLAN_STRATEGIES
from tasks.evaluate.intervals_input import prepare_pool, prepare_systems
from tasks.evaluate.ranking import score_systems, tau_ap

NAME = "assess-budget"
BUDGETS = (0.02, 0.05, 0.10, 0.20, 0.30)
MEASURE = "nDCG@10"
DOC = ROOT / "docs" / "assess.md"
# The strategies of `peras assess plan`, and the combined one with fewer signals (the columns left out of its pool).
STRATEGIES = {
    "random": ("random", ()),
    "low-confidence": ("low-confidence", ()),
    "disagreement": ("disagreement", ()),
    "ranking-impact": ("ranking-impact", ()),
    "combined": ("combined", ()),
    "impact x disagreement": ("combined", ("mean_confidence",)),
    "impact x low-confidence": ("combined", ("label_entropy",)),
    "disagreement+low-confidence": ("combined", ("rank_spread",)),
    "rank fusion": ("rank-fusion", ()),
}
SETTINGS = {"llmjudge": llmjudge, "dl21": dl21}
EMPTY_PLAN = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String})
RRF_K = 60  # reciprocal rank fusion's constant (Cormack, Clarke and Buettcher, SIGIR 2009)


def rank_fusion(pool: pl.DataFrame) -> pl.Expr:
    """The alternative the combined strategy was measured against: reciprocal rank fusion of every signal."""
    fused = pl.lit(0.0)
    for name in signals_in(pool):
        fused = fused + 1.0 / (RRF_K + SIGNALS[name]().rank("min", descending=True))
    return fused


RANK_FUSION = Strategy("rank-fusion", "measured here only, not a strategy of the command", rank_fusion)


def masked(pool: pl.DataFrame, hidden: tuple[str, ...]) -> pl.DataFrame:
    """The pool with some signals taken away (no confidences, one personality, no run files)."""
    empty = {"mean_confidence": pl.lit(None, pl.Float64), "label_entropy": pl.lit(0.0), "rank_spread": pl.lit(0.0)}
    return pool.with_columns(**{name: empty[name] for name in hidden})


def positions(pool: pl.DataFrame, strategy: str, seed: int, size: int) -> np.ndarray:
    """Pool positions of the pairs a new plan of `size` picks (tasks/assess/plan.py's next_pairs)."""
    name, hidden = STRATEGIES[strategy]
    with patch.dict(PLAN_STRATEGIES, {RANK_FUSION.name: RANK_FUSION}):  # the registry as it was, after the call
        picked = next_pairs(masked(pool, hidden), EMPTY_PLAN, name, seed, size)
    index = pool.select("query_id", "doc_id").with_row_index("position")
    return picked.join(index, on=["query_id", "doc_id"])["position"].to_numpy()


def measure_one(human: np.ndarray, hybrid: np.ndarray, base: tuple[Any, Any, np.ndarray]) -> dict[str, float]:
    """kappa of the labels, tau and tau-AP of the systems' mean nDCG@10 (hybrid against human)."""
    pool, systems, truth = base
    means = topic_scores(pool, systems, hybrid).mean(axis=1)
    return {
        "kappa": float(cohen_kappa_score(human, hybrid)),
        "kendall_tau": float(kendall_rows(truth[None], means[None])[0]),
        "tau_ap": tau_ap(truth, means),
    }


def prepare(setting: Setting) -> tuple[Any, Any, np.ndarray]:
    """The pool and systems arrays, and the systems' nDCG@10 under the human qrels (checked against ir_measures)."""
    qrels = setting.qrels
    pool = prepare_pool(qrels, qrels.head(2).vstack(qrels.tail(2)), MEASURE)
    systems = prepare_systems(setting.runs, pool)
    truth = topic_scores(pool, systems, pool.llm).mean(axis=1)
    reference = score_systems(setting.runs, qrels, [MEASURE]).filter(pl.col("query_id") == "all").sort("system")
    assert reference["system"].to_list() == systems.names
    assert np.abs(reference["value"].to_numpy() - truth).max() < 1e-9  # the arrays score as ir_measures does
    return pool, systems, truth


def run_setting(setting: Setting, seeds: int, budgets: tuple[float, ...]) -> list[dict[str, Any]]:
    """One row per seed x strategy x budget (and per seed the judge alone, budget 0)."""
    base = prepare(setting)
    human = setting.qrels["relevance"].to_numpy()
    rows = []
    for seed in range(seeds):
        panel = setting.panel(seed)
        chosen = (seed * 7) % len(setting.judge_names)
        pool = plan_pool(setting, panel, chosen)
        common = {"setting": setting.name, "seed": seed, "judge": setting.judge_names[chosen]}
        rows.append(common | {"strategy": "none", "budget": 0.0} | measure_one(human, panel[chosen], base))
        for strategy in STRATEGIES:
            for budget in budgets:
                hybrid = panel[chosen].copy()
                picked = positions(pool, strategy, seed, int(np.floor(human.size * budget + 0.5)))
                hybrid[picked] = human[picked]
                rows.append(common | {"strategy": strategy, "budget": budget} | measure_one(human, hybrid, base))
    return rows


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per setting, strategy and budget: mean and standard deviation over seeds of kappa, tau and tau-AP, and
    how many seeds beat random's value of the same seed (tau-AP)."""
    frame = pl.DataFrame(rows)
    random = frame.filter(pl.col("strategy") == "random").select("setting", "seed", "budget", random_ap="tau_ap")
    frame = frame.join(random, on=["setting", "seed", "budget"], how="left")
    stats = [pl.col(m).mean().alias(f"{m}_mean") for m in ("kappa", "kendall_tau", "tau_ap")]
    stats += [pl.col(m).std().alias(f"{m}_std") for m in ("kappa", "kendall_tau", "tau_ap")]
    summary = frame.group_by("setting", "strategy", "budget", maintain_order=True).agg(
        *stats, beats_random=(pl.col("tau_ap") > pl.col("random_ap")).sum(), seeds=pl.len()
    )
    return summary.to_dicts()


def budget_table(summary: list[dict[str, Any]], setting: str) -> str:
    """docs/assess.md's table for one setting: per strategy and budget, mean kappa / tau / tau-AP (tau-AP's spread)."""
    rows = [r for r in summary if r["setting"] == setting]
    budgets = sorted({r["budget"] for r in rows if r["budget"] > 0})
    by = {(r["strategy"], r["budget"]): r for r in rows}
    head = "| strategy | " + " | ".join(f"{b:.0%}: kappa / tau / tau-AP" for b in budgets) + " |"
    none = by["none", 0.0]
    lines = [head, "|---" * (1 + len(budgets)) + "|",
             f"| the judge alone (0%) | {none['kappa_mean']:.3f} / {none['kendall_tau_mean']:.3f} / "
             f"{none['tau_ap_mean']:.3f} ± {none['tau_ap_std'] or 0.0:.3f} |" + " |" * (len(budgets) - 1)]  # fmt: skip
    for strategy in STRATEGIES:
        cells = []
        for budget in budgets:
            r = by[strategy, budget]
            won = "" if strategy == "random" else f" ({r['beats_random']}/{r['seeds']})"
            cells.append(f"{r['kappa_mean']:.3f} / {r['kendall_tau_mean']:.3f} / "
                         f"{r['tau_ap_mean']:.3f} ± {r['tau_ap_std'] or 0.0:.3f}{won}")  # fmt: skip
        lines.append(f"| {strategy} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def doc_tables(result: dict[str, Any], name: str) -> dict[str, str]:
    """docs/assess.md's generated blocks from one result file (`name`: its path in the repo)."""
    tables = {}
    for setting in result["settings"]:
        info = result["inputs"][setting]
        source = (f"From `{name}` ({result['seeds']} seeds, {info['n_pairs']:,} pairs, {info['n_systems']} systems, "
                  f"{info['n_judges']} judges), made by `{result['command']}`:")  # fmt: skip
        tables[f"assess-budget-{setting}"] = f"{source}\n\n{budget_table(result['summary'], setting)}"
    return tables


def write_doc(path: Path) -> None:
    """Rewrite docs/assess.md's blocks from the result file `path`."""
    result = json.loads(path.read_text(encoding="utf-8"))
    tables = doc_tables(result, str(path.resolve().relative_to(ROOT)))
    DOC.write_text(render_doc(DOC.read_text(encoding="utf-8"), tables), encoding="utf-8")


def run(seeds: int, settings: list[str], budgets: tuple[float, ...]) -> dict[str, Any]:
    """Every setting's rows, the summary and the headline."""
    data = load_settings().data_dir
    start = time.perf_counter()
    rows, inputs = [], {}
    for name in settings:
        loaded = time.perf_counter()
        setting = SETTINGS[name](data)
        inputs[name] = {
            "n_pairs": setting.qrels.height,
            "n_systems": setting.runs["system"].n_unique(),
            "n_judges": len(setting.judge_names),
            "load_s": round(time.perf_counter() - loaded, 1),
        }
        rows += run_setting(setting, seeds, budgets)
    summary = summarise(rows)
    return {
        "command": " ".join(["PYTHONPATH=. .venv/bin/python", *sys.argv]),
        "versions": versions("polars", "scikit-learn", "ir-measures"),
        "settings": settings,
        "inputs": inputs,
        "seeds": seeds,
        "budgets": list(budgets),
        "measure": MEASURE,
        "total_s": round(time.perf_counter() - start, 1),
        "summary": summary,
        "per_seed": rows,
        "headline": headlines(summary),
    }


def headlines(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The issue's two goals: every non-random strategy above random at every budget; tau-AP >= 0.95 at <= 10% on
    DL21 (the best strategy's)."""
    by = {(r["setting"], r["strategy"], r["budget"]): r for r in summary}
    rows = []
    for (setting, strategy, budget), r in by.items():
        if strategy in ("random", "none"):
            continue
        above = r["tau_ap_mean"] - by[setting, "random", budget]["tau_ap_mean"]
        rows.append(headline(f"{setting} {strategy} {budget:.0%}: tau-AP above random", above, "", "> 0", above > 0))
    at_ten = [r["tau_ap_mean"] for (s, _, b), r in by.items() if s == "dl21" and 0 < b <= 0.10]
    if at_ten:
        rows.append(headline("dl21 best tau-AP at <= 10%", max(at_ten), "", ">= 0.95", max(at_ten) >= 0.95))
    return rows


def arguments() -> argparse.Namespace:
    """The command line: seeds, settings, budgets, or only the doc from a result file."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="judges chosen / draws per setting (default 5)")
    parser.add_argument("--setting", action="append", choices=sorted(SETTINGS), help="default: both")
    parser.add_argument("--budget", type=float, action="append", help="shares of the pool (default 2-30%%)")
    parser.add_argument("--doc", type=Path, help="only rewrite docs/assess.md's tables from this result file")
    return parser.parse_args()


def main() -> None:
    """Run, print the tables, write the JSON result and docs/assess.md's tables from it."""
    args = arguments()
    if args.doc:
        return write_doc(args.doc)
    started = machine()
    result = run(args.seeds, args.setting or ["llmjudge", "dl21"], tuple(args.budget or BUDGETS))
    for setting in result["settings"]:
        print(f"{setting}:\n{budget_table(result['summary'], setting)}\n")
    finish(NAME, result, started)
    write_doc(latest_result())


def latest_result() -> Path:
    """The newest result of this benchmark (names sort by date, then serial: -2, -3 ...)."""
    dated = {path: path.stem.removeprefix(f"{NAME}-") for path in RESULTS.glob(f"{NAME}-*.json")}
    return max(dated, key=lambda path: (dated[path][:10], int(dated[path][11:] or 1)))


if __name__ == "__main__":
    main()
