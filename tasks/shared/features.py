"""Experiment 2 inputs: which judgment streams become feature columns, and the pair x feature matrix.

A judgment stream is one run x personality x CoT setting x confidence method. Each stream gives a
label column and, where its confidence method is not 'none', a confidence column. Two ways to pick:
- personalities: every personality of one run, CoT setting and confidence method (the study's 22);
- runs: every stream of the runs whose names match a glob (imported label sets, one column each).
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from dataclasses import dataclass

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import CheckFailed, UsageError
from peras.prompting import CANONICAL_ORDER as PERSONALITY_ORDER
from peras.settings import Settings
from peras.sql import query_frame
from peras.warehouse import exists, open_migrated, read_frame

STREAM_KEYS = ["run_name", "personality", "cot", "confidence_method"]
LEVELS = (0, 1, 2, 3)


@dataclass(frozen=True)
class FeatureSet:
    """The chosen streams, in column order, with the column key each one gets."""

    mode: str
    streams: pl.DataFrame  # STREAM_KEYS + feature_key, has_confidence

    @property
    def keys(self) -> list[str]:
        return self.streams["feature_key"].to_list()

    @property
    def feature_set_id(self) -> str:
        """A short stable id of the sources, so trial rows say which features produced them."""
        text = json.dumps(self.streams.select(STREAM_KEYS).rows(), default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class FeatureMatrix:
    """Complete pairs only: labels (n, m), confidences (n, m; NaN where a stream has none), qrels (n,)."""

    keys: list[str]
    has_confidence: np.ndarray  # (m,) bool
    labels: np.ndarray
    confidences: np.ndarray
    relevance: np.ndarray
    n_excluded: int

    @property
    def columns(self) -> list[str]:
        """Matrix column names: every label, then every confidence that exists."""
        conf = [f"conf:{k}" for k, has in zip(self.keys, self.has_confidence, strict=True) if has]
        return [f"label:{k}" for k in self.keys] + conf

    def features(self, with_confidence: bool = True) -> np.ndarray:
        """The learner input: labels, then the confidences of streams that have them."""
        if not with_confidence:
            return self.labels.astype(np.float64)
        return np.hstack([self.labels, self.confidences[:, self.has_confidence]]).astype(np.float64)


@task(retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def list_feature_streams(settings: Settings, collection: str) -> pl.DataFrame:
    """Every judgment stream of a collection, newest run first."""
    if not exists(settings.warehouse):
        raise UsageError(f"no warehouse at {settings.warehouse}: run `peras ingest` and judge or import first")
    return read_frame(settings.warehouse, "classify/select_feature_streams", {"collection_id": collection})


@task(cache_policy=NO_CACHE)
def choose_feature_set(
    streams: pl.DataFrame,
    collection: str,
    run: str | None,
    cot: bool | None,
    confidence_method: str | None,
    runs: list[str] | None,
) -> FeatureSet:
    """Pick the streams: the personalities of one run (default: newest LLM run), or runs matching globs."""
    if streams.is_empty():
        raise UsageError(f"collection {collection!r} has no judgments joined to qrels: judge or import first")
    if runs and run:
        raise UsageError("give either --run (its personalities) or --runs (one column per run), not both")
    if runs:
        return _runs_feature_set(streams, collection, runs, cot, confidence_method)
    return _personalities_feature_set(streams, collection, run, cot, confidence_method)


def _personalities_feature_set(
    streams: pl.DataFrame, collection: str, run: str | None, cot: bool | None, method: str | None
) -> FeatureSet:
    if run is None:
        llm = streams.filter(pl.col("source") == "llm")
        if llm.is_empty():
            raise UsageError(f"collection {collection!r} has no LLM judge run: run `peras judge` or pass --runs")
        run = llm["run_name"][0]
    chosen = streams.filter(pl.col("run_name") == run)
    if chosen.is_empty():
        raise UsageError(f"no run {run!r} with judgments on collection {collection!r}")
    chosen = _one_setting(chosen, "cot", cot, run)
    chosen = _one_setting(chosen, "confidence_method", method, run)
    order = {code: i for i, code in enumerate(PERSONALITY_ORDER)}
    chosen = chosen.with_columns(pl.col("personality").replace_strict(order, default=len(order)).alias("_rank")).sort(
        ["_rank", "personality"]
    )
    return FeatureSet("personalities", _finish(chosen.with_columns(pl.col("personality").alias("feature_key"))))


def _one_setting(chosen: pl.DataFrame, column: str, wanted: object, run: str) -> pl.DataFrame:
    """Keep one value of a setting: the one asked for, or the only one the run has."""
    have = sorted(chosen[column].unique().to_list())
    if wanted is None:
        if len(have) > 1:
            flag = "--cot/--no-cot" if column == "cot" else "--confidence-method"
            raise UsageError(f"run {run!r} has several {column} settings {have}: choose one with {flag}")
        return chosen
    if wanted not in have:
        raise UsageError(f"run {run!r} has no judgments with {column}={wanted!r} (it has {have})")
    return chosen.filter(pl.col(column) == wanted)


def _runs_feature_set(
    streams: pl.DataFrame, collection: str, globs: list[str], cot: bool | None, method: str | None
) -> FeatureSet:
    names = streams["run_name"].unique().sort().to_list()
    matched = [n for n in names if any(_matches(n, collection, g) for g in globs)]
    if not matched:
        raise UsageError(f"no run on collection {collection!r} matches {' '.join(globs)} (runs: {', '.join(names)})")
    chosen = streams.filter(pl.col("run_name").is_in(matched))
    if cot is not None:
        chosen = chosen.filter(pl.col("cot") == cot)
    if method is not None:
        chosen = chosen.filter(pl.col("confidence_method") == method)
    if chosen.is_empty():
        raise UsageError("no judgments of the matching runs have the requested --cot / --confidence-method")
    chosen = chosen.sort(["run_name", "personality", "cot", "confidence_method"])
    several = pl.col("run_name").count().over("run_name") > 1
    setting = pl.when(pl.col("cot")).then(pl.lit("cot")).otherwise(pl.lit("nocot"))
    key = (
        pl.when(several)
        .then(
            pl.concat_str(
                [pl.col("run_name"), pl.col("personality"), setting, pl.col("confidence_method")],
                separator="/",
            )
        )
        .otherwise(pl.col("run_name"))
    )
    return FeatureSet("runs", _finish(chosen.with_columns(key.alias("feature_key"))))


def _matches(run_name: str, collection: str, pattern: str) -> bool:
    """A glob matches a run name, or `collection:run_name` (so 'llmjudge:*' means every run there)."""
    return fnmatch.fnmatchcase(run_name, pattern) or fnmatch.fnmatchcase(f"{collection}:{run_name}", pattern)


def _finish(chosen: pl.DataFrame) -> pl.DataFrame:
    return chosen.select([*STREAM_KEYS, "feature_key", "has_confidence"])


@task(retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def load_feature_values(settings: Settings, collection: str, feature_set: FeatureSet) -> pl.DataFrame:
    """The long form of the matrix: one row per pair and chosen stream."""
    selected = feature_set.streams.select([*STREAM_KEYS, "feature_key"])
    with open_migrated(settings.warehouse) as con:
        con.register("clf_selected_streams", selected.to_arrow())
        return query_frame(con, "classify/select_feature_values", {"collection_id": collection})


@task(cache_policy=NO_CACHE)
def build_feature_matrix(values: pl.DataFrame, feature_set: FeatureSet) -> FeatureMatrix:
    """Pivot to one row per pair; drop pairs with a parse failure; stop if a stream lacks pairs."""
    keys = feature_set.keys
    wide = values.pivot(
        on="feature_key",
        index=["query_id", "doc_id", "relevance"],
        values=["label", "confidence", "is_failure"],
        aggregate_function=None,
        on_columns=keys,
        separator="|",
    ).sort(["query_id", "doc_id"])
    missing = {k: wide[f"is_failure|{k}"].null_count() for k in keys}
    incomplete = {k: n for k, n in missing.items() if n}
    if incomplete:
        listed = ", ".join(f"{k} ({n} of {wide.height} pairs)" for k, n in incomplete.items())
        raise CheckFailed(f"feature columns incomplete, no judgment for some pairs: {listed}")
    failed = pl.any_horizontal([pl.col(f"is_failure|{k}") for k in keys])
    complete = wide.filter(~failed)
    return FeatureMatrix(
        keys=keys,
        has_confidence=feature_set.streams["has_confidence"].to_numpy().astype(bool),
        labels=complete.select([f"label|{k}" for k in keys]).to_numpy().astype(np.int64),
        confidences=complete.select([pl.col(f"confidence|{k}").cast(pl.Float64) for k in keys])
        .fill_null(np.nan)
        .to_numpy(),
        relevance=complete["relevance"].to_numpy().astype(np.int64),
        n_excluded=wide.height - complete.height,
    )
