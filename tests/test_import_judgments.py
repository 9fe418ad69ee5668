"""`peras import-judgments`: a qrels-style file becomes a run; every mismatch is reported, nothing is dropped."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from flows.import_judgments import import_judgments
from peras.errors import InputError
from peras.warehouse import open_migrated
from tasks.import_judgments.tasks import parse_judgment_file
from tests.helpers import run_cli, snapshot

# the collection `tiny`: topic t1 with four judged passages, topic t2 with two
QRELS = [("t1", "a", 0), ("t1", "b", 1), ("t1", "c", 2), ("t1", "d", 3), ("t2", "e", 3), ("t2", "f", 0)]
CLEAN = "t1 0 a 0\nt1 0 b 1\nt1 0 c 2\nt1 0 d 2\n"


@pytest.fixture
def tiny(settings):
    """A warehouse holding the collection `tiny` (qrels only: imports need nothing else)."""
    with open_migrated(settings.warehouse) as con:
        con.execute("insert into collections values ('tiny', 'test', null, 'f', ?)", [datetime(2026, 1, 1)])
        con.executemany("insert into qrels values ('tiny', ?, ?, ?, 'test')", QRELS)
    return settings


def query(settings, sql: str) -> list[tuple]:
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def write(tmp_path: Path, text: str, name: str = "run.txt") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


@pytest.mark.core
def test_parse_keeps_first_of_repeated_pairs_and_records_bad_labels(tmp_path):
    parsed = parse_judgment_file.fn(write(tmp_path, "t1 0 a 0\n\nt1 0 a 3\nt1 0 b 7\nt1 0 c x\nt1 0 d 2.0\n"), None)
    assert parsed.n_lines == 5
    assert parsed.rows.select("line_no", "doc_id", "label", "status").rows() == [
        (1, "a", 0, "ok"),
        (4, "b", None, "label_parse_failure"),
        (5, "c", None, "label_parse_failure"),
        (6, "d", None, "label_parse_failure"),
    ]
    assert parsed.issues["duplicate"].n == 1 and parsed.issues["duplicate"].examples[0]["line"] == 3
    assert [e["value"] for e in parsed.issues["bad_label"].examples] == ["7", "x", "2.0"]


@pytest.mark.core
@pytest.mark.parametrize(
    ("text", "column", "message"),
    [
        # a label missing
        ("t1 0 a 0\nt1 0 b\n", None, "run.txt:2: expected 4 columns `query_id 0 doc_id label`, found 3"),
        # an extra column without --confidence-column
        ("t1 0 a 0 55\n", None, "run.txt:1: expected 4 columns `query_id 0 doc_id label`, found 5 (a confidence"),
        # a line shorter than the first one
        ("t1 0 a 0 55\nt1 0 b 1\n", 5, "run.txt:2: expected 5 columns, as on the first line, found 4"),
        # the confidence column beyond the last column
        ("t1 0 a 0 55\n", 6, "run.txt:1: --confidence-column 6, but the line has only 5 columns"),
        # nothing but blank lines
        ("\n\n", None, "run.txt: no judgments in file"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, text, column, message):
    with pytest.raises(InputError) as caught:
        parse_judgment_file.fn(write(tmp_path, text), column)
    assert str(caught.value).startswith(f"{tmp_path}/{message}")


@pytest.mark.integration
def test_clean_import_becomes_a_default_run_that_the_views_cover(tiny, tmp_path):
    report = import_judgments(
        path=str(write(tmp_path, CLEAN)), name="mine", collection="tiny", model="m", settings=tiny
    )
    assert (report.status, report.n_lines, report.n_judgments, report.n_scored) == ("imported", 4, 4, 4)
    assert report.counts == {
        "bad_label": 0,
        "bad_confidence": 0,
        "duplicate": 0,
        "not_in_qrels": 0,
        "missing_from_file": 0,
    }
    assert query(tiny, "select run_name, source, backend, model from judge_runs") == [("mine", "import", "import", "m")]
    assert query(tiny, "select personality, cot, confidence_method, n_scored, accuracy from metrics_agreement") == [
        ("default", False, "none", 4, 0.75)
    ]
    # no confidence given: counted as missing, calibration left null
    assert query(tiny, "select n_confidence_missing, ece from metrics_calibration") == [(4, None)]


@pytest.mark.integration
def test_every_mismatch_is_counted_stored_and_printed(tiny, tmp_path, capsys):
    text = (
        "t1 0 a 0\n"  # fine
        "t1 0 b 5\n"  # label outside 0-3
        "t1 0 c two\n"  # not an integer
        "t1 0 a 1\n"  # repeats pair (t1, a): the first line wins
        "t1 0 z 2\n"
    )  # not in the qrels; (t1, d) is missing from the file; t2 is not judged at all
    path = write(tmp_path, text)
    result = run_cli(
        capsys,
        "import-judgments",
        str(path),
        "--name",
        "odd",
        "--collection",
        "tiny",
        "--warehouse",
        str(tiny.warehouse),
    )
    assert result.exit_code == 0, result.err
    assert result.out.splitlines() == [
        f"odd: imported from {path} into tiny",
        "  5 lines, 4 judgments stored, 1 scored against the qrels",
        "  labels not an integer 0-3 (kept as label failures): 2 (e.g. line 2: t1 b '5'; line 3: t1 c 'two')",
        "  lines repeating an earlier pair (first kept): 1 (e.g. line 4: t1 a 't1 0 a 1')",
        "  pairs not in the qrels (kept, not scored): 1 (e.g. line 5: t1 z)",
        "  qrels pairs of the file's topics missing from the file: 1 (e.g. t1 d)",
    ]
    assert query(
        tiny,
        "select n_lines, n_judgments, n_scored, n_bad_labels, n_bad_confidences, n_duplicates, "
        "n_not_in_qrels, n_missing_from_file from import_reports",
    ) == [(5, 4, 1, 2, 0, 1, 1, 1)]
    # the bad labels are label failures in every view, not scores and not silently gone
    assert query(tiny, "select n_judgments, n_label_failures, n_scored from metrics_agreement") == [(3, 2, 1)]


@pytest.mark.integration
def test_a_megabyte_doc_id_is_stored_whole_and_printed_clipped(tiny, tmp_path, capsys):
    # a 1,000,000-character doc id: the report quotes its first 80 characters and its length (it used to print
    # the whole id, and the whole repeating line, twice over)
    doc_id = "d" * 1_000_000
    path = write(tmp_path, f"t1 0 a 0\nt1 0 {doc_id} 2\nt1 0 {doc_id} 3\n")
    result = run_cli(
        capsys,
        "import-judgments",
        str(path),
        "--name",
        "big",
        "--collection",
        "tiny",
        "--warehouse",
        str(tiny.warehouse),
    )
    assert (result.exit_code, result.err) == (0, "")
    clipped = f"{'d' * 80}... (1,000,000 characters)"
    line = f"{repr('t1 0 ' + 'd' * 75)}... (1,000,007 characters)"
    assert result.out.splitlines()[2:5] == [
        f"  lines repeating an earlier pair (first kept): 1 (e.g. line 3: t1 {clipped} {line})",
        f"  pairs not in the qrels (kept, not scored): 1 (e.g. line 2: t1 {clipped})",
        "  qrels pairs of the file's topics missing from the file: 3 (e.g. t1 b; t1 c; t1 d)",
    ]
    assert len(result.out) < 1_000
    assert query(tiny, "select length(doc_id) from judgments order by 1") == [(1,), (1_000_000,)]


@pytest.mark.integration
def test_confidence_column_feeds_the_calibration_views(tiny, tmp_path):
    text = "t1 0 a 0 90 x\nt1 0 b 1 80 x\nt1 0 c 1 150 x\nt1 0 d 3 abc x\n"
    report = import_judgments(
        path=str(write(tmp_path, text)), name="conf", collection="tiny", confidence_column=5, settings=tiny
    )
    assert report.counts["bad_confidence"] == 2
    assert [e["value"] for e in report.examples["bad_confidence"]] == ["150", "abc"]
    assert query(
        tiny,
        "select confidence_method, n_judgments, n_confidence_missing, n_scored_confidence, accuracy, "
        "round(mean_p, 12) from metrics_calibration",
    ) == [("given", 4, 2, 2, 1.0, 0.85)]


@pytest.mark.integration
def test_same_file_again_is_a_noop_and_a_changed_file_replaces_the_run(tiny, tmp_path):
    path = write(tmp_path, CLEAN)
    first = import_judgments(path=str(path), name="mine", collection="tiny", settings=tiny)
    before = snapshot(tiny.warehouse)
    again = import_judgments(path=str(path), name="mine", collection="tiny", settings=tiny)
    assert (again.status, again.run_id, again.counts) == ("unchanged", first.run_id, first.counts)
    assert snapshot(tiny.warehouse) == before
    path.write_text(CLEAN.replace("t1 0 d 2", "t1 0 d 3"))
    changed = import_judgments(path=str(path), name="mine", collection="tiny", settings=tiny)
    assert changed.status == "replaced" and changed.run_id != first.run_id
    assert query(tiny, "select count(*), count(distinct run_id) from judgments") == [(4, 1)]
    assert query(tiny, "select run_id from judge_runs") == [(changed.run_id,)]
    assert query(tiny, "select accuracy from metrics_agreement") == [(1.0,)]


@pytest.mark.integration
def test_malformed_file_is_one_line_and_changes_nothing(tiny, tmp_path, capsys):
    import_judgments(path=str(write(tmp_path, CLEAN)), name="mine", collection="tiny", settings=tiny)
    before = snapshot(tiny.warehouse)
    bad = write(tmp_path, CLEAN + "t1 0 e\n", "bad.txt")
    result = run_cli(
        capsys,
        "import-judgments",
        str(bad),
        "--name",
        "mine",
        "--collection",
        "tiny",
        "--warehouse",
        str(tiny.warehouse),
    )
    assert result.exit_code == 1
    assert result.err.strip() == f"error: {bad}:5: expected 4 columns `query_id 0 doc_id label`, found 3"
    assert snapshot(tiny.warehouse) == before


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "message"),
    [
        # a collection that was never ingested
        (
            ["--collection", "nope", "--name", "x"],
            "error: no collection 'nope' in the warehouse: run `peras ingest` first",
        ),
        # a name that an LLM run already holds
        (["--collection", "tiny", "--name", "llm-run"], "error: run name 'llm-run' belongs to a judged (llm) run"),
    ],
)
def test_usage_errors_exit_2_with_one_line(tiny, tmp_path, capsys, args, message):
    with open_migrated(tiny.warehouse) as con:
        con.execute(
            "insert into judge_runs (run_id, run_name, source, task_type, collection_id, model, backend, "
            "params, created_at) values ('r', 'llm-run', 'llm', 'pointwise', 'tiny', 'm', 'b', '{}', ?)",
            [datetime(2026, 1, 1)],
        )
    result = run_cli(capsys, "import-judgments", str(write(tmp_path, CLEAN)), *args, "--warehouse", str(tiny.warehouse))
    assert result.exit_code == 2
    assert result.err.strip().startswith(message) and len(result.err.strip().splitlines()) == 1


@pytest.mark.integration
def test_missing_file_is_a_usage_error(tiny, tmp_path, capsys):
    result = run_cli(
        capsys,
        "import-judgments",
        str(tmp_path / "nope.txt"),
        "--name",
        "x",
        "--collection",
        "tiny",
        "--warehouse",
        str(tiny.warehouse),
    )
    assert result.exit_code == 2
    assert result.err.strip() == f"error: file not found: {tmp_path / 'nope.txt'}"


@pytest.mark.core
def test_help_has_an_example(capsys):
    result = run_cli(capsys, "import-judgments", "--help")
    assert result.exit_code == 0
    assert "Examples:" in result.out and "peras import-judgments" in result.out
