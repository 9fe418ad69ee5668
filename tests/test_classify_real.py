"""Experiment 2 on real judgments: the 33 LLMJudge challenge submissions as label-only features."""

from __future__ import annotations

import pytest

from flows.classify import classify
from tests.metrics_fixtures import import_llmjudge

pytestmark = pytest.mark.integration


def test_llmjudge_submissions_as_features(settings, shared_data, ingested):
    import_llmjudge(settings.warehouse.parent, ingested)  # LLMJudge ingested, its 33 submissions imported
    files = sorted((shared_data / "llmjudge" / "judge-runs").glob("*.txt"))

    table = classify(collection="llmjudge", runs=["llmjudge:*"], trials=2, learners=["rf"], settings=settings)

    assert len(files) == 33
    assert table.feature_keys == [path.stem for path in files]
    # 4,423 test pairs; 3 carry an out-of-range label in one submission (RMITIR-llama70B twice,
    # h2oloo-zeroshot2 once), which counts as a parse failure and drops the pair.
    assert (table.n_pairs, table.n_excluded, table.n_features) == (4420, 3, 33)
    assert [row.title for row in table.rows] == ["Random Forest", "Oracle (best single)", "Majority vote"]
    oracle = table.rows[1]
    assert oracle.source == EXPECTED_ORACLE_SOURCE
    majority = table.rows[2]
    assert majority.mean == pytest.approx(EXPECTED_MAJORITY_MEAN, abs=1e-12)


# Best single submission per metric on the two test parts of seed 42, and the majority vote's means.
EXPECTED_ORACLE_SOURCE = {"kappa": "willia-umbrela1", "qwk": "Olz-gpt4o", "f1": "willia-umbrela1"}
EXPECTED_MAJORITY_MEAN = {"kappa": 0.2686161742031439, "qwk": 0.47037397049498914, "f1": 0.4071843134839054}
