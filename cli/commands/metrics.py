"""`peras metrics`: read the metric views (agreement, reliability, calibration, ...) as tables, CSV or JSON."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from cli.common import run_flow, run_tags, settings_options
from cli.tables import TextTable, print_text_table
from peras.errors import UsageError
from peras.settings import Settings

if TYPE_CHECKING:
    import polars as pl

VIEW_CHOICES = [
    "all",
    "summary",
    "agreement",
    "reliability",
    "calibration",
    "thresholds",
    "comparison",
    "oracle",
    "confusion",
    "calibration-bins",
    "threshold-curve",
    "method-comparison",
]


@click.command()
@click.option("--run", help="Only this run (its name).")
@click.option("--collection", help="Only runs on this collection.")
@click.option("--cot/--no-cot", default=None, help="Only judgments made with / without chain-of-thought.")
@click.option(
    "--view",
    "views",
    multiple=True,
    type=click.Choice(VIEW_CHOICES),
    help="Metric view (repeatable); all = the summary and the six headline views. [default: summary on "
    "the terminal, the six headline views as csv or json]",
)
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    help="Write here instead of the terminal (csv with several views: a directory, one file each).",
)
@click.option("--wide", is_flag=True, help="With --format table: each view as one table however wide (else 120).")
@settings_options
def metrics(
    settings: Settings,
    run: str | None,
    collection: str | None,
    cot: bool | None,
    views: tuple[str, ...],
    fmt: str,
    output: Path | None,
    wide: bool,
) -> None:
    """Agreement, confidence reliability, calibration and thresholds of every judge group.

    A group is a run x personality x CoT setting x confidence method; every number comes from the SQL
    views in sql/metrics (see docs/metrics.md). Parse failures are counted, never scored.

    \b
    Examples:
        peras metrics                                    # summary: kappa, QWK, macro-F1, HMR, ECE
        peras metrics --view all                         # the summary and the six headline views
        peras metrics --run Olz-gpt4o --view agreement
        peras metrics --collection llmjudge --view oracle --format csv --output oracle.csv
        peras metrics --run Olz-gpt4o --view method-comparison   # confidence methods side by side
        peras metrics --format json --output metrics.json
    """
    from flows.metrics import metrics as metrics_flow
    from tasks.metrics.tasks import metrics_json, write_metrics

    chosen = list(views) or default_views(fmt, output)
    if fmt == "csv" and output is None and len(_expand(chosen)) > 1:
        raise UsageError("--format csv prints one view: name it with --view, or give --output DIR for several")
    frames = run_flow(
        metrics_flow,
        tags=run_tags("metrics", collection),
        views=chosen,
        run=run,
        collection=collection,
        cot=cot,
        settings=settings,
    )
    if output is not None:
        for path in write_metrics(frames, fmt if fmt != "table" else "csv", output, settings.warehouse):
            click.echo(f"wrote {path}")
    elif fmt == "json":
        click.echo(metrics_json(frames))
    elif fmt == "csv":
        click.echo(next(iter(frames.values())).write_csv(), nl=False)
    else:
        print_tables(frames, wide=wide)
        if list(frames) == ["summary"]:
            click.echo("more: peras metrics --view agreement|reliability|calibration|thresholds|comparison|oracle|all")


def default_views(fmt: str, output: Path | None) -> list[str]:
    """Without --view: the summary to read on the terminal, the six headline views as files or csv/json."""
    from tasks.metrics.tasks import HEADLINE_VIEWS

    return ["summary"] if fmt == "table" and output is None else HEADLINE_VIEWS


def _expand(views: list[str]) -> list[str]:
    from tasks.metrics.tasks import resolve_views

    return resolve_views(views)


def print_tables(frames: dict[str, pl.DataFrame], wide: bool = False) -> None:
    """Each view as a table of its display columns, in parts that fit 120 columns (the leading text columns, which
    say what a row is, repeated in each)."""
    from peras.metric_names import format_value
    from tasks.metrics.tasks import VIEWS, display_frame

    for name, frame in frames.items():
        shown = display_frame(name, frame)
        numeric = {column for column in shown.columns if shown.schema[column].is_numeric()}
        n_keys = next((i for i, column in enumerate(shown.columns) if column in numeric), len(shown.columns))
        table = TextTable(
            headers=shown.columns,
            rows=[[format_value(value) for value in row] for row in shown.iter_rows()],
            n_keys=max(1, min(n_keys, 3)),
            right=numeric,
            title=f"{name} ({VIEWS[name]}, {frame.height} rows)",
        )
        print_text_table(table, wide=wide)


COMMANDS = [metrics]
