"""`peras evaluate --qrels hybrid:PLAN`: the systems scored under the qrels `export-qrels --hybrid` writes, on the
shipped sample with an imported judge run and a ranking-impact plan."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest

from peras.errors import UsageError
from tasks.assess.hybrid import HybridQrels
from tests.helpers import snapshot
from tests.test_assess_plan import cli, planned  # noqa: F401  (the fixture)

RUN_FILE = Path(__file__).resolve().parents[1] / "peras" / "data" / "sample" / "two-systems.run"


def ndcg(gains: list[int], ideal: list[int]) -> float:
    """trec_eval's nDCG@10 (linear gains) of one topic."""
    dcg = sum(g / math.log2(i + 2) for i, g in enumerate(gains[:10]))
    return dcg / sum(g / math.log2(i + 2) for i, g in enumerate(sorted(ideal, reverse=True)[:10]))


@pytest.fixture
def assessed(planned, capsys, tmp_path):  # noqa: F811
    """A ranking-impact plan of the pairs the two systems rank first (s1 e1, s2 a1, s1 e2), its assessor saying
    0 where the human qrels (and the judge run) say 3 for s1's two."""
    result = cli(capsys, planned, "assess", "plan", "sample", "--run", "elsewhere", "--budget", "3",
                 "--strategy", "ranking-impact", "--run-file", str(RUN_FILE), "--name", "impact")  # fmt: skip
    assert result.exit_code == 0, result.err
    labels = tmp_path / "ana.qrels"
    labels.write_text("s1 0 e1 0\ns1 0 e2 0\ns2 0 a1 3\n")
    result = cli(capsys, planned, "assess", "import", str(labels), "--plan", "impact", "--assessor", "ana")
    assert result.exit_code == 0, result.err
    return planned


@pytest.mark.integration
def test_evaluate_scores_the_systems_under_the_hybrid_qrels_export_writes(assessed, capsys, tmp_path):
    result = cli(capsys, assessed, "evaluate", str(RUN_FILE), "--collection", "sample", "--qrels", "hybrid:impact",
                 "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.err
    summary = json.loads(result.out)
    scores = {(s["qrels_name"], s["system"]): s["value"] for s in summary["scores"]}
    s1 = [3, 3, 2, 2, 1, 1, 0, 0]  # the sample's grades on s1 and on s2
    s2_lexical = ndcg([3, 0, 3], s1)  # a1 3, x3 unjudged, a2 3 (people kept a1 at 3)
    assert scores == pytest.approx({
        ("human", "lexical"): (ndcg([3, 0, 0], s1) + s2_lexical) / 2,  # s1: e1 3, x1 unjudged, e7 0
        ("human", "neural"): (ndcg([0, 3], s1) + ndcg([0, 0, 1], s1)) / 2,  # s1: e2 3 2nd; s2: a5 1 3rd
        ("hybrid:impact", "lexical"): (0.0 + s2_lexical) / 2,  # e1 is 0 to people: s1 finds nothing
        ("hybrid:impact", "neural"): (0.0 + ndcg([0, 0, 1], s1)) / 2,  # e2 is 0 to people
    })  # fmt: skip
    assert summary["qrels_source"] == "hybrid"
    [agreement] = summary["agreement"]  # lexical first under both
    assert (agreement["qrels_name"], agreement["n_systems"], agreement["kendall_tau"]) == ("hybrid:impact", 2, 1.0)
    # The same qrels as `export-qrels --hybrid` writes: one function makes both.
    out = tmp_path / "hybrid.qrels"
    assert cli(capsys, assessed, "export-qrels", "--hybrid", "impact", "--output", str(out)).exit_code == 0
    written = pl.read_csv(out, separator=" ", has_header=False, new_columns=["query_id", "x", "doc_id", "relevance"],
                          schema_overrides={"column_1": pl.String})  # fmt: skip
    assert written.filter(pl.col("doc_id").is_in(["e1", "e2", "a1"])).select("doc_id", "relevance").rows() == [
        ("e1", 0), ("e2", 0), ("a1", 3)
    ]  # fmt: skip


@pytest.mark.integration
@pytest.mark.parametrize(
    ("qrels", "extra", "message"),
    [
        ("hybrid:nothing", [], "no assessment plan named 'nothing': make one with `peras assess plan`"),
        ("hybrid:", [], "--qrels hybrid:: give hybrid:PLAN alone (the plan names its judge run), no --run"),
        ("hybrid:impact", ["--run", "elsewhere"],
         "--qrels hybrid:impact: give hybrid:PLAN alone (the plan names its judge run), no --run"),
    ],
)  # fmt: skip
def test_a_bad_hybrid_plan_is_one_line_and_stores_nothing(assessed, capsys, qrels, extra, message):
    before = snapshot(assessed.warehouse)
    result = cli(capsys, assessed, "evaluate", str(RUN_FILE), "--collection", "sample", "--qrels", qrels, *extra)
    assert (result.exit_code, result.err) == (2, f"error: {message}\n")
    assert snapshot(assessed.warehouse) == before


@pytest.mark.core
def test_a_plan_scores_only_the_systems_of_its_collection():
    hybrid = HybridQrels("impact", "sample", None, pl.DataFrame())
    assert hybrid.check_collection("sample") is hybrid
    with pytest.raises(UsageError, match=r"^plan 'impact' is for collection 'sample', not 'dl19': give the plan of"):
        hybrid.check_collection("dl19")


@pytest.mark.integration
@pytest.mark.parametrize(
    ("text", "message"),
    [
        # a good line first: nothing of the file is stored, not even it
        ("s1 0 e1 2\ns1 0 e2 7\n", "{path}:2: label '7' is not one of 0, 1, 2, 3: fix the file and import it again"),
        ("s1 0 e1 2\ns1 0 e2 -1\n", "{path}:2: label '-1' is not one of 0, 1, 2, 3: fix the file and import it again"),
        ("s1 0 e1 2\nq9 0 zz 1\n",
         "{path}:2: pair (q9, zz) is not in plan 'impact' (1 such lines): label only its pairs"),
    ],
)  # fmt: skip
def test_an_import_with_a_wrong_line_stores_nothing_and_keeps_the_labels_given(assessed, capsys, tmp_path, text,
                                                                               message):  # fmt: skip
    path = tmp_path / "wrong.qrels"
    path.write_text(text)
    before = snapshot(assessed.warehouse)
    result = cli(capsys, assessed, "assess", "import", str(path), "--plan", "impact", "--assessor", "ana")
    assert (result.exit_code, result.err) == (2, f"error: {message.format(path=path)}\n")
    assert snapshot(assessed.warehouse) == before
