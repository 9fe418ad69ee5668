"""Topic subsets: the study's own LLMJudge topics are the only ones with its counts, DL19's one of three; ingest
checks and stores them."""

from __future__ import annotations

import importlib.util
import sys
from itertools import combinations
from pathlib import Path

import duckdb
import polars as pl
import pytest

from peras.errors import CheckFailed
from tasks.ingest.sources import _preset_problem, default_subset, presets
from tasks.ingest.subsets import published_topics, rank_balanced_topics
from tasks.shared.readers import read_qrels
from tests.helpers import run_cli

ROOT = Path(__file__).resolve().parents[1]
# Table 4 of the study, LLMJudge: 21 topics, 6,169 pairs, 3,834 / 1,277 / 588 / 470 at levels 0-3.
LLMJUDGE_LEVELS = [3834, 1277, 588, 470]
LLMJUDGE_LEFT_OUT = {"q20", "q21", "q42", "q48"}


def dev_level_counts(shared_data: Path) -> dict[str, list[int]]:
    """Pairs at levels 0-3 per topic of the LLMJudge dev qrels."""
    counts: dict[str, list[int]] = {}
    for qrel in read_qrels(shared_data / "llmjudge" / "llm4eval_dev_qrel_2024.txt").qrels:
        counts.setdefault(qrel.query_id, [0, 0, 0, 0])[qrel.relevance] += 1
    return counts


@pytest.mark.core
def test_llmjudge_dev_without_four_topics_is_the_only_subset_with_the_published_counts(shared_data):
    counts = dev_level_counts(shared_data)
    assert (len(counts), sum(map(sum, counts.values()))) == (25, 7263)  # every line a distinct pair
    kept = sorted(set(counts) - LLMJUDGE_LEFT_OUT)
    levels = [sum(counts[t][k] for t in kept) for k in range(4)]
    assert (len(kept), sum(levels), levels) == (21, 6169, LLMJUDGE_LEVELS)
    # Every one of the C(25, 4) = 12,650 ways to leave four topics out, by the levels of what is kept.
    total = [sum(c[k] for c in counts.values()) for k in range(4)]
    matches = [
        set(out)
        for out in combinations(sorted(counts), 4)
        if [total[k] - sum(counts[t][k] for t in out) for k in range(4)] == LLMJUDGE_LEVELS
    ]
    assert matches == [LLMJUDGE_LEFT_OUT]


@pytest.mark.core
def test_the_preset_ships_those_topics_and_counts():
    spec = presets()["llmjudge"]
    assert spec["published_levels"] == LLMJUDGE_LEVELS
    assert len(spec["published_topics"]) == 21
    assert set(spec["published_topics"]) == {f"q{n}" for n in (3, 5, 6, 7, 8, 10, 11, 12, 17, 18, 23, 24)} | {
        f"q{n}" for n in (26, 27, 28, 29, 39, 40, 41, 44, 47)
    }
    # LLMJudge's is the only subset with its counts; DL19's one of three, DL20's one of 76,675 (chosen by the rule),
    # DL21's one of 24,130 (the first the search found).
    assert [name for name, s in presets().items() if "published_topics" in s] == ["dl19", "dl20", "dl21", "llmjudge"]


# The three DL19 subsets of 22 topics with Table 4's 2,314 / 707 / 760 / 360 (scripts/search_published_subsets.py
# finds these and proves there is no fourth; docs/subsets.md lists them).
DL19_EXACT = [
    "104861 1103812 1106007 1110199 1112341 1113437 1115776 1117099 1121402 1133167 130510 131843 146187 359349 "
    "443396 451602 47923 490595 87181 87452 915593 962179",
    "104861 1112341 1117099 1121709 1124210 1129237 130510 131843 146187 148538 156493 19335 359349 443396 451602 "
    "47923 490595 527433 833860 87181 87452 915593",
    "1037798 1103812 1106007 1112341 1113437 1114646 1117099 1121402 1133167 131843 156493 207786 359349 405717 "
    "443396 451602 47923 490595 833860 87181 915593 962179",
]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("collection", "path"),
    [
        ("dl19", "dl19/2019qrels-pass.txt"),
        ("dl20", "dl20/2020qrels-pass.txt"),
        ("dl21", "dl21/2021.qrels.pass.final.txt"),
    ],
)
def test_shipped_published_subsets_give_table_4_exactly(shared_data, collection, path):
    # Topic count and pairs at every level, on the real qrels (ingest checks the levels again on every load).
    spec = presets()[collection]
    counts: dict[str, list[int]] = {}
    for qrel in read_qrels(shared_data / path).qrels:
        counts.setdefault(qrel.query_id, [0, 0, 0, 0])[qrel.relevance] += 1
    topics = spec["published_topics"]
    assert [len(topics), *(sum(counts[t][k] for t in topics) for k in range(4))] == spec["table4"]
    assert spec["published_levels"] == spec["table4"][1:]


@pytest.mark.integration
def test_dl19_published_is_table_4_and_the_choice_rule_picks_it(shared_data):
    counts: dict[str, list[int]] = {}
    qrels = read_qrels(shared_data / "dl19" / "2019qrels-pass.txt").qrels
    for qrel in qrels:
        counts.setdefault(qrel.query_id, [0, 0, 0, 0])[qrel.relevance] += 1
    spec = presets()["dl19"]
    assert spec["table4"] == [22, 2314, 707, 760, 360] and spec["published_levels"] == spec["table4"][1:]
    subsets = [topics.split() for topics in DL19_EXACT]
    for topics in subsets:
        assert (len(topics), [sum(counts[t][k] for t in topics) for k in range(4)]) == (22, [2314, 707, 760, 360])
    # The rule: fewest topics the study's stated rule excludes (<= 10 pairs or a level missing), then most topics
    # shared with `balanced`, then the first in sorted order.
    frame = pl.DataFrame([(q.query_id, q.relevance) for q in qrels], schema=["query_id", "relevance"], orient="row")
    balanced = set(rank_balanced_topics(frame, 22)["query_id"])
    outside = [sum(sum(counts[t]) <= 10 or min(counts[t]) == 0 for t in topics) for topics in subsets]
    shared = [len(balanced & set(topics)) for topics in subsets]
    assert (outside, shared) == ([3, 3, 4], [14, 13, 13])
    chosen = min(subsets, key=lambda topics: (outside[subsets.index(topics)], -shared[subsets.index(topics)], topics))
    assert spec["published_topics"] == chosen == subsets[0]


@pytest.mark.core
@pytest.mark.parametrize(
    ("collection", "subset"),
    [
        ("llmjudge", "published"),  # Experiment 1, the study's own topics
        ("dl19", "published"),  # Experiment 1, one of the three subsets with Table 4's counts
        ("dl20", "published"),  # Experiment 1, one of 76,675 subsets with Table 4's counts
        ("dl21", "published"),  # Experiment 2, one of 24,130 subsets with Table 4's counts
        ("sample", None),  # judged whole, as before
        ("mycollection", None),  # user files: judged whole
    ],
)
def test_default_subset_follows_the_study(collection, subset):
    assert default_subset(collection) == subset


@pytest.mark.core
def test_the_search_script_finds_exactly_the_shipped_llmjudge_topics():
    spec = importlib.util.spec_from_file_location(
        "search_published_subsets", ROOT / "scripts" / "search_published_subsets.py"
    )
    assert spec and spec.loader
    script = importlib.util.module_from_spec(spec)
    sys.modules["search_published_subsets"] = script  # dataclasses look their module up while the script loads
    spec.loader.exec_module(script)
    result = script.describe(script.search("llmjudge", max_solutions=0, with_count=True, eligible_only=False))
    assert (result["verdict"], result["milp_found"], result["count_all_exact"]) == ("one", 1, 1)
    assert result["exact"][0]["topics"] == sorted(presets()["llmjudge"]["published_topics"])
    # The study's stated rule (all four levels) would have left these three out: it was not applied as written.
    assert result["exact"][0]["outside_stated_rule"] == ["q29", "q3", "q41"]


QRELS = pl.DataFrame(
    [("a", "d1", 0), ("a", "d2", 3), ("b", "d3", 1), ("b", "d4", 2), ("c", "d5", 0)],
    schema=["query_id", "doc_id", "relevance"],
    orient="row",
)


@pytest.mark.core
def test_published_topics_keep_their_order_and_counts():
    got = published_topics(QRELS, ["b", "a"], [1, 1, 1, 1], "toy")
    assert got.rows() == [("b", 1, None, 2, 0, 1, 1, 0), ("a", 2, None, 2, 1, 0, 0, 1)]


@pytest.mark.core
@pytest.mark.parametrize(
    ("topics", "levels", "message"),
    [
        # a topic the qrels do not judge
        (["a", "z"], [1, 0, 0, 1], "toy: the published subset's topics z have no judged pairs"),
        # the counts differ from the study's
        (["a", "c"], [1, 0, 0, 1], "toy: the published subset's topics give [2, 0, 0, 1] pairs at levels 0-3, not"),
    ],
)
def test_published_topics_refuse_other_qrels(topics, levels, message):
    with pytest.raises(CheckFailed, match=r"nothing was published$") as caught:
        published_topics(QRELS, topics, levels, "toy")
    assert str(caught.value).startswith(message)


BASE = {"qrels": {"dev": "d.txt"}, "subset_qrels": "dev", "subset_topics": 2}


@pytest.mark.core
@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({}, None),  # no published subset, no default
        ({"published_topics": ["a"], "published_levels": [1, 0, 0, 0], "default_subset": "published"}, None),
        ({"default_subset": "balanced"}, None),
        # a repeated topic
        ({"published_topics": ["a", "a"], "published_levels": [2, 0, 0, 0]}, "published_topics must be a list"),
        # topics without the counts they must give
        ({"published_topics": ["a"]}, "published_topics and published_levels go together"),
        # three levels instead of four
        ({"published_topics": ["a"], "published_levels": [1, 0, 0]}, "published_levels must be four counts"),
        # a default subset that ingest never makes
        ({"default_subset": "dev"}, "default_subset must be one of balanced, published"),
        # published by default, but nothing to publish
        ({"default_subset": "published"}, "default_subset = 'published' needs published_topics"),
    ],
)
def test_preset_subset_settings_are_checked(extra, problem):
    got = _preset_problem(BASE | extra)
    assert got == problem if problem is None else (got or "").startswith(problem)


@pytest.mark.integration
def test_ingest_stores_the_published_subset_and_judge_defaults_to_it(capsys, tmp_path, shared_data):
    warehouse = str(tmp_path / "peras.duckdb")
    ingested = run_cli(capsys, "ingest", "llmjudge", "--warehouse", warehouse, "--data-dir", str(shared_data))
    assert ingested.out == (
        "llmjudge: 11,686 judged pairs, 50 queries, 11,621 passages; balanced subset 21 topics / 6,493 pairs; "
        "published subset 21 topics / 6,169 pairs\n"
    )
    listed = run_cli(capsys, "subsets", "llmjudge", "--warehouse", warehouse)
    assert listed.out == (
        "collection  subset     topics  pairs  rel 0  rel 1  rel 2  rel 3\n"
        "llmjudge    balanced       21  6,493  3,842  1,357    603    691\n"
        "llmjudge    dev            25  7,263  4,538  1,403    625    697\n"
        "llmjudge    published      21  6,169  3,834  1,277    588    470\n"
        "llmjudge    test           25  4,423  2,005  1,233    808    377\n"
        "llmjudge    (Table 4)      21  6,169  3,834  1,277    588    470\n"
    )
    con = duckdb.connect(warehouse)
    try:
        stored = con.execute(
            "select query_id from subset_topics where subset_name = 'published' order by rank"
        ).fetchall()
        assert [q for (q,) in stored] == presets()["llmjudge"]["published_topics"]
        # Without the published subset, `peras judge llmjudge` says it is the one it wanted (before any endpoint).
        con.execute("delete from subset_topics where subset_name = 'published'")
        con.execute("delete from subsets where subset_name = 'published'")
    finally:
        con.close()
    judged = run_cli(capsys, "judge", "llmjudge", "--warehouse", warehouse)
    assert (judged.exit_code, judged.err) == (
        2,
        "error: collection 'llmjudge' has no subset 'published' (see `peras subsets llmjudge`)\n",
    )
    both = run_cli(capsys, "judge", "llmjudge", "--subset", "dev", "--all-topics", "--warehouse", warehouse)
    assert (both.exit_code, both.err) == (2, "error: give --subset or --all-topics, not both\n")
