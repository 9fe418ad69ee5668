"""`peras subsets`: the topic subsets of the ingested collections, what `peras judge --subset` takes."""

from __future__ import annotations

from typing import Any

import click

from cli.common import settings_options, text_table
from peras.errors import UsageError
from peras.settings import Settings

HEADERS = ["collection", "subset", "topics", "pairs", "rel 0", "rel 1", "rel 2", "rel 3"]
PAPER_ROW = "(Table 4)"  # the subset column of the study's own row, listed after a collection's subsets


@click.command()
@click.argument("collection", required=False)
@click.option("--rule", "show_rule", is_flag=True, help="Also say how each subset was chosen.")
@settings_options
def subsets(settings: Settings, collection: str | None, show_rule: bool) -> None:
    """List the topic subsets of COLLECTION (default: every collection), with topics and judged pairs per level.

    A subset's pairs are every judged pair of its topics: what `peras judge COLLECTION --subset NAME` judges.
    Ingest makes the `balanced` subset of each collection, and `published` (topics with exactly the study's
    Table 4 counts) where they are known: LLMJudge, DL19 (docs/subsets.md). Without --subset, `peras judge` judges
    published, else balanced. The study's own row follows each collection's subsets, as `(Table 4)`.

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
        for line in text_table(HEADERS, with_paper_rows([list(row[:8]) for row in found])):
            click.echo(line)
    for name in sorted({row[0] for row in rows if row[1] is None}):
        click.echo(f"{name}: no subsets (judge it whole: leave out --subset)")
    if show_rule:
        for row in found:
            click.echo(f"{row[0]}/{row[1]}: {row[8]}")


def with_paper_rows(rows: list[list[Any]]) -> list[list[Any]]:
    """The subsets' rows with the study's Table 4 row after each collection's last subset, where it has one."""
    from tasks.ingest.sources import study_table4

    out: list[list[Any]] = []
    for i, row in enumerate(rows):
        out.append(row)
        table4 = study_table4(row[0])
        if table4 and (i + 1 == len(rows) or rows[i + 1][0] != row[0]):
            out.append([row[0], PAPER_ROW, table4[0], sum(table4[1:]), *table4[1:]])
    return out


COMMANDS = [subsets]
