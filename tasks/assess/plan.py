"""Which pairs of a judge run's pool go to people: the strategies, the budget, the order a plan extends in.

pool frames: [query_id, doc_id, llm_label, mean_confidence, label_entropy] (sql/assess/select_pool.sql).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from peras.errors import UsageError


@dataclass(frozen=True)
class Strategy:
    """One way to pick pairs: its name, what it says in help, the score it ranks by (highest first)."""

    name: str
    help: str
    score: Callable[[pl.DataFrame], pl.Expr]


SIGNALS: dict[str, Callable[[], pl.Expr]] = {
    "low-confidence": lambda: 1.0 - pl.col("mean_confidence").fill_null(0.0) / 100.0,
    "disagreement": lambda: pl.col("label_entropy"),
    "ranking-impact": lambda: pl.col("rank_spread"),
}
MAX_ENTROPY = 2.0  # bits: four labels in equal shares
FLOOR = 0.1  # a pair every judge agrees on still counts a tenth of its rank spread (the agreement may be wrong)


def signals_in(pool: pl.DataFrame) -> list[str]:
    """The strategies whose signal this pool holds: confidences, labels that differ, systems that rank its pairs."""
    held = {
        "low-confidence": pool["mean_confidence"].drop_nulls().n_unique() > 1,
        "disagreement": bool(pool["label_entropy"].max() or 0.0),
        "ranking-impact": "rank_spread" in pool.columns and bool(pool["rank_spread"].max() or 0.0),
    }
    return [name for name, present in held.items() if present]


def combined_score(pool: pl.DataFrame) -> pl.Expr:
    """The rank spread (what a label can move) times how unsure the run is of the pair (the mean of 1 - confidence/100
    and entropy/2 bits, whichever the run holds, plus FLOOR): the expected change of the ranking a person's label
    brings. Without run files: the unsureness alone; without confidences or personalities: the spread alone."""
    held = signals_in(pool)
    unsure = [SIGNALS[name]() / (MAX_ENTROPY if name == "disagreement" else 1.0) for name in held
              if name != "ranking-impact"]  # fmt: skip
    doubt = pl.mean_horizontal(unsure) if unsure else pl.lit(1.0)
    return SIGNALS["ranking-impact"]() * (FLOOR + doubt) if "ranking-impact" in held else doubt


STRATEGIES = {
    s.name: s
    for s in (
        Strategy(
            "combined",
            "ranking-impact's spread (with --run-file) times how unsure the run is of the pair (low-confidence, "
            "disagreement: whichever the run holds): the expected change of the ranking",
            combined_score,
        ),
        Strategy("random", "a seeded random draw (what `peras holes` hides)", lambda pool: pl.lit(0.0)),
        Strategy(
            "low-confidence",
            "the pairs whose labels the judge was least confident of (1 - mean confidence/100; none counts as 0)",
            lambda pool: SIGNALS["low-confidence"](),
        ),
        Strategy(
            "disagreement",
            "the pairs whose labels differ most across the run's personalities (entropy of the labels, bits)",
            lambda pool: SIGNALS["disagreement"](),
        ),
        Strategy(
            "ranking-impact",
            "the pairs whose label moves the systems of --run-file apart most (MTC's weight: the sum over system "
            "pairs of the difference of their nDCG@10 discounts for the passage)",
            lambda pool: SIGNALS["ranking-impact"](),
        ),
    )
}
DEFAULT_STRATEGY = "combined"
DEPTH = 10  # the ranks whose label changes nDCG@10


def budget_size(budget: str, n_pool: int) -> int:
    """The plan's size from a budget: a number of pairs, or a share of the pool ('10%', rounded half up)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(%?)\s*", budget)
    if not match or (not match.group(2) and "." in match.group(1)):
        raise UsageError(f"--budget {budget!r}: give a number of pairs (40) or a share of the pool (10%)")
    value = float(match.group(1))
    size = math.floor(n_pool * value / 100 + 0.5) if match.group(2) else int(value)
    if size < 1:
        raise UsageError(f"--budget {budget} picks no pair of a pool of {n_pool:,}: give a larger budget")
    if size > n_pool:
        raise UsageError(
            f"--budget {budget} is {size:,} pairs, above the pool of {n_pool:,} pairs the judge run labels: "
            "give at most the pool"
        )
    return size


def ranked(pool: pl.DataFrame, strategy: str, seed: int) -> pl.DataFrame:
    """The pool in the order the strategy picks it: highest score first, equal scores in a seeded random order.

    The order depends on the pool, the strategy and the seed alone, so a plan of 20 pairs extended to 40 holds the
    same pairs as a plan of 40.
    """
    ordered = pool.sort("query_id", "doc_id")
    draw = np.random.default_rng(seed).permutation(ordered.height)
    scored = ordered.with_columns(
        pick_score=STRATEGIES[strategy].score(ordered).cast(pl.Float64), tie_order=pl.Series(draw, dtype=pl.Int64)
    )
    return scored.sort(["pick_score", "tie_order"], descending=[True, False])


def next_pairs(pool: pl.DataFrame, planned: pl.DataFrame, strategy: str, seed: int, size: int) -> pl.DataFrame:
    """The pairs a budget adds to a plan that holds `planned` already: [query_id, doc_id, pick_order, pick_score,
    llm_label], numbered on from the plan's last pick. Pairs planned before are never picked again."""
    fresh = ranked(pool, strategy, seed).join(
        planned.select("query_id", "doc_id"), on=["query_id", "doc_id"], how="anti"
    )
    added = fresh.head(max(size - planned.height, 0))
    return added.select(
        "query_id",
        "doc_id",
        pick_order=pl.int_range(planned.height + 1, planned.height + added.height + 1, dtype=pl.Int64),
        pick_score="pick_score",
        llm_label=pl.col("llm_label").cast(pl.Int64),
    )


def rank_spread(runs: pl.DataFrame, n_systems: int, depth: int = DEPTH) -> pl.DataFrame:
    """[query_id, doc_id, rank_spread] for every pair a system ranks within `depth`: sum over system pairs of
    |w_i - w_j|, w = 1/log2(rank + 1) within depth, else 0 (Carterette, Allan and Sitaraman 2006, minimal test
    collections: how much the pair's label can change the difference of two systems' DCG)."""
    top = runs.filter(pl.col("rank") <= depth).with_columns(weight=1.0 / (pl.col("rank").cast(pl.Float64) + 1).log(2))
    spreads = []
    for (query_id, doc_id), group in top.group_by("query_id", "doc_id"):
        weights = np.sort(np.concatenate([group["weight"].to_numpy(), np.zeros(n_systems - group.height)]))
        factors = 2 * np.arange(1, n_systems + 1) - n_systems - 1  # sum_{i<j} |w_i - w_j| of sorted weights
        spreads.append((query_id, doc_id, float(weights @ factors)))
    schema = {"query_id": pl.String, "doc_id": pl.String, "rank_spread": pl.Float64}
    return pl.DataFrame(spreads, schema=schema, orient="row").sort("query_id", "doc_id")
