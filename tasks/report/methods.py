"""The report's "Confidence methods compared" section: its two tables and its reliability diagrams.

The rows are sql/report/select_method_comparison.sql's: the run x CoT settings judged with two or more confidence
methods, one row per personality x method (metrics_method_comparison). The section shows the chosen personalities
(`default` unless `--personality` names others).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from peras.metric_names import METRIC_TITLES
from tasks.report import charts
from tasks.report.tables import Cell, Setting, fmt, fmt_count, order_personalities

# the quality table's columns and each one's direction (True: higher is better; None: no best to mark)
METHOD_METRICS: dict[str, bool | None] = {
    "accuracy": True,
    "cohen_kappa": True,
    "qwk": True,
    "macro_f1": True,
    "ece": False,
    "ace": False,
    "mce": False,
    "brier": False,
    "nll": False,
    "th_score": True,
    "ro": True,
    "ru": True,
    "hmr": True,
    "accuracy_confident": True,
    "coverage_confident": None,
    "accuracy_unconfident": None,
    "coverage_unconfident": None,
}
COST_COLUMNS = ["requests_per_judgment", "prompt_tokens_per_judgment", "completion_tokens_per_judgment"]
DEFAULT_PERSONALITIES = ["default"]


@dataclass(frozen=True)
class MethodTables:
    """Both tables of the section: labels (run, model, CoT, personality, method) and the cells after them."""

    metric_titles: list[str]
    rows: list[tuple[list[str], list[Cell]]]
    cost_titles: list[str]
    cost_rows: list[tuple[list[str], list[str]]]
    threshold: float | None


def shown_personalities(comparison: pl.DataFrame, chosen: list[str] | None) -> dict[tuple[str, bool], list[str]]:
    """Per run x CoT setting, the personalities to show: the chosen ones it has, else its first (study order)."""
    wanted = chosen or DEFAULT_PERSONALITIES
    shown = {}
    for (run_name, cot), rows in comparison.group_by(["run_name", "cot"], maintain_order=True):
        present = order_personalities(set(rows["personality"].to_list()))
        shown[(str(run_name), bool(cot))] = [p for p in wanted if p in present] or present[:1]
    return shown


def method_tables(comparison: pl.DataFrame, chosen: list[str] | None) -> MethodTables:
    """The quality table (best method per run, CoT and personality in bold) and the cost table."""
    shown = shown_personalities(comparison, chosen)
    rows, cost_rows = [], []
    for (run_name, cot), personalities in shown.items():
        for personality in personalities:
            block = comparison.filter(
                (pl.col("run_name") == run_name) & (pl.col("cot") == cot) & (pl.col("personality") == personality)
            ).sort("confidence_method")
            best = {m: _best(block[m], higher) for m, higher in METHOD_METRICS.items() if higher is not None}
            for row in block.iter_rows(named=True):
                labels = [run_name, row["model"], "CoT" if cot else "no CoT", personality, row["confidence_method"]]
                cells = [Cell(fmt_count(row["n_scored"]))]
                cells += [Cell(fmt(row[m]), row[m] is not None and row[m] == best.get(m)) for m in METHOD_METRICS]
                rows.append((labels, cells))
                costs = [fmt_count(row["n_judgments"]), fmt_count(row["n_requests"])]
                costs += [fmt(row[c], 2) for c in COST_COLUMNS] + [fmt_count(row["n_requests_without_tokens"])]
                cost_rows.append((labels, costs))
    thresholds = comparison["threshold"].drop_nulls().unique().to_list()
    return MethodTables(
        ["n", *(METRIC_TITLES[m] for m in METHOD_METRICS)],
        rows,
        ["Judgments", "Requests", *(METRIC_TITLES[c] for c in COST_COLUMNS), "Requests without token counts"],
        cost_rows,
        thresholds[0] if len(thresholds) == 1 else None,
    )


def _best(values: pl.Series, higher: bool) -> float | None:
    """The best non-null value of a column in its direction (None when every value is null)."""
    kept = values.drop_nulls()
    if kept.len() == 0:
        return None
    return float(kept.max() if higher else kept.min())  # type: ignore[arg-type]


# one diagram: (setting label, title, path)
Diagram = tuple[str, str, Path]


def draw_method_diagrams(
    comparison: pl.DataFrame, bins: pl.DataFrame, out: Path, chosen: list[str] | None
) -> list[Diagram]:
    """One reliability diagram per run x CoT setting x method with confidences, a panel per shown personality."""
    diagrams = []
    shown = shown_personalities(comparison, chosen)
    for row in (
        comparison.select("run_name", "collection_id", "model", "cot", "confidence_method")
        .unique(maintain_order=True)
        .iter_rows()
    ):
        setting = Setting(*row)
        personalities = shown[(setting.run_name, setting.cot)]
        mine = setting.rows(comparison).filter(pl.col("personality").is_in(personalities))
        if not (mine["n_scored_confidence"] > 0).any():
            continue  # a method without confidences has no diagram
        ece = {r["personality"]: r["ece"] for r in mine.iter_rows(named=True)}
        title = f"Reliability diagram · {setting.label}"
        path = out / f"method-reliability-{setting.slug}.png"
        charts.draw_reliability_diagrams(setting.rows(bins), ece, personalities, title, path)
        diagrams.append((setting.label, title, path))
    return diagrams
