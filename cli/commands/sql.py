"""`peras sql`: ad-hoc read-only SQL on the warehouse, as a table, CSV or JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cli.common import bounded, settings_options
from peras.errors import UsageError
from peras.settings import Settings

if TYPE_CHECKING:
    import polars as pl


@click.command()
@click.argument("query")
@click.option("--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True)
@click.option(
    "--max-rows",
    type=bounded(1),
    default=100,
    show_default=True,
    help="Rows a table shows (csv and json print every row).",
)
@settings_options
def sql(settings: Settings, query: str, fmt: str, max_rows: int) -> None:
    """Run QUERY (DuckDB SQL; `-` reads it from stdin) on the warehouse, read-only.

    Every table and view is described in docs/warehouse.md. It reads the analysts' snapshot
    (<warehouse stem>.analyst.duckdb, refreshed by every stage when it publishes) when that holds the warehouse's
    latest state, else the warehouse itself, opened read-only (waiting while a stage publishes). Either way it
    can change nothing: no file but that database can be read or written (no COPY TO, ATTACH, read_csv).
    Save a result with --format csv > FILE.

    \b
    Examples:
        peras sql "select personality, cohen_kappa from metrics_agreement where collection_id = 'dl19' and not cot"
        peras sql "select * from certainty_split(90)" --format csv > thresholds90.csv
        peras sql - --format json < query.sql
    """
    text = sys.stdin.read() if query == "-" else query
    frame = run_locked_down(settings.warehouse, text)
    if frame is None:
        click.echo("ok")
    elif fmt == "csv":
        click.echo(frame.write_csv(), nl=False)
    elif fmt == "json":
        click.echo(json.dumps(frame.to_dicts(), indent=2, default=str))
    else:
        print_frame(frame, max_rows)


def run_locked_down(warehouse: Path, text: str) -> pl.DataFrame | None:
    """Run `text` on a read-only, locked-down connection to the snapshot or the warehouse; None: no result.

    The connection is closed before anything is printed, so a stage waiting to publish waits only for the query.
    """
    import duckdb

    from peras.warehouse import analyst_source, connect, lock_down
    from peras.warehouse_tools import QUERY_HINT, one_line, refuse_changes

    with connect(analyst_source(warehouse), read_only=True) as con:
        lock_down(con)
        refuse_changes(con, text)
        try:
            relation = con.sql(text)
            return None if relation is None else relation.pl()
        except duckdb.PermissionException as exc:
            raise UsageError(f"{one_line(exc)} ({QUERY_HINT})") from exc
        except duckdb.Error as exc:
            raise UsageError(one_line(exc)) from exc


def print_frame(frame: pl.DataFrame, max_rows: int) -> None:
    """A result as a rich table: numbers right-aligned, floats to 4 decimals, null as an empty cell."""
    from peras.metric_names import format_value

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
