"""`peras subsets`: the topic subsets of the ingested collections, with topics and judged pairs per level."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
import pytest

from tests.helpers import run_cli

pytestmark = pytest.mark.integration


@pytest.fixture
def warehouse(tmp_path: Path, capsys, shared_data) -> Path:
    path = tmp_path / "peras.duckdb"
    for preset in ("sample", "dl19"):
        result = run_cli(capsys, "ingest", preset, "--warehouse", str(path), "--data-dir", str(shared_data))
        assert result.exit_code == 0, result.err
    return path


def subsets(capsys, warehouse: Path, *args: str):
    return run_cli(capsys, "subsets", *args, "--warehouse", str(warehouse))


def test_every_subset_with_its_topics_and_pairs_per_level(capsys, warehouse):
    result = subsets(capsys, warehouse)
    assert (result.exit_code, result.err) == (0, "")
    assert result.out == (
        "collection  subset     topics  pairs  rel 0  rel 1  rel 2  rel 3\n"
        "dl19        balanced       22  5,268  2,624    921  1,089    634\n"
        "dl19        published      22  4,141  2,314    707    760    360\n"
        "dl19        (Table 4)      22  4,141  2,314    707    760    360\n"
        "sample      balanced        5     40     10     10     10     10\n"
    )  # the study's row after each collection that has one; `published` reproduces it exactly


def test_one_collection_with_its_rule(capsys, warehouse):
    result = subsets(capsys, warehouse, "sample", "--rule")
    assert result.out == (
        "collection  subset    topics  pairs  rel 0  rel 1  rel 2  rel 3\n"
        "sample      balanced       5     40     10     10     10     10\n"
        "sample/balanced: topics with > 5 judged pairs and all four levels, ranked by the share of the rarest "
        "level (desc), then judged pairs (desc), then query_id; first 5 kept\n"
    )


def test_the_pairs_are_what_judge_subset_judges(capsys, warehouse):
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        (n_pairs,) = con.execute(
            "select count(*) from qrels q join subset_topics t using (collection_id, query_id) "
            "where collection_id = 'dl19' and subset_name = 'balanced'"
        ).fetchone()
    finally:
        con.close()
    assert n_pairs == 5268


def test_a_collection_without_subsets_says_so(capsys, warehouse):
    con = duckdb.connect(str(warehouse))
    try:
        con.execute("delete from subset_topics where collection_id = 'sample'")
        con.execute("delete from subsets where collection_id = 'sample'")
    finally:
        con.close()
    result = subsets(capsys, warehouse, "sample")
    assert result.out == "sample: no subsets (judge it whole: leave out --subset)\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        # a collection that was never ingested
        (["dl20"], "error: collection 'dl20' is not in the warehouse: run `peras ingest dl20`\n"),
    ],
)
def test_unknown_collection_is_a_usage_error(capsys, warehouse, args, message):
    result = subsets(capsys, warehouse, *args)
    assert (result.exit_code, result.err) == (2, message)


def test_the_command_a_judge_error_points_to_exists_and_lists_the_subsets(capsys, warehouse):
    result = run_cli(capsys, "judge", "dl19", "--subset", "nope", "--warehouse", str(warehouse))
    assert result.exit_code == 2
    command = re.search(r"`peras ([^`]+)`", result.err).group(1).split()
    assert command == ["subsets", "dl19"], result.err
    listed = subsets(capsys, warehouse, *command[1:])
    assert listed.out.splitlines()[1].split()[:2] == ["dl19", "balanced"]
