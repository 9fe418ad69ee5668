"""Error bars on rank agreement: Kendall's tau, Spearman's rho and tau-AP between the human and the LLM rankings of
the systems, each with a percentile bootstrap interval over topics; and the pairs of systems whose order flips.

A replicate draws as many topics as there are, with replacement (numpy's PCG64 seeded with `seed`: the same seed,
the same draws, to the last digit), recomputes every system's mean score under both qrels over the drawn topics (a
topic drawn twice counts twice; a system missing a topic averages over the drawn topics it answers, as trec_eval's
mean does) and the three correlations of those means. The interval is the (1 - level)/2 and (1 + level)/2 quantiles
of the replicates where the statistic is defined (numpy's linear quantile); the estimate is on all topics once.
It covers the uncertainty of sampling topics, not of the labels: the labels are held fixed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from peras.errors import UsageError
from tasks.evaluate.ranking import agreement

STATISTICS = ("kendall_tau", "spearman_rho", "tau_ap")
INTERVAL_SCHEMA = {
    "statistic": pl.String,
    "estimate": pl.Float64,
    "lower": pl.Float64,
    "upper": pl.Float64,
    "n_defined": pl.Int64,
}
FLIP_SCHEMA = {
    "system_a": pl.String,
    "system_b": pl.String,
    "human_a": pl.Float64,
    "human_b": pl.Float64,
    "human_gap": pl.Float64,
    "llm_a": pl.Float64,
    "llm_b": pl.Float64,
    "llm_gap": pl.Float64,
}


@dataclass(frozen=True)
class BootstrapSpec:
    """How many replicates, the interval's level, the seed."""

    replicates: int = 1000
    level: float = 0.90
    seed: int = 0

    def __post_init__(self) -> None:
        if self.replicates < 1:
            raise UsageError(f"--bootstrap {self.replicates}: draw at least 1 replicate")
        if not 0 < self.level < 1:
            raise UsageError(f"interval level {self.level}: give a level between 0 and 1 (0.90: 90% intervals)")


@dataclass(frozen=True)
class Matrices:
    """Per-topic scores as systems x topics matrices (nan: the system does not answer the topic)."""

    systems: list[str]
    topics: list[str]
    human: np.ndarray
    llm: np.ndarray


def score_matrices(human: pl.DataFrame, llm: pl.DataFrame) -> Matrices:
    """[system, query_id, value] per-topic scores of one measure under each qrels (no 'all' rows) as matrices over
    the systems both score and the topics either scores."""
    systems = sorted(set(human["system"]) & set(llm["system"]))
    topics = sorted(set(human["query_id"]) | set(llm["query_id"]))
    if len(systems) < 2 or not topics:
        raise UsageError(f"{len(systems)} system(s) scored under both qrels: rank agreement needs at least 2")
    grid = pl.DataFrame({"system": systems}).join(pl.DataFrame({"query_id": topics}), how="cross")

    def matrix(scores: pl.DataFrame) -> np.ndarray:
        filled = grid.join(scores.select("system", "query_id", "value"), on=["system", "query_id"], how="left")
        return filled["value"].to_numpy().astype(float).reshape(len(systems), len(topics))

    return Matrices(systems, topics, matrix(human), matrix(llm))


def topic_counts(n_topics: int, spec: BootstrapSpec) -> np.ndarray:
    """replicates x topics: how often each replicate drew each topic (n_topics draws with replacement)."""
    drawn = np.random.default_rng(spec.seed).integers(0, n_topics, size=(spec.replicates, n_topics))
    counts = np.zeros((spec.replicates, n_topics))
    np.add.at(counts, (np.arange(spec.replicates)[:, None], drawn), 1.0)
    return counts


def weighted_means(matrix: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """replicates x systems: each system's mean over the drawn topics it answers (nan if it answers none)."""
    present = ~np.isnan(matrix)
    total = counts @ np.where(present, matrix, 0.0).T
    drawn = counts @ present.T.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(drawn > 0, total / np.where(drawn > 0, drawn, 1.0), np.nan)


def correlations(human: np.ndarray, llm: np.ndarray) -> tuple[float, float, float]:
    """(tau, rho, tau-AP) of one replicate's means, nan where undefined (a constant ranking, a system with no topic)."""
    keep = ~(np.isnan(human) | np.isnan(llm))
    values = agreement(human[keep].tolist(), llm[keep].tolist())
    return tuple(np.nan if v is None else v for v in values)  # type: ignore[return-value]


def agreement_intervals(human: pl.DataFrame, llm: pl.DataFrame, spec: BootstrapSpec) -> pl.DataFrame:
    """[statistic, estimate, lower, upper, n_defined]: the three correlations on all topics and their intervals."""
    m = score_matrices(human, llm)
    ones = np.ones((1, len(m.topics)))
    estimate = correlations(weighted_means(m.human, ones)[0], weighted_means(m.llm, ones)[0])
    counts = topic_counts(len(m.topics), spec)
    human_means, llm_means = weighted_means(m.human, counts), weighted_means(m.llm, counts)
    replicates = np.array([correlations(h, x) for h, x in zip(human_means, llm_means, strict=True)])
    rows = []
    for i, name in enumerate(STATISTICS):
        defined = replicates[:, i][~np.isnan(replicates[:, i])]
        ends = [(1 - spec.level) / 2, (1 + spec.level) / 2]
        low, high = np.quantile(defined, ends) if defined.size else (None, None)
        value = None if np.isnan(estimate[i]) else float(estimate[i])
        rows.append((name, value, none_or_float(low), none_or_float(high), int(defined.size)))
    return pl.DataFrame(rows, schema=INTERVAL_SCHEMA, orient="row")


def none_or_float(value: float | None) -> float | None:
    """A float, or None for a missing value."""
    return None if value is None else float(value)


def flipped_pairs(human_means: pl.DataFrame, llm_means: pl.DataFrame) -> pl.DataFrame:
    """Pairs of systems the two qrels order oppositely ("which conclusions change"): system_a is the one the human
    qrels put higher; gaps are a minus b (human_gap > 0 > llm_gap); a tie under either qrels is no flip. From
    [system, value] mean scores; sorted by the human gap, largest first, then the names."""
    joined = human_means.select("system", human="value").join(llm_means.select("system", llm="value"), on="system")
    a = joined.rename({"system": "system_a", "human": "human_a", "llm": "llm_a"})
    b = joined.rename({"system": "system_b", "human": "human_b", "llm": "llm_b"})
    pairs = a.join(b, how="cross").with_columns(
        human_gap=pl.col("human_a") - pl.col("human_b"), llm_gap=pl.col("llm_a") - pl.col("llm_b")
    )
    flips = pairs.filter((pl.col("human_gap") > 0) & (pl.col("llm_gap") < 0))
    ordered = flips.select(list(FLIP_SCHEMA)).sort("human_gap", "system_a", "system_b", descending=[True, False, False])
    return ordered.cast(FLIP_SCHEMA)  # type: ignore[arg-type]
