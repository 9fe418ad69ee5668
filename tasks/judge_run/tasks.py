"""judge-run tasks: read run files, take each query's top K per system, pool the pairs no human judged.

The judging itself is the normal judge flow's, on the pool (flows/judge.py with `pool`); nothing here asks an LLM.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import UsageError
from peras.prompting import select_personalities
from peras.settings import Settings
from peras.sql import query_frame, run_sql
from peras.warehouse import now, open_migrated, require_collection, transaction
from tasks.shared.readers import read_passages
from tasks.shared.run_files import read_run_lines

TEXT_SCHEMA = {"doc_id": pl.String, "text": pl.String}
MAX_EXAMPLES = 5  # reported pairs without text: the count, and this many by run-file line


@dataclass
class Pool:
    """What judge-run pooled: counts at each step, and the pairs it could not pool for want of a text."""

    pool_id: str
    n_lines: int
    n_systems: int
    n_top_pairs: int  # distinct (query, passage) pairs in some system's top K
    n_labelled: int  # of those, judged by a human (never asked)
    n_pooled: int  # unlabelled pairs with both texts: what the judge flow is given
    n_from_corpus: int  # passage texts read from the corpus file
    n_unknown_query: int  # unlabelled pairs whose query the collection does not hold
    n_without_text: int  # unlabelled pairs whose passage has no text anywhere
    examples: list[str] = field(default_factory=list)


@task(cache_policy=NO_CACHE)
def check_personalities(settings: Settings, codes: list[str] | None) -> None:
    """The personalities asked for exist: checked before the pool is written, not by the judge flow after it."""
    select_personalities(codes, settings.personalities_dir)


@task(cache_policy=NO_CACHE)
def read_run_files(paths: list[str]) -> pl.DataFrame:
    """Every line of the run files (tasks/shared/run_files.py), with its file and line; bad lines raise."""
    if not paths:
        raise UsageError("give at least one run file")
    return read_run_lines([Path(p) for p in paths])


def select_top_pairs(lines: pl.DataFrame, depth: int) -> pl.DataFrame:
    """Each system's top `depth` passages per query, ranked as trec_eval does (score descending, ties by doc_id
    descending), then each pair once: the first line (in file order) that put it in a top K."""
    ranked = lines.with_row_index("row_nr").sort(
        ["system", "query_id", "score", "doc_id"], descending=[False, False, True, True]
    )
    top = ranked.group_by(["system", "query_id"], maintain_order=True).head(depth)
    return top.sort("row_nr").unique(["query_id", "doc_id"], keep="first", maintain_order=True)


def read_corpus(corpus: str | None, status: pl.DataFrame) -> dict[str, str]:
    """Texts from the corpus file of the unlabelled passages the collection lacks, streamed (only those kept)."""
    if corpus is None:
        return {}
    wanted = set(status.filter(~pl.col("is_labelled") & ~pl.col("in_passages"))["doc_id"])
    return read_passages(Path(corpus), wanted).records if wanted else {}


def pool_id_of(collection_id: str, pairs: pl.DataFrame) -> str:
    """The same collection and pairs give the same pool, whatever the run files' order."""
    digest = hashlib.sha256(collection_id.encode())
    for query_id, doc_id in sorted(pairs.select("query_id", "doc_id").iter_rows()):
        digest.update(f"\x1f{query_id}\x1e{doc_id}".encode())
    return digest.hexdigest()[:16]


def missing_examples(missing: pl.DataFrame) -> list[str]:
    """The first unpoolable pairs, by run-file line, and why."""
    return [
        f"{r['file']}:{r['line']}: query {r['query_id']} passage {r['doc_id']}: "
        + ("the collection has no such query" if not r["has_query"] else "no passage text")
        for r in missing.head(MAX_EXAMPLES).iter_rows(named=True)
    ]


def nothing_to_judge(n_top: int, n_labelled: int, missing: pl.DataFrame) -> UsageError:
    """No top-K pair is both unlabelled and judgeable: say why, instead of publishing an empty run."""
    unknown = missing.filter(~pl.col("has_query")).height
    reasons = [f"{n_labelled:,} have human labels"]
    if unknown:
        reasons.append(f"{unknown:,} name a query the collection lacks")
    if missing.height - unknown:
        reasons.append(f"{missing.height - unknown:,} have no passage text (give --corpus)")
    examples = "; ".join(missing_examples(missing)[:3])
    return UsageError(
        f"nothing to judge: of the runs' {n_top:,} top-K pairs, {', '.join(reasons)}"
        + (f" (first: {examples})" if examples else "")
        + "; no run was made"
    )


def classify_pairs(settings: Settings, collection_id: str, top: pl.DataFrame) -> pl.DataFrame:
    """Each top-K pair with is_labelled, has_query, in_passages, in_pool_passages (sql/judge_run)."""
    with open_migrated(settings.warehouse) as con:
        require_collection(con, collection_id)
        con.register("top_pairs", top.to_arrow())
        return query_frame(con, "judge_run/select_top_pair_status", {"collection_id": collection_id})


@task(cache_policy=NO_CACHE)
def pool_unlabelled_pairs(
    settings: Settings, collection_id: str, lines: pl.DataFrame, depth: int, corpus: str | None
) -> Pool:
    """Pool the top-K pairs no human judged that have both texts, in one transaction; report the others by line."""
    top = select_top_pairs(lines, depth)
    status = classify_pairs(settings, collection_id, top)
    texts = read_corpus(corpus, status)
    has_text = pl.col("in_passages") | pl.col("in_pool_passages") | pl.col("doc_id").is_in(list(texts))
    unlabelled = status.filter(~pl.col("is_labelled"))
    pooled = unlabelled.filter(pl.col("has_query") & has_text)
    missing = unlabelled.filter(~(pl.col("has_query") & has_text))
    if pooled.is_empty():
        raise nothing_to_judge(top.height, int(status["is_labelled"].sum()), missing)
    pool_id = pool_id_of(collection_id, pooled)
    used = sorted(set(pooled["doc_id"]) & set(texts))
    corpus_texts = pl.DataFrame({"doc_id": used, "text": [texts[d] for d in used]}, schema=TEXT_SCHEMA)
    store_pool(settings, collection_id, pool_id, pooled, corpus_texts, corpus)
    return Pool(
        pool_id,
        lines.height,
        lines["system"].n_unique(),
        top.height,
        int(status["is_labelled"].sum()),
        pooled.height,
        corpus_texts.height,
        missing.filter(~pl.col("has_query")).height,
        missing.filter(pl.col("has_query")).height,
        missing_examples(missing),
    )


def store_pool(
    settings: Settings,
    collection_id: str,
    pool_id: str,
    pooled: pl.DataFrame,
    corpus_texts: pl.DataFrame,
    corpus: str | None,
) -> None:
    """Write the pool's corpus texts and pairs together, or nothing."""
    params = {
        "collection_id": collection_id,
        "pool_id": pool_id,
        "source_path": str(corpus),
        "created_at": now(),
    }
    with open_migrated(settings.warehouse) as con, transaction(con):
        con.register("pool_rows", pooled.select("query_id", "doc_id", "system", "file", "line").to_arrow())
        con.register("corpus_texts", corpus_texts.to_arrow())
        run_sql(con, "judge_run/insert_pool", params)


def summarize_judge_run(pool: Pool, judged: dict[str, Any]) -> dict[str, Any]:
    """The judge flow's counts and the pool's, for the CLI."""
    return judged | {key: value for key, value in vars(pool).items()}
