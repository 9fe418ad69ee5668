"""Priming outputs: the published tables of a run, a plot per topic, the summary and the markdown artifact."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from peras.prompting import CANONICAL_ORDER
from peras.settings import Settings
from peras.sql import query_frame
from peras.warehouse import connect

CONDITION_COLOURS = {"HT": "#c0392b", "LT": "#2e86c1"}
SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True)
class PrimingTables:
    """A published run's views: topic rows, pooled personality rows, the index (canonical personality order)."""

    analysis: list[dict[str, Any]]
    personalities: list[dict[str, Any]]
    index: list[dict[str, Any]]


@task(cache_policy=NO_CACHE)
def load_priming_tables(settings: Settings, run_name: str) -> PrimingTables:
    """Read priming_analysis, priming_personality and priming_index for one run."""
    with connect(settings.warehouse, read_only=True) as con:
        frames = [
            query_frame(con, f"priming/select_{name}", {"run_name": run_name})
            for name in ("analysis", "personality", "index")
        ]
    analysis, pooled, index = (frame.to_dicts() for frame in frames)
    return PrimingTables(
        sorted(analysis, key=lambda r: (_rank(r["personality"]), r["query_id"], r["n_prologue"], r["n_epilogue"])),
        sorted(pooled, key=lambda r: (r["n_prologue"], r["n_epilogue"], _rank(r["personality"]))),
        sorted(index, key=lambda r: _rank(r["personality"])),
    )


def _rank(code: str) -> tuple[int, str]:
    """Canonical personality order (default, HA, LA, ...), then user codes alphabetically."""
    return (CANONICAL_ORDER.index(code), "") if code in CANONICAL_ORDER else (len(CANONICAL_ORDER), code)


@task(cache_policy=NO_CACHE)
def plot_priming_topics(settings: Settings, run_name: str, analysis: list[dict[str, Any]]) -> list[str]:
    """One PNG per topic: mean epilogue score after HT and after LT, per setting, one panel per personality."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not analysis:
        return []
    directory = plot_dir(settings, run_name)
    directory.mkdir(parents=True, exist_ok=True)
    frame = pl.DataFrame(analysis)
    paths = []
    for query_id in sorted(set(frame["query_id"].to_list())):
        rows = frame.filter(pl.col("query_id") == query_id).to_dicts()
        personalities = list(dict.fromkeys(r["personality"] for r in rows))
        ncols = min(4, len(personalities))
        nrows = math.ceil(len(personalities) / ncols)
        figure = Figure(figsize=(3.6 * ncols, 3.2 * nrows), layout="constrained")
        FigureCanvasAgg(figure)
        axes = figure.subplots(nrows, ncols, squeeze=False).ravel()
        for ax, code in zip(axes, personalities, strict=False):
            _plot_panel(ax, code, [r for r in rows if r["personality"] == code])
        for ax in axes[len(personalities) :]:
            ax.set_visible(False)
        axes[0].legend(loc="upper right", fontsize=8)
        figure.suptitle(f"Threshold priming, topic {query_id} ({run_name})", fontsize=10)
        path = directory / f"topic-{SAFE_NAME.sub('_', query_id)}.png"
        figure.savefig(path, dpi=110)
        paths.append(str(path))
    return paths


def _plot_panel(ax: Any, personality: str, rows: list[dict[str, Any]]) -> None:
    rows = sorted(rows, key=lambda r: (r["n_prologue"], r["n_epilogue"]))
    xs = range(len(rows))
    for offset, condition in ((-0.2, "HT"), (0.2, "LT")):
        means = [r[f"mean_{condition.lower()}"] for r in rows]
        ax.bar([x + offset for x in xs], means, 0.4, color=CONDITION_COLOURS[condition], label=condition)
    for x, row in zip(xs, rows, strict=True):
        ax.annotate(stars(row["p_value"]), (x, max(row["mean_ht"], row["mean_lt"]) + 0.05), ha="center")
    ax.set_xticks(list(xs), [f"PL={r['n_prologue']}\nEL={r['n_epilogue']}" for r in rows], fontsize=8)
    ax.set_xlim(-0.7, len(rows) - 0.3)
    ax.set_ylim(0, 3.3)
    ax.set_ylabel("mean epilogue score", fontsize=8)
    ax.set_title(personality, fontsize=9)


def stars(p_value: float | None) -> str:
    """Significance marks of a p-value: *** < 0.001, ** < 0.01, * < 0.05."""
    if p_value is None:
        return ""
    return next((mark for limit, mark in ((0.001, "***"), (0.01, "**"), (0.05, "*")) if p_value < limit), "")


def format_p(p_value: float | None) -> str:
    """p as the tables show it."""
    if p_value is None:
        return "-"
    return "<0.001" if p_value < 0.001 else f"{p_value:.3f}"


def format_number(value: float | None, digits: int = 3, signed: bool = False) -> str:
    """A number as the tables show it; '-' when undefined."""
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"


def render_markdown(summary: dict[str, Any]) -> str:
    """The run as markdown: counts, the index, the pooled rows per personality, the topic rows."""
    lines = [
        f"# Threshold priming `{summary['run_name']}`",
        "",
        f"Model {summary['model']} ({summary['backend']}), {summary['n_topics']} topics x {summary['trials']} "
        f"trials x {len(summary['batch_settings'])} settings x {len(summary['personalities'])} personalities: "
        f"{summary['n_batches']:,} batches ({summary['n_sent']:,} requests sent, {summary['n_cached']:,} "
        f"answers reused, {summary['n_failures']:,} failed batches).",
        "",
        "| personality | priming index (LT - HT) | 95% CI | trials |",
        "|---|---|---|---|",
    ]
    lines += [
        f"| {r['personality']} | {format_number(r['priming_index'], signed=True)} | "
        f"[{format_number(r['ci_low'], signed=True)}, {format_number(r['ci_high'], signed=True)}] | "
        f"{r['n_trials']} |"
        for r in summary["index"]
    ]
    lines += [
        "",
        "| PL | EL | personality | HT | LT | gap | p | vs default | p vs default |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['n_prologue']} | {r['n_epilogue']} | {r['personality']} | {format_number(r['mean_ht'])} | "
        f"{format_number(r['mean_lt'])} | {format_number(r['gap'], signed=True)} | {format_p(r['p_value'])} | "
        f"{format_number(r['gap_vs_default'], signed=True)} | {format_p(r['p_vs_default'])} |"
        for r in summary["pooled"]
    ]
    lines += [
        "",
        "| topic | PL | EL | personality | HT | LT | gap | t | p | n |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['query_id']} | {r['n_prologue']} | {r['n_epilogue']} | {r['personality']} | "
        f"{format_number(r['mean_ht'])} | {format_number(r['mean_lt'])} | {format_number(r['gap'], signed=True)} | "
        f"{format_number(r['t_stat'], 2)} | {format_p(r['p_value'])} | {r['n_pairs']} |"
        for r in summary["analysis"]
    ]
    return "\n".join(lines)


@task(cache_policy=NO_CACHE)
def publish_priming_artifact(summary: dict[str, Any]) -> str:
    """Attach the run's tables to the flow run as a markdown artifact; return the markdown."""
    markdown = render_markdown(summary)
    create_markdown_artifact(markdown=markdown, key="priming-summary", description="threshold priming")
    return markdown


def plot_dir(settings: Settings, run_name: str) -> Path:
    """Where a run's topic plots are written."""
    return settings.reports_dir / "priming" / SAFE_NAME.sub("_", run_name)
