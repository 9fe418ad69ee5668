"""The arrays the score intervals work on: the judged pool, the human sample in it, the systems' weights per pair.

Checked on the way in: a bad sample (empty, larger than the pool, pairs not in the pool, one topic) or an
unsupported measure is a usage error with one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import polars as pl

from peras.errors import UsageError, clip
from tasks.evaluate.ranking import parse_measures, trec_order

SUPPORTED = "nDCG@k and P@k / P(rel=r)@k"


@dataclass(frozen=True)
class Pool:
    """The judged pool (N pairs sorted by query_id, doc_id), its LLM labels, the sample's positions and labels."""

    pairs: pl.DataFrame  # query_id, doc_id
    topics: list[str]
    topic: np.ndarray  # (N,) topic index
    llm: np.ndarray  # (N,) LLM grade index into `grades`
    sample: np.ndarray  # (n,) pool positions of the human sample
    human: np.ndarray  # (n,) human grade index
    grades: np.ndarray  # (G,) the grade values
    gain: np.ndarray  # (G,) each grade's gain under the measure
    at_least: np.ndarray  # (G, J) 1 where a grade's gain reaches the j-th positive gain level (nDCG)
    steps: np.ndarray  # (J,) the gain levels' increments
    normalised: bool  # nDCG (divided by the ideal DCG) or P (not)
    cutoff: int
    discount: np.ndarray  # discount[r] for rank r >= 1 (0 past the cutoff), discount[0] unused

    @property
    def size(self) -> int:
        return self.pairs.height

    @property
    def n_topics(self) -> int:
        return len(self.topics)

    @cached_property
    def topic_matrix(self) -> np.ndarray:
        return np.eye(self.n_topics)[self.topic]

    @cached_property
    def expansion(self) -> np.ndarray:
        """Per sampled pair, N_q / n_q: how many pool pairs of its topic it stands for (post-stratified)."""
        sampled = np.bincount(self.topic[self.sample], minlength=self.n_topics)
        return self.topic_sizes[self.topic[self.sample]] / sampled[self.topic[self.sample]]

    @property
    def sample_weight(self) -> np.ndarray:
        """The expansion relative to N/n (1 when every topic is sampled at the same rate)."""
        return self.expansion * self.sample.size / self.size

    @property
    def topic_sizes(self) -> np.ndarray:
        return np.bincount(self.topic, minlength=self.n_topics).astype(float)

    def ideal(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """IDCG per topic from (Q, J) counts of pairs at each gain level, and its slope per grade (Q, G).

        IDCG = sum_j steps_j D(C_j), D(x) the discount summed over the first x ranks (linear between integers,
        flat past the cutoff); the slope of a grade is sum_j steps_j D'(C_j) over the levels it reaches.
        """
        last = len(self.discount) - 1
        x = np.clip(counts, 0, last)
        whole = np.floor(x).astype(int)
        total = np.concatenate([[0.0], np.cumsum(self.discount[1:])])
        following = np.append(self.discount, 0.0)[np.minimum(whole + 1, last + 1)]
        dcum = total[whole] + (x - whole) * following
        ideal = dcum @ self.steps
        slope = (following * self.steps) @ self.at_least.T
        return ideal, slope

    def confidence(self, llm_confidence: pl.DataFrame) -> np.ndarray:
        """Each pool pair's LLM confidence (NaN where none is given)."""
        joined = self.pairs.join(
            llm_confidence.select("query_id", "doc_id", pl.col("confidence").cast(pl.Float64)),
            on=["query_id", "doc_id"],
            how="left",
            maintain_order="left",
        )
        return joined["confidence"].fill_null(np.nan).to_numpy()


@dataclass(frozen=True)
class Systems:
    """Per system: its name, each pool pair's weight in its score (S, N), the pool topics it answers."""

    names: list[str]
    weight: np.ndarray
    answered: np.ndarray  # (S, Q) 1.0 where the system answers the topic
    n_topics: np.ndarray  # (S,)


def measure_kind(name: str) -> tuple[bool, int, int]:
    """(normalised, cutoff, rel) of a supported measure name; anything else is a usage error."""
    measure = parse_measures([name])[0]
    params = dict(measure.params)
    cutoff = params.pop("cutoff", None)
    rel = int(params.pop("rel", 1)) if measure.NAME == "P" else 1
    if measure.NAME not in ("nDCG", "P") or params or cutoff is None:
        raise UsageError(f"measure {name!r} has no score interval: intervals are for {SUPPORTED}")
    return measure.NAME == "nDCG", int(cutoff), rel


def check_sample(sample: pl.DataFrame, pool_pairs: pl.DataFrame) -> pl.DataFrame:
    """The sample's pool positions and labels; one line for an empty, duplicated, too large or one-topic sample."""
    if sample.height == 0:
        raise UsageError("the human sample is empty: draw a share above 0 (e.g. 5%) or give a file of labelled pairs")
    if sample.height > pool_pairs.height:
        raise UsageError(
            f"the human sample has {sample.height} pairs, more than the {pool_pairs.height} pairs of the judged pool"
        )
    if sample.select("query_id", "doc_id").is_duplicated().any():
        raise UsageError("the human sample lists a pair twice: give each query_id, doc_id once")
    if sample["relevance"].null_count():
        raise UsageError("the human sample has pairs without a label: give every sampled pair its human relevance")
    placed = sample.join(pool_pairs.with_row_index("position"), on=["query_id", "doc_id"], how="left")
    outside = placed.filter(pl.col("position").is_null())
    if outside.height:
        first = outside.row(0, named=True)
        raise UsageError(
            f"{outside.height} human sample pairs are not in the judged pool (first: query {clip(first['query_id'])}"
            f" doc {clip(first['doc_id'])}): sample from the pairs the LLM labelled"
        )
    if placed["query_id"].n_unique() < 2:
        raise UsageError(
            f"the human sample covers one topic ({clip(placed['query_id'][0])}): an interval needs pairs from at"
            " least two topics; draw a larger share"
        )
    return placed.sort("position")


def prepare_pool(llm_qrels: pl.DataFrame, human_sample: pl.DataFrame, measure: str) -> Pool:
    """The pool arrays for `measure` from the LLM labels of every pair and the human sample."""
    normalised, cutoff, rel = measure_kind(measure)
    if llm_qrels.height == 0:
        raise UsageError("the LLM qrels are empty: give the LLM labels of the judged pool")
    llm = llm_qrels.select("query_id", "doc_id", "relevance").unique(["query_id", "doc_id"]).sort("query_id", "doc_id")
    if llm["relevance"].null_count():
        raise UsageError("the LLM qrels have pairs without a label: leave unreadable labels out of the pool")
    placed = check_sample(human_sample.select("query_id", "doc_id", "relevance"), llm.select("query_id", "doc_id"))
    grades = np.unique(np.concatenate([llm["relevance"].to_numpy(), placed["relevance"].to_numpy()])).astype(int)
    gain = np.maximum(grades, 0).astype(float) if normalised else (grades >= rel).astype(float)
    levels = np.unique(gain[gain > 0])
    topics, topic = np.unique(llm["query_id"].to_numpy(), return_inverse=True)
    discount = np.zeros(cutoff + 1)
    discount[1:] = 1 / np.log2(np.arange(1, cutoff + 1) + 1) if normalised else 1 / cutoff
    return Pool(
        pairs=llm.select("query_id", "doc_id"),
        topics=[str(t) for t in topics],
        topic=topic,
        llm=np.searchsorted(grades, llm["relevance"].to_numpy()),
        sample=placed["position"].to_numpy().astype(int),
        human=np.searchsorted(grades, placed["relevance"].to_numpy()),
        grades=grades,
        gain=gain,
        at_least=(gain[:, None] >= levels[None, :]).astype(float),
        steps=np.diff(np.concatenate([[0.0], levels])),
        normalised=normalised,
        cutoff=cutoff,
        discount=discount,
    )


def prepare_systems(runs: pl.DataFrame, pool: Pool) -> Systems:
    """Each system's weight on each pool pair: the discount of its rank in trec_eval's order, within the cutoff."""
    if "score" not in runs.columns:
        runs = runs.with_columns(score=-pl.col("rank").cast(pl.Float64))
    ranked = trec_order(runs.select("system", "query_id", "doc_id", "score"))
    ranked = ranked.with_columns(rank=pl.int_range(1, pl.len() + 1).over("system", "query_id"))
    names = sorted(ranked["system"].unique().to_list())
    index = {n: i for i, n in enumerate(names)}
    topic_ids = pl.DataFrame({"query_id": pool.topics, "topic": np.arange(pool.n_topics)})
    pairs = ranked.select("system", "query_id").unique().join(topic_ids, on="query_id")
    answered = np.zeros((len(names), pool.n_topics))
    answered[pairs["system"].replace_strict(index, return_dtype=pl.Int64).to_numpy(), pairs["topic"].to_numpy()] = 1
    n_topics = answered.sum(axis=1)
    if (n_topics == 0).any():
        raise UsageError(f"system {clip(names[int(np.argmin(n_topics))])} answers no topic of the judged pool")
    kept = ranked.filter(pl.col("rank") <= pool.cutoff)
    hits = kept.join(pool.pairs.with_row_index("position"), on=["query_id", "doc_id"])
    weight = np.zeros((len(names), pool.size))
    rows = hits["system"].replace_strict(index, return_dtype=pl.Int64).to_numpy()
    weight[rows, hits["position"].to_numpy()] = pool.discount[hits["rank"].to_numpy()]
    return Systems(names=names, weight=weight, answered=answered, n_topics=n_topics)
