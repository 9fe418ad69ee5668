"""Score intervals from LLM labels and a human sample (tasks/evaluate/intervals.py, ppi.py): exact values on tiny
inline pools, PPI++ equal to ppi-python, seeded draws, one-line usage errors."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from peras.errors import UsageError
from tasks.evaluate.intervals import IntervalSpec, draw_human_sample, system_intervals
from tasks.evaluate.ppi import calibrated_probabilities, ppi_mean_ci
from tasks.evaluate.ranking import score_systems

pytestmark = pytest.mark.core

# Two topics of four judged passages; one system ranking d1 d2 d3 d4 and e1 e2 e3 e4.
HUMAN = pl.DataFrame(
    {
        "query_id": ["a"] * 4 + ["b"] * 4,
        "doc_id": ["d1", "d2", "d3", "d4", "e1", "e2", "e3", "e4"],
        "relevance": [3, 1, 0, 2, 1, 0, 0, 2],
    }
)
LLM = HUMAN.with_columns(relevance=pl.Series([2, 1, 1, 2, 0, 0, 1, 2]))
RUNS = HUMAN.select("query_id", "doc_id").with_columns(system=pl.lit("s"), score=pl.Series([4.0, 3, 2, 1] * 2))


def test_human_only_precision_is_the_horvitz_thompson_mean_with_its_classical_interval() -> None:
    # 4 of 8 pairs sampled (N/n = 2). P@2 per topic from the sample: a: 2 x 1/2 x [d1 relevant] = 1, b: e2 not
    # relevant = 0; mean 0.5. Per pair N psi = 8 x 1/2 (topics) x 1/2 (P@2) x relevant = [2, 0, 0, 0] (d3, e3 are
    # below the cutoff): sd (ddof 0) sqrt(3)/2, se sqrt(3)/4, 50% interval 0.5 +- z(0.75) sqrt(3)/4.
    sample = HUMAN.filter(pl.col("doc_id").is_in(["d1", "d3", "e2", "e3"]))
    found = system_intervals(RUNS, LLM, sample, IntervalSpec("P@2", alpha=0.5, methods=("human_only",)))
    half = 0.6744897501960817 * math.sqrt(3) / 4
    assert found.select("system", "method", "measure", "n_sample").rows() == [("s", "human_only", "P@2", 4)]
    assert found.select("estimate", "lower", "upper").row(0) == pytest.approx((0.5, 0.5 - half, 0.5 + half), abs=1e-15)


def test_a_topic_sampled_more_densely_counts_for_fewer_pairs() -> None:
    # 1 of a's 4 pairs (each stands for 4) and 3 of b's 4 (each for 4/3). P@2: a: d3 is below the cutoff, 0;
    # b: 4/3 x 1/2 x [e1 relevant] = 2/3; mean 1/3. Weights relative to N/n = 2: d3 2, b's 2/3; N psi x weight =
    # [0, 2 x 2/3, 0, 0]: mean 1/3, sd (ddof 0) 1/sqrt(3), se 1/(2 sqrt(3)).
    sample = HUMAN.filter(pl.col("doc_id").is_in(["d3", "e1", "e2", "e3"]))
    found = system_intervals(RUNS, LLM, sample, IntervalSpec("P@2", alpha=0.5, methods=("human_only",)))
    half = 0.6744897501960817 / (2 * math.sqrt(3))
    assert found.select("estimate", "lower", "upper").row(0) == pytest.approx((1 / 3, 1 / 3 - half, 1 / 3 + half))


def test_a_full_sample_gives_the_exact_human_ndcg_for_every_method() -> None:
    # nDCG@10: a = (3 + 1/log2 3 + 2/log2 5) / (3 + 2/log2 3 + 1/2) = 0.94339..., b = (1 + 2/log2 5) / (2 + 1/log2 3)
    expected = ((3 + 1 / math.log2(3) + 2 / math.log2(5)) / (3 + 2 / math.log2(3) + 0.5)
                + (1 + 2 / math.log2(5)) / (2 + 1 / math.log2(3))) / 2  # fmt: skip
    truth = score_systems(RUNS, HUMAN, ["nDCG@10"]).filter(pl.col("query_id") == "all")["value"][0]
    confidence = LLM.with_columns(confidence=pl.Series([95, 60, 95, 95, 30, 95, 60, 95]))
    found = system_intervals(RUNS, LLM, HUMAN, IntervalSpec(), confidence)
    assert found["method"].to_list() == ["ppi", "human_only", "calibrated_ppi"]
    assert found["estimate"].to_list()[:2] == pytest.approx([expected] * 2, abs=1e-12)
    # The calibrated predictions of sampled pairs leave the pair out, so they differ from the pool's predictions
    # and their difference (times lambda) stays in the estimate even when every pair is sampled: 0.83648.
    assert found["estimate"][2] == pytest.approx(0.8364841618389903, abs=1e-12)
    assert expected == pytest.approx(truth, abs=1e-12)
    assert (found["lower"] <= found["estimate"]).all() and (found["estimate"] <= found["upper"]).all()


def test_the_calibrated_variant_is_left_out_without_confidences() -> None:
    found = system_intervals(RUNS, LLM, HUMAN, IntervalSpec())
    assert found["method"].to_list() == ["ppi", "human_only"]


@pytest.mark.parametrize("lam", [None, 1.0, 0.3])
def test_ppi_mean_ci_equals_ppi_python_per_column(lam) -> None:
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(5)
    truth_all = rng.normal(size=(400, 3))
    yhat_all = truth_all + rng.normal(scale=[0.3, 1.0, 3.0], size=(400, 3))
    y, yhat = truth_all[:40] + rng.normal(scale=0.1, size=(40, 3)), yhat_all[:40]
    mine = ppi_mean_ci(y, yhat, yhat_all, alpha=0.1, lam=lam)
    for column in range(3):
        args = (y[:, column], yhat[:, column], yhat_all[:, column])
        lower, upper = ppi_py.ppi_mean_ci(*args, alpha=0.1, lam=lam)
        point = ppi_py.ppi_mean_pointestimate(*args, lam=lam)
        assert mine.lower[column] == pytest.approx(float(np.squeeze(lower)), abs=1e-9)
        assert mine.upper[column] == pytest.approx(float(np.squeeze(upper)), abs=1e-9)
        assert mine.estimate[column] == pytest.approx(float(np.squeeze(point)), abs=1e-9)


def test_lambda_zero_without_predictions_is_ppi_pythons_classical_interval() -> None:
    ppi_py = pytest.importorskip("ppi_py")
    y = np.random.default_rng(2).normal(size=(30, 1))
    mine = ppi_mean_ci(y, np.zeros_like(y), np.zeros((300, 1)), alpha=0.1, lam=0.0)
    lower, upper = ppi_py.classical_mean_ci(y[:, 0], alpha=0.1)
    assert (mine.lower[0], mine.upper[0]) == pytest.approx((float(lower), float(upper)), abs=1e-9)


def test_calibration_leaves_each_sampled_pair_out_of_its_own_prediction() -> None:
    # Two grades, one bin; sampled pairs 0 (LLM 1, human 1) and 1 (LLM 1, human 0). Pair 0 left out, pair 1 alone:
    # P0 = (1 + 1, 0 + 1) / 3 = (2/3, 1/3); P1(. | LLM 1) = ((1, 0) + P0) / 2 = (5/6, 1/6);
    # P2(. | LLM 1, bin 0) = ((1, 0) + P1) / 2 = ((1 + 5/6) / 2, (1/6) / 2).
    everyone, left_out = calibrated_probabilities(
        np.array([1, 1, 0]), np.zeros(3, int), np.array([0, 1]), np.array([1, 0]), 2
    )
    assert left_out[0] == pytest.approx([(1 + 5 / 6) / 2, (1 / 6) / 2])
    assert everyone.sum(axis=1) == pytest.approx([1, 1, 1])


def test_the_sample_draw_is_seeded_sorted_and_sized() -> None:
    first, again = draw_human_sample(HUMAN, 0.5, seed=3), draw_human_sample(HUMAN, 0.5, seed=3)
    assert first.equals(again) and first["query_id"].to_list() == ["a", "a", "b", "b"]  # two of each topic's four
    assert draw_human_sample(HUMAN, 0.01, seed=3)["query_id"].to_list() == ["a", "b"]  # at least one per topic
    assert first.equals(first.sort("query_id", "doc_id"))
    assert not first.equals(draw_human_sample(HUMAN, 0.5, seed=4))
    found = [system_intervals(RUNS, LLM, first, IntervalSpec()) for _ in range(2)]
    assert found[0].equals(found[1])


@pytest.mark.parametrize(
    ("sample", "message"),
    [
        (HUMAN.head(0), "the human sample is empty"),  # nothing to rectify with
        (HUMAN.head(3), r"covers one topic \(a\)"),  # no spread between topics
        (pl.concat([HUMAN, HUMAN.with_columns(doc_id=pl.lit("x") + pl.col("doc_id"))]), "more than the 8 pairs"),
        (HUMAN.with_columns(doc_id=pl.lit("z") + pl.col("doc_id")).head(2), "not in the judged pool"),
    ],
)
def test_a_bad_sample_is_one_line(sample: pl.DataFrame, message: str) -> None:
    with pytest.raises(UsageError, match=message) as caught:
        system_intervals(RUNS, LLM, sample, IntervalSpec())
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: draw_human_sample(HUMAN, 0.0, 1), "use a share in"),
        (lambda: system_intervals(RUNS, LLM, HUMAN, IntervalSpec("AP")), "has no score interval"),
        (lambda: system_intervals(RUNS, LLM, HUMAN, IntervalSpec(methods=("bootstrap",))), "interval method"),
    ],
)
def test_bad_arguments_are_one_line(call, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        call()
