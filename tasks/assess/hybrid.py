"""Hybrid qrels: the plan's human labels where people gave them, the judge run's LLM labels elsewhere, and where
each line came from."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import UsageError
from peras.outputs import write_files
from peras.settings import Settings
from tasks.shared.ir_metadata import side_path


@dataclass(frozen=True)
class HybridQrels:
    """A plan's hybrid qrels: the plan, its collection, the judge run's labels (evaluate's RunLabels) and the qrels
    [query_id, doc_id, relevance, source, assessors, llm_label] (hybrid_qrels)."""

    plan_name: str
    collection_id: str
    labels: Any
    qrels: pl.DataFrame

    def check_collection(self, collection_id: str) -> HybridQrels:
        """A plan's labels score only the systems of the collection it was made for."""
        if self.collection_id != collection_id:
            raise UsageError(
                f"plan {self.plan_name!r} is for collection {self.collection_id!r}, not {collection_id!r}: "
                "give the plan of the runs' collection"
            )
        return self


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
def write_hybrid(settings: Settings, qrels: pl.DataFrame, output: Path, header: str) -> dict[str, Any]:
    """The TREC qrels file, its provenance per line and its ir_metadata block (`header`), all or none."""
    lines = "".join(f"{q} 0 {d} {r}\n" for q, d, r in qrels.select("query_id", "doc_id", "relevance").iter_rows())
    files = {output: lines, provenance_path(output): qrels.write_csv(separator="\t"), side_path(output): header}
    write_files(files, settings.warehouse, "--output", output)
    n_human = qrels.filter(pl.col("source") == "human").height
    return {"output": str(output), "n_pairs": qrels.height, "n_human": n_human, "n_llm": qrels.height - n_human}
