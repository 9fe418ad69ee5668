"""Probe tasks: read a collection's judged pairs, build the probe set, publish it as a collection of its own.

The probe collection is written by the ingest stage's own SQL (sql/ingest/delete_collection, insert_collection),
so a probe collection is an ingested collection like any other (`peras judge <collection>-probes` judges it), and
sql/probes/replace_probe_set records what each of its passages is, in the same transaction.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import UsageError
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import not_ingested, now, open_migrated, require_collection, transaction
from tasks.probes.build import ProbeCopy, SourcePair, build_copies, copy_rows, draw_pairs
from tasks.probes.kinds import ProbeKind, load_kinds

BUILD_VERSION = "1"  # bump when copies are made differently, so that an unchanged call builds again


def probe_collection_name(collection: str) -> str:
    """The probe collection of `collection`."""
    return f"{collection}-probes"


@task(cache_policy=NO_CACHE)
def choose_kinds(names: list[str] | None) -> list[ProbeKind]:
    """The kinds asked for (default: every data file), each file checked."""
    return load_kinds(names)


@task(cache_policy=NO_CACHE)
def read_source_pairs(
    settings: Settings, collection: str, subset: str | None, target: str
) -> tuple[list[SourcePair], str]:
    """The source collection's (or subset's) judged pairs and fingerprint; refused when it is a probe collection
    itself, when it lacks the subset, or when `target` names a collection that is not a probe collection (it would
    be replaced)."""
    with open_migrated(settings.warehouse) as con:
        source = run_sql(con, "probes/select_probe_set", {"collection_id": collection}).fetchall()
        existing = run_sql(con, "probes/select_probe_set", {"collection_id": target}).fetchall()
        if not source:
            raise not_ingested(collection)
        if source[0][1] is not None:
            raise UsageError(f"collection {collection!r} is a probe collection already: build from {source[0][1]!r}")
        if existing and existing[0][1] is None:
            raise UsageError(f"collection {target!r} exists and is not a probe collection: give another --name")
        require_collection(con, collection, subset)
        rows = run_sql(con, "probes/select_source_pairs", {"collection_id": collection, "subset_name": subset})
        rows = rows.fetchall()
    return [SourcePair(*row) for row in rows], source[0][2]


@task(cache_policy=NO_CACHE)
def make_probe_copies(
    pairs: list[SourcePair], kinds: list[ProbeKind], n: int, seed: int, collection: str, subset: str | None
) -> list[ProbeCopy]:
    """The drawn pairs' clean copies and every kind's copies of them."""
    return build_copies(pairs, draw_pairs(pairs, n, seed, collection, subset), kinds, seed)


def probe_fingerprint(source_fingerprint: str, subset: str | None, kinds: list[ProbeKind], n: int, seed: int) -> str:
    """What the probe collection is made from: the source's files and subset, the kinds' texts, the draw."""
    basis: dict[str, Any] = {"v": BUILD_VERSION, "source": source_fingerprint, "n": n, "seed": seed}
    basis["kinds"] = [asdict(kind) for kind in kinds]
    if subset is not None:  # only then, so that a whole collection's builds keep their fingerprints
        basis["subset"] = subset
    return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()


@task(cache_policy=NO_CACHE)
def published_probe_fingerprint(settings: Settings, target: str) -> str | None:
    """The fingerprint of the probe collection published now, if any."""
    with open_migrated(settings.warehouse) as con:
        rows = run_sql(con, "probes/select_probe_set", {"collection_id": target}).fetchall()
    return rows[0][2] if rows else None


@task(cache_policy=NO_CACHE)
def publish_probe_set(
    settings: Settings,
    collection: str,
    target: str,
    pairs: list[SourcePair],
    copies: list[ProbeCopy],
    build: dict[str, Any],
) -> None:
    """Replace the probe collection (queries, passages, qrels) and its description rows in one transaction."""
    frame = pl.DataFrame(copy_rows(copies))
    texts = {pair.query_id: pair.query_text for pair in pairs}
    staged = {
        "staged_queries": pl.DataFrame(
            [(q, texts[q]) for q in dict.fromkeys(c.query_id for c in copies)],
            schema=["query_id", "text"],
            orient="row",
        ),
        "staged_passages": frame.select("doc_id", "text"),
        "staged_qrels": frame.select("query_id", "doc_id", "relevance", "qrels_set"),
        "staged_probe_docs": frame.drop("text", "qrels_set"),
    }
    source = f"{collection}/{build['subset']}" if build["subset"] else collection
    description = f"probes of {source}: {build['n_pairs']} pairs, seed {build['seed']}, {', '.join(build['kinds'])}"
    set_row = {
        "source_collection_id": collection,
        "subset_name": build["subset"],
        "n_pairs": build["n_pairs"],
        "seed": build["seed"],
        "kinds": json.dumps(build["kinds"]),
        "n_copies": len(copies),
        "built_at": now(),
    }
    collection_row = {
        "description": description,
        "preset": None,
        "fingerprint": build["fingerprint"],
        "ingested_at": now(),
    }
    with open_migrated(settings.warehouse) as con:
        for name, staged_frame in staged.items():
            con.register(name, staged_frame.to_arrow())
        with transaction(con):
            run_sql(con, "ingest/delete_collection", {"collection_id": target})
            run_sql(con, "ingest/insert_collection", {"collection_id": target} | collection_row)
            run_sql(con, "probes/replace_probe_set", {"collection_id": target} | set_row)


def summarize_build(target: str, collection: str, copies: list[ProbeCopy], status: str) -> dict[str, Any]:
    """What a build made: copies per kind, the pairs they came from and how many of those are labelled 0/1."""
    per_kind: dict[str, int] = {}
    for copy in copies:
        per_kind[copy.kind] = per_kind.get(copy.kind, 0) + 1
    clean = [copy for copy in copies if copy.kind == "clean" and copy.variant == "own"]
    return {
        "collection_id": target,
        "source_collection_id": collection,
        "status": status,
        "n_pairs": len(clean),
        "n_targets": sum(copy.relevance < 2 for copy in clean),
        "n_copies": len(copies),
        "per_kind": per_kind,
    }
