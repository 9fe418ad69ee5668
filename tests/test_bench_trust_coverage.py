"""bench/bench_trust_coverage.py's arithmetic (the benchmark itself runs on demand) and docs/evaluate.md's tables
generated from its committed result."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest
from scipy import stats

from bench import bench_trust_coverage as bench
from tasks.evaluate.intervals_input import prepare_pool, prepare_systems
from tasks.evaluate.ranking import score_systems

pytestmark = pytest.mark.core

HUMAN = pl.DataFrame(
    {
        "query_id": ["a"] * 4 + ["b"] * 4,
        "doc_id": ["d1", "d2", "d3", "d4", "e1", "e2", "e3", "e4"],
        "relevance": [3, 1, 0, 2, 1, 0, 0, 2],
    }
)
RUNS = HUMAN.select("query_id", "doc_id").with_columns(system=pl.lit("s"), score=pl.Series([1.0, 3, 2, 4] * 2))


def test_kendall_rows_is_scipys_tau_b_on_each_row_ties_included() -> None:
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 4, size=(5, 9)).astype(float), rng.integers(0, 4, size=(5, 9)).astype(float)
    expected = [stats.kendalltau(a, b).statistic for a, b in zip(x, y, strict=True)]
    assert bench.kendall_rows(x, y) == pytest.approx(expected, abs=1e-12)


def test_simulated_labels_follow_the_confusion_row_of_each_human_grade() -> None:
    rng = np.random.default_rng(1)
    assert bench.simulate(HUMAN, np.eye(4), rng).equals(HUMAN)  # a judge that always agrees
    everything_one = np.tile([0.0, 1.0, 0.0, 0.0], (4, 1))
    assert bench.simulate(HUMAN, everything_one, rng)["relevance"].to_list() == [1] * 8


def test_topic_scores_are_ir_measures_ndcg_per_topic() -> None:
    pool = prepare_pool(HUMAN, HUMAN, "nDCG@10")
    scores = bench.topic_scores(pool, prepare_systems(RUNS, pool), pool.llm)
    expected = score_systems(RUNS, HUMAN, ["nDCG@10"]).filter(pl.col("query_id") != "all").sort("query_id")
    assert scores[0] == pytest.approx(expected["value"].to_list(), abs=1e-12)


def test_render_replaces_only_this_benchmarks_blocks() -> None:
    doc = (
        "<!-- bench-generated: trust-tau -->\n| old |\n<!-- end bench-generated -->\n"
        "<!-- generated: other -->\n| theirs |\n<!-- end generated -->\n"
    )
    assert bench.render_doc(doc, {"trust-tau": "| new |"}) == doc.replace("| old |", "| new |")


def test_the_docs_coverage_tables_are_the_committed_results() -> None:
    path = bench.latest_result()
    tables = bench.doc_tables(json.loads(path.read_text(encoding="utf-8")), str(path.relative_to(bench.ROOT)))
    doc = bench.DOC.read_text(encoding="utf-8")
    assert sorted(tables) == sorted(m["name"] for m in bench.DOC_BLOCK.finditer(doc))
    assert bench.render_doc(doc, tables) == doc, "stale: run bench/bench_trust_coverage.py --doc RESULT.json"
