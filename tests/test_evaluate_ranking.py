"""Issue 21: the rank correlations between two rankings of systems (Kendall's tau vs scipy, tau-AP by hand)."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from scipy import stats

from peras.errors import UsageError
from tasks.evaluate.ranking import agreement, compare_rankings, score_systems, tau_ap

pytestmark = pytest.mark.core


@pytest.mark.parametrize(
    ("estimate", "expected"),
    [
        # reference A > B > C > D as scores 4, 3, 2, 1; estimate as scores for A, B, C, D
        ([4, 3, 2, 1], 1.0),  # the same order
        ([1, 2, 3, 4], -1.0),  # reversed
        # B A C D: i=2 (A) has B above, not above A in the reference: 0/1; C: 2/2; D: 3/3 -> 2/3 * 2 - 1
        ([3, 4, 2, 1], 1 / 3),
        # A B D C: B: 1/1; D: 2/2; C: A, B of A, B, D above it in the reference: 2/3 -> 2/3 * (8/3) - 1
        ([4, 3, 1, 2], 7 / 9),
        # C A B D: A: 0/1; B: A above it (1 of C, A): 1/2; D: 3/3 -> 2/3 * 1.5 - 1
        ([3, 2, 4, 1], 0.0),
    ],
)
def test_tau_ap_matches_hand_computed_cases(estimate, expected):
    assert tau_ap([4, 3, 2, 1], estimate) == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(
    ("reference", "estimate", "expected"),
    [
        # the same tie in both: full agreement, as Kendall's tau-b says
        ([3, 2, 2, 1], [3, 2, 2, 1], 1.0),
        # B, C tied in the reference only, estimate A B C D: B: 1/1; C: A 1, B half: 1.5/2; D: 3/3 -> 2/3 * 2.75 - 1
        ([3, 2, 2, 1], [4, 3, 2, 1], 5 / 6),
        # B, C tied in the estimate only (taken as given, B first): B: 1/1; C: A 1, B half: 1.5/2; D: 3/3
        ([4, 3, 2, 1], [3, 2, 2, 1], 5 / 6),
    ],
)
def test_tau_ap_ties(reference, estimate, expected):
    assert tau_ap(reference, estimate) == pytest.approx(expected, abs=1e-12)


def test_tau_ap_weighs_top_swaps_more_than_kendall_does():
    # One swap at the top and one at the bottom: Kendall's tau is 2/3 for both, tau-AP is not.
    kendall_top = stats.kendalltau([4, 3, 2, 1], [3, 4, 2, 1]).statistic
    kendall_bottom = stats.kendalltau([4, 3, 2, 1], [4, 3, 1, 2]).statistic
    assert kendall_top == pytest.approx(kendall_bottom) == pytest.approx(2 / 3)
    assert tau_ap([4, 3, 2, 1], [3, 4, 2, 1]) < tau_ap([4, 3, 2, 1], [4, 3, 1, 2])


def test_tau_ap_on_ircor_example_equals_urbano_pairwise_form():
    # Urbano & Marrero's (ircor) example; their pairwise form: sum over concordant pairs of 1 / (lower rank in y - 1).
    x = [0.67, 0.45, 0.29, 0.12, 0.57, 0.24, 0.94, 0.75, 0.08, 0.54]
    y = [0.48, 0.68, 0.32, 0.09, 0.06, 0.61, 0.87, 0.22, 0.44, 0.84]
    assert tau_ap(x, y) == pytest.approx(11 / 28, abs=1e-12)


def test_kendall_and_spearman_equal_scipy():
    rng = np.random.default_rng(7)
    for _ in range(20):
        reference, estimate = rng.normal(size=12), rng.normal(size=12)
        tau, rho, _ = agreement(list(reference), list(estimate))
        assert tau == stats.kendalltau(reference, estimate).statistic
        assert rho == stats.spearmanr(reference, estimate).statistic


def test_constant_rankings_have_no_correlation():
    assert agreement([0.5, 0.5, 0.5], [0.1, 0.2, 0.3]) == (None, None, None)
    assert agreement([0.5], [0.1]) == (None, None, None)


def test_compare_rankings_overall_and_per_topic():
    rows = [
        # qrels_name, system, measure, query_id, value
        ("human", "s1", "nDCG@10", "all", 0.9), ("human", "s2", "nDCG@10", "all", 0.5),
        ("human", "s3", "nDCG@10", "all", 0.1),
        ("HA", "s1", "nDCG@10", "all", 0.2), ("HA", "s2", "nDCG@10", "all", 0.6), ("HA", "s3", "nDCG@10", "all", 0.7),
        ("human", "s1", "nDCG@10", "q1", 0.3), ("human", "s2", "nDCG@10", "q1", 0.2),
        ("HA", "s1", "nDCG@10", "q1", 0.9), ("HA", "s2", "nDCG@10", "q1", 0.1),
    ]  # fmt: skip
    scores = pl.DataFrame(rows, schema=["qrels_name", "system", "measure", "query_id", "value"], orient="row")
    result = compare_rankings(scores).to_dicts()
    assert result[1].pop("spearman_rho") == pytest.approx(1.0)  # scipy gives 0.9999999999999999 for two systems
    assert result == [
        {"qrels_name": "HA", "measure": "nDCG@10", "query_id": "all", "n_systems": 3, "kendall_tau": -1.0,
         "spearman_rho": -1.0, "tau_ap": -1.0},
        {"qrels_name": "HA", "measure": "nDCG@10", "query_id": "q1", "n_systems": 2, "kendall_tau": 1.0,
         "tau_ap": 1.0},
    ]  # fmt: skip


# --- peras evaluate's conventions against trec_eval itself (pytrec_eval, trec_eval's own code) ---

# Three topics, graded 0-3: t1 and t2 have relevant and non-relevant passages, t3 one relevant passage.
QRELS = {
    "t1": {"d01": 3, "d02": 0, "d03": 2, "d04": 1, "d05": 0},
    "t2": {"d11": 1, "d12": 2, "d13": 0},
    "t3": {"d21": 3},
}
# System 'partial' answers t1 and t2 only (twelve passages each, distinct scores, some unjudged).
PARTIAL = {
    "t1": {f"d{i:02d}": 20.0 - i for i in range(1, 13)},
    "t2": {f"d{i:02d}": float(i % 7) + i / 100 for i in range(10, 22)},
}
# System 'tied' scores every passage of t1 alike: the judged d01-d05 and the unjudged x01-x10. trec_eval takes tied
# passages by doc id descending, so its top 10 is x10..x01: nDCG@10 0, nothing judged (doc ids ascending would put
# d01..d05 on top). t2 and t3 answered with a tie across the cutoff too.
TIED = {
    "t1": {doc: 1.0 for doc in [*QRELS["t1"], *(f"x{i:02d}" for i in range(1, 11))]},
    "t2": {doc: 0.5 for doc in ["d11", "d12", "d13", *(f"y{i:02d}" for i in range(1, 9))]} | {"d99": 0.9},
    "t3": {doc: 2.0 for doc in ["d21", *(f"z{i:02d}" for i in range(1, 11))]},
}
TREC = {"nDCG@10": "ndcg_cut_10", "AP": "map", "P@10": "P_10"}


def frames(systems: dict[str, dict[str, dict[str, float]]]) -> tuple[pl.DataFrame, pl.DataFrame]:
    runs = [
        (system, q, d, 0, score)
        for system, run in systems.items()
        for q, docs in run.items()
        for d, score in docs.items()
    ]
    qrels = [(q, d, r) for q, docs in QRELS.items() for d, r in docs.items()]
    return (
        pl.DataFrame(runs, schema=["system", "query_id", "doc_id", "rank", "score"], orient="row"),
        pl.DataFrame(qrels, schema=["query_id", "doc_id", "relevance"], orient="row"),
    )


def trec_eval(run: dict[str, dict[str, float]], complete: bool) -> dict[str, dict[str, float]]:
    """pytrec_eval's per-topic values and means: over the run's topics (trec_eval) or every qrels topic (-c)."""
    import pytrec_eval

    per_topic = pytrec_eval.RelevanceEvaluator(QRELS, set(TREC.values())).evaluate(run)
    # Judged@10: trec_eval's P@10 when every judged passage counts as relevant (runs of 10+ passages per topic)
    judged = {q: {d: 1 for d in docs} for q, docs in QRELS.items()}
    judged_per_topic = pytrec_eval.RelevanceEvaluator(judged, {"P_10"}).evaluate(run)
    topics = sorted(QRELS) if complete else sorted(per_topic)
    values = {
        ours: {q: per_topic[q][trec] if q in per_topic else 0.0 for q in topics} for ours, trec in TREC.items()
    } | {"Judged@10": {q: judged_per_topic[q]["P_10"] if q in judged_per_topic else 0.0 for q in topics}}
    return {measure: {**by_topic, "all": sum(by_topic.values()) / len(topics)} for measure, by_topic in values.items()}


@pytest.mark.parametrize("system", ["partial", "tied"])
@pytest.mark.parametrize("missing_topics", ["skip", "zero"])
def test_scores_equal_trec_eval(system, missing_topics):
    # 'skip' is plain trec_eval (the mean over the topics the run answers), 'zero' is trec_eval -c; every measure
    # takes tied passages in trec_eval's order, Judged@10 included.
    systems = {"partial": PARTIAL, "tied": TIED}
    runs, qrels = frames({system: systems[system]})
    scores = score_systems(runs, qrels, [*TREC, "Judged@10"], missing_topics)
    ours: dict[str, dict[str, float]] = {}
    for _, measure, query_id, value in scores.iter_rows():
        ours.setdefault(measure, {})[query_id] = value
    expected = trec_eval(systems[system], complete=missing_topics == "zero")
    assert ours.keys() == expected.keys()
    for measure, by_topic in expected.items():
        assert ours[measure].keys() == by_topic.keys(), measure
        for query_id, value in by_topic.items():
            assert ours[measure][query_id] == pytest.approx(value, abs=1e-12), (measure, query_id)


def test_the_conventions_change_the_numbers_they_should():
    # The two cases differ where they must: a missing topic lowers only the -c mean; the tie makes t1 unjudged.
    runs, qrels = frames({"partial": PARTIAL, "tied": TIED})
    skip = score_systems(runs, qrels, ["nDCG@10", "Judged@10"]).filter(pl.col("query_id").is_in(["all", "t1"]))
    zero = score_systems(runs, qrels, ["nDCG@10"], "zero").filter(pl.col("query_id") == "all")
    value = {(s, m, q): v for s, m, q, v in skip.iter_rows()}
    assert value["tied", "nDCG@10", "t1"] == 0.0 and value["tied", "Judged@10", "t1"] == 0.0
    partial_zero = zero.filter(pl.col("system") == "partial")["value"].item()
    assert partial_zero == pytest.approx(value["partial", "nDCG@10", "all"] * 2 / 3, abs=1e-12)


def test_unknown_missing_topics_convention_is_a_usage_error():
    runs, qrels = frames({"partial": PARTIAL})
    with pytest.raises(UsageError, match="missing topics 'none': use skip or zero"):
        score_systems(runs, qrels, ["nDCG@10"], "none")


def test_a_run_without_judgments_says_so_instead_of_listing_nothing_to_pick():
    """Issue 36 item 17: `holes`/`evaluate` on an empty judge run said 'pick one of:' with nothing listed."""
    import polars as pl

    from peras.errors import UsageError
    from tasks.evaluate.tasks import choose_group

    empty = pl.DataFrame(schema={"cot": pl.Boolean, "confidence_method": pl.String})
    with pytest.raises(UsageError) as refused:
        choose_group("empty", empty, None, None)
    assert str(refused.value) == "judge run 'empty' holds no judgments: there is nothing to evaluate"
