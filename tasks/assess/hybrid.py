"""Hybrid qrels: the plan's human labels where people gave them, the judge run's LLM labels elsewhere, and where
each line came from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.outputs import write_files
from peras.settings import Settings


def human_votes(labels: pl.DataFrame) -> pl.DataFrame:
    """One human label per assessed pair: the assessors' most given label, ties to the lower one.
    [query_id, doc_id, human, assessors] (assessors: their names, comma-separated, sorted)."""
    counted = labels.group_by("query_id", "doc_id", "relevance").agg(n=pl.len(), names=pl.col("assessor"))
    winner = counted.sort(["n", "relevance"], descending=[True, False]).group_by("query_id", "doc_id").first()
    names = labels.group_by("query_id", "doc_id").agg(assessors=pl.col("assessor").sort().str.join(","))
    return winner.select("query_id", "doc_id", human=pl.col("relevance").cast(pl.Int64)).join(
        names, on=["query_id", "doc_id"]
    )


def hybrid_qrels(llm: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Every pair the LLM labels (and every assessed one): [query_id, doc_id, relevance, source, assessors,
    llm_label]; source 'human' where the plan's assessors labelled the pair, 'llm' elsewhere."""
    votes = human_votes(labels)
    both = llm.select("query_id", "doc_id", llm_label=pl.col("relevance").cast(pl.Int64)).join(
        votes, on=["query_id", "doc_id"], how="full", coalesce=True
    )
    return both.select(
        "query_id",
        "doc_id",
        relevance=pl.coalesce("human", "llm_label"),
        source=pl.when(pl.col("human").is_null()).then(pl.lit("llm")).otherwise(pl.lit("human")),
        assessors=pl.col("assessors").fill_null(""),
        llm_label="llm_label",
    ).sort("query_id", "doc_id")


def provenance_path(path: Path) -> Path:
    """Where the provenance of a hybrid qrels file goes."""
    return path.with_name(path.name + ".provenance.tsv")


@task(cache_policy=NO_CACHE)
def write_hybrid(settings: Settings, qrels: pl.DataFrame, output: Path) -> dict[str, Any]:
    """The TREC qrels file and its provenance side file (one line per qrels line), both or neither."""
    lines = "".join(f"{q} 0 {d} {r}\n" for q, d, r in qrels.select("query_id", "doc_id", "relevance").iter_rows())
    write_files({output: lines, provenance_path(output): qrels.write_csv(separator="\t")}, settings.warehouse,
                "--output", output)  # fmt: skip
    n_human = qrels.filter(pl.col("source") == "human").height
    return {"output": str(output), "n_pairs": qrels.height, "n_human": n_human, "n_llm": qrels.height - n_human}
