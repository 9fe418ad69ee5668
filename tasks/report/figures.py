"""The report's figures: every PNG of every setting, run, collection and study, drawn into the figures folder."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.metric_names import metric_title
from peras.progress import track
from tasks.report import charts, interactive
from tasks.report.data import ReportData
from tasks.report.evaluate import evaluate_figures
from tasks.report.fuse import fuse_figures
from tasks.report.interactive import Spec
from tasks.report.methods import draw_method_diagrams
from tasks.report.personas import persona_figures
from tasks.report.tables import AGREEMENT_METRICS, RELIABILITY_METRICS, Setting, order_personalities
from tasks.report.trust import trust_figures

FIGURE_NAMES = (
    "radar-agreement-",
    "radar-reliability-",
    "kappa-personalities-",
    "confidence-by-label-",
    "confidence-predicted-0-",
    "reliability-",
    "kappa-runs-",
    "method-reliability-",
    "personas-",
    "systems-",
    "holes-",
    "fuse-",
    "trust-",
)
# The bars of the confidence figures unless --personality is given: the study's Figure 3 (judgments labelled 0)
# compares HN with LC; the mean confidence of all judgments, a few contrasting personalities.
PREDICTED_ZERO_PERSONALITIES = ["HN", "LC"]
ZERO_AXIS = "human relevance label of the pairs the judge labelled 0"
ALL_AXIS = "human relevance label (any judged label)"
PERSONALITY_PAIR = ("personality_a", "personality_b")
CONFIDENCE_PERSONALITIES = ["default", "HA", "LA", "HN", "LN"]


@dataclass(frozen=True)
class Figure:
    """One PNG of the report: which section and setting it belongs to, and where it was written; its interactive
    version (a Vega-Lite spec) where it has one, and the group of PNGs that one interactive chart stands for (the
    reliability diagrams of a run and method with and without CoT; by default the PNG alone)."""

    section: str
    setting: str
    title: str
    path: Path
    spec: Spec | None = None
    group: str = ""


@task(cache_policy=NO_CACHE)
def draw_figures(data: ReportData, figures_dir: Path, personalities: list[str] | None) -> list[Figure]:
    """Every figure of every setting as a PNG in figures_dir, after removing an earlier report's PNGs from it.

    `personalities`: the bars of both confidence figures and the panels of the method comparison's diagrams; None
    for their defaults."""
    for old in figures_dir.glob("*.png"):
        if old.name.startswith(FIGURE_NAMES):
            old.unlink()
    chosen = (personalities or PREDICTED_ZERO_PERSONALITIES, personalities or CONFIDENCE_PERSONALITIES)
    figures: list[Figure] = []
    with track("report figures", len(data.settings) + 2) as bar:
        for setting in data.settings:
            figures += _setting_figures(data, setting, figures_dir, *chosen)
            bar.advance()
        figures += _judge_figures(data, figures_dir)
        bar.advance()
        diagrams = draw_method_diagrams(data.method_comparison, data.calibration_bins, figures_dir, personalities)
        figures += [Figure("methods", label, title, path) for label, title, path in diagrams]
        figures += [Figure("personas", *drawn) for drawn in persona_figures(data.persona_checks, figures_dir)]
        figures += [Figure("fuse", *drawn) for drawn in fuse_figures(data.fuse_disagreement, figures_dir)]
        figures += [Figure(*drawn) for drawn in evaluate_figures(data.systems_ranked, data.holes, figures_dir)]
        figures += [Figure(*drawn) for drawn in trust_figures(data.trust, figures_dir)]
        bar.advance()
    return figures


def _judge_figures(data: ReportData, out: Path) -> list[Figure]:
    """Per collection where two runs share labelled pairs: the kappa heatmap between runs, in the header's order."""
    figures = []
    for collection_id in data.runs["collection_id"].unique(maintain_order=True).to_list():
        kappa = data.judge_kappa.filter(pl.col("collection_id") == collection_id)
        if kappa.filter(pl.col("run_name_a") != pl.col("run_name_b")).height == 0:
            continue
        names = data.runs.filter(pl.col("collection_id") == collection_id)["run_name"].to_list()
        title = f"Cohen's kappa between runs · {collection_id} · {len(names)} runs"
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", collection_id)
        path = charts.draw_kappa_heatmap(
            kappa, names, title, out / f"kappa-runs-{slug}.png", pair=("run_name_a", "run_name_b")
        )
        spec = interactive.kappa_heatmap(kappa, names, title, ("run_name_a", "run_name_b"), "run")
        figures.append(Figure("judges", collection_id, title, path, spec))
    return figures


def _setting_figures(
    data: ReportData, s: Setting, out: Path, chosen_zero: list[str], chosen_all: list[str]
) -> list[Figure]:
    """The radars (3+ personalities), the personality kappa heatmap (2+) and, with confidences, Figure 3 (the chosen
    personalities' judgments labelled 0), the mean confidence of all judgments and the reliability diagrams: a radar
    over fewer axes, or a 1 x 1 heatmap, shows nothing."""
    metrics = s.rows(data.table_metrics)
    personalities = order_personalities(set(metrics["personality"].to_list()))
    has_confidence = bool(metrics.filter(pl.col("metric").is_in(RELIABILITY_METRICS))["value"].is_not_null().any())
    zero, confidence = s.rows(data.confidence_of_predicted_zero), s.rows(data.confidence_by_relevance)
    shown_zero = [p for p in chosen_zero if p in set(zero["personality"].to_list())]
    shown = [p for p in chosen_all if p in set(confidence["personality"].to_list())]
    ece = {r["personality"]: r["value"] for r in metrics.filter(pl.col("metric") == "ece").iter_rows(named=True)}
    many, kappa, bins = len(personalities) >= 3, s.rows(data.personality_kappa), s.rows(data.calibration_bins)
    plan: list[tuple[bool, str, str, str, Callable[..., Path], tuple[Any, ...], Callable[[str], Spec | None]]] = [
        # (draw it?, section, title, file name, function, its data arguments, its interactive spec from the title)
        (many, "radar", ", ".join(map(metric_title, AGREEMENT_METRICS)), "radar-agreement", charts.draw_radar,
         (metrics, personalities, AGREEMENT_METRICS), lambda _: None),
        (many and has_confidence, "radar", ", ".join(map(metric_title, RELIABILITY_METRICS)), "radar-reliability",
         charts.draw_radar, (metrics, personalities, RELIABILITY_METRICS), lambda _: None),
        (len(personalities) >= 2, "kappa", "Cohen's kappa between personalities", "kappa-personalities",
         charts.draw_kappa_heatmap, (kappa, personalities),
         lambda title: interactive.kappa_heatmap(kappa, personalities, title, PERSONALITY_PAIR, "personality")),
        (has_confidence and bool(shown_zero), "confidence",
         "Mean confidence of the judgments labelled 0, by human relevance", "confidence-predicted-0",
         charts.draw_confidence_bars, (zero, shown_zero, ZERO_AXIS),
         lambda title: interactive.confidence_bars(zero, shown_zero, ZERO_AXIS, title)),
        (has_confidence and bool(shown), "confidence_all", "Mean confidence of all judgments, by human relevance",
         "confidence-by-label", charts.draw_confidence_bars, (confidence, shown, ALL_AXIS),
         lambda title: interactive.confidence_bars(confidence, shown, ALL_AXIS, title)),
        (has_confidence, "calibration", "Reliability diagrams", "reliability", charts.draw_reliability_diagrams,
         (bins, ece, personalities), lambda _: _calibration_spec(data, s)),
    ]  # fmt: skip
    figures = []
    for wanted, section, title, stem, draw, args, spec in plan:
        if wanted:
            full = f"{title} · {s.label}"
            group = f"reliability-{s.run_name}-{s.confidence_method}" if section == "calibration" else ""
            path = draw(*args, full, out / f"{stem}-{s.slug}.png")
            figures.append(Figure(section, s.label, full, path, spec(full), group))
    return figures


def _calibration_spec(data: ReportData, s: Setting) -> Spec:
    """The interactive reliability diagrams of the setting's run and method, with and without CoT in one chart."""
    mine = (pl.col("run_name") == s.run_name) & (pl.col("confidence_method") == s.confidence_method)
    ece_rows = data.table_metrics.filter(mine & (pl.col("metric") == "ece"))
    ece = {(bool(r["cot"]), r["personality"]): r["value"] for r in ece_rows.iter_rows(named=True)}
    points = interactive.calibration_points(data.calibration_bins.filter(mine), ece)
    personalities = order_personalities({p["personality"] for p in points})
    title = f"Reliability diagrams · {s.run_name} · {s.confidence_method} · CoT and no CoT"
    return interactive.reliability_diagrams(points, personalities, title)


@dataclass(frozen=True)
class View:
    """What the page shows for one or more PNGs: their interactive chart (its spec as JSON) with the PNGs as the
    fallback of a reader without JavaScript, or the PNG alone."""

    section: str
    setting: str
    title: str
    figures: list[Figure]
    spec: str | None
    element_id: str

    @property
    def path(self) -> Path:
        """The (first) PNG's path."""
        return self.figures[0].path


def views_of(figures: list[Figure]) -> list[View]:
    """The figures as the page shows them, in their order: a group of PNGs (Figure.group) becomes one view."""
    groups: dict[str, list[Figure]] = {}
    for figure in figures:
        groups.setdefault(figure.group or f"{figure.section}/{figure.path.name}", []).append(figure)
    views = []
    for k, members in enumerate(groups.values()):
        first = members[0]
        title = first.title if len(members) == 1 or first.spec is None else str(first.spec["title"])
        spec = None if first.spec is None else interactive.spec_json(first.spec)
        views.append(View(first.section, first.setting, title, members, spec, f"chart-{k}"))
    return views
