"""The report's figures (the study's Figures 2-5, reliability diagrams and more), drawn with matplotlib into PNG files.

Each function takes the rows of one setting (a run x CoT setting x confidence method) and writes one PNG. They use
`matplotlib.figure.Figure` directly, not pyplot: no global state, no GUI backend, safe inside Prefect's threads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import numpy as np
import polars as pl
from matplotlib.figure import Figure
from matplotlib.projections.polar import PolarAxes
from matplotlib.ticker import MaxNLocator

from peras.metric_names import metric_title
from tasks.report.tables import fmt

DPI = 100
COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf"]


def save(figure: Figure, path: Path) -> Path:
    """Write the PNG without a timestamp, so the same data gives the same bytes; renamed in place (never through a
    link at `path`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    staged = path.with_name(path.name + ".partial")
    figure.savefig(staged, dpi=DPI, bbox_inches="tight", metadata={"Software": None}, format="png")
    staged.replace(path)
    return path


def _value(frame: pl.DataFrame, personality: str, metric: str) -> float:
    """One metric of one personality, NaN when absent or null (matplotlib leaves a gap)."""
    hit = frame.filter((pl.col("personality") == personality) & (pl.col("metric") == metric))["value"]
    value = hit[0] if hit.len() else None
    return math.nan if value is None else float(value)


def _radial_limits(values: np.ndarray) -> tuple[float, float]:
    """From min(0, lowest) to the highest value, rounded out to tenths, at most 1 and never empty."""
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return 0.0, 1.0
    low = min(0.0, math.floor(finite.min() * 10) / 10)
    high = min(1.0, math.ceil(finite.max() * 10) / 10)
    return low, max(high, low + 0.1)


def draw_radar(
    metrics: pl.DataFrame, personalities: Sequence[str], names: Sequence[str], title: str, path: Path
) -> Path:
    """One line per metric over the personality axes (the study's Figures 4 and 5); null values leave a gap.

    The axis names sit outside the circle, the radial scale on a white box between the first two axes, and the
    legend below the plot: nothing a line can cross.
    """
    angles = np.linspace(0, 2 * math.pi, len(personalities), endpoint=False)
    series = {name: np.array([_value(metrics, p, name) for p in personalities]) for name in names}
    low, high = _radial_limits(np.concatenate(list(series.values())))
    figure = Figure(figsize=(4.8, 5.2))
    ax = cast(PolarAxes, figure.add_subplot(projection="polar"))
    ax.set_theta_offset(math.pi / 2)
    ax.set_theta_direction(-1)
    closed = np.append(angles, angles[0])
    for color, (name, values) in zip(COLORS, series.items(), strict=False):
        ax.plot(
            closed,
            np.append(values, values[0]),
            color=color,
            linewidth=1.8,
            marker="o",
            markersize=4,
            label=metric_title(name),
        )
    ax.set_xticks(angles)
    ax.set_xticklabels(list(personalities), fontsize=10, fontweight="bold")
    ax.tick_params(axis="x", pad=6)
    ax.set_ylim(low, high)
    ax.yaxis.set_major_locator(MaxNLocator(nbins=4))
    ax.set_rlabel_position(180 / len(personalities))  # between the first two axes, off the lines' usual path
    ax.tick_params(axis="y", labelsize=7, labelcolor="#444444")
    for label in ax.get_yticklabels():
        label.set_bbox({"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.5})
    ax.set_title(_wrap(title), fontsize=10, pad=20)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.06), ncols=len(names), fontsize=9, frameon=False)
    return save(figure, path)


def _wrap(title: str, width: int = 48) -> str:
    """A long title on several lines, broken at its ' · ' separators where it can be."""
    lines: list[str] = []
    for part in title.split(" · "):
        if lines and len(lines[-1]) + 3 + len(part) <= width:
            lines[-1] += " · " + part
        else:
            lines.append(part)
    return "\n".join(lines)


def draw_kappa_heatmap(
    kappa: pl.DataFrame,
    names: Sequence[str],
    title: str,
    path: Path,
    pair: tuple[str, str] = ("personality_a", "personality_b"),
) -> Path:
    """Cohen's kappa between every two judges' labels: personalities of a setting (the study's Figure 2), or runs
    (pair=("run_name_a", "run_name_b")); null or missing cells are grey. Names are shown in the order given."""
    index = {name: i for i, name in enumerate(names)}
    matrix = np.full((len(names), len(names)), np.nan)
    for row in kappa.iter_rows(named=True):
        if row[pair[0]] in index and row[pair[1]] in index and row["cohen_kappa"] is not None:
            matrix[index[row[pair[0]]], index[row[pair[1]]]] = row["cohen_kappa"]
    many = len(names) > 12
    cell = 0.42 if many else 0.48
    size = 1.8 + cell * len(names)
    figure = Figure(figsize=(size + 1.2, size))
    ax = figure.add_subplot()
    ax.set_facecolor("#d9d9d9")
    image = ax.imshow(np.ma.masked_invalid(matrix), cmap="RdYlGn", vmin=-1, vmax=1)
    for i in range(len(names)):
        for j in range(len(names)):
            value = matrix[i, j]
            text = fmt(None if np.isnan(value) else float(value)).replace("-0.000", "0.000")
            dark = not np.isnan(value) and abs(value) > 0.6  # the colour map's ends are dark: white text there
            ax.text(
                j, i, text, ha="center", va="center", fontsize=6 if many else 7, color="white" if dark else "#222222"
            )
    long_names = max((len(name) for name in names), default=0) > 4
    ax.set_xticks(
        range(len(names)),
        list(names),
        fontsize=8 if many else 9,
        rotation=45 if long_names else 0,
        ha="right" if long_names else "center",
        rotation_mode="anchor",
    )
    ax.set_yticks(range(len(names)), list(names), fontsize=8 if many else 9)
    ax.set_title(_wrap(title, 80), fontsize=10)
    figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="Cohen's kappa")
    return save(figure, path)


def draw_confidence_bars(
    confidence: pl.DataFrame, personalities: Sequence[str], xlabel: str, title: str, path: Path
) -> Path:
    """Mean confidence per human relevance level, one bar per personality, each bar's judgment count above it.

    `confidence` has personality, relevance, n_judgments and mean_confidence: all judgments, or only those labelled
    0 (the study's Figure 3); a level without judgments is a gap.
    """
    levels = [0, 1, 2, 3]
    width = 0.8 / max(len(personalities), 1)
    figure = Figure(figsize=(6.2, 3.8))
    ax = figure.add_subplot()
    for k, (color, personality) in enumerate(zip(COLORS, personalities, strict=False)):
        rows = confidence.filter(pl.col("personality") == personality)
        by_level = {r["relevance"]: (r["mean_confidence"], r["n_judgments"]) for r in rows.iter_rows(named=True)}
        xs = [level - 0.4 + width * (k + 0.5) for level in levels]
        heights = [by_level[level][0] if level in by_level else math.nan for level in levels]
        ax.bar(xs, heights, width=width * 0.95, color=color, label=personality)
        for x, level in zip(xs, levels, strict=True):
            if level in by_level:
                ax.text(x, by_level[level][0] + 1, f"{by_level[level][1]:,}", ha="center", va="bottom", fontsize=6)
    ax.set_xticks(levels, [f"{level}" for level in levels])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("mean confidence (0-100)")
    ax.set_ylim(0, 110)
    ax.grid(axis="y", alpha=0.3)
    ax.set_title(_wrap(title, 80), fontsize=10)
    ax.legend(
        ncols=min(len(personalities), 6), fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.15), frameon=False
    )
    return save(figure, path)


def draw_reliability_diagrams(
    bins: pl.DataFrame, ece: dict[str, float | None], personalities: Sequence[str], title: str, path: Path
) -> Path:
    """Accuracy per confidence bin against the diagonal, one small panel per personality; dots at mean confidence."""
    columns = min(4, len(personalities))
    rows_n = math.ceil(len(personalities) / columns)
    figure = Figure(figsize=(3.0 * columns, 2.7 * rows_n + 0.5), layout="constrained")
    figure.suptitle(title, fontsize=11)
    axes = figure.subplots(rows_n, columns, squeeze=False, sharex=True, sharey=True)
    for ax, personality in zip(axes.flat, personalities, strict=False):
        rows = bins.filter(pl.col("personality") == personality).sort("bin")
        filled = rows.filter(pl.col("n_judgments") > 0)
        ax.plot([0, 100], [0, 1], color="#888888", linewidth=1, linestyle="--")
        ax.bar(
            filled["confidence_lower"] + 5,
            filled["accuracy"],
            width=9.4,
            color="#4c78a8",
            alpha=0.8,
            edgecolor="#2f4b7c",
        )
        ax.scatter(filled["mean_p"] * 100, filled["accuracy"], color="#d62728", s=12, zorder=3)
        score = ece.get(personality)
        n = int(rows["n_judgments"].sum()) if rows.height else 0
        ax.set_title(f"{personality}  ECE {fmt(score)}  (n={n:,})", fontsize=9)
        ax.set_xlim(0, 100)
        ax.set_ylim(0, 1.02)
        ax.tick_params(labelsize=8)
    for k, ax in enumerate(axes.flat):
        if k >= len(personalities):
            ax.set_visible(False)
            axes.flat[k - columns].tick_params(labelbottom=True)  # the panel above ends its column: label its axis
            axes.flat[k - columns].set_xlabel("confidence", fontsize=8)
    for ax in axes[:, 0]:
        ax.set_ylabel("accuracy", fontsize=8)
    for ax in axes[-1, :]:
        ax.set_xlabel("confidence", fontsize=8)
    return save(figure, path)
