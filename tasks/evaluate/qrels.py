"""Qrels made of LLM labels: one personality's, or several personalities' majority; filled into human qrels; hidden.

labels frames: [query_id, doc_id, personality, label, confidence] of one judge run, one CoT setting and one
confidence method (label 0-3, never null); qrels frames: [query_id, doc_id, relevance].
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from peras.errors import UsageError
from tasks.shared.aggregate import majority_baseline

MAJORITY = "majority"
QRELS_SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "relevance": pl.Int64}


def personality_labels(labels: pl.DataFrame, personality: str) -> pl.DataFrame:
    """One personality's labels as qrels, with their confidences: [query_id, doc_id, relevance, confidence]."""
    chosen = labels.filter(pl.col("personality") == personality)
    if chosen.is_empty():
        known = ", ".join(sorted(labels["personality"].unique().to_list())) or "none"
        raise UsageError(f"the run has no labels of personality {personality!r}; it has: {known}")
    return chosen.select("query_id", "doc_id", pl.col("label").cast(pl.Int64).alias("relevance"), "confidence")


def majority_labels(labels: pl.DataFrame) -> pl.DataFrame:
    """Every pair's majority label over the personalities (tasks/shared/aggregate.py's majority baseline: ties to
    the label with the single most confident voter, then the lower label); confidence: the winner's vote share x 100.

    A pair counts only the personalities that labelled it.
    """
    wide = labels.pivot(on="personality", index=["query_id", "doc_id"], values="label").sort("query_id", "doc_id")
    conf = labels.pivot(on="personality", index=["query_id", "doc_id"], values="confidence").sort("query_id", "doc_id")
    names = [c for c in wide.columns if c not in ("query_id", "doc_id")]
    votes = wide.select(names).to_numpy().astype(float)
    # A missing vote becomes level -1: it never counts; a vote without a confidence counts with confidence 0.
    filled = np.where(np.isnan(votes), -1, votes).astype(int)
    confidences = np.nan_to_num(conf.select(names).to_numpy().astype(float), nan=0.0)
    vote = majority_baseline(filled, confidences)
    return wide.select("query_id", "doc_id").with_columns(
        relevance=pl.Series(vote.label, dtype=pl.Int64), confidence=pl.Series(vote.confidence, dtype=pl.Float64)
    )


def fill_holes(human: pl.DataFrame, llm: pl.DataFrame) -> pl.DataFrame:
    """Human qrels where they exist, the LLM's label elsewhere: [query_id, doc_id, relevance, confidence, source]."""
    kept = human.select("query_id", "doc_id", "relevance").with_columns(
        confidence=pl.lit(None, pl.Float64), source=pl.lit("human")
    )
    holes = llm.join(human, on=["query_id", "doc_id"], how="anti").with_columns(source=pl.lit("llm"))
    return pl.concat([kept, holes.select(kept.columns)]).sort("query_id", "doc_id")


def hide_labels(human: pl.DataFrame, seed: int) -> pl.DataFrame:
    """The human pairs with their hiding order: hidden at share s are those with order_in_grade < s x grade size.

    Stratified by grade: each grade's pairs (sorted by query_id, doc_id) are shuffled by a generator seeded with
    (seed, grade), so a larger share hides a superset of a smaller one and the draws do not depend on other grades.
    """
    parts = []
    for (grade,), group in human.sort("query_id", "doc_id").partition_by("relevance", as_dict=True).items():
        order = np.random.default_rng([seed, int(grade)]).permutation(group.height)
        parts.append(group.with_columns(order_in_grade=pl.Series(order, dtype=pl.Int64), grade_size=group.height))
    return pl.concat(parts).sort("query_id", "doc_id")


def hidden_at(order: pl.DataFrame, share: float) -> pl.DataFrame:
    """The pairs hidden at this share: share x grade size per grade, rounded half up."""
    return order.filter(pl.col("order_in_grade") < (pl.col("grade_size") * share + 0.5).floor())


def qrels_files(qrels: pl.DataFrame, path: Path) -> dict[Path, str]:
    """TREC qrels (`query_id 0 doc_id relevance`), sorted, and the side file <path>.confidence.tsv of confidences."""
    ordered = qrels.sort("query_id", "doc_id")
    lines = [f"{q} 0 {d} {r}\n" for q, d, r in ordered.select("query_id", "doc_id", "relevance").iter_rows()]
    side = ordered.select(
        "query_id", "doc_id", "relevance", *[c for c in ("confidence", "source") if c in ordered.columns]
    )
    return {path: "".join(lines), confidence_path(path): side.write_csv(separator="\t")}


def confidence_path(path: Path) -> Path:
    """Where the confidences of a qrels file go."""
    return path.with_name(path.name + ".confidence.tsv")
