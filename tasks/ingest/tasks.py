"""Ingest tasks: fingerprint the sources, read them, check them, publish them in one transaction."""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import InputError, UsageError, clip
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import now, open_migrated, transaction
from tasks.ingest.quality import gate
from tasks.ingest.sources import CollectionSource
from tasks.ingest.subsets import PUBLISHED_RULE, SUBSET_RULE, published_topics, rank_balanced_topics
from tasks.shared.readers import read_passages, read_qrels, read_tsv, sha256_file

INGEST_VERSION = "1"  # bump when parsing changes, so unchanged files are re-read


@dataclass
class StagedCollection:
    """Parsed, not yet published."""

    queries: pl.DataFrame
    passages: pl.DataFrame
    qrels: pl.DataFrame
    files: pl.DataFrame  # role, path, sha256, n_bytes, n_records
    n_source_pairs: int  # distinct pairs in the qrels files (lines less exact repeats)


@task(cache_policy=NO_CACHE)
def fingerprint_sources(source: CollectionSource) -> tuple[str, pl.DataFrame]:
    """sha256 of every source file and one fingerprint over them (and the subset settings)."""
    for source_file in source.files:
        if not source_file.path.is_file():
            raise UsageError(f"file not found: {source_file.path}")
    rows = [
        {"role": f.role, "path": str(f.path), "sha256": sha256_file(f.path), "n_bytes": f.path.stat().st_size}
        for f in source.files
    ]
    basis = {
        "v": INGEST_VERSION,
        "files": [(r["role"], r["sha256"]) for r in rows],
        "subset": [source.subset_topics, source.subset_qrels, source.subset_min_pairs],
        "description": source.description,
    }
    if source.published_topics:  # only then, so that other collections keep their fingerprints
        basis["published"] = [source.published_topics, source.published_levels]
    fingerprint = hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()
    return fingerprint, pl.DataFrame(rows)


@task(cache_policy=NO_CACHE)
def published_fingerprint(settings: Settings, collection_id: str) -> str | None:
    """The fingerprint of what is published for this collection now, if anything."""
    with open_migrated(settings.warehouse) as con:
        row = run_sql(con, "ingest/select_fingerprint", {"collection_id": collection_id}).fetchone()
    return row[0] if row else None


@task(cache_policy=NO_CACHE)
def read_collection(source: CollectionSource, files: pl.DataFrame) -> StagedCollection:
    """Read qrels, then only the judged queries and passages; every judged pair must have both texts."""
    qrels_rows: list[tuple[str, str, int, str]] = []
    counts: dict[str, int] = {}
    first_line: dict[tuple[str, str], tuple[str, int]] = {}
    n_source_pairs = 0
    for name, path in sorted(source.qrels.items()):
        qrels_file = read_qrels(path)
        for qrel in qrels_file.qrels:
            qrels_rows.append((qrel.query_id, qrel.doc_id, qrel.relevance, name))
            first_line.setdefault((qrel.query_id, qrel.doc_id), (str(path), qrel.line))
        counts[f"qrels:{name}"] = qrels_file.n_records
        n_source_pairs += qrels_file.n_records - qrels_file.n_repeats
    qrels = pl.DataFrame(qrels_rows, schema=["query_id", "doc_id", "relevance", "qrels_set"], orient="row")
    # empty texts are left to the quality gate, which lists every one of them and publishes nothing
    queries = read_tsv(source.queries, set(qrels["query_id"]), what="query", refuse_empty=False)
    passages = read_passages(source.passages, set(qrels["doc_id"]), refuse_empty=False)
    counts |= {"queries": queries.n_records, "passages": passages.n_records}
    _require_texts(qrels_rows, queries.records, passages.records, first_line, source)
    return StagedCollection(
        queries=pl.DataFrame({"query_id": list(queries.records), "text": list(queries.records.values())}),
        passages=pl.DataFrame({"doc_id": list(passages.records), "text": list(passages.records.values())}),
        qrels=qrels,
        files=files.with_columns(pl.col("role").replace_strict(counts, return_dtype=pl.Int64).alias("n_records")),
        n_source_pairs=n_source_pairs,
    )


def _require_texts(
    qrels_rows: list[tuple[str, str, int, str]],
    queries: dict[str, str],
    passages: dict[str, str],
    first_line: dict[tuple[str, str], tuple[str, int]],
    source: CollectionSource,
) -> None:
    # queries first, then passages: the first judged pair whose text is missing names the line to fix
    kinds = (("query", "queries", queries, source.queries), ("passage", "passages", passages, source.passages))
    for side, (what, what_plural, texts, text_path) in enumerate(kinds):
        missing = [(q, d) for q, d, _, _ in qrels_rows if (q, d)[side] not in texts]
        if missing:
            path, line = first_line[missing[0]]
            ids = sorted({pair[side] for pair in missing})
            raise InputError(
                f"{what} {clip(missing[0][side])} is judged but has no text in {text_path} ({len(missing)} pairs, "
                f"{len(ids)} {what_plural} without text, e.g. {', '.join(map(clip, ids[:5]))})",
                path,
                line,
            )


@task(cache_policy=NO_CACHE)
def check_collection(staged: StagedCollection) -> None:
    """The ingest quality gate: labels, uniqueness, ids, texts and counts against the source."""
    pairs = staged.qrels.join(staged.queries.rename({"text": "query_text"}), on="query_id", how="left").join(
        staged.passages.rename({"text": "passage_text"}), on="doc_id", how="left"
    )
    gate(
        [
            ("qrels", staged.qrels, {"n_source_pairs": staged.n_source_pairs}),
            ("judged_pairs", pairs, {}),
            (
                "texts",
                staged.queries.rename({"query_id": "id"}),
                {"n_expected": pairs["query_id"].n_unique()},
            ),
            ("texts", staged.passages.rename({"doc_id": "id"}), {"n_expected": pairs["doc_id"].n_unique()}),
        ]
    )


@task(cache_policy=NO_CACHE)
def select_subset(staged: StagedCollection, source: CollectionSource) -> pl.DataFrame:
    """The study's balanced topic subset (empty when no size is configured)."""
    qset = source.subset_qrels
    qrels = staged.qrels if qset is None else staged.qrels.filter(pl.col("qrels_set") == qset)
    return rank_balanced_topics(qrels, source.subset_topics or 0, source.subset_min_pairs)


@task(cache_policy=NO_CACHE)
def select_published_subset(staged: StagedCollection, source: CollectionSource) -> pl.DataFrame:
    """The study's own topics, checked against its level counts (empty when the preset has none)."""
    if not source.published_topics:
        return pl.DataFrame()
    qrels = staged.qrels.filter(pl.col("qrels_set") == source.subset_qrels)
    return published_topics(qrels, source.published_topics, source.published_levels, source.collection_id)


@task(cache_policy=NO_CACHE)
def publish_collection(
    settings: Settings,
    source: CollectionSource,
    staged: StagedCollection,
    subset: pl.DataFrame,
    published: pl.DataFrame,
    fingerprint: str,
    started_at: Any,
) -> str:
    """Replace the collection, its subsets and its ingest record in one transaction."""
    ingest_run_id = uuid.uuid4().hex
    base = {"collection_id": source.collection_id}
    with open_migrated(settings.warehouse) as con:
        for name, frame in [
            ("staged_queries", staged.queries),
            ("staged_passages", staged.passages),
            ("staged_qrels", staged.qrels),
            ("staged_files", staged.files),
        ]:
            con.register(name, frame.to_arrow())
        with transaction(con):
            run_sql(con, "ingest/delete_collection", base)
            run_sql(
                con,
                "ingest/insert_collection",
                base
                | {
                    "description": source.description,
                    "preset": source.preset,
                    "fingerprint": fingerprint,
                    "ingested_at": now(),
                },
            )
            _store_subsets(con, source, staged, subset, published)
            run_sql(
                con,
                "ingest/insert_ingest_run",
                base
                | {
                    "ingest_run_id": ingest_run_id,
                    "fingerprint": fingerprint,
                    "started_at": started_at,
                    "finished_at": now(),
                    "n_queries": staged.queries.height,
                    "n_passages": staged.passages.height,
                    "n_qrels": staged.qrels.height,
                },
            )
    return ingest_run_id


def _store_subsets(
    con: Any, source: CollectionSource, staged: StagedCollection, subset: pl.DataFrame, published: pl.DataFrame
) -> None:
    """The balanced and published subsets, plus one per qrels set when a collection has several (LLMJudge)."""
    named: list[tuple[str, pl.DataFrame, str, dict[str, Any]]] = []
    if subset.height:
        params = {
            "n_topics": source.subset_topics,
            "min_pairs": source.subset_min_pairs,
            "qrels_set": source.subset_qrels,
        }
        named.append(("balanced", subset, SUBSET_RULE.format(**params), params))
    if published.height:
        levels = " / ".join(f"{n:,}" for n in source.published_levels)
        rule = PUBLISHED_RULE.format(n_topics=published.height, qrels_set=source.subset_qrels, levels=levels)
        named.append(
            (
                "published",
                published,
                rule,
                {"n_topics": published.height, "qrels_set": source.subset_qrels, "levels": source.published_levels},
            )
        )
    if len(source.qrels) > 1:
        for qset in sorted(source.qrels):
            topics = (
                staged.qrels.filter(pl.col("qrels_set") == qset)
                .select("query_id")
                .unique()
                .sort("query_id")
                .with_row_index("rank", offset=1)
                .with_columns(pl.lit(None, pl.Float64).alias("balance_score"))
            )
            named.append((qset, topics, f"every topic of the {qset} qrels", {"qrels_set": qset}))
    for name, topics, rule, params in named:
        con.register(
            "staged_subset_topics",
            topics.select("query_id", pl.col("rank").cast(pl.Int32), "balance_score").to_arrow(),
        )
        run_sql(
            con,
            "ingest/replace_subset",
            {
                "collection_id": source.collection_id,
                "subset_name": name,
                "rule": rule,
                "params": json.dumps(params),
                "created_at": now(),
            },
        )
