"""Report flow: the metric views of some runs as one self-contained HTML page with its figures."""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from peras.settings import Settings, load_settings
from tasks.metrics.tasks import refresh_views
from tasks.report.data import read_report_data
from tasks.report.figures import draw_figures
from tasks.report.tasks import (
    FIGURES_DIR,
    ReportSummary,
    check_report_output,
    find_priming_plots,
    publish_report_artifact,
    render_report,
    report_run_name,
    write_report,
)


@flow(name="report", flow_run_name=report_run_name, log_prints=True)
def report(
    runs: list[str] | None = None,
    collection: str | None = None,
    output: str | None = None,
    personalities: list[str] | None = None,
    settings: Settings | None = None,
) -> ReportSummary:
    """Write OUTPUT/report.html (default: the settings' reports_dir) and its PNGs in OUTPUT/figures.

    Covers the runs named (default: every published run), optionally of one collection. `personalities` picks the
    bars of the confidence figures (default: HN and LC in the study's Figure 3, the judgments labelled 0; default,
    HA, LA, HN, LN in the one of all judgments) and the rows of the confidence methods' comparison (default:
    default). The numbers are the SQL views' (sql/metrics, read by sql/report).
    """
    settings = settings or load_settings()
    out_dir = Path(output) if output else settings.reports_dir
    check_report_output(settings, out_dir)
    refresh_views(settings)
    data = read_report_data(settings, runs, collection)
    figures = draw_figures(data, out_dir / FIGURES_DIR, personalities)
    priming_plots = find_priming_plots(settings.reports_dir / "priming")
    filters = {"runs": runs, "collection": collection, "personalities": personalities}
    html = render_report(data, figures, priming_plots, filters)
    summary = write_report(settings, html, out_dir / "report.html", data, figures)
    publish_report_artifact(summary)
    return summary
