"""Near-duplicate systems: the same top k passages, in the same order, on every judged topic.

Official submissions include copies (DL21: pash_f1 = pash_f2 = pash_f3 and RankLLM's BM25 = p_bm25 in the top 10 of
every judged topic). Each copy adds pairs of systems that every qrels set orders alike, so copies inflate Kendall's
tau; `--dedupe` keeps one system of each group (the first by name) and says which it left out.
"""

from __future__ import annotations

import polars as pl

DEFAULT_DEPTH = 10


def duplicate_groups(runs: pl.DataFrame, depth: int = DEFAULT_DEPTH) -> list[list[str]]:
    """Groups (2 or more, sorted by name) of systems with the same `depth` passages on top in the same order on every
    topic of the runs (runs are cut to the judged topics before); the groups sorted by their first name.

    The order is the files' own (the rank column, then the doc id): RankLLM's BM25 rounds the scores p_bm25 writes
    to more digits, so by score two of its passages swap places on one DL21 topic while the files rank them alike.
    """
    ranked = runs.select("system", "query_id", "doc_id", "rank").sort("system", "query_id", "rank", "doc_id")
    top = ranked.group_by("system", "query_id", maintain_order=True).head(depth)
    lists = top.group_by("system", "query_id", maintain_order=True).agg(pl.col("doc_id").str.join(" "))
    every = lists.select("system").unique().join(runs.select("query_id").unique(), how="cross")
    signature = (
        every.join(lists, on=["system", "query_id"], how="left")
        .sort("system", "query_id")
        .group_by("system", maintain_order=True)
        .agg(
            pl.concat_str(pl.col("query_id"), pl.lit("="), pl.col("doc_id").fill_null(""))
            .str.join("\n")
            .alias("signature")
        )
    )
    groups = signature.group_by("signature").agg(pl.col("system").sort()).filter(pl.col("system").list.len() > 1)
    return sorted(groups["system"].to_list())


def drop_duplicates(runs: pl.DataFrame, groups: list[list[str]]) -> pl.DataFrame:
    """The runs with one system of each group kept (its first name)."""
    dropped = [name for group in groups for name in group[1:]]
    return runs.filter(pl.col("system").is_in(dropped).not_())
