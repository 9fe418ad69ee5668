"""Report tasks: read the metric views for some runs once, draw the figures, render one self-contained HTML file."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import polars as pl
from prefect import task
from prefect.artifacts import create_link_artifact
from prefect.cache_policies import NO_CACHE
from prefect.runtime import flow_run

from peras.metric_names import CLASSIFIER_METRIC_TITLES
from peras.outputs import check_writable, refuse_warehouse_files, write_files
from peras.settings import Settings
from peras.warehouse import now
from tasks.report.data import ReportData, read_report_data
from tasks.report.figures import Figure, draw_figures, views_of
from tasks.report.interactive import vega_bundle
from tasks.report.methods import method_tables
from tasks.report.probes import PROBE_COLUMNS, probe_rows
from tasks.report.tables import (
    AGREEMENT_METRICS,
    RELIABILITY_METRICS,
    ClassifierTable,
    classifier_tables,
    fmt,
    fmt_count,
    frame_table,
    metric_tables,
)
from tasks.shared.method_titles import TITLES

__all__ = ["Figure", "ReportData", "draw_figures", "read_report_data"]  # the flow's and the tests' imports

TEMPLATES_DIR = Path(__file__).resolve().parent
FIGURES_DIR = "figures"  # beside report.html

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
class ReportSummary:
    """What `peras report` prints."""

    path: Path
    figures_dir: Path
    n_runs: int
    n_settings: int
    n_figures: int
    n_bytes: int


@task(cache_policy=NO_CACHE)
def find_priming_plots(priming_dir: Path) -> list[Path]:
    """The PNGs the priming flow wrote, in name order (none: the report says there are no priming runs yet)."""
    return sorted(priming_dir.rglob("*.png")) if priming_dir.is_dir() else []


def data_uri(path: Path) -> str:
    """A PNG as a data: URI, so the HTML file needs nothing beside it."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


@task(cache_policy=NO_CACHE)
def render_report(data: ReportData, figures: list[Figure], priming_plots: list[Path], filters: dict[str, Any]) -> str:
    """The report as one HTML page (tasks/report/report.html.j2), every image inlined; the charts that have an
    interactive version drawn by the inlined Vega-Lite, their PNGs kept for a reader without JavaScript."""
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
    views = views_of(figures)
    context = {
        "generated_at": now(),
        "filters": filters,
        "runs": data.runs.to_dicts(),
        "failures": data.failures.to_dicts(),
        "imports": data.imports.to_dicts(),
        "agreement_tables": metric_tables(data.table_metrics, AGREEMENT_METRICS),
        "reliability_tables": metric_tables(data.table_metrics, RELIABILITY_METRICS),
        "figures": {section: [v for v in views if v.section == section] for section in SECTIONS},
        "has_charts": any(v.spec for v in views),
        "vega_bundle": vega_bundle() if any(v.spec for v in views) else "",
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
        "probe_titles": list(PROBE_COLUMNS.values()),
        "probe_rows": probe_rows(data.probe_measures),
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
