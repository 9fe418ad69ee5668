"""`peras sql`: ad-hoc read-only SQL on the warehouse, as a table, CSV or JSON."""

from __future__ import annotations

import json
import sys

import click
import polars as pl
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cli.common import settings_options
from peras.settings import Settings


@click.command()
@click.argument("query")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option(
    "--max-rows",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Rows a table shows (csv and json print every row).",
)
@settings_options
def sql(settings: Settings, query: str, fmt: str, max_rows: int) -> None:
    """Run QUERY (DuckDB SQL; `-` reads it from stdin) on the warehouse, read-only.

    Every table and view is described in docs/warehouse.md. The warehouse is opened read-only, so this works
    while a judge run is going (it waits while a stage publishes) and can change nothing.

    \b
    Examples:
        peras sql "select personality, cohen_kappa from metrics_agreement where collection_id = 'dl19' and not cot"
        peras sql "select * from certainty_split(90)" --format csv > thresholds90.csv
        peras sql - --format json < query.sql
    """
    from peras.warehouse_tools import run_query

    text = sys.stdin.read() if query == "-" else query
    frame = run_query(settings.warehouse, text)
    if frame is None:
        click.echo("ok")
    elif fmt == "csv":
        click.echo(frame.write_csv(), nl=False)
    elif fmt == "json":
        click.echo(json.dumps(frame.to_dicts(), indent=2, default=str))
    else:
        print_frame(frame, max_rows)


def print_frame(frame: pl.DataFrame, max_rows: int) -> None:
    """A result as a rich table: numbers right-aligned, floats to 4 decimals, null as an empty cell."""
    from tasks.metrics.tasks import format_value

    shown = frame.head(max_rows)
    more = f"; first {max_rows} shown (--max-rows, or --format csv for all)" if frame.height > max_rows else ""
    table = Table()
    for column in frame.columns:
        numeric = frame.schema[column].is_numeric()
        table.add_column(escape(column), justify="right" if numeric else "left", overflow="fold")
    for row in shown.iter_rows():
        table.add_row(*(escape(format_value(value)) for value in row))
    console = Console(width=max(Console().width, 120))
    console.print(table)
    console.print(f"{frame.height:,} row{'s' if frame.height != 1 else ''}{more}", highlight=False)


COMMANDS = [sql]
