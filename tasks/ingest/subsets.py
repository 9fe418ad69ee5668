"""The study's topic selection, as a documented deterministic rule.

Eligible topics have more than ten judged passages and all four relevance levels. They are ranked by
balance = the share of the topic's rarest level (min_k n_k / n; 0.25 is perfectly balanced), then by
more judged pairs, then by query_id; the first N are kept. Of the measures tried (normalised entropy,
total-variation and chi-square distance to uniform, Gini, rarest-level share), the rarest-level share
comes closest to the published pair counts (see docs/subsets.md).
"""

from __future__ import annotations

import polars as pl

SUBSET_RULE = (
    "topics with > {min_pairs} judged pairs and all four levels, ranked by the share of the rarest level "
    "(desc), then judged pairs (desc), then query_id; first {n_topics} kept"
)


def rank_balanced_topics(qrels: pl.DataFrame, n_topics: int, min_pairs: int = 10) -> pl.DataFrame:
    """Return the selected topics: query_id, rank, balance_score, n_pairs (frame of qrels as input)."""
    counts = qrels.group_by("query_id").agg(
        pl.len().alias("n_pairs"),
        *[(pl.col("relevance") == level).sum().alias(f"n_rel{level}") for level in range(4)],
    )
    level_counts = [pl.col(f"n_rel{level}") for level in range(4)]
    eligible = counts.filter((pl.col("n_pairs") > min_pairs) & pl.all_horizontal([c > 0 for c in level_counts]))
    ranked = (
        eligible.with_columns((pl.min_horizontal(level_counts) / pl.col("n_pairs")).alias("balance_score"))
        .sort(["balance_score", "n_pairs", "query_id"], descending=[True, True, False])
        .head(n_topics)
        .with_row_index("rank", offset=1)
    )
    return ranked.select(
        "query_id",
        pl.col("rank").cast(pl.Int32),
        "balance_score",
        "n_pairs",
        *[f"n_rel{k}" for k in range(4)],
    )
