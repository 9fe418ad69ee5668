"""The fuse comparison as `peras fuse` and the report print it: one row per method, one column per metric, deltas
against default (rows from sql/fuse/views/, loaded by tasks/fuse/tasks.py: load_comparison)."""

from __future__ import annotations

from typing import Any

import polars as pl

from peras.metric_names import format_value, metric_title

METRICS = (
    "accuracy", "cohen_kappa", "qwk", "macro_f1", "ece", "ace", "mce", "brier", "nll", "th_score", "ro", "ru", "hmr",
)  # fmt: skip


def comparison_table(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Wide: one line per row name (best single judge per metric in brackets), metrics in the study's order."""
    lines: dict[str, dict[str, str]] = {}
    for row in rows:
        line = lines.setdefault(row["row_name"], {"method": row["row_name"]})
        cell = format_value(row["value"])
        if row["delta"] is not None and row["row_kind"] != "default":
            cell += f" ({row['delta']:+.3f})"
        if row["row_kind"] == "best_single" and row["detail"]:
            cell += f" [{row['detail']}]"
        line[metric_title(row["metric"])] = cell
    columns = ["method", *(metric_title(m) for m in METRICS)]
    return pl.DataFrame(
        [{c: line.get(c, "") for c in columns} for line in lines.values()], schema=dict.fromkeys(columns, pl.Utf8)
    )


def disagreement_line(counts: dict[str, Any] | None) -> str:
    """The disagreement chart in words."""
    if counts is None:
        return "no fuser answers: no disagreement with majority voting to show"
    return (
        f"fuser vs majority vote: {counts['n_disagree']:,} of {counts['n_fused']:,} pairs differ; the fuser right on "
        f"{counts['n_fuser_right']:,}, the vote right on {counts['n_majority_right']:,}, both wrong on "
        f"{counts['n_both_wrong']:,}"
    )
