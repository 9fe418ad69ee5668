"""Priming draws, batch plans and statistics on tiny inline inputs."""

from __future__ import annotations

import polars as pl
import pytest
from scipy import stats

from peras.errors import UsageError
from tasks.priming.draws import TopicPool, check_batch_settings, draw_trial, plan_batches
from tasks.priming.stats import compute_priming_index, compute_priming_tests, paired_test

pytestmark = pytest.mark.core

POOL = TopicPool(
    "q1",
    "a query",
    {
        0: tuple(f"z{i:02d}" for i in range(12)),
        2: tuple(f"m{i:02d}" for i in range(12)),
        3: tuple(f"h{i:02d}" for i in range(12)),
    },
)


def test_a_draw_depends_only_on_seed_topic_trial_and_setting():
    draw = draw_trial(POOL, 1, 4, 4, 42)
    assert draw == draw_trial(POOL, 1, 4, 4, 42)
    assert (draw.epilogue, draw.high, draw.low) == (
        ("m01", "m04", "m00", "m06"),
        ("h00", "h07", "h02", "h01"),
        ("z06", "z04", "z01", "z02"),
    )
    assert draw_trial(POOL, 2, 4, 4, 42) != draw
    assert draw_trial(POOL, 1, 4, 4, 43) != draw
    # the pool's order does not matter: candidates are drawn from sorted ids
    shuffled = TopicPool("q1", "a query", {k: tuple(reversed(v)) for k, v in POOL.levels.items()})
    assert draw_trial(shuffled, 1, 4, 4, 42) == draw


def test_ht_and_lt_batches_share_the_epilogue_in_the_same_order():
    draw = draw_trial(POOL, 3, 2, 3, 7)
    high, low = plan_batches([draw], ["default"])
    assert (high.condition, low.condition) == ("HT", "LT")
    assert high.doc_ids == draw.high + draw.epilogue and low.doc_ids == draw.low + draw.epilogue
    assert high.doc_ids[2:] == low.doc_ids[2:] == draw.epilogue
    assert [b.personality for b in plan_batches([draw], ["default", "HA"])] == ["default", "default", "HA", "HA"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        (None, [(4, 4), (4, 8), (8, 8)]),  # the study's settings
        ([(8, 8), (4, 4), (8, 8)], [(8, 8), (4, 4)]),  # order kept, repeats dropped
    ],
)
def test_batch_settings(given, expected):
    assert check_batch_settings(given) == expected


def test_an_empty_prologue_is_refused():
    with pytest.raises(UsageError, match="batch setting 0,4 needs a prologue and an epilogue of at least 1 passage"):
        check_batch_settings([(0, 4)])


def pairs_frame(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        schema=[
            "query_id",
            "trial",
            "n_prologue",
            "n_epilogue",
            "personality",
            "epilogue_position",
            "doc_id",
            "score_ht",
            "score_lt",
        ],
        orient="row",
    )


# Two topics, one setting (PL=1, EL=2), two trials; default primes, HA less so.
PAIRS = pairs_frame(
    [
        ("q1", 1, 1, 2, "default", 1, "a", 1, 2),
        ("q1", 1, 1, 2, "default", 2, "b", 0, 2),
        ("q1", 2, 1, 2, "default", 1, "c", 1, 1),
        ("q1", 2, 1, 2, "default", 2, "d", 2, 3),
        ("q2", 1, 1, 2, "default", 1, "e", 0, 3),
        ("q2", 1, 1, 2, "default", 2, "f", 1, 1),
        ("q1", 1, 1, 2, "HA", 1, "a", 2, 2),
        ("q1", 1, 1, 2, "HA", 2, "b", 1, 2),
        ("q1", 2, 1, 2, "HA", 1, "c", 1, 1),
        ("q1", 2, 1, 2, "HA", 2, "d", 3, 3),
        # HA's q2 trial has no pair at position 2 (say its batch failed): vs-default uses matched pairs only
        ("q2", 1, 1, 2, "HA", 1, "e", 2, 3),
    ]
)


def test_paired_tests_match_scipy():
    tests = compute_priming_tests.fn(PAIRS)
    assert tests.select("query_id", "personality", "n_pairs", "mean_ht", "mean_lt").rows() == [
        ("q1", "HA", 4, 7 / 4, 2.0),
        ("q1", "default", 4, 1.0, 2.0),
        ("q2", "HA", 1, 2.0, 3.0),
        ("q2", "default", 2, 0.5, 2.0),
        ("*", "HA", 5, 9 / 5, 11 / 5),  # pooled over topics
        ("*", "default", 6, 5 / 6, 2.0),
    ]
    by_key = {(r["query_id"], r["personality"]): r for r in tests.iter_rows(named=True)}
    expected = stats.ttest_rel([2, 2, 1, 3, 3, 1], [1, 0, 1, 2, 0, 1])
    assert (by_key["*", "default"]["t_stat"], by_key["*", "default"]["p_value"]) == (
        pytest.approx(expected.statistic, rel=1e-12),
        pytest.approx(expected.pvalue, rel=1e-12),
    )
    # one pair: no test
    assert (by_key["q2", "HA"]["t_stat"], by_key["q2", "HA"]["p_value"]) == (None, None)
    # HA against default on the five passages both judged: gaps (0,1,0,0,1) vs (1,2,0,1,3)
    versus = stats.ttest_rel([0, 1, 0, 0, 1], [1, 2, 0, 1, 3])
    pooled_ha = by_key["*", "HA"]
    assert pooled_ha["n_pairs_vs_default"] == 5
    assert pooled_ha["gap_vs_default"] == pytest.approx(-5 / 5, rel=1e-12)
    assert pooled_ha["t_vs_default"] == pytest.approx(versus.statistic, rel=1e-12)
    assert pooled_ha["p_vs_default"] == pytest.approx(versus.pvalue, rel=1e-12)
    assert by_key["*", "default"]["gap_vs_default"] is None


def test_priming_index_is_a_mean_over_trials_with_a_t_interval():
    index = compute_priming_index.fn(PAIRS).rows(named=True)
    # default trials: q1/1 (2-1 + 2-0)/2 = 1.5, q1/2 (0 + 1)/2 = 0.5, q2/1 (3 + 0)/2 = 1.5
    interval = stats.ttest_1samp([0.5, 1.5, 1.5], 0.0).confidence_interval(0.95)
    default = next(r for r in index if r["personality"] == "default")
    assert default["n_trials"] == 3
    assert default["priming_index"] == pytest.approx(3.5 / 3, rel=1e-12)
    assert default["sd"] == pytest.approx(0.5773502691896257, rel=1e-12)
    assert (default["ci_low"], default["ci_high"]) == (
        pytest.approx(interval.low, rel=1e-12),
        pytest.approx(interval.high, rel=1e-12),
    )


def test_paired_test_is_none_where_scipy_is_undefined():
    assert paired_test([1, 1], [1, 1]) == (None, None)  # no variance, no difference
    assert paired_test([2], [1]) == (None, None)  # one pair
    assert paired_test([2, 2], [1, 1]) == (float("inf"), 0.0)  # a constant difference: certain
