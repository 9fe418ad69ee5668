"""`peras report`: one self-contained HTML page of the metrics, figures and classifier tables of some runs."""

from __future__ import annotations

from pathlib import Path

import click

from cli.common import run_flow, run_tags, settings_options
from peras.settings import Settings


@click.command()
@click.option("--run", "runs", multiple=True, help="Only this run (repeatable); default: every published run.")
@click.option("--collection", help="Only runs on this collection.")
@click.option(
    "--output",
    type=click.Path(file_okay=False, path_type=Path),
    help="Directory for report.html and figures/ [default: reports_dir, env PERAS_REPORTS_DIR].",
)
@click.option(
    "--personality",
    "personalities",
    multiple=True,
    help="A personality in the two confidence figures and the comparison of confidence methods (repeatable) "
    "[default: HN LC in Figure 3, the judgments labelled 0; default HA LA HN LN in the one of all judgments; "
    "default in the methods' comparison].",
)
@settings_options
def report(
    settings: Settings,
    runs: tuple[str, ...],
    collection: str | None,
    output: Path | None,
    personalities: tuple[str, ...],
) -> None:
    """Write the report: tables 5, 7, 8 and figures 2-5 of the study, reliability diagrams, priming plots.

    One HTML file with every PNG inlined (it opens offline and can be mailed as is); the PNGs are also
    written to figures/ beside it. Numbers are the SQL metric views' (see `peras metrics`).

    \b
    Examples:
        peras report                                   # every run -> reports/report.html
        peras report --collection dl19 --output out/dl19
        peras report --run Olz-gpt4o --run Olz-llama --personality default --personality HN
    """
    from flows.report import report as report_flow

    summary = run_flow(
        report_flow,
        tags=run_tags("report", collection),
        runs=list(runs) or None,
        collection=collection,
        output=str(output) if output else None,
        personalities=list(personalities) or None,
        settings=settings,
    )
    click.echo(
        f"wrote {summary.path} ({summary.n_bytes:,} bytes): {summary.n_runs} run(s), "
        f"{summary.n_settings} setting(s), {summary.n_figures} figures (PNGs in {summary.figures_dir})"
    )


COMMANDS = [report]
