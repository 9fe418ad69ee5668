"""The classify flow on a synthetic warehouse: what it publishes, that it repeats itself, its gate."""

from __future__ import annotations

import duckdb
import numpy as np
import pytest

from flows.classify import classify
from peras.errors import CheckFailed
from peras.warehouse import open_migrated
from tasks.classify.tasks import trial_seeds
from tests.classify_fixtures import build_synthetic_warehouse
from tests.helpers import run_cli, snapshot

TRIAL_COLUMNS = "trial, seed, learner, learner_kind, kappa, qwk, f1, n_train, n_test, feature_set_id"
PERSONALITY_TITLES = [
    "Random Forest",
    "XGBoost",
    "LightGBM",
    "Ordinal LR",
    "RF w/o conf.",
    "Oracle (best single)",
    "Majority vote",
    "Conf.-weighted vote",
    "Sqrt-conf.-weighted vote",
    "Entropy-weighted vote",
]


@pytest.fixture
def synth(settings):
    """Settings whose warehouse holds the synthetic collection `synth`."""
    build_synthetic_warehouse(settings.warehouse)
    return settings


def query(settings, sql: str, params: list | None = None) -> list[tuple]:
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


@pytest.mark.integration
def test_personalities_flow_publishes_trials_summary_and_artifact(synth):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    state = classify(collection="synth", trials=3, train_fraction=0.5, settings=synth, return_state=True)
    table = state.result()
    assert (table.n_pairs, table.n_excluded, table.n_features, table.n_trials) == (235, 5, 22, 3)
    assert table.feature_mode == "personalities"
    assert [row.title for row in table.rows] == PERSONALITY_TITLES

    trials = query(synth, f"select {TRIAL_COLUMNS} from clf_trials order by trial, learner")  # noqa: S608
    assert len(trials) == 3 * (5 + 4 + 11)
    assert sorted({(t[0], t[1]) for t in trials}) == list(enumerate(trial_seeds(42, 3), start=1))
    assert {(t[7], t[8]) for t in trials} == {(117, 118)}
    # Votes use no training data: their test-part scores are fixed by the seeds alone.
    majority = [value for t in trials if t[2] == "vote_majority" for value in t[4:7]]
    assert majority == pytest.approx([v for trial in EXPECTED_MAJORITY for v in trial], abs=1e-12)

    summary = query(synth, "select learner, kappa_mean, kappa_sd, n_trials from clf_summary where learner = 'rf'")
    rf = [t[4] for t in trials if t[2] == "rf"]
    assert summary == [("rf", pytest.approx(np.mean(rf)), pytest.approx(np.std(rf, ddof=1)), 3)]
    assert query(synth, "select n_pairs, n_excluded, n_trials, base_seed, feature_mode from clf_runs") == [
        (235, 5, 3, 42, "personalities")
    ]

    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[state.state_details.flow_run_id]))
        )
    assert [a.key for a in artifacts] == ["classify-table"]
    assert "| Entropy-weighted vote |" in artifacts[0].data


# The majority vote's (kappa, QWK, macro-F1) on the three test parts of seed 42 (ties to the label with the single
# most confident voter, as the study; checked against a plain-Python vote over the same matrix).
EXPECTED_MAJORITY = [
    (0.8419045655982687, 0.9482001755926251, 0.8690507560072778),
    (0.8791602662570405, 0.9603254656714411, 0.8937972575748113),
    (0.8423432682425488, 0.9473684210526316, 0.8677522903535696),
]


@pytest.mark.integration
def test_same_seed_same_rows(synth):
    for _ in range(2):
        classify(collection="synth", trials=2, train_fraction=0.3, settings=synth)
    rows = query(synth, f"select classify_run_id, {TRIAL_COLUMNS} from clf_trials order by all")  # noqa: S608
    runs = sorted({r[0] for r in rows})
    first = [r[1:] for r in rows if r[0] == runs[0]]
    second = [r[1:] for r in rows if r[0] == runs[1]]
    assert len(first) == 2 * 20
    assert first == second


@pytest.mark.integration
def test_imported_label_only_runs(synth):
    table = classify(collection="synth", runs=["synth:imp-*"], trials=2, train_fraction=0.5, settings=synth)
    assert table.feature_keys == ["imp-a", "imp-b", "imp-c"]
    assert (table.n_pairs, table.n_excluded, table.n_features) == (240, 0, 3)
    assert [row.title for row in table.rows] == [
        "Random Forest",
        "XGBoost",
        "LightGBM",
        "Ordinal LR",
        "Oracle (best single)",
        "Majority vote",
    ]


@pytest.mark.integration
def test_gate_missing_judgments_publishes_nothing(synth):
    with open_migrated(synth.warehouse) as con:
        con.execute("delete from judgments where personality = 'LO' and doc_id in ('d0000', 'd0001')")
    before = snapshot(synth.warehouse)
    with pytest.raises(CheckFailed) as exc:
        classify(collection="synth", trials=2, settings=synth)
    assert str(exc.value) == "feature columns incomplete, no judgment for some pairs: LO (2 of 240 pairs)"
    assert snapshot(synth.warehouse) == before


@pytest.mark.integration
def test_gate_training_part_without_a_level_publishes_nothing(synth):
    before = snapshot(synth.warehouse)
    with pytest.raises(CheckFailed) as exc:
        # 2% of 235 pairs is 4 training pairs: level 3 (24 pairs) gets none
        classify(collection="synth", trials=2, train_fraction=0.02, settings=synth)
    assert str(exc.value) == EXPECTED_LEVEL_GATE
    assert snapshot(synth.warehouse) == before


EXPECTED_LEVEL_GATE = (
    "training parts without every relevance level: trial 1 (seed 3444837047) lacks level 3; "
    "trial 2 (seed 2669555309) lacks level 3"
)


@pytest.mark.integration
def test_cli_prints_table(synth, capsys):
    result = run_cli(
        capsys,
        "classify",
        "--warehouse",
        str(synth.warehouse),
        "--collection",
        "synth",
        "--trials",
        "2",
        "--train-fraction",
        "0.5",
        "--learners",
        "rf,ordinal_logit",
    )
    assert result.exit_code == 0, result.err
    lines = result.out.splitlines()
    assert "synth: 2 trials, 235 pairs (5 excluded), 22 features (personalities)" in lines[0]
    for title in ("Random Forest", "Ordinal LR", "Oracle (best single)", "Entropy-weighted vote"):
        assert any(line.lstrip("│ ").startswith(title) for line in lines), title
    assert "XGBoost" not in result.out
    assert result.out.count(") *") == 3  # one best per column


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "err"),
    [
        (
            ["--learners", "svm"],
            "error: unknown learner 'svm': choose from rf, xgboost, lightgbm, ordinal_logit, rf_no_conf\n",
        ),
        (["--run", "nope"], "error: no run 'nope' with judgments on collection 'synth'\n"),
        (["--trials", "0"], None),
    ],
)
def test_cli_usage_errors(synth, capsys, args, err):
    result = run_cli(capsys, "classify", "--warehouse", str(synth.warehouse), "--collection", "synth", *args)
    assert result.exit_code == 2
    if err is not None:
        assert result.err == err


@pytest.mark.core
def test_cli_help_has_an_example(capsys):
    result = run_cli(capsys, "classify", "--help")
    assert result.exit_code == 0
    assert "peras classify --collection llmjudge --runs 'llmjudge:*' --trials 10" in result.out
