"""`peras subsets`: the topic subsets of the ingested collections, what `peras judge --subset` takes."""

from __future__ import annotations

import click

from cli.common import settings_options, text_table
from peras.errors import UsageError
from peras.settings import Settings

HEADERS = ["collection", "subset", "topics", "pairs", "rel 0", "rel 1", "rel 2", "rel 3"]


@click.command()
@click.argument("collection", required=False)
@click.option("--rule", "show_rule", is_flag=True, help="Also say how each subset was chosen.")
@settings_options
def subsets(settings: Settings, collection: str | None, show_rule: bool) -> None:
    """List the topic subsets of COLLECTION (default: every collection), with topics and judged pairs per level.

    A subset's pairs are every judged pair of its topics: what `peras judge COLLECTION --subset NAME` judges.
    Ingest makes the `balanced` subset of each collection, and `published` (the study's own topics) where they
    are known: LLMJudge (docs/subsets.md). Without --subset, `peras judge` judges published, else balanced.

    \b
    Examples:
        peras subsets
        peras subsets dl19 --rule
    """
    from peras.sql import run_sql
    from peras.warehouse import connect

    with connect(settings.warehouse, read_only=True) as con:
        rows = run_sql(con, "ingest/select_subsets", {"collection_id": collection}).fetchall()
    if not rows:
        if collection is None:
            raise UsageError("no collection ingested yet: run `peras ingest sample` (or dl19, dl20, ...)")
        raise UsageError(f"collection {collection!r} is not in the warehouse: run `peras ingest {collection}`")
    found = [row for row in rows if row[1] is not None]
    if found:
        for line in text_table(HEADERS, [list(row[:8]) for row in found]):
            click.echo(line)
    for name in sorted({row[0] for row in rows if row[1] is None}):
        click.echo(f"{name}: no subsets (judge it whole: leave out --subset)")
    if show_rule:
        for row in found:
            click.echo(f"{row[0]}/{row[1]}: {row[8]}")


COMMANDS = [subsets]
