"""The report's fuse section: per published fuse run, the comparison (fuse_comparison) and the study's disagreement
chart (fuse_disagreement): where the fuser and majority voting disagree, who was right."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from matplotlib.figure import Figure

from peras.sql import query_frame
from tasks.report.charts import COLORS, save
from tasks.shared.fuse_comparison import comparison_table


@dataclass(frozen=True)
class FuseComparison:
    """One fuse run's comparison as the CLI prints it: one row per method, one column per metric."""

    run_name: str
    collection_id: str
    table: pl.DataFrame


def read_fuse_comparisons(con: Any, collection: str | None) -> list[FuseComparison]:
    """Every published fuse run's comparison (sql/fuse/select_report_comparison.sql)."""
    rows = query_frame(con, "fuse/select_report_comparison", {"collection_id": collection})
    return [
        FuseComparison(name, str(part["collection_id"][0]), comparison_table(part.to_dicts()))
        for (name,), part in rows.group_by("run_name", maintain_order=True)
    ]


OUTCOMES = (
    ("n_fuser_right", "fuser right"),
    ("n_majority_right", "majority vote right"),
    ("n_both_wrong", "both wrong"),
)


def draw_disagreement(row: dict[str, object], title: str, path: Path) -> Path:
    """One bar per outcome on the pairs where the fuser and the majority vote differ, with counts and shares."""
    counts = [int(row[key]) for key, _ in OUTCOMES]  # type: ignore[call-overload]
    total = max(1, sum(counts))
    figure = Figure(figsize=(6.4, 2.6))
    axes = figure.add_subplot()
    bars = axes.barh([label for _, label in OUTCOMES], counts, color=[COLORS[2], COLORS[1], COLORS[7]])
    axes.bar_label(bars, labels=[f"{n:,} ({n / total:.0%})" for n in counts], padding=3)
    axes.invert_yaxis()
    axes.set_xlabel(f"pairs where they disagree (of {int(row['n_fused']):,} fused)")  # type: ignore[call-overload]
    axes.set_xlim(0, max(counts + [1]) * 1.3)
    axes.set_title(title, fontsize=10)
    return save(figure, path)


def fuse_figures(disagreement: pl.DataFrame, out: Path) -> list[tuple[str, str, Path]]:
    """One disagreement chart per fuse run with fuser answers: (run name, title, PNG path)."""
    drawn = []
    for row in disagreement.iter_rows(named=True):
        title = f"Fuser vs majority vote · {row['run_name']} · {row['model']}"
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(row["run_name"]))
        drawn.append((str(row["run_name"]), title, draw_disagreement(row, title, out / f"fuse-{slug}.png")))
    return drawn
