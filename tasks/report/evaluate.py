"""The report's 'Systems ranked' and 'Hole filling' sections (issue 21): how alike LLM qrels rank systems to the
human qrels (sql/evaluate/views, read by sql/evaluate/select_report_*.sql), a scatter of system scores per
evaluation and a curve of rank agreement per holes experiment."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from matplotlib.figure import Figure

from peras.sql import query_frame
from tasks.report.charts import COLORS, save
from tasks.report.interactive import Spec, systems_scatter
from tasks.report.tables import fmt

AGREEMENT_COLUMNS = ["kendall_tau", "spearman_rho", "tau_ap", "mean_topic_tau"]


@dataclass(frozen=True)
class SystemsRanked:
    """One `peras evaluate` with LLM qrels: its agreement rows (a qrels set x measure each) and scatter points."""

    evaluation_id: str
    title: str
    agreement: pl.DataFrame
    points: pl.DataFrame

    def rows(self) -> list[dict[str, Any]]:
        """The table: per measure, qrels sets from the most to the least human-like ranking."""
        return [
            {"measure": r["measure"], "rank": r["tau_rank"], "qrels": r["qrels_name"], "systems": r["n_systems"]}
            | {name: fmt(r[name]) for name in AGREEMENT_COLUMNS}
            for r in self.agreement.iter_rows(named=True)
        ]


@dataclass(frozen=True)
class HolesCurve:
    """One holes experiment: its rows per share and measure."""

    holes_id: str
    title: str
    results: pl.DataFrame

    def rows(self) -> list[dict[str, Any]]:
        """The table: per measure and share, what was hidden and how alike the filled qrels rank the systems."""
        return [
            {"measure": r["measure"], "share": f"{r['share']:.0%}", "hidden": f"{r['n_hidden']:,}",
             "LLM = human on hidden": fmt(r["hidden_accuracy"])}
            | {name: fmt(r[name]) for name in AGREEMENT_COLUMNS}
            for r in self.results.iter_rows(named=True)
        ]  # fmt: skip


def read_systems_ranked(con: Any, collection: str | None) -> list[SystemsRanked]:
    """Every evaluation with LLM qrels, oldest first."""
    params = {"collection_id": collection}
    agreement = query_frame(con, "evaluate/select_report_agreement", params)
    points = query_frame(con, "evaluate/select_report_scatter", params)
    found = []
    for (evaluation_id,), rows in agreement.group_by("evaluation_id", maintain_order=True):
        first = rows.row(0, named=True)
        title = f"{first['collection_id']}: {first['qrels_source']} qrels from {first['run_name']}"
        mine = points.filter(pl.col("evaluation_id") == evaluation_id)
        found.append(SystemsRanked(str(evaluation_id), title, rows, mine))
    return found


def read_holes(con: Any, collection: str | None) -> list[HolesCurve]:
    """Every holes experiment, oldest first."""
    results = query_frame(con, "evaluate/select_report_holes", {"collection_id": collection})
    found = []
    for (holes_id,), rows in results.group_by("holes_id", maintain_order=True):
        first = rows.row(0, named=True)
        title = (
            f"{first['collection_id']}: holes filled by {first['run_name']} ({first['personality']}), "
            f"{first['n_pairs']:,} human labels, {first['n_systems']} systems, seed {first['seed']}"
        )
        found.append(HolesCurve(str(holes_id), title, rows))
    return found


def draw_scatter(points: pl.DataFrame, measure: str, title: str, path: Path) -> Path:
    """One point per system and qrels set: its score under the human qrels (x) and under the LLM's (y)."""
    figure = Figure(figsize=(6.4, 5.0))
    ax = figure.add_subplot()
    chosen = points.filter(pl.col("measure") == measure)
    for i, ((name,), rows) in enumerate(chosen.group_by("qrels_name", maintain_order=True)):
        ax.scatter(rows["human_value"], rows["value"], s=22, color=COLORS[i % len(COLORS)], label=str(name))
    values = [*chosen["human_value"].to_list(), *chosen["value"].to_list()]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    ax.plot([low, high], [low, high], color="#999999", linewidth=0.8, linestyle="--")
    ax.set_xlabel(f"{measure}, human qrels")
    ax.set_ylabel(f"{measure}, LLM qrels")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, title="qrels", title_fontsize=7, loc="best")
    return save(figure, path)


def draw_holes_curve(results: pl.DataFrame, title: str, path: Path) -> Path:
    """Kendall's tau and tau-AP of the filled qrels against the full human qrels, as the hidden share grows."""
    figure = Figure(figsize=(6.4, 4.0))
    ax = figure.add_subplot()
    for i, ((measure,), rows) in enumerate(results.group_by("measure", maintain_order=True)):
        color = COLORS[i % len(COLORS)]
        ax.plot(rows["share"], rows["kendall_tau"], marker="o", color=color, label=f"{measure}: Kendall's tau")
        ax.plot(rows["share"], rows["tau_ap"], marker="s", linestyle="--", color=color, label=f"{measure}: tau-AP")
    ax.set_xlabel("share of human labels hidden and filled by the LLM")
    ax.set_ylabel("agreement with the full human ranking")
    ax.set_ylim(-1.05, 1.05)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="lower left")
    return save(figure, path)


def evaluate_figures(
    ranked: list[SystemsRanked], holes: list[HolesCurve], out: Path
) -> list[tuple[str, str, str, Path, Spec | None]]:
    """(section, evaluation or holes id, title, PNG, interactive spec): a scatter per evaluation and measure (hover:
    the system), a curve per experiment (a PNG only)."""
    drawn: list[tuple[str, str, str, Path, Spec | None]] = []
    for item in ranked:
        for measure in item.agreement["measure"].unique(maintain_order=True).to_list():
            title = f"{item.title} · {measure}"
            path = out / f"systems-{item.evaluation_id[:8]}-{re.sub(r'[^A-Za-z0-9_.-]+', '_', measure)}.png"
            spec = systems_scatter(item.points, measure, title)
            drawn.append(("systems", item.evaluation_id, title, draw_scatter(item.points, measure, title, path), spec))
    for curve in holes:
        path = out / f"holes-{curve.holes_id[:8]}.png"
        drawn.append(("holes", curve.holes_id, curve.title, draw_holes_curve(curve.results, curve.title, path), None))
    return drawn
