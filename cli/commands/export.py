"""`peras export`: any table or view of the warehouse to a Parquet or CSV file."""

from __future__ import annotations

from pathlib import Path

import click

from cli.common import settings_options
from peras.outputs import check_writable, refuse_warehouse_files
from peras.settings import Settings


@click.command()
@click.argument("name")
@click.option(
    "--format", "fmt", type=click.Choice(["parquet", "csv"]), help="File format [from --output's suffix, else parquet]."
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="File to write (replaced if it exists) [NAME.FORMAT here].",
)
@settings_options
def export(settings: Settings, name: str, fmt: str | None, output: Path | None) -> None:
    """Write table or view NAME (see docs/warehouse.md) to a Parquet or CSV file, read-only.

    It reads the analysts' snapshot (<warehouse stem>.analyst.duckdb) when that holds the warehouse's latest
    state, else the warehouse itself; --output may not be the warehouse, its .wal or the snapshot.
    For a query or a macro's result, use `peras sql ... --format csv > FILE`.

    \b
    Examples:
        peras export metrics_agreement --output agreement.parquet
        peras export judgments --format csv --output out/judgments.csv
        peras sql "select * from certainty_split(90)" --format csv > thresholds90.csv
    """
    from peras.warehouse import analyst_source
    from peras.warehouse_tools import export_relation, infer_format

    chosen = infer_format(output, fmt)
    path = output or Path(f"{name}.{chosen}")
    refuse_warehouse_files([path], settings.warehouse, "--output", path)
    check_writable([path], "--output", path)
    n_rows = export_relation(analyst_source(settings.warehouse), name, chosen, path)
    click.echo(f"wrote {n_rows:,} rows of {name} to {path} ({chosen})")


COMMANDS = [export]
