"""Near-duplicate systems: the same top k passages (in any order) on every judged topic.

Official submissions include copies (DL21: pash_f1 = pash_f2 = pash_f3 and RankLLM's BM25 = p_bm25 in the top 10 of
every judged topic). Each copy adds pairs of systems that every qrels set orders alike, so copies inflate Kendall's
tau; `--dedupe` keeps one system of each group (the first by name) and says which it left out.
"""

from __future__ import annotations

import polars as pl

from tasks.evaluate.ranking import trec_order

DEFAULT_DEPTH = 10


def duplicate_groups(runs: pl.DataFrame, depth: int = DEFAULT_DEPTH) -> list[list[str]]:
    """Groups (2 or more, sorted by name) of systems with the same `depth` passages on top (trec_eval's order, the
    order among them aside: RankLLM's BM25 rounds scores that p_bm25 writes to more digits) on every topic of the
    runs (runs are cut to the judged topics before); the groups sorted by their first name."""
    ranked = trec_order(runs.select("system", "query_id", "doc_id", "score")).sort(
        "system", "query_id", "score", descending=[False, False, True]
    )
    top = ranked.group_by("system", "query_id", maintain_order=True).head(depth)
    lists = (
        top.sort("system", "query_id", "doc_id")
        .group_by("system", "query_id", maintain_order=True)
        .agg(pl.col("doc_id").str.join(" "))
    )
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
