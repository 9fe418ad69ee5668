"""Fuse tasks: name the judges, read what they said, vote, register the run, hand the pairs to the engine, gate.

The judge streams are chosen and turned into a pair x judge matrix by the feature-stream tasks classify uses too
(tasks/shared/features.py: the same streams give classify's feature_set_id, so the fuse table can show the
classifier trained on them); the votes are the study's baselines (tasks/shared/aggregate.py); the fuser asks as
tasks/fuse/asking.py says. The comparison is a set of views (sql/fuse/views/) read by load_comparison, printed as
tasks/shared/fuse_comparison.py says.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import UsageError
from peras.settings import Settings
from peras.sql import query_frame, run_sql, run_statements
from peras.warehouse import now, open_migrated, transaction
from tasks.engine.endpoint import Endpoint
from tasks.engine.running import HeldItems, StageOutcome
from tasks.engine.runs import Gate, RunClaim, claim_run
from tasks.engine.spec import RunIdentity
from tasks.engine.stage import declaration
from tasks.engine.tasks import run_counts
from tasks.fuse.asking import FuseConfig, FuseItem, FuseStage, JudgeAnswer, shuffled_judges
from tasks.fuse.prompt import fuser_prompt
from tasks.shared.aggregate import baseline_votes
from tasks.shared.features import STREAM_KEYS, FeatureMatrix, FeatureSet

NO_FUSER = "none"  # model and backend of a baselines-only run


@dataclass(frozen=True)
class Judges:
    """The judge streams fused, in canonical order, each with its name (personality code, or the stream's key)."""

    feature_set: FeatureSet
    names: list[str]

    def frame(self) -> pl.DataFrame:
        """fuse_judges' rows (without the run id)."""
        return self.feature_set.streams.select(STREAM_KEYS).with_columns(
            judge=pl.Series(self.names, dtype=pl.Utf8), judge_index=pl.int_range(1, len(self.names) + 1)
        )


@dataclass(frozen=True)
class Fused:
    """What the judges said about every pair every judge answered: labels, confidences, explanations and texts."""

    pairs: pl.DataFrame  # query_id, doc_id, relevance: the matrix's rows, in its order
    answers: dict[tuple[str, str], dict[str, JudgeAnswer]]
    texts: dict[tuple[str, str], tuple[str, str]]


@task(cache_policy=NO_CACHE)
def name_judges(feature_set: FeatureSet) -> Judges:
    """Personality codes when they tell the judges apart (one run's personalities), else the streams' keys."""
    personalities = feature_set.streams["personality"].to_list()
    distinct = len(set(personalities)) == len(personalities)
    return Judges(feature_set, personalities if distinct else feature_set.keys)


@task(retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def load_explanations(settings: Settings, collection: str, judges: Judges) -> pl.DataFrame:
    """The CoT judges' explanations per pair (sql/fuse/select_explanations.sql): query_id, doc_id, feature_key."""
    selected = judges.feature_set.streams.select([*STREAM_KEYS, "feature_key"])
    with open_migrated(settings.warehouse) as con:
        con.register("fuse_selected_judges", selected.to_arrow())
        return query_frame(con, "fuse/select_explanations", {"collection_id": collection})


@task(retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def collect_answers(
    settings: Settings, collection: str, judges: Judges, values: pl.DataFrame, explanations: pl.DataFrame
) -> Fused:
    """The pairs classify's matrix keeps (every judge answered usably), what each judge said, and the texts.

    values: classify's long form of the matrix (load_feature_values); explanations: load_explanations'."""
    failed = values.group_by("query_id", "doc_id").agg(pl.col("is_failure").any())
    keep = failed.filter(~pl.col("is_failure")).select("query_id", "doc_id")
    joined = values.join(explanations, on=["query_id", "doc_id", "feature_key"], how="left")
    kept = joined.join(keep, on=["query_id", "doc_id"]).with_columns(
        judge=pl.col("feature_key").replace_strict(dict(zip(judges.feature_set.keys, judges.names, strict=True)))
    )
    answers: dict[tuple[str, str], dict[str, JudgeAnswer]] = {}
    for q, d, judge, label, confidence, explanation in kept.select(
        "query_id", "doc_id", "judge", "label", "confidence", "explanation"
    ).iter_rows():
        answers.setdefault((q, d), {})[judge] = JudgeAnswer(int(label), confidence, explanation)
    with open_migrated(settings.warehouse) as con:
        texts = run_sql(con, "fuse/select_texts", {"collection_id": collection}).fetchall()
    pairs = kept.select("query_id", "doc_id", "relevance").unique().sort("query_id", "doc_id")
    return Fused(pairs, answers, {(q, d): (qt, pt) for q, d, qt, pt in texts if (q, d) in answers})


@task(cache_policy=NO_CACHE)
def vote(matrix: FeatureMatrix, fused: Fused) -> pl.DataFrame:
    """Every baseline's label and confidence per pair; the confidence votes only if every judge gives confidences."""
    if fused.pairs.height != len(matrix.relevance):
        raise UsageError("the judges' answers changed while they were read: run `peras fuse` again")
    confidences = matrix.confidences if matrix.has_confidence.all() else None
    return pl.concat(
        [
            fused.pairs.with_columns(
                method=pl.lit(name), label=pl.Series(v.label, dtype=pl.Int32), confidence=pl.Series(v.confidence)
            ).with_columns(pl.col("confidence").fill_nan(None))
            for name, v in baseline_votes(matrix.labels, confidences).items()
        ]
    )


def fuser_config(endpoint: Endpoint, anonymised: bool) -> FuseConfig:
    """Remote fusers get the template's sampling alone; the embedded model also an answer cap (recorded)."""
    if endpoint.is_embedded:
        cap = declaration("fuse").token_cap(endpoint.backend, embedded=True)
        return FuseConfig(endpoint.model, endpoint.backend, anonymised, cap, {"cache_prompt": True})
    return FuseConfig(endpoint.model, endpoint.backend, anonymised)


def run_parameters(config: FuseConfig | None) -> dict[str, Any]:
    """What fixes a run besides collection, judges, model and seed: the fuser's request parameters and template."""
    if config is None:
        return {"fuser": None}
    return {"fuser": {"request_params": config.params(), "template": fuser_prompt().fingerprint}} | {
        "anonymised": config.anonymised
    }


@dataclass
class FuseRecipe(HeldItems):
    """Fuse's part of the one flow body (tasks/engine/running.py): the run, the fuser stage, the pairs asked; the
    votes are stored with the run before the fuser is asked."""

    collection_id: str
    judges: Judges
    fused: Fused
    votes: pl.DataFrame
    seed: int
    scope: dict[str, Any]
    run_name: str | None
    anonymised: bool
    planned: list[FuseItem]
    gate: Gate = Gate("run not published (its answers are kept for inspection)")
    personalities: tuple[()] = ()  # the judges' personalities were recorded by their judge runs

    def configure(self, endpoint: Endpoint) -> FuseConfig:
        """The fuser's sampling; the embedded model also an answer cap (recorded)."""
        return fuser_config(endpoint, self.anonymised)

    def claim(self, config: FuseConfig | None) -> RunClaim:
        """A run is fixed by its collection, judges, fuser model (none: baselines only), seed and parameters."""
        model = config.model if config else NO_FUSER
        feature_set_id = self.judges.feature_set.feature_set_id
        parts = {"collection": self.collection_id, "judges": feature_set_id[:8], "model": model}
        name = self.run_name or declaration("fuse").default_run_name(**parts)
        values = {"collection_id": self.collection_id, "feature_set_id": feature_set_id, "seed": self.seed}
        return RunClaim(declaration("fuse"), name, values | {"scope": self.scope}, run_parameters(config))

    def stage(self, config: FuseConfig) -> FuseStage:
        """Pairs to requests, answers to answer rows."""
        return FuseStage(config, self.fused.answers, self.fused.texts)

    def prepare(self, settings: Settings, run: RunIdentity) -> None:
        """The run's judges and votes, stored before the fuser is asked (published with the gate)."""
        store_votes(settings, run, self.judges, self.votes, publish=False)


@task(cache_policy=NO_CACHE)
def claim_baselines_run(settings: Settings, warehouse_id: str, recipe: FuseRecipe) -> RunIdentity:
    """A baselines-only run (no fuser): created, or found asking the same way."""
    return claim_run(settings, warehouse_id, recipe.claim(None), NO_FUSER, NO_FUSER, lease=False)


@task(retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def store_votes(settings: Settings, run: RunIdentity, judges: Judges, votes: pl.DataFrame, publish: bool) -> None:
    """Write the run's judges and votes in one transaction; a baselines-only run is published with them."""
    with open_migrated(settings.warehouse) as con, transaction(con):
        con.register("fuse_new_judges", judges.frame().to_arrow())
        con.register("fuse_new_votes", votes.to_arrow())
        run_sql(con, "fuse/replace_votes", {"fuse_run_id": run.run_id})
        if publish:
            status = {"run_id": run.run_id, "status": "published", "status_reason": None, "finished_at": now()}
            run_statements(con, declaration("fuse").sql("set_run_status"), status)


def pair_rank(seed: int, query_id: str, doc_id: str) -> str:
    """A pair's place in the run's asking order: stable, so asking more pairs keeps the ones asked before."""
    return hashlib.sha256(f"{seed}\x1f{query_id}\x1f{doc_id}\x1frank".encode()).hexdigest()


def plan_fuse(fused: Fused, judges: Judges, seed: int, n_pairs: int | None) -> list[FuseItem]:
    """The pairs to ask (all, or the first n_pairs in the seeded order), each with its judges shuffled."""
    keys = sorted(fused.pairs.select("query_id", "doc_id").iter_rows(), key=lambda k: pair_rank(seed, *k))
    chosen = keys if n_pairs is None else keys[:n_pairs]
    return [FuseItem(q, d, shuffled_judges(judges.names, seed, q, d)) for q, d in chosen]


@task(retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def load_comparison(settings: Settings, fuse_run_id: str) -> dict[str, Any]:
    """The run's comparison rows (long) and disagreement counts, from the views."""
    params = {"fuse_run_id": fuse_run_id}
    with open_migrated(settings.warehouse) as con:
        rows = query_frame(con, "fuse/select_comparison", params)
        disagreement = query_frame(con, "fuse/select_disagreement", params)
    return {"rows": rows.to_dicts(), "disagreement": disagreement.to_dicts()[0] if disagreement.height else None}


def summarize_votes(run: RunIdentity, judges: Judges, votes: pl.DataFrame) -> dict[str, Any]:
    """Counts for the CLI: the run, its judges, its pairs and baselines."""
    return {
        "run_name": run.run_name,
        "run_id": run.run_id,
        "n_judges": len(judges.names),
        "n_pairs": votes.select("query_id", "doc_id").n_unique(),
        "baselines": votes["method"].unique(maintain_order=True).to_list(),
    }


def summarize(outcome: StageOutcome[FuseConfig], counts: dict[str, Any], n_asked: int) -> dict[str, Any]:
    """Counts for the CLI and the artifact, with what the fuser was asked."""
    engine = run_counts(outcome.run, outcome.endpoint, outcome.stats)
    return counts | engine | {"n_asked": n_asked, "n_failures": outcome.n_failures}
