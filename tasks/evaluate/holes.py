"""The hole-filling experiment: hide a growing share of the human labels, fill them with LLM labels, rank systems.

The human pairs that can be filled are those the judge run labels; the reference is their full human qrels. At
each share, the hidden pairs (stratified by grade, seeded, nested: a larger share hides a superset) take the LLM's
label, and the systems ranked under the filled qrels are compared with their ranking under the reference.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import UsageError
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import now, open_migrated, transaction
from tasks.evaluate.qrels import hidden_at, hide_labels
from tasks.evaluate.ranking import ALL_TOPICS, compare_rankings, score_systems
from tasks.evaluate.tasks import HUMAN, Evaluation, RunLabels, insert_evaluation, system_sources


@dataclass(frozen=True)
class HolesResult:
    """One experiment: what was hidden from and filled by, per-share results and per-share evaluations."""

    collection_id: str
    labels: RunLabels
    personality: str
    seed: int
    n_pairs: int
    n_pairs_unlabelled: int
    results: pl.DataFrame
    evaluations: dict[float, Evaluation]


def check_shares(shares: list[float]) -> list[float]:
    """Shares strictly between 0 and 1, sorted, each once."""
    bad = [s for s in shares if not 0 < s < 1]
    if bad:
        raise UsageError(f"--share {bad[0]:g}: a share of labels to hide is between 0 and 1 (e.g. 0.3)")
    return sorted(set(shares))


@task(cache_policy=NO_CACHE)
def fill_experiment(
    human: pl.DataFrame,
    labels: RunLabels,
    llm: pl.DataFrame,
    personality: str,
    runs: pl.DataFrame,
    shares: list[float],
    measures: list[str],
    seed: int,
) -> HolesResult:
    """Every share's filled qrels, the systems' scores under them and their rank agreement with the reference."""
    pair = ["query_id", "doc_id"]
    reference = human.join(llm.select(pair), on=pair, how="semi")
    if reference.is_empty():
        raise UsageError(f"judge run {labels.run_name!r} labels none of the collection's human-labelled pairs")
    fills = llm.select(*pair, llm_relevance="relevance")
    order = hide_labels(reference, seed)
    human_scores = score_systems(runs, reference, measures).select(pl.lit(HUMAN).alias("qrels_name"), pl.all())
    rows: list[dict[str, Any]] = []
    evaluations = {}
    for share in shares:
        hidden = hidden_at(order, share).join(fills, on=pair, how="inner")
        filled = reference.join(hidden.select(*pair, "llm_relevance"), on=pair, how="left").select(
            *pair, relevance=pl.coalesce("llm_relevance", "relevance")
        )
        name = f"filled@{share:.2f}"
        scores = pl.concat(
            [human_scores, score_systems(runs, filled, measures).select(pl.lit(name).alias("qrels_name"), pl.all())]
        )
        agreement = compare_rankings(scores, HUMAN)
        evaluations[share] = Evaluation(
            labels.collection_id, "filled", labels.run_id, measures, system_sources(runs), scores, agreement
        )
        accuracy = float((hidden["llm_relevance"] == hidden["relevance"]).cast(pl.Float64).mean() or 0.0)  # type: ignore[arg-type]
        for measure in measures:
            mine = agreement.filter(pl.col("measure") == measure)
            overall = mine.filter(pl.col("query_id") == ALL_TOPICS).row(0, named=True)
            topics = mine.filter(pl.col("query_id") != ALL_TOPICS)["kendall_tau"].drop_nulls()
            rows.append(
                {"share": share, "measure": measure, "n_hidden": hidden.height, "hidden_accuracy": accuracy}
                | {k: overall[k] for k in ("n_systems", "kendall_tau", "spearman_rho", "tau_ap")}
                | {"mean_topic_tau": float(topics.mean()) if topics.len() else None}  # type: ignore[arg-type]
            )
    return HolesResult(
        labels.collection_id,
        labels,
        personality,
        seed,
        reference.height,
        human.height - reference.height,
        pl.DataFrame(rows),
        evaluations,
    )


@task(cache_policy=NO_CACHE)
def store_holes(settings: Settings, result: HolesResult) -> str:
    """Publish the experiment, one evaluation per share and its results, in one transaction."""
    holes_id = str(uuid.uuid4())
    with open_migrated(settings.warehouse) as con, transaction(con):
        ids = {share: insert_evaluation(con, ev.with_holes(holes_id)) for share, ev in result.evaluations.items()}
        results = result.results.with_columns(evaluation_id=pl.col("share").replace_strict(ids, return_dtype=pl.String))
        con.register("holes_new_results", results.to_arrow())
        record = {
            "holes_id": holes_id,
            "collection_id": result.collection_id,
            "judge_run_id": result.labels.run_id,
            "personality": result.personality,
            "seed": result.seed,
            "n_pairs": result.n_pairs,
            "n_pairs_unlabelled": result.n_pairs_unlabelled,
            "created_at": now(),
        }
        run_sql(con, "evaluate/insert_holes", record)
        con.unregister("holes_new_results")
    return holes_id


def summarize_holes(holes_id: str, result: HolesResult) -> dict[str, Any]:
    """The experiment's identity and its table: one row per share and measure."""
    return {
        "holes_id": holes_id,
        "collection_id": result.collection_id,
        "run_name": result.labels.run_name,
        "personality": result.personality,
        "n_pairs": result.n_pairs,
        "n_pairs_unlabelled": result.n_pairs_unlabelled,
        "n_systems": int(result.results["n_systems"].max() or 0),  # type: ignore[arg-type]
        "results": result.results.to_dicts(),
    }
