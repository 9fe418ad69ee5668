"""Run files in: the TREC run reader, and `peras judge-run` judging exactly the unlabelled top-K pairs."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest

from peras.errors import InputError
from tasks.ingest.readers import read_qrels
from tasks.ingest.run_files import read_run_lines, read_runs

TWO_SYSTEMS = "q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.5 bm25\n\nq2 0 d3 1 3 bm25\nq1 Q0 d1 1 9e-1 dense\n"


def test_reader_keeps_every_line_with_its_system(tmp_path):
    run = tmp_path / "run.txt.gz"
    run.write_bytes(gzip.compress(TWO_SYSTEMS.encode()))
    frame = read_runs([run])
    assert frame.columns == ["system", "query_id", "doc_id", "rank", "score"]
    assert frame.rows() == [
        ("bm25", "q1", "d1", 1, 2.5),
        ("bm25", "q1", "d2", 2, 1.5),
        ("bm25", "q2", "d3", 1, 3.0),
        ("dense", "q1", "d1", 1, 0.9),
    ]
    lines = read_run_lines([run])
    assert lines["line"].to_list() == [1, 2, 4, 5]  # the blank line 3 is skipped, not renumbered


def test_reader_reads_several_files(tmp_path):
    first, second = tmp_path / "a.run", tmp_path / "b.run"
    first.write_text("q1 Q0 d1 1 1.0 a\n")
    second.write_text("q1 Q0 d1 1 1.0 b\nq1 Q0 d2 2 0.5 b\n")
    frame = read_run_lines([first, second])
    assert frame.select("system", "doc_id", "file", "line").rows() == [
        ("a", "d1", str(first), 1),
        ("b", "d1", str(second), 1),
        ("b", "d2", str(second), 2),
    ]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        # five columns: the tag is missing
        (
            "q1 Q0 d1 1 2.0 s\nq1 Q0 d2 2 1.0\n",
            "run.txt:2: expected 6 columns `query_id Q0 doc_id rank score tag`, found 5",
        ),
        # a qrels file given as a run
        ("q1 0 d1 3\n", "run.txt:1: expected 6 columns `query_id Q0 doc_id rank score tag`, found 4"),
        ("q1 X d1 1 2.0 s\n", "run.txt:1: second column must be Q0 or 0, found 'X'"),
        ("q1 Q0 d1 1 2.0 s\nq1 Q0 d2 two 1.0 s\n", "run.txt:2: rank 'two' is not an integer"),
        ("q1 Q0 d1 1 high s\n", "run.txt:1: score 'high' is not a number"),
        ("q1 Q0 d1 1 nan s\n", "run.txt:1: score nan is not a finite number"),
        # the same passage twice for one system and query: trec_eval refuses it
        (
            "q1 Q0 d1 1 2.0 s\nq1 Q0 d2 2 1.0 s\nq1 Q0 d1 3 0.5 s\n",
            "run.txt:3: system s lists passage d1 for query q1 twice",
        ),
        ("\n\n", "run.txt: no run lines found (only blank lines)"),
        ("", "run.txt: file is empty"),
    ],
)
def test_malformed_run_files_name_the_line(tmp_path, content, message):
    run = tmp_path / "run.txt"
    run.write_text(content)
    with pytest.raises(InputError) as error:
        read_runs([run])
    assert str(error.value).removeprefix(str(tmp_path) + "/").startswith(message)


def test_non_utf8_run_names_line_and_column(tmp_path):
    run = tmp_path / "run.txt"
    run.write_bytes(b"q1 Q0 d1 1 2.0 s\nq1 Q0 d\xff 2 1.0 s\n")
    with pytest.raises(InputError, match=r"run.txt:2: not UTF-8: byte 0xff at column 8"):
        read_runs([run])


def write_real_run(shared_data: Path, path: Path) -> pl.DataFrame:
    """A run over the real DL19 judged pairs: each topic's passages in qrels file order, as system `qrels-order`."""
    qrels = read_qrels(shared_data / "dl19" / "2019qrels-pass.txt").qrels
    rank: dict[str, int] = {}
    lines = []
    for qrel in qrels:
        rank[qrel.query_id] = rank.get(qrel.query_id, 0) + 1
        lines.append(f"{qrel.query_id} Q0 {qrel.doc_id} {rank[qrel.query_id]} {-rank[qrel.query_id]} qrels-order\n")
    path.write_bytes(gzip.compress("".join(lines).encode()))
    return pl.DataFrame([(q.query_id, q.doc_id) for q in qrels], schema=["query_id", "doc_id"], orient="row")


def test_reader_on_a_run_over_the_real_dl19_pairs(shared_data, tmp_path):
    expected = write_real_run(shared_data, tmp_path / "dl19.run.gz")
    frame = read_runs([tmp_path / "dl19.run.gz"])
    assert frame.height == 9260
    assert frame["query_id"].n_unique() == 43
    assert frame.select("query_id", "doc_id").equals(expected)
    # first and last lines of 2019qrels-pass.txt, as `head`/`tail` show them
    assert frame.row(0) == ("qrels-order", "19335", "1017759", 1, -1.0)
    assert frame.row(-1)[:3] == ("qrels-order", "1133167", "977421")
