"""Ingest flow: a collection's qrels, queries and passages into the warehouse, behind a quality gate."""

from __future__ import annotations

from typing import Any

from prefect import flow

from peras.settings import Settings, load_settings
from peras.warehouse import now
from tasks.ingest.sources import ingest_run_name, resolve_source
from tasks.ingest.tasks import (
    check_collection,
    fingerprint_sources,
    publish_collection,
    published_fingerprint,
    read_collection,
    select_published_subset,
    select_subset,
)
from tasks.publish.tasks import publish_analyst_snapshot


@flow(name="ingest", flow_run_name=ingest_run_name, log_prints=True)
def ingest(
    preset: str | None = None,
    name: str | None = None,
    qrels: list[str] | None = None,
    queries: str | None = None,
    passages: str | None = None,
    subset_topics: int | None = None,
    force: bool = False,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Read a collection (a preset, or your own files), check it, and publish it atomically.

    Re-ingesting unchanged files is a no-op; changed files replace the collection in one transaction.
    """
    settings = settings or load_settings()
    started_at = now()
    source = resolve_source(settings, preset, name, qrels, queries, passages, subset_topics)
    fingerprint, files = fingerprint_sources(source)
    if not force and published_fingerprint(settings, source.collection_id) == fingerprint:
        publish_analyst_snapshot(settings)
        return {"collection_id": source.collection_id, "status": "unchanged"}
    staged = read_collection(source, files)
    check_collection(staged)
    subset = select_subset(staged, source)
    published = select_published_subset(staged, source)
    ingest_run_id = publish_collection(settings, source, staged, subset, published, fingerprint, started_at)
    publish_analyst_snapshot(settings)
    return {
        "collection_id": source.collection_id,
        "status": "published",
        "ingest_run_id": ingest_run_id,
        "n_queries": staged.queries.height,
        "n_passages": staged.passages.height,
        "n_qrels": staged.qrels.height,
        "n_subset_topics": subset.height,
        "n_subset_pairs": int(subset["n_pairs"].sum()) if subset.height else 0,
        "n_published_topics": published.height,
        "n_published_pairs": int(published["n_pairs"].sum()) if published.height else 0,
    }
