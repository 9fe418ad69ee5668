"""Issue 50 item 2: Kendall's tau, Spearman's rho and tau-AP with bootstrap intervals over topics, and the pairs of
systems whose order flips; values hand-computed on tiny inline scores."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from peras.errors import UsageError
from tasks.evaluate.bootstrap import (
    BootstrapSpec,
    agreement_intervals,
    flipped_pairs,
    score_matrices,
    topic_counts,
    weighted_means,
)

pytestmark = pytest.mark.core


def per_topic(values: dict[str, tuple[float, ...]]) -> pl.DataFrame:
    """[system, query_id, value] from each system's scores on topics t1, t2, ..."""
    rows = [(s, f"t{i}", v) for s, vs in values.items() for i, v in enumerate(vs, start=1) if v is not None]
    return pl.DataFrame(rows, ["system", "query_id", "value"], orient="row")


# Two topics. Human means A .75 > B .5 > C .25; LLM means B .75 > A .5 > C 0: A and B swap.
HUMAN = per_topic({"A": (1.0, 0.5), "B": (0.5, 0.5), "C": (0.25, 0.25)})
LLM = per_topic({"A": (0.5, 0.5), "B": (1.0, 0.5), "C": (0.0, 0.0)})


def means(scores: pl.DataFrame) -> pl.DataFrame:
    return scores.group_by("system").agg(pl.col("value").mean()).sort("system")


def test_estimates_and_intervals_by_hand():
    # All topics once: tau = (2 concordant - 1 discordant) / 3 = 1/3; rho = 1 - 6 x (1 + 1) / (3 x 8) = 1/2;
    # tau-AP, LLM order B A C: A has B above it, not above it for the humans: 0/1; C: 2/2 -> 2/2 x 1 - 1 = 0.
    # A replicate draws t1 t1 (the same order as on both), t1 t2 / t2 t1 (all topics once) or t2 t2: then A = B
    # under both qrels, C last: tau-b 2/sqrt(2 x 2) = 1, rho 1, tau-AP (A, B tied in both: agree) 1.
    # So every replicate is (1/3, 1/2, 0) or (1, 1, 1); t2 t2 is drawn a quarter of the time, more than the 5% above
    # the 90% interval's upper end, less than the 95% below it: [1/3, 1], [1/2, 1], [0, 1].
    spec = BootstrapSpec(replicates=1000, level=0.90, seed=7)
    n_t2_t2 = int((topic_counts(2, spec)[:, 1] == 2).sum())
    assert 50 < n_t2_t2 < 950
    result = agreement_intervals(HUMAN, LLM, spec)
    third, one = pytest.approx(1 / 3, abs=1e-15), pytest.approx(1.0, abs=1e-15)  # scipy's tau-b: 0.9999999999999999
    assert result.rows() == [
        ("kendall_tau", third, third, one, 1000),
        ("spearman_rho", 0.5, 0.5, 1.0, 1000),
        ("tau_ap", 0.0, 0.0, 1.0, 1000),
    ]


def test_replicates_where_a_ranking_is_constant_are_left_out():
    # On t2 every system scores 0.5 for the humans: a t2 t2 replicate has no human ranking, so no correlation.
    human = per_topic({"A": (1.0, 0.5), "B": (0.75, 0.5), "C": (0.25, 0.5)})
    spec = BootstrapSpec(replicates=200, seed=3)
    n_t2_t2 = int((topic_counts(2, spec)[:, 1] == 2).sum())
    result = agreement_intervals(human, LLM, spec)
    assert result["n_defined"].to_list() == [200 - n_t2_t2] * 3


def test_topic_draws_count_each_topic_and_repeat_with_the_seed():
    spec = BootstrapSpec(replicates=5, seed=11)
    counts = topic_counts(4, spec)
    assert counts.shape == (5, 4)
    assert counts.sum(axis=1).tolist() == [4.0] * 5  # as many draws as topics
    drawn = np.random.default_rng(11).integers(0, 4, size=(5, 4))
    assert counts.tolist() == [np.bincount(row, minlength=4).astype(float).tolist() for row in drawn]
    assert np.array_equal(counts, topic_counts(4, spec))


def test_a_system_missing_a_topic_averages_over_the_drawn_topics_it_answers():
    # B lacks t2: drawn t1 t2 t2, A's mean is (1 + 2 x 0.5)/3, B's is its t1 score alone (trec_eval's mean).
    matrices = score_matrices(
        per_topic({"A": (1.0, 0.5), "B": (0.25, None)}), per_topic({"A": (1.0, 0.5), "B": (0.25, 0.5)})
    )
    assert np.isnan(matrices.human[1, 1])
    result = weighted_means(matrices.human, np.array([[1.0, 2.0], [0.0, 3.0]]))
    assert result[0].tolist() == [2 / 3, 0.25]
    assert result[1][0] == 0.5 and np.isnan(result[1][1])


def test_a_seeded_bootstrap_repeats_to_the_last_digit():
    rng = np.random.default_rng(2024)
    values = rng.random((8, 30))
    human = per_topic({f"s{i}": tuple(values[i]) for i in range(8)})
    llm = per_topic({f"s{i}": tuple(values[i] * 0.8 + rng.random(30) * 0.2) for i in range(8)})
    spec = BootstrapSpec(replicates=300, seed=5)
    first = agreement_intervals(human, llm, spec)
    assert first.equals(agreement_intervals(human, llm, spec))
    assert not first.equals(agreement_intervals(human, llm, BootstrapSpec(replicates=300, seed=6)))
    # pinned: numpy's PCG64 stream and the quantile rule give these exact doubles
    assert first.rows() == PINNED


PINNED = [
    ("kendall_tau", 0.9285714285714285, 0.7857142857142856, 0.9999999999999998, 300),
    ("spearman_rho", 0.9761904761904763, 0.880952380952381, 1.0, 300),
    ("tau_ap", 0.7142857142857142, 0.6189115646258502, 1.0, 300),
]


def test_flipped_pairs_with_their_gaps():
    flips = flipped_pairs(means(HUMAN), means(LLM))
    assert flips.rows() == [("A", "B", 0.75, 0.5, 0.25, 0.5, 0.75, -0.25)]
    # a tie under one qrels is no flip; nothing flips when the orders agree
    tied = per_topic({"A": (0.5, 0.5), "B": (0.5, 0.5), "C": (0.25, 0.25)})
    assert flipped_pairs(means(HUMAN), means(tied)).is_empty()
    assert flipped_pairs(means(HUMAN), means(HUMAN)).is_empty()


def test_flips_are_sorted_by_the_human_gap():
    human = pl.DataFrame({"system": ["A", "B", "C"], "value": [0.9, 0.5, 0.4]})
    llm = pl.DataFrame({"system": ["A", "B", "C"], "value": [0.1, 0.2, 0.3]})  # reversed: every pair flips
    flips = flipped_pairs(human, llm)
    assert flips.select("system_a", "system_b").rows() == [("A", "C"), ("A", "B"), ("B", "C")]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (dict(replicates=0), "--bootstrap 0: draw at least 1 replicate"),
        (dict(level=1.0), "interval level 1.0: give a level between 0 and 1 (0.90: 90% intervals)"),
    ],
)
def test_bad_bootstrap_settings(spec, message):
    with pytest.raises(UsageError) as error:
        BootstrapSpec(**spec)
    assert str(error.value) == message


def test_one_system_has_no_ranking():
    with pytest.raises(UsageError, match="1 system"):
        agreement_intervals(per_topic({"A": (1.0,)}), per_topic({"A": (1.0,)}), BootstrapSpec())
