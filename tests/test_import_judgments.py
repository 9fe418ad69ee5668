"""`peras import-judgments`: a qrels-style file becomes a run; every mismatch is reported, nothing is dropped."""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import duckdb
import pytest
from sklearn.metrics import cohen_kappa_score

from flows.import_judgments import import_judgments
from peras.errors import InputError, UsageError
from peras.warehouse import open_migrated
from tasks.import_judgments.tasks import parse_judgment_file
from tests.conftest import SHARED_DATA
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
    parsed = parse_judgment_file.fn(
        write(tmp_path, "t1 0 a 0\n\nt1 0 a 3\nt1 0 b 7\nt1 0 c x\nt1 0 d 2.0\n"), None, "fail"
    )
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
        parse_judgment_file.fn(write(tmp_path, text), column, "fail")
    assert str(caught.value).startswith(f"{tmp_path}/{message}")


@pytest.mark.integration
def test_clean_import_becomes_a_default_run_that_the_views_cover(tiny, tmp_path):
    report = import_judgments(
        path=str(write(tmp_path, CLEAN)), name="mine", collection="tiny", model="m", settings=tiny
    )
    assert (report.status, report.n_lines, report.n_judgments, report.n_scored) == ("imported", 4, 4, 4)
    assert report.counts == {
        "bad_label": 0,
        "clipped": 0,
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


# ------------------------------------------------------------------ labels outside 0-3: --out-of-range fail|clip


@pytest.mark.core
@pytest.mark.parametrize(
    ("label", "fail", "clipped"),
    [
        # above the scale: a failure by default, the top of the scale when clipped
        ("5", None, 3),
        # an explicit sign is still an integer
        ("+4", None, 3),
        # below the scale: clipped to the bottom, symmetric with the top (a -1 meaning "no answer" would read as 0,
        # which is why fail is the default)
        ("-1", None, 0),
        # on the scale: the same under both policies
        ("3", 3, 3),
        ("0", 0, 0),
        # not an integer: a failure under both policies (clip only moves integers onto the scale)
        ("2.5", None, None),
        ("4.0", None, None),
        ("two", None, None),
    ],
)
def test_clip_moves_only_integer_labels_onto_the_scale(tmp_path, label, fail, clipped):
    path = write(tmp_path, f"t1 0 a {label}\n")
    for policy, expected in (("fail", fail), ("clip", clipped)):
        parsed = parse_judgment_file.fn(path, None, policy)
        row = parsed.rows.row(0, named=True)
        assert (row["label"], row["status"]) == (expected, "ok" if expected is not None else "label_parse_failure")
        was_clipped = policy == "clip" and expected is not None and str(expected) != label
        assert parsed.issues["clipped"].n == was_clipped
        assert row["reason"] == (
            f"line 1: label '{label}' clipped to {expected} (--out-of-range clip)"
            if was_clipped
            else None
            if expected is not None
            else f"line 1: label '{label}' is not an integer 0-3"
        )


@pytest.mark.integration
def test_clip_is_reported_stored_and_part_of_the_runs_identity(tiny, tmp_path, capsys):
    path = write(tmp_path, "t1 0 a 0\nt1 0 b 1\nt1 0 c 7\nt1 0 d -2\nt1 0 x 2.5\n")
    args = ["import-judgments", str(path), "--name", "mine", "--collection", "tiny", "--warehouse", str(tiny.warehouse)]
    result = run_cli(capsys, *args, "--out-of-range", "clip")
    assert (result.exit_code, result.err) == (0, "")
    assert result.out.splitlines() == [
        f"mine: imported from {path} into tiny",
        "  5 lines, 5 judgments stored, 4 scored against the qrels",
        "  labels not an integer 0-3 (kept as label failures): 1 (e.g. line 5: t1 x '2.5')",
        "  labels outside 0-3 clipped to 0 or 3 (--out-of-range clip): 2 (e.g. line 3: t1 c '7'; line 4: t1 d '-2')",
        "  pairs not in the qrels (kept, not scored): 1 (e.g. line 5: t1 x)",
    ]
    assert query(tiny, "select out_of_range, n_clipped, n_bad_labels, n_scored from import_reports") == [
        ("clip", 2, 1, 4)
    ]
    assert query(tiny, "select params ->> 'out_of_range' from judge_runs") == [("clip",)]
    assert query(tiny, "select doc_id, label, status from judgments where doc_id in ('c', 'd') order by 1") == [
        ("c", 3, "ok"),
        ("d", 0, "ok"),
    ]
    clipped = query(tiny, "select run_id from judge_runs")
    # the same file again with the same policy: a no-op
    result = run_cli(capsys, *args, "--out-of-range", "clip")
    assert (
        result.out.splitlines()[0] == f"mine: unchanged (same file and options already imported) from {path} into tiny"
    )
    # the same file with the default policy: another run, the two labels now failures
    result = run_cli(capsys, *args)
    assert result.out.splitlines()[:3] == [
        f"mine: replaced the earlier import from {path} into tiny",
        "  5 lines, 5 judgments stored, 2 scored against the qrels",
        "  labels not an integer 0-3 (kept as label failures): 3 (e.g. line 3: t1 c '7'; line 4: t1 d '-2'; "
        "line 5: t1 x '2.5')",
    ]
    assert query(tiny, "select out_of_range, n_clipped, n_bad_labels, n_scored from import_reports") == [
        ("fail", 0, 3, 2)
    ]
    assert query(tiny, "select run_id from judge_runs") != clipped
    assert query(tiny, "select n_judgments, n_label_failures, n_scored from metrics_agreement") == [(4, 2, 2)]


@pytest.mark.integration
@pytest.mark.parametrize(
    "value",
    [
        "maybe",  # not a policy
        "CLIP",  # policies are lower case, as every other choice of the command line
        "",  # empty
    ],
)
def test_a_bad_out_of_range_is_one_line_and_changes_nothing(tiny, tmp_path, capsys, value):
    before = snapshot(tiny.warehouse)
    path = write(tmp_path, CLEAN)
    result = run_cli(
        capsys,
        "import-judgments",
        str(path),
        "--name",
        "x",
        "--collection",
        "tiny",
        "--warehouse",
        str(tiny.warehouse),
        "--out-of-range",
        value,
    )
    assert (result.exit_code, result.out) == (2, "")
    assert result.err.splitlines() == [f"error: --out-of-range must be fail or clip, not {value!r}"]
    assert snapshot(tiny.warehouse) == before
    # the flow parameter is checked the same way
    with pytest.raises(UsageError, match="--out-of-range must be fail or clip"):
        import_judgments(path=str(path), name="x", collection="tiny", out_of_range=value, settings=tiny)
    assert snapshot(tiny.warehouse) == before


# The two LLMJudge submissions with labels above 3 (RMITIR-llama70B: two 5s; h2oloo-zeroshot2: one 10), imported
# under both policies. The challenge's published Cohen's kappa comes from clipping them to 3.
RUNS_DIR = SHARED_DATA / "llmjudge" / "judge-runs"
OUT_OF_RANGE_RUNS = {"RMITIR-llama70B": 2, "h2oloo-zeroshot2": 1}
PUBLISHED_KAPPA = {"RMITIR-llama70B": 0.2654, "h2oloo-zeroshot2": 0.2589}
FAILED_KAPPA = {"RMITIR-llama70B": 0.2657, "h2oloo-zeroshot2": 0.2591}


@pytest.fixture(scope="module")
def llmjudge_out_of_range(tmp_path_factory, ingested):
    """LLMJudge ingested, the two submissions imported with the default policy and clipped (as `<name>-clip`)."""
    from peras.settings import load_settings

    root = tmp_path_factory.mktemp("out-of-range")
    settings = load_settings(warehouse=root / "peras.duckdb", data_dir=SHARED_DATA, reports_dir=root / "reports")
    ingested("llmjudge", settings)
    for name in OUT_OF_RANGE_RUNS:
        path = str(RUNS_DIR / f"{name}.txt")
        import_judgments(path=path, name=name, collection="llmjudge", settings=settings)
        import_judgments(path=path, name=f"{name}-clip", collection="llmjudge", out_of_range="clip", settings=settings)
    return settings


@pytest.mark.integration
def test_clip_reproduces_the_published_kappa_and_fail_leaves_the_pairs_out(llmjudge_out_of_range):
    rows = query(
        llmjudge_out_of_range,
        "select run_name, n_judgments, n_label_failures, n_scored, round(cohen_kappa, 4), cohen_kappa "
        "from metrics_agreement order by run_name",
    )
    kappa_of = {name: kappa for name, *_, kappa in rows}
    assert [row[:5] for row in rows] == [
        ("RMITIR-llama70B", 4423, 2, 4421, FAILED_KAPPA["RMITIR-llama70B"]),
        ("RMITIR-llama70B-clip", 4423, 0, 4423, PUBLISHED_KAPPA["RMITIR-llama70B"]),
        ("h2oloo-zeroshot2", 4423, 1, 4422, FAILED_KAPPA["h2oloo-zeroshot2"]),
        ("h2oloo-zeroshot2-clip", 4423, 0, 4423, PUBLISHED_KAPPA["h2oloo-zeroshot2"]),
    ]
    # and to the last digit what scikit-learn gives straight from the files, labels clipped or pairs left out
    truth = read_labels(SHARED_DATA / "llmjudge" / "llmjudge_test_qrel_idx.txt")
    for name in OUT_OF_RANGE_RUNS:
        labels = read_labels(RUNS_DIR / f"{name}.txt")
        kept = [pair for pair in labels if labels[pair] <= 3]
        failed = cohen_kappa_score([truth[p] for p in kept], [labels[p] for p in kept])
        clipped = cohen_kappa_score([truth[p] for p in labels], [min(labels[p], 3) for p in labels])
        assert kappa_of[name] == pytest.approx(failed, abs=1e-12)
        assert kappa_of[f"{name}-clip"] == pytest.approx(clipped, abs=1e-12)
    # the out-of-range pairs: label failures by default, labels 3 (with the file's value in the reason) when clipped
    assert query(
        llmjudge_out_of_range,
        "select run_name, query_id, doc_id, label, judgments.status, reason "
        "from judgments join judge_runs using (run_id) where reason is not null order by run_name, query_id, doc_id",
    ) == [
        ("RMITIR-llama70B", "q0", "p3021", None, "label_parse_failure", "line 2449: label '5' is not an integer 0-3"),
        ("RMITIR-llama70B", "q30", "p8935", None, "label_parse_failure", "line 3825: label '5' is not an integer 0-3"),
        ("RMITIR-llama70B-clip", "q0", "p3021", 3, "ok", "line 2449: label '5' clipped to 3 (--out-of-range clip)"),
        ("RMITIR-llama70B-clip", "q30", "p8935", 3, "ok", "line 3825: label '5' clipped to 3 (--out-of-range clip)"),
        ("h2oloo-zeroshot2", "q2", "p8028", None, "label_parse_failure", "line 3187: label '10' is not an integer 0-3"),
        ("h2oloo-zeroshot2-clip", "q2", "p8028", 3, "ok", "line 3187: label '10' clipped to 3 (--out-of-range clip)"),
    ]


@pytest.mark.integration
def test_the_command_line_takes_the_policy_as_part_of_the_import(llmjudge_out_of_range, capsys):
    path = RUNS_DIR / "h2oloo-zeroshot2.txt"
    args = [
        "import-judgments",
        str(path),
        "--collection",
        "llmjudge",
        "--warehouse",
        str(llmjudge_out_of_range.warehouse),
    ]
    # the same file and policy as stored: unchanged, and the stored report says what was clipped
    result = run_cli(capsys, *args, "--name", "h2oloo-zeroshot2-clip", "--out-of-range", "clip")
    assert (result.exit_code, result.err) == (0, "")
    assert result.out.splitlines() == [
        f"h2oloo-zeroshot2-clip: unchanged (same file and options already imported) from {path} into llmjudge",
        "  4,423 lines, 4,423 judgments stored, 4,423 scored against the qrels",
        "  labels outside 0-3 clipped to 0 or 3 (--out-of-range clip): 1 (e.g. line 3187: q2 p8028 '10')",
    ]
    result = run_cli(capsys, *args, "--name", "h2oloo-zeroshot2")
    assert result.out.splitlines()[0].endswith(
        f"unchanged (same file and options already imported) from {path} into llmjudge"
    )
    assert result.out.splitlines()[2] == (
        "  labels not an integer 0-3 (kept as label failures): 1 (e.g. line 3187: q2 p8028 '10')"
    )


@pytest.mark.integration
def test_the_report_states_each_imports_policy_and_clipped_labels(llmjudge_out_of_range, tmp_path):
    from flows.report import report

    summary = report(output=str(tmp_path), settings=llmjudge_out_of_range)
    html = summary.path.read_text(encoding="utf-8")
    table = re.search(r'<table id="imports">(.*?)</table>', html, re.S)
    assert table is not None and '<a href="#imports">Imported runs</a>' in html
    rows = [
        re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S) for row in re.findall(r"<tr>(.*?)</tr>", table[1], re.S)
    ]
    assert rows[0] == ["Run", "Collection", "File", "Out of range", "Clipped", "Label failures", "Judgments", "Scored"]
    assert [row[:2] + row[3:] for row in rows[1:]] == [
        ["RMITIR-llama70B", "llmjudge", "fail", "0", "2", "4,423", "4,421"],
        ["RMITIR-llama70B-clip", "llmjudge", "clip", "2", "0", "4,423", "4,423"],
        ["h2oloo-zeroshot2", "llmjudge", "fail", "0", "1", "4,423", "4,422"],
        ["h2oloo-zeroshot2-clip", "llmjudge", "clip", "1", "0", "4,423", "4,423"],
    ]
    assert rows[1][2] == f"<code>{RUNS_DIR / 'RMITIR-llama70B.txt'}</code>"


def read_labels(path: Path) -> dict[tuple[str, str], int]:
    """(query_id, doc_id) -> the integer label, straight from a qrels-style file."""
    return {(f[0], f[2]): int(f[3]) for f in (line.split() for line in path.read_text().splitlines()) if f}
