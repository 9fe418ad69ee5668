"""bench/bench_assess_budget.py's arithmetic (the benchmark itself runs on demand) and docs/assess.md's tables
generated from its committed result."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from bench import bench_assess_budget as bench
from bench.bench_assess_data import Setting, entropy_bits, plan_pool
from tasks.assess.plan import STRATEGIES, next_pairs

pytestmark = pytest.mark.core

QRELS = pl.DataFrame({"query_id": ["a", "a", "b"], "doc_id": ["d1", "d2", "e1"], "relevance": [3, 0, 1]})
# Three judges of the three pairs: they agree on d1, split 2-1 on d2, all differ on e1.
PANEL = np.array([[3, 0, 0], [3, 0, 1], [3, 1, 2]])


def test_the_pool_gives_the_chosen_judge_s_labels_its_agreement_with_the_others_and_the_panel_s_entropy():
    setting = Setting("t", QRELS, pl.DataFrame(), np.array([0.0, 1.5, 0.5]), ["x", "y", "z"], lambda seed: PANEL)
    pool = plan_pool(setting, PANEL, chosen=1)
    assert pool["llm_label"].to_list() == [3, 0, 1]
    assert pool["mean_confidence"].to_list() == [100.0, 50.0, 0.0]  # the other two: both, one, neither agree
    third = -(np.log2(1 / 3))
    assert pool["label_entropy"].to_list() == pytest.approx([0.0, 0.918296, third], abs=1e-6)
    assert entropy_bits(PANEL).tolist() == pytest.approx(pool["label_entropy"].to_list())
    assert pool["rank_spread"].to_list() == [0.0, 1.5, 0.5]


def test_a_measured_strategy_picks_what_the_plan_picks_and_a_masked_signal_is_gone():
    pool = plan_pool(Setting("t", QRELS, pl.DataFrame(), np.array([0.0, 1.5, 0.5]), [], lambda s: PANEL), PANEL, 0)
    empty = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String})
    picked = next_pairs(pool, empty, "ranking-impact", 3, 2)
    assert (
        bench.positions(pool, "ranking-impact", 3, 2).tolist()
        == [1, 2]
        == [["d1", "d2", "e1"].index(d) for d in picked["doc_id"]]
    )
    assert bench.masked(pool, ("rank_spread",))["rank_spread"].to_list() == [0.0, 0.0, 0.0]
    assert bench.positions(pool, "rank fusion", 3, 3).size == 3
    assert "rank-fusion" not in STRATEGIES  # measured only: the command's strategies stay as they are


def test_the_docs_tables_are_the_committed_results():
    path = bench.latest_result()
    tables = bench.doc_tables(json.loads(path.read_text(encoding="utf-8")), str(path.relative_to(bench.ROOT)))
    doc = bench.DOC.read_text(encoding="utf-8")
    assert sorted(tables) == ["assess-budget-dl21", "assess-budget-llmjudge"]
    assert bench.render_doc(doc, tables) == doc, "stale: run bench/bench_assess_budget.py --doc RESULT.json"
