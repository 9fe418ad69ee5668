"""Report tasks: read the metric views for some runs once, draw the figures, render one self-contained HTML file."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import polars as pl
from prefect import task
from prefect.artifacts import create_link_artifact
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from peras.errors import UsageError
from peras.metric_names import CLASSIFIER_METRIC_TITLES, metric_title
from peras.outputs import check_writable, refuse_warehouse_files, write_files
from peras.progress import track
from peras.settings import Settings
from peras.sql import query_frame, run_sql
from peras.warehouse import now, open_current
from tasks.report import charts
from tasks.report.evaluate import HolesCurve, SystemsRanked, evaluate_figures, read_holes, read_systems_ranked
from tasks.report.fuse import FuseComparison, fuse_figures, read_fuse_comparisons
from tasks.report.methods import draw_method_diagrams, method_tables
from tasks.report.personas import PersonaCheck, persona_figures, read_persona_checks
from tasks.report.recognize import Recognition, read_recognitions
from tasks.report.tables import (
    AGREEMENT_METRICS,
    RELIABILITY_METRICS,
    ClassifierTable,
    Setting,
    classifier_tables,
    fmt,
    fmt_count,
    frame_table,
    metric_tables,
    order_personalities,
    settings_of,
)
from tasks.report.trust import TrustStudy, read_trust, trust_figures
from tasks.shared.method_titles import TITLES

TEMPLATES_DIR = Path(__file__).resolve().parent
FIGURES_DIR = "figures"  # beside report.html
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
CONFIDENCE_PERSONALITIES = ["default", "HA", "LA", "HN", "LN"]
PRIMING_VIEWS = ["priming_index", "priming_personality"]  # sql/priming/views/priming_*.sql
PRIMING_MAX_ROWS = 100
PAIRWISE_VIEWS = [
    "pairwise_accuracy",
    "pairwise_calibration",
    "pairwise_certainty_histogram",
    "pairwise_vs_pointwise_summary",
]
READS = [
    "failures",
    "imports",
    "table_metrics",
    "personality_kappa",
    "judge_kappa",
    "confidence_by_relevance",
    "confidence_of_predicted_zero",
    "calibration_bins",
    "classifier",
    "method_comparison",
]
SECTIONS = (
    "radar",
    "kappa",
    "judges",
    "confidence",
    "confidence_all",
    "calibration",
    "methods",
    "personas",
    "fuse",
    "systems",
    "holes",
    "trust",
)  # the template's figure sections


@dataclass(frozen=True)
class ReportData:
    """Everything the report shows, read from one snapshot of the warehouse."""

    runs: pl.DataFrame
    failures: pl.DataFrame
    imports: pl.DataFrame  # imported runs: their file and out-of-range policy (sql/report/select_imports.sql)
    table_metrics: pl.DataFrame
    personality_kappa: pl.DataFrame
    judge_kappa: pl.DataFrame
    confidence_by_relevance: pl.DataFrame
    confidence_of_predicted_zero: pl.DataFrame
    calibration_bins: pl.DataFrame
    classifier: pl.DataFrame
    method_comparison: pl.DataFrame  # settings judged with 2+ confidence methods (select_method_comparison.sql)
    priming_views: dict[str, tuple[pl.DataFrame, int]] = field(default_factory=dict)
    pairwise_views: dict[str, tuple[pl.DataFrame, int]] = field(default_factory=dict)  # sql/pairwise/views
    persona_checks: list[PersonaCheck] = field(default_factory=list)  # published personas check runs
    recognitions: list[Recognition] = field(default_factory=list)  # published recognize runs
    fuse_comparisons: list[FuseComparison] = field(default_factory=list)  # published fuse runs (sql/fuse/views)
    fuse_disagreement: pl.DataFrame = field(default_factory=pl.DataFrame)  # fuse_disagreement's rows
    systems_ranked: list[SystemsRanked] = field(default_factory=list)  # evaluations with LLM qrels (issue 21)
    holes: list[HolesCurve] = field(default_factory=list)  # holes experiments (issue 21)
    trust: list[TrustStudy] = field(default_factory=list)  # trust studies (issue 50)

    @property
    def settings(self) -> list[Setting]:
        return settings_of(self.table_metrics)


@dataclass(frozen=True)
class Figure:
    """One PNG of the report: which section and setting it belongs to, and where it was written."""

    section: str
    setting: str
    title: str
    path: Path


@dataclass(frozen=True)
class ReportSummary:
    """What `peras report` prints."""

    path: Path
    figures_dir: Path
    n_runs: int
    n_settings: int
    n_figures: int
    n_bytes: int


@task(cache_policy=NO_CACHE)
def read_report_data(settings: Settings, runs: list[str] | None, collection: str | None) -> ReportData:
    """The report's reads (sql/report/*.sql) for the runs and collection asked for, from one snapshot of the cells.

    No retries: the connection already waits for another process's write lock, and a usage error stays one.
    """
    filters = {"run_names": runs or None, "collection_id": collection, "cot": None}
    with open_current(settings.warehouse) as con:  # read-only: refresh_views has migrated it
        run_sql(con, "metrics/snapshot_cells", filters)
        found = query_frame(con, "report/select_runs")
        missing = sorted(set(runs or []) - set(found["run_name"].to_list()))
        if missing or found.height == 0:
            raise UsageError(_nothing_matches(con, missing, collection))
        run_sql(con, "metrics/snapshot_long")
        run_sql(con, "metrics/snapshot_costs", filters)
        frames = {name: query_frame(con, f"report/select_{name}") for name in READS}
        views = query_frame(con, "report/select_priming_views", {"view_names": PRIMING_VIEWS})["view_name"].to_list()
        priming = {name: _view_rows(con, name, collection) for name in views}
        pairwise = {name: _view_rows(con, name, collection) for name in PAIRWISE_VIEWS}
        checks = read_persona_checks(con)
        recognitions = read_recognitions(con)
        fuse_comparisons = read_fuse_comparisons(con, collection)
        fuse_disagreement = _view_rows(con, "fuse_disagreement", collection)[0]
        systems_ranked, holes = read_systems_ranked(con, collection), read_holes(con, collection)
        trust = read_trust(con, collection)
    priming_views = {name: rows for name, rows in priming.items() if rows[1]}
    pairwise_views = {name: rows for name, rows in pairwise.items() if rows[1]}
    return ReportData(
        runs=found,
        **frames,
        priming_views=priming_views,
        pairwise_views=pairwise_views,
        persona_checks=checks,
        recognitions=recognitions,
        fuse_comparisons=fuse_comparisons,
        fuse_disagreement=fuse_disagreement,
        systems_ranked=systems_ranked,
        holes=holes,
        trust=trust,
    )


def _view_rows(con: Any, name: str, collection: str | None) -> tuple[pl.DataFrame, int]:
    """A view's first PRIMING_MAX_ROWS rows, and how many it gave (one more is asked for, to tell there are more)."""
    params = {"view_name": name, "collection_id": collection, "max_rows": PRIMING_MAX_ROWS + 1}
    frame = query_frame(con, "report/select_view_rows", params)
    return frame.head(PRIMING_MAX_ROWS), frame.height


def _nothing_matches(con: Any, missing: list[str], collection: str | None) -> str:
    known = run_sql(con, "metrics/select_run_names").fetchall()
    if not known:
        return "no judgments in the warehouse yet: run `peras judge` or `peras import-judgments` first"
    names = ", ".join(sorted({name for name, _ in known}))
    where = f" on collection {collection!r}" if collection else ""
    what = f"no judgments for run {', '.join(map(repr, missing))}" if missing else "no judgments"
    return f"{what}{where}: runs with judgments are {names}"


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
        figures.append(Figure("judges", collection_id, title, path))
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
    plan: list[tuple[bool, str, str, str, Callable[..., Path], tuple[Any, ...]]] = [
        # (draw it?, section, title, file name, function, its data arguments)
        (
            many,
            "radar",
            ", ".join(map(metric_title, AGREEMENT_METRICS)),
            "radar-agreement",
            charts.draw_radar,
            (metrics, personalities, AGREEMENT_METRICS),
        ),
        (
            many and has_confidence,
            "radar",
            ", ".join(map(metric_title, RELIABILITY_METRICS)),
            "radar-reliability",
            charts.draw_radar,
            (metrics, personalities, RELIABILITY_METRICS),
        ),
        (
            len(personalities) >= 2,
            "kappa",
            "Cohen's kappa between personalities",
            "kappa-personalities",
            charts.draw_kappa_heatmap,
            (kappa, personalities),
        ),
        (
            has_confidence and bool(shown_zero),
            "confidence",
            "Mean confidence of the judgments labelled 0, by human relevance",
            "confidence-predicted-0",
            charts.draw_confidence_bars,
            (zero, shown_zero, "human relevance label of the pairs the judge labelled 0"),
        ),
        (
            has_confidence and bool(shown),
            "confidence_all",
            "Mean confidence of all judgments, by human relevance",
            "confidence-by-label",
            charts.draw_confidence_bars,
            (confidence, shown, "human relevance label (any judged label)"),
        ),
        (
            has_confidence,
            "calibration",
            "Reliability diagrams",
            "reliability",
            charts.draw_reliability_diagrams,
            (bins, ece, personalities),
        ),
    ]
    return [
        Figure(
            section, s.label, f"{title} · {s.label}", draw(*args, f"{title} · {s.label}", out / f"{stem}-{s.slug}.png")
        )
        for wanted, section, title, stem, draw, args in plan
        if wanted
    ]


@task(cache_policy=NO_CACHE)
def find_priming_plots(priming_dir: Path) -> list[Path]:
    """The PNGs the priming flow wrote, in name order (none: the report says there are no priming runs yet)."""
    return sorted(priming_dir.rglob("*.png")) if priming_dir.is_dir() else []


def data_uri(path: Path) -> str:
    """A PNG as a data: URI, so the HTML file needs nothing beside it."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


@task(cache_policy=NO_CACHE)
def render_report(data: ReportData, figures: list[Figure], priming_plots: list[Path], filters: dict[str, Any]) -> str:
    """The report as one HTML page (tasks/report/report.html.j2), every image inlined."""
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["num"] = fmt
    environment.filters["count"] = fmt_count
    environment.filters["data_uri"] = data_uri
    context = {
        "generated_at": now(),
        "filters": filters,
        "runs": data.runs.to_dicts(),
        "failures": data.failures.to_dicts(),
        "imports": data.imports.to_dicts(),
        "agreement_tables": metric_tables(data.table_metrics, AGREEMENT_METRICS),
        "reliability_tables": metric_tables(data.table_metrics, RELIABILITY_METRICS),
        "figures": {section: [f for f in figures if f.section == section] for section in SECTIONS},
        "method_tables": method_tables(data.method_comparison, filters.get("personalities")),
        "classifier_tables": _classifier_tables(data.classifier),
        "classifier_titles": list(CLASSIFIER_METRIC_TITLES.values()),
        "priming_plots": priming_plots,
        "priming_tables": [frame_table(name, frame, n) for name, (frame, n) in data.priming_views.items()],
        "pairwise_tables": [frame_table(name, frame, n) for name, (frame, n) in data.pairwise_views.items()],
        "persona_checks": data.persona_checks,
        "recognitions": data.recognitions,
        "fuse_comparisons": data.fuse_comparisons,
        "systems_ranked": data.systems_ranked,
        "holes": data.holes,
        "trust": data.trust,
        "n_judgments": int(data.runs["n_judgments"].sum()),
        "n_settings": len(data.settings),
    }
    return environment.get_template("report.html.j2").render(**context)


def _classifier_tables(summary: pl.DataFrame) -> list[ClassifierTable]:
    """Table 5 per classify run, learners named as `peras classify` names them."""
    if summary.height == 0:
        return []
    return classifier_tables(summary, TITLES)


@task(cache_policy=NO_CACHE)
def check_report_output(settings: Settings, out_dir: Path) -> None:
    """Before anything is drawn: the report and its figures go neither over nor into the warehouse's files."""
    targets = [out_dir / "report.html", out_dir / FIGURES_DIR]
    refuse_warehouse_files(targets, settings.warehouse, "--output", out_dir)
    check_writable(targets[:1], "--output", out_dir)


@task(cache_policy=NO_CACHE)
def write_report(settings: Settings, html: str, path: Path, data: ReportData, figures: list[Figure]) -> ReportSummary:
    """Write the HTML file beside its figures/ folder; return where it is and what it holds."""
    write_files({path: html}, settings.warehouse, "--output", path.parent)
    n_runs, n_settings = data.runs.height, len(data.settings)
    return ReportSummary(path, path.parent / FIGURES_DIR, n_runs, n_settings, len(figures), path.stat().st_size)


@task(cache_policy=NO_CACHE)
def publish_report_artifact(summary: ReportSummary) -> None:
    """A link to the report file, as a link artifact on the flow run."""
    create_link_artifact(
        link=summary.path.resolve().as_uri(),
        link_text=f"PERAS report: {summary.n_runs} runs, {summary.n_settings} settings, {summary.n_figures} figures",
        key="report",
        description=f"{summary.path} ({summary.n_bytes:,} bytes; PNGs in {summary.figures_dir})",
    )


def report_run_name() -> str:
    """report-<collection> or report-all (the runs covered are in the flow's parameters)."""
    return f"report-{flow_run.parameters.get('collection') or 'all'}"
