"""The study's topic subsets: `balanced`, a documented deterministic rule, and `published`, its own topics.

Eligible topics have more than ten judged passages and all four relevance levels. They are ranked by
balance = the share of the topic's rarest level (min_k n_k / n; 0.25 is perfectly balanced), then by
more judged pairs, then by query_id; the first N are kept. Of the measures tried (normalised entropy,
total-variation and chi-square distance to uniform, Gini, rarest-level share), the rarest-level share
comes closest to the published pair counts (see docs/subsets.md).

`published` is a topic list with exactly the study's Table 4 counts, found by scripts/search_published_subsets.py:
the only one (LLMJudge), or where several exist the one its choice rule picks (DL19; docs/subsets.md). It is
checked against those counts on every ingest.
"""

from __future__ import annotations

import polars as pl

from peras.errors import CheckFailed

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


PUBLISHED_RULE = (
    "the study's Table 4 counts: {n_topics} topics of the {qrels_set} qrels with {levels} judged pairs at levels "
    "0-3 (found by scripts/search_published_subsets.py, chosen by its rule where several exist; docs/subsets.md; "
    "list in peras/presets.toml)"
)


def published_topics(qrels: pl.DataFrame, topics: list[str], levels: list[int], collection_id: str) -> pl.DataFrame:
    """The study's own topics with their level counts; CheckFailed when the qrels no longer give its counts."""
    counts = (
        qrels.filter(pl.col("query_id").is_in(topics))
        .group_by("query_id")
        .agg(pl.len().alias("n_pairs"), *[(pl.col("relevance") == k).sum().alias(f"n_rel{k}") for k in range(4)])
    )
    missing = sorted(set(topics) - set(counts["query_id"]))
    if missing:
        raise CheckFailed(
            f"{collection_id}: the published subset's topics {', '.join(missing[:5])} have no judged pairs: "
            "these are not the study's qrels; nothing was published"
        )
    got = [int(counts[f"n_rel{k}"].sum()) for k in range(4)]
    if got != levels:
        raise CheckFailed(
            f"{collection_id}: the published subset's topics give {got} pairs at levels 0-3, not the study's "
            f"{levels}: these are not the study's qrels; nothing was published"
        )
    ordered = pl.DataFrame({"query_id": topics}).with_row_index("rank", offset=1)
    return (
        ordered.join(counts, on="query_id")
        .sort("rank")
        .select(
            "query_id",
            pl.col("rank").cast(pl.Int32),
            pl.lit(None, pl.Float64).alias("balance_score"),
            "n_pairs",
            *[f"n_rel{k}" for k in range(4)],
        )
    )
