"""`peras ingest`: run the ingest flow."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cli.common import bounded, run_flow, run_tags, settings_options
from peras.settings import Settings
from tasks.ingest.sources import presets


@click.command()
@click.argument("preset", required=False)
@click.option("--name", help="Collection name for your own files.")
@click.option("--qrels", "qrels", multiple=True, help="TREC qrels file, or SET=FILE (repeatable).")
@click.option("--queries", type=click.Path(path_type=Path), help="Queries TSV: query_id<TAB>text.")
@click.option("--passages", type=click.Path(path_type=Path), help="collection.tsv or JSONL passages.")
@click.option("--subset-topics", type=bounded(1), help="Topics in the balanced subset.")
@click.option("--data-dir", type=click.Path(path_type=Path), help="Where presets' files are [../shared/data].")
@click.option("--force", is_flag=True, help="Re-read even if the files are unchanged.")
@settings_options
def ingest(
    settings: Settings,
    preset: str | None,
    name: str | None,
    qrels: tuple[str, ...],
    queries: Path | None,
    passages: Path | None,
    subset_topics: int | None,
    data_dir: Path | None,
    force: bool,
) -> None:
    """Load a collection's qrels, queries and passages into the warehouse.

    PRESET is one of: sample, dl19, dl20, dl21, llmjudge (or `all`), or irds:<id>, any ir_datasets dataset with
    queries, qrels and docs (collection irds-<id>, or --name; docs/formats.md). Files may be gzipped.

    \b
    Examples:
        peras ingest sample
        peras ingest dl19 --subset-topics 22
        peras ingest irds:msmarco-passage/trec-dl-2019/judged
        peras ingest --name mycoll --qrels qrels.txt --queries topics.tsv --passages collection.tsv.gz
    """
    from flows.ingest import ingest as ingest_flow

    if data_dir is not None:
        settings.data_dir = data_dir
    names = [p for p in presets() if p != "sample"] if preset == "all" else [preset]
    for one in names:
        collection = one or name  # your own files: the collection is --name
        result = run_flow(
            ingest_flow,
            tags=run_tags("ingest", collection),
            flow_run_name=f"ingest-{collection}" if collection else None,
            preset=one,
            name=name,
            qrels=list(qrels) or None,
            queries=str(queries) if queries else None,
            passages=str(passages) if passages else None,
            subset_topics=subset_topics,
            force=force,
            settings=settings,
        )
        click.echo(describe(result))


def describe(result: dict[str, Any]) -> str:
    """One line per ingested collection."""
    if result["status"] == "unchanged":
        return f"{result['collection_id']}: unchanged (same files already ingested)"
    line = (
        f"{result['collection_id']}: {result['n_qrels']:,} judged pairs, {result['n_queries']:,} queries, "
        f"{result['n_passages']:,} passages; balanced subset {result['n_subset_topics']} topics / "
        f"{result['n_subset_pairs']:,} pairs"
    )
    if result.get("n_published_topics"):
        line += f"; published subset {result['n_published_topics']} topics / {result['n_published_pairs']:,} pairs"
    return line


COMMANDS = [ingest]
