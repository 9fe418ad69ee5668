"""Experiment 2 building blocks: seeds, splits, metrics, the ordinal learner, feature choice.

The votes are tested in test_fuse_baselines.py.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from sklearn.metrics import f1_score

from peras.errors import CheckFailed, UsageError
from tasks.classify.ordinal import OrdinalLogit
from tasks.classify.tasks import LEARNERS, choose_learners, draw_splits, score, trial_seeds
from tasks.shared.features import FeatureMatrix, build_feature_matrix, choose_feature_set
from tasks.shared.method_titles import TITLES

pytestmark = pytest.mark.core


def test_trial_seeds_are_fixed_and_prefix_stable():
    assert trial_seeds(42, 3) == [3444837047, 2669555309, 2046530742]
    assert trial_seeds(42, 50)[:3] == trial_seeds(42, 3)
    assert len(set(trial_seeds(42, 50))) == 50


def test_score_exact_values():
    # One error (3 -> 2) in five: kappa 14/19, QWK 56/61, macro-F1 (1 + 1 + 2/3 + 2/3) / 4.
    got = score(np.array([0, 1, 2, 3, 3]), np.array([0, 1, 2, 2, 3]))
    assert got == pytest.approx({"kappa": 14 / 19, "qwk": 56 / 61, "f1": 5 / 6}, abs=1e-12)


def test_score_counts_never_predicted_levels_in_macro_f1():
    # Level 3 is never predicted: its F1 is 0 and still averaged in.
    assert score(np.array([0, 1, 2, 3]), np.array([0, 1, 2, 2]))["f1"] == pytest.approx((1 + 1 + 2 / 3 + 0) / 4)


def test_score_counts_a_level_nobody_used_as_zero_like_the_metric_views():
    # Level 1 is in neither truth nor prediction: F1_1 = 0 is averaged in (sklearn labels=[0, 1, 2, 3],
    # zero_division=0), the same macro-F1 as metrics_agreement, not the mean over the three levels present.
    truth, predicted = np.array([0, 0, 2, 3]), np.array([0, 2, 2, 3])
    got = score(truth, predicted)["f1"]
    assert got == f1_score(truth, predicted, labels=[0, 1, 2, 3], average="macro", zero_division=0)
    assert got == pytest.approx((2 / 3 + 0 + 2 / 3 + 1) / 4, abs=1e-15)


def test_draw_splits_is_stratified_disjoint_and_sorted():
    relevance = np.repeat([0, 1, 2, 3], [100, 60, 30, 10])
    splits = draw_splits.fn(relevance, 2, 42, 0.1)
    assert [s.seed for s in splits] == [3444837047, 2669555309]
    for split in splits:
        assert np.bincount(relevance[split.train]).tolist() == [10, 6, 3, 1]
        assert len(split.test) == 180
        assert np.array_equal(np.sort(np.concatenate([split.train, split.test])), np.arange(200))
        assert np.all(np.diff(split.train) > 0)
    assert not np.array_equal(splits[0].train, splits[1].train)


@pytest.mark.parametrize(
    ("counts", "message"),
    [
        # two pairs at level 3 out of 602: 10% of them rounds to none in every training part
        (
            [200, 200, 200, 2],
            "training parts without every relevance level: trial 1 (seed 3444837047) "
            "lacks level 3; trial 2 (seed 2669555309) lacks level 3",
        ),
        # a level with a single pair cannot be split at all
        ([50, 50, 50, 1], "a stratified split needs at least 2 pairs per relevance level (level 3: 1 pairs)"),
        # a level nobody judged
        ([50, 50, 0, 50], "a stratified split needs at least 2 pairs per relevance level (level 2: 0 pairs)"),
    ],
)
def test_draw_splits_gate(counts, message):
    relevance = np.repeat([0, 1, 2, 3], counts)
    with pytest.raises(CheckFailed) as exc:
        draw_splits.fn(relevance, 2, 42, 0.1)
    assert str(exc.value) == message


def ordinal_data(n: int = 400, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3))
    latent = x @ np.array([1.0, -0.5, 0.2]) + rng.logistic(size=n)
    return x, np.digitize(latent, [-1.0, 0.5, 1.5])


def test_ordinal_logit_matches_statsmodels_without_penalty():
    from statsmodels.miscmodels.ordinal_model import OrderedModel

    x, y = ordinal_data()
    ours = OrdinalLogit(l2=0.0).fit(x, y)
    ref = OrderedModel(y, x, distr="logit").fit(method="bfgs", disp=False, maxiter=2000)
    assert ours.converged_
    assert ours.coef_ / ours.scale_ == pytest.approx(ref.params[:3], abs=1e-3)
    assert np.array_equal(ours.predict(x), ref.model.predict(ref.params, exog=x).argmax(axis=1))


def test_ordinal_logit_survives_constant_and_collinear_columns():
    x, y = ordinal_data()
    wide = np.hstack([x, 2 * x[:, :1], np.ones((len(x), 1)), np.full((len(x), 1), 100.0)])
    model = OrdinalLogit().fit(wide, y)
    assert model.keep_.tolist() == [True, True, True, True, False, False]
    assert np.isfinite(model.coef_).all()
    # the ridge splits the duplicated column's weight evenly
    assert model.coef_[0] == pytest.approx(model.coef_[3], rel=1e-4)
    assert set(model.predict(wide).tolist()) <= {0, 1, 2, 3}
    assert np.allclose(model.predict_proba(wide).sum(axis=1), 1.0)


def streams(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        orient="row",
        schema=[
            "run_name",
            "source",
            "personality",
            "cot",
            "confidence_method",
            "has_confidence",
            "n_judgments",
        ],
    )


LLM_STREAMS = streams(
    [("new", "llm", code, False, "verbalized", True, 10) for code in ("LO", "HA", "default", "zz-user", "LA")]
    + [("old", "llm", "default", cot, "verbalized", True, 10) for cot in (False, True)]
    + [
        ("imp-1", "import", "default", False, "none", False, 10),
        ("imp-2", "import", "default", False, "given", True, 10),
    ]
)


def test_personalities_of_newest_llm_run_in_canonical_order():
    chosen = choose_feature_set.fn(LLM_STREAMS, "c", None, None, None, None)
    assert chosen.mode == "personalities"
    assert chosen.keys == ["default", "HA", "LA", "LO", "zz-user"]


@pytest.mark.parametrize(
    ("run", "cot", "runs", "message"),
    [
        # two CoT settings and none chosen
        (
            "old",
            None,
            None,
            "run 'old' has several cot settings [False, True]: choose one with --cot/--no-cot",
        ),
        ("nope", None, None, "no run 'nope' with judgments on collection 'c'"),
        ("new", True, None, "run 'new' has no judgments with cot=True (it has [False])"),
        (
            "new",
            None,
            ["imp-*"],
            "give either --run (its personalities) or --runs (one column per run), not both",
        ),
        (None, None, ["x*"], "no run on collection 'c' matches x* (runs: imp-1, imp-2, new, old)"),
    ],
)
def test_feature_choice_errors(run, cot, runs, message):
    with pytest.raises(UsageError) as exc:
        choose_feature_set.fn(LLM_STREAMS, "c", run, cot, None, runs)
    assert str(exc.value) == message


def test_runs_glob_matches_name_or_collection_prefixed_name():
    assert choose_feature_set.fn(LLM_STREAMS, "c", None, None, None, ["imp-*"]).keys == ["imp-1", "imp-2"]
    chosen = choose_feature_set.fn(LLM_STREAMS, "c", None, None, None, ["c:*"])
    # a run with several streams gets one column per stream, named by its settings
    assert chosen.keys == [
        "imp-1",
        "imp-2",
        "new/HA/nocot/verbalized",
        "new/LA/nocot/verbalized",
        "new/LO/nocot/verbalized",
        "new/default/nocot/verbalized",
        "new/zz-user/nocot/verbalized",
        "old/default/nocot/verbalized",
        "old/default/cot/verbalized",
    ]
    assert chosen.streams["has_confidence"].to_list()[:2] == [False, True]


def long_values(rows: list[tuple]) -> pl.DataFrame:
    return pl.DataFrame(
        rows,
        orient="row",
        schema=["query_id", "doc_id", "relevance", "feature_key", "label", "confidence", "is_failure"],
    )


def test_build_feature_matrix_excludes_and_counts_parse_failures():
    feature_set = choose_feature_set.fn(LLM_STREAMS, "c", None, None, None, ["imp-*"])
    values = long_values(
        [
            ("q1", "d1", 2, "imp-1", 2, None, False),
            ("q1", "d1", 2, "imp-2", 1, 80.0, False),
            ("q1", "d2", 0, "imp-1", None, None, True),
            ("q1", "d2", 0, "imp-2", 0, 90.0, False),
            ("q2", "d3", 3, "imp-1", 3, None, False),
            ("q2", "d3", 3, "imp-2", 3, 70.0, False),
        ]
    )
    matrix = build_feature_matrix.fn(values, feature_set)
    assert matrix.n_excluded == 1
    assert matrix.columns == ["label:imp-1", "label:imp-2", "conf:imp-2"]
    assert matrix.features().tolist() == [[2, 1, 80], [3, 3, 70]]
    assert matrix.relevance.tolist() == [2, 3]


def test_build_feature_matrix_stops_when_a_stream_lacks_pairs():
    feature_set = choose_feature_set.fn(LLM_STREAMS, "c", None, None, None, ["imp-*"])
    values = long_values(
        [
            ("q1", "d1", 2, "imp-1", 2, None, False),
            ("q1", "d1", 2, "imp-2", 1, 80.0, False),
            ("q1", "d2", 0, "imp-1", 0, None, False),
        ]
    )
    with pytest.raises(CheckFailed) as exc:
        build_feature_matrix.fn(values, feature_set)
    assert str(exc.value) == "feature columns incomplete, no judgment for some pairs: imp-2 (1 of 2 pairs)"


def test_cli_lists_every_learner():
    from cli.commands.classify import LEARNER_NAMES

    assert tuple(LEARNERS) == LEARNER_NAMES


def test_every_learner_and_vote_has_its_table_title():
    # The titles live in tasks/shared/method_titles.py so the report names learners without importing them.
    assert {name: learner.title for name, learner in LEARNERS.items()} == {
        "rf": "Random Forest",
        "xgboost": "XGBoost",
        "lightgbm": "LightGBM",
        "ordinal_logit": "Ordinal LR",
        "rf_no_conf": "RF w/o conf.",
    }
    assert list(TITLES) == [*LEARNERS, "vote_majority", "vote_confidence", "vote_sqrt_confidence", "vote_entropy"]


def test_choose_learners():
    with_conf = FeatureMatrix(["a"], np.array([True]), np.zeros((1, 1)), np.zeros((1, 1)), np.zeros(1), 0)
    labels_only = FeatureMatrix(["a"], np.array([False]), np.zeros((1, 1)), np.zeros((1, 1)), np.zeros(1), 0)
    assert choose_learners.fn(None, with_conf) == list(LEARNERS)
    assert choose_learners.fn(None, labels_only) == ["rf", "xgboost", "lightgbm", "ordinal_logit"]
    with pytest.raises(UsageError, match="unknown learner 'svm': choose from rf, xgboost"):
        choose_learners.fn(["rf", "svm"], with_conf)


def test_forests_on_a_tiny_training_part_fit_quietly_and_deterministically():
    # The sample's 10% split: 4 training pairs, one per level; the 81% bootstrap is then 3 rows.
    import warnings

    from tasks.classify.learners import fit_predict

    x = np.arange(40 * 22, dtype=float).reshape(40, 22) % 7
    y = np.repeat(np.arange(4), 10)
    train, test = np.array([0, 10, 20, 30]), np.setdiff1d(np.arange(40), [0, 10, 20, 30])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        first = fit_predict("rf", 7, train, test, x, y)
    assert first.shape == (36,) and first.dtype == np.int64
    assert set(first.tolist()) <= {0, 1, 2, 3}
    assert np.array_equal(first, fit_predict("rf", 7, train, test, x, y))
