"""Issue 51 item 3: the assessors' agreement (assess_agreement) with the collection's qrels, the judge run's label and
each other, equal to scikit-learn's Cohen's kappa on inline labels (a migrated warehouse, no server)."""

from __future__ import annotations

from datetime import datetime

import pytest
from sklearn.metrics import cohen_kappa_score

from peras.warehouse import open_migrated

PAIRS = ["a", "b", "c", "d", "e", "f"]
QRELS = [3, 2, 0, 1, 0, 3]
LLM = [3, 3, 0, 0, 1, 2]
ANA = [3, 2, 1, 1, 0, 3]
BO = [2, 2, 1, 0, 0]  # bo labelled the first five


@pytest.mark.core
def test_agreement_equals_sklearn_s_kappa(tmp_path):
    at = datetime(2026, 1, 1)
    with open_migrated(tmp_path / "w.duckdb") as con:
        con.execute("insert into assess_plans values ('p1', 'people', 'c1', 'r1', 'random', 42, 6, ?)", [at])
        for doc, grade, llm in zip(PAIRS, QRELS, LLM, strict=True):
            con.execute("insert into qrels values ('c1', 'q1', ?, ?, 'test')", [doc, grade])
            con.execute("insert into assess_pairs values ('p1', 'q1', ?, 1, 0.0, ?, ?)", [doc, llm, at])
        for name, given in (("ana", ANA), ("bo", BO)):
            for doc, label in zip(PAIRS, given, strict=False):
                row = [doc, name, label, at]
                con.execute("insert into assess_labels values ('p1', 'q1', ?, ?, ?, null, 'page', ?)", row)
        found = con.execute("select * from assess_agreement order by assessor, reference").fetchall()
    kappa = lambda a, b: pytest.approx(cohen_kappa_score(a, b, labels=[0, 1, 2, 3]))  # noqa: E731
    share = lambda a, b: pytest.approx(sum(x == y for x, y in zip(a, b, strict=True)) / len(a))  # noqa: E731
    assert found == [
        ("people", "ana", "assessor bo", 5, share(ANA[:5], BO), kappa(ANA[:5], BO)),
        ("people", "ana", "llm", 6, share(ANA, LLM), kappa(ANA, LLM)),
        ("people", "ana", "qrels", 6, share(ANA, QRELS), kappa(ANA, QRELS)),
        ("people", "bo", "llm", 5, share(BO, LLM[:5]), kappa(BO, LLM[:5])),
        ("people", "bo", "qrels", 5, share(BO, QRELS[:5]), kappa(BO, QRELS[:5])),
    ]
