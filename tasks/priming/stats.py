"""Priming statistics: paired t-tests per cell and pooled, the change against the default personality,
the priming index with its confidence interval; computed with scipy, published in one transaction.

Every test is scipy.stats.ttest_rel(LT, HT) over epilogue passages scored in both conditions of the same
trial, so a positive t (and gap = mean LT - mean HT) means lower scores after a high-relevance prologue.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np
import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE
from scipy import stats

from peras.prompting import DEFAULT_CODE
from peras.settings import Settings
from peras.sql import query_frame, run_sql
from peras.warehouse import connect, now, open_migrated, transaction
from tasks.priming.asking import BatchItem
from tasks.priming.draws import planned_frame

POOLED = "*"  # query_id of the rows pooled over every topic of the run
SETTING_KEYS = ["n_prologue", "n_epilogue", "personality"]
MATCH_KEYS = ["query_id", "trial", "n_prologue", "n_epilogue", "epilogue_position"]
TEST_SCHEMA = {
    "query_id": pl.String,
    "n_prologue": pl.Int32,
    "n_epilogue": pl.Int32,
    "personality": pl.String,
    "n_pairs": pl.Int32,
    "mean_ht": pl.Float64,
    "mean_lt": pl.Float64,
    "t_stat": pl.Float64,
    "p_value": pl.Float64,
    "n_pairs_vs_default": pl.Int32,
    "gap_vs_default": pl.Float64,
    "t_vs_default": pl.Float64,
    "p_vs_default": pl.Float64,
}
INDEX_SCHEMA = {
    "personality": pl.String,
    "n_trials": pl.Int32,
    "priming_index": pl.Float64,
    "sd": pl.Float64,
    "ci_low": pl.Float64,
    "ci_high": pl.Float64,
}


@task(cache_policy=NO_CACHE)
def load_priming_pairs(settings: Settings, run_id: str, planned: list[BatchItem]) -> pl.DataFrame:
    """Epilogue passages scored under both conditions, within the batches this call planned."""
    with connect(settings.warehouse, read_only=True) as con:
        con.register("priming_planned", planned_frame(planned).to_arrow())
        return query_frame(con, "priming/select_pairs", {"priming_run_id": run_id})


def paired_test(a: list[float] | np.ndarray, b: list[float] | np.ndarray) -> tuple[float | None, float | None]:
    """scipy.stats.ttest_rel(a, b); None where it is undefined (fewer than 2 pairs, no variance at all)."""
    if len(a) < 2:
        return None, None
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.ttest_rel(a, b)
    return _finite_or_none(result.statistic), _finite_or_none(result.pvalue)


@task(cache_policy=NO_CACHE)
def compute_priming_tests(pairs: pl.DataFrame) -> pl.DataFrame:
    """One row per topic x setting x personality, and one pooled over topics ('*') per setting x personality."""
    gaps = pairs.with_columns((pl.col("score_lt") - pl.col("score_ht")).alias("gap"))
    default = gaps.filter(pl.col("personality") == DEFAULT_CODE).select(*MATCH_KEYS, pl.col("gap").alias("gap_default"))
    joined = gaps.join(default, on=MATCH_KEYS, how="left")
    rows = [_test_row(key, group) for key, group in _groups(joined, ["query_id", *SETTING_KEYS])]
    rows += [_test_row((POOLED, *key), group) for key, group in _groups(joined, SETTING_KEYS)]
    return pl.DataFrame(rows, schema=TEST_SCHEMA, orient="row")


def _groups(frame: pl.DataFrame, keys: list[str]) -> list[tuple[tuple[Any, ...], pl.DataFrame]]:
    return sorted(((tuple(key), group) for key, group in frame.group_by(keys)), key=lambda kg: kg[0])


def _test_row(key: tuple[Any, ...], group: pl.DataFrame) -> tuple[Any, ...]:
    query_id, n_prologue, n_epilogue, personality = key
    lt, ht = group["score_lt"].to_numpy(), group["score_ht"].to_numpy()
    t_stat, p_value = paired_test(lt, ht)
    versus: tuple[Any, ...] = (None, None, None, None)
    if personality != DEFAULT_CODE:
        matched = group.filter(pl.col("gap_default").is_not_null())
        if matched.height:
            own, base = matched["gap"].to_numpy(), matched["gap_default"].to_numpy()
            versus = (matched.height, float(np.mean(own - base)), *paired_test(own, base))
    return (
        query_id,
        n_prologue,
        n_epilogue,
        personality,
        group.height,
        float(np.mean(ht)),
        float(np.mean(lt)),
        t_stat,
        p_value,
        *versus,
    )


@task(cache_policy=NO_CACHE)
def compute_priming_index(pairs: pl.DataFrame) -> pl.DataFrame:
    """Per personality: mean over trials of (mean LT - mean HT epilogue score), with a 95% t interval."""
    per_trial = pairs.group_by("personality", "query_id", "trial", "n_prologue", "n_epilogue").agg(
        (pl.col("score_lt") - pl.col("score_ht")).mean().alias("difference")
    )
    rows = []
    for (personality,), group in sorted(per_trial.group_by("personality"), key=lambda kg: kg[0]):
        values = np.sort(group["difference"].to_numpy())
        mean = float(np.mean(values))
        sd = float(np.std(values, ddof=1)) if len(values) > 1 else None
        low = high = None
        if sd == 0.0:
            low = high = mean
        elif sd is not None:
            interval = stats.ttest_1samp(values, 0.0).confidence_interval(0.95)
            low, high = float(interval.low), float(interval.high)
        rows.append((personality, len(values), mean, sd, low, high))
    return pl.DataFrame(rows, schema=INDEX_SCHEMA, orient="row")


@task(cache_policy=NO_CACHE, retries=2, retry_delay_seconds=1)
def publish_priming_stats(settings: Settings, run_id: str, tests: pl.DataFrame, indexes: pl.DataFrame) -> None:
    """Replace the run's tests and indexes and mark it published, in one transaction."""
    with open_migrated(settings.warehouse) as con, transaction(con):
        con.register("staged_tests", tests.to_arrow())
        con.register("staged_indexes", indexes.to_arrow())
        run_sql(con, "priming/replace_stats", {"priming_run_id": run_id, "finished_at": now()})


def _finite_or_none(value: Any) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value
