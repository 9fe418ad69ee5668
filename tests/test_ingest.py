"""Ingest: real collections give the published counts; bad input gives one line and changes nothing."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import duckdb
import pytest

from flows.ingest import ingest
from peras.paths import SAMPLE_DIR
from tests.helpers import run_cli, snapshot

pytestmark = pytest.mark.integration


def rows(settings, sql: str) -> list[tuple]:
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


# Counts from ../shared/data/README.md; first and last qrels lines of each file as read by `head`/`tail`.
REAL = [
    # preset, pairs, queries, passages, (first qrel), (last qrel)
    ("dl19", 9260, 43, 9139, ("19335", "1017759", 0), ("1133167", "977421", 0)),
    ("dl20", 11386, 54, 11224, ("23849", "1020327", 2), ("1136962", "999215", 0)),
    (
        "dl21",
        10828,
        53,
        10824,
        ("2082", "msmarco_passage_01_552803451", 0),
        ("1129560", "msmarco_passage_68_639912287", 0),
    ),
    ("llmjudge", 7263 + 4423, 50, 11621, ("q18", "p6285", 2), ("q9", "p8619", 0)),
]


@pytest.mark.parametrize(("preset", "n_pairs", "n_queries", "n_passages", "first", "last"), REAL)
def test_real_collection_counts(settings, preset, n_pairs, n_queries, n_passages, first, last):
    result = ingest(preset=preset, settings=settings)
    assert (result["n_qrels"], result["n_queries"], result["n_passages"]) == (n_pairs, n_queries, n_passages)
    for qrel in (first, last):
        if qrel:
            query_id, doc_id, relevance = qrel
            got = rows(settings, f"select relevance from qrels where query_id = '{query_id}' and doc_id = '{doc_id}'")
            assert got == [(relevance,)]
    files = rows(settings, "select role, n_records, length(sha256) from ingest_files order by role")
    assert all(length == 64 for _, _, length in files)


def test_llmjudge_keeps_dev_and_test_apart(settings):
    ingest(preset="llmjudge", settings=settings)
    assert rows(settings, "select qrels_set, count(*), count(distinct query_id) from qrels group by 1 order by 1") == [
        ("dev", 7263, 25),
        ("test", 4423, 25),
    ]
    assert rows(settings, "select subset_name, n_topics, n_pairs from subsets order by 1") == [
        ("balanced", 21, 6493),
        ("dev", 25, 7263),
        ("published", 21, 6169),  # the study's own topics (tests/test_subsets.py)
        ("test", 25, 4423),
    ]


def test_balanced_subsets_are_deterministic_and_sized(settings):
    for preset in ("dl19", "dl20", "dl21"):
        ingest(preset=preset, settings=settings)
    got = rows(
        settings,
        "select collection_id, n_topics, n_pairs from subsets where subset_name = 'balanced' order by 1",
    )
    # Published: DL19 22 / 4,141, DL20 25 / 5,213, DL21 21 / 4,304 (topic lists unpublished); see docs/subsets.md.
    assert got == [("dl19", 22, 5268), ("dl20", 25, 5315), ("dl21", 21, 4269)]
    # Pairs at levels 0-3 (docs/subsets.md); the study's are 2,314/707/760/360, 3,756/761/328/368, 1,709/1,198/922/475.
    per_level = rows(
        settings,
        """
        select collection_id, count(*) filter (where relevance = 0), count(*) filter (where relevance = 1),
            count(*) filter (where relevance = 2), count(*) filter (where relevance = 3)
        from subset_topics join qrels using (collection_id, query_id)
        where subset_name = 'balanced' group by 1 order by 1""",
    )
    assert per_level == [("dl19", 2624, 921, 1089, 634), ("dl20", 3271, 959, 635, 450), ("dl21", 1164, 1207, 982, 916)]
    # Issue 32: DL19's, DL20's and DL21's `published` subsets reproduce Table 4 exactly.
    assert rows(settings, "select collection_id from subsets where subset_name = 'published' order by 1") == [
        ("dl19",),
        ("dl20",),
        ("dl21",),
    ]
    levels = rows(
        settings,
        """
        select count(distinct t.query_id) from subset_topics t join qrels q using (collection_id, query_id)
        where t.subset_name = 'balanced' and t.collection_id = 'dl19'
        group by t.query_id having count(distinct q.relevance) = 4""",
    )
    assert len(levels) == 22


def test_reingest_same_files_is_a_noop(settings):
    first = ingest(preset="sample", settings=settings)
    before = snapshot(settings.warehouse)
    second = ingest(preset="sample", settings=settings)
    assert (first["status"], second["status"]) == ("published", "unchanged")
    assert snapshot(settings.warehouse) == before
    assert rows(settings, "select count(*) from ingest_runs") == [(1,)]


def custom_files(tmp_path: Path, gz: bool = False) -> dict[str, Path]:
    """The shipped sample copied to tmp_path as user files (optionally gzipped)."""
    out = {}
    for role, name in [("qrels", "qrels.txt"), ("queries", "queries.tsv"), ("passages", "passages.jsonl")]:
        target = tmp_path / (name + (".gz" if gz else ""))
        if gz:
            target.write_bytes(gzip.compress((SAMPLE_DIR / name).read_bytes()))
        else:
            shutil.copy(SAMPLE_DIR / name, target)
        out[role] = target
    return out


def test_changed_files_replace_the_collection(settings, tmp_path):
    files = custom_files(tmp_path, gz=True)
    args = dict(name="mine", queries=str(files["queries"]), passages=str(files["passages"]), settings=settings)
    ingest(qrels=[str(files["qrels"])], **args)
    text = gzip.decompress(files["qrels"].read_bytes()).decode().replace("s1 0 e1 3", "s1 0 e1 2")
    files["qrels"].write_bytes(gzip.compress(text.encode()))
    assert ingest(qrels=[str(files["qrels"])], **args)["status"] == "published"
    assert rows(settings, "select relevance from qrels where doc_id = 'e1'") == [(2,)]
    assert rows(settings, "select count(*) from qrels") == [(40,)]
    assert rows(settings, "select count(*) from ingest_runs") == [(2,)]


def test_msmarco_tsv_passages_split_on_first_tab(settings, tmp_path):
    files = custom_files(tmp_path)
    tsv = tmp_path / "collection.tsv"
    lines = [json.loads(line) for line in files["passages"].read_text().splitlines()]
    tsv.write_text("".join(f"{p['docid']}\t{p['doc']}\twith\ta tab\n" for p in lines))
    ingest(
        name="tsv",
        qrels=[str(files["qrels"])],
        queries=str(files["queries"]),
        passages=str(tsv),
        settings=settings,
    )
    assert rows(settings, "select text like '%with\ta tab' from passages where doc_id = 'e1'") == [(True,)]


def ingest_cli(capsys: pytest.CaptureFixture[str], settings, files: dict[str, Path]):
    """`peras ingest` of user files (qrels, queries, passages) into the test warehouse, as a user types it."""
    return run_cli(
        capsys,
        "ingest",
        "--warehouse",
        str(settings.warehouse),
        "--name",
        "mine",
        "--qrels",
        str(files["qrels"]),
        "--queries",
        str(files["queries"]),
        "--passages",
        str(files["passages"]),
    )


BAD_QRELS = [
    # malformed line: three columns
    ("s1 0 e1\n", "qrels.txt:1: expected 4 columns"),
    # label outside 0-3
    ("s1 0 e1 3\ns1 0 e2 4\n", "qrels.txt:2: relevance 4 is outside 0-3"),
    # non-integer label
    ("s1 0 e1 2.5\n", "qrels.txt:1: relevance '2.5' is not an integer"),
    # conflicting duplicate pair
    ("s1 0 e1 3\ns1 0 e2 3\ns1 0 e1 1\n", "qrels.txt:3: pair (s1, e1) judged 3 on line 1 and 1 here"),
    # a passage that is missing from the passages file
    ("s1 0 e1 3\ns1 0 nope 1\n", "qrels.txt:2: passage nope is judged but has no text"),
    # a query that is missing from the queries file
    ("s1 0 e1 3\nq404 0 e2 1\n", "qrels.txt:2: query q404 is judged but has no text"),
    # empty file
    ("", "qrels.txt: file is empty"),
    # iteration column that is neither Q0 nor 0
    ("s1 X e1 3\n", "qrels.txt:1: second column must be Q0 or 0"),
]


@pytest.mark.parametrize(("content", "message"), BAD_QRELS)
def test_bad_qrels_give_one_line_and_change_nothing(settings, tmp_path, capsys, content, message):
    ingest(preset="sample", settings=settings)
    before = snapshot(settings.warehouse)
    files = custom_files(tmp_path)
    files["qrels"].write_text(content)
    result = ingest_cli(capsys, settings, files)
    assert result.exit_code == 1
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1 and "Traceback" not in result.err
    assert snapshot(settings.warehouse) == before


def test_non_utf8_bytes_name_line_and_column(settings, tmp_path, capsys):
    ingest(preset="sample", settings=settings)
    before = snapshot(settings.warehouse)
    files = custom_files(tmp_path)
    files["queries"].write_bytes(b"s1\thow long\ns2\tnorthern \xff lights\n")
    result = ingest_cli(capsys, settings, files)
    assert result.exit_code == 1
    assert "queries.tsv:2: not UTF-8: byte 0xff at column 13" in result.err
    assert snapshot(settings.warehouse) == before


def test_missing_file_is_a_usage_error(settings, tmp_path, capsys):
    ingest(preset="sample", settings=settings)
    before = snapshot(settings.warehouse)
    files = custom_files(tmp_path)
    result = ingest_cli(capsys, settings, files | {"qrels": tmp_path / "nope.txt"})
    assert result.exit_code == 2
    assert result.err.strip() == f"error: file not found: {tmp_path / 'nope.txt'}"
    assert snapshot(settings.warehouse) == before


def test_unknown_preset_is_a_usage_error(settings, capsys):
    result = run_cli(capsys, "ingest", "dl99", "--warehouse", str(settings.warehouse))
    assert result.exit_code == 2
    assert "unknown collection preset 'dl99'" in result.err


def test_gate_failure_lists_rows_and_publishes_nothing(settings, tmp_path, capsys):
    ingest(preset="sample", settings=settings)
    before = snapshot(settings.warehouse)
    files = custom_files(tmp_path)
    files["passages"].write_text(
        files["passages"]
        .read_text()
        .replace(
            '{"docid": "e1", "doc": "For a soft',
            '{"docid": "e1", "doc": "   "}\n{"docid": "zz", "doc": "For a soft',
        )
    )
    result = ingest_cli(capsys, settings, files)
    assert result.exit_code == 1
    assert "quality gate failed, nothing was published" in result.err
    assert "passage texts are non-empty" in result.err and "'doc_id': 'e1'" in result.err
    assert snapshot(settings.warehouse) == before


BOM = b"\xef\xbb\xbf"


def with_bom(path: Path) -> None:
    """Prefix a file with the UTF-8 byte-order mark a Windows editor writes."""
    path.write_bytes(BOM + path.read_bytes())


@pytest.mark.parametrize(
    "roles",
    [
        # the qrels: without the fix the first pair's query id became "\ufeffs1", judged but without text
        ["qrels"],
        # the queries: the first query lost its text
        ["queries"],
        # JSONL passages: the BOM hid the "{" and the file was read as TSV
        ["passages"],
        # all three at once, as an export from one Windows tool would be
        ["qrels", "queries", "passages"],
    ],
)
def test_utf8_bom_is_dropped_by_every_reader(settings, tmp_path, capsys, roles):
    files = custom_files(tmp_path)
    for role in roles:
        with_bom(files[role])
    result = ingest_cli(capsys, settings, files)
    assert (result.exit_code, result.err) == (0, "")
    assert result.out.startswith("mine: 40 judged pairs, 5 queries, 40 passages")
    assert rows(settings, "select relevance from qrels where query_id = 's1' and doc_id = 'e1'") == [(3,)]
    assert rows(settings, "select count(*) from queries where query_id = 's1' and text like 'how long%'") == [(1,)]
    assert rows(settings, "select count(*) from passages where doc_id = 'e1' and text like 'For a soft%'") == [(1,)]


def test_utf8_bom_in_msmarco_tsv_passages_and_gzip(settings, tmp_path, capsys):
    files = custom_files(tmp_path)
    lines = [json.loads(line) for line in files["passages"].read_text().splitlines()]
    tsv = tmp_path / "collection.tsv.gz"
    tsv.write_bytes(gzip.compress(BOM + "".join(f"{p['docid']}\t{p['doc']}\n" for p in lines).encode()))
    result = ingest_cli(capsys, settings, files | {"passages": tsv})
    assert (result.exit_code, result.err) == (0, "")
    assert rows(settings, "select count(*) from passages where doc_id = 'e1' and text like 'For a soft%'") == [(1,)]


def test_utf16_file_says_to_save_as_utf8(settings, tmp_path, capsys):
    files = custom_files(tmp_path)
    files["queries"].write_bytes(files["queries"].read_text().encode("utf-16"))
    result = ingest_cli(capsys, settings, files)
    assert (result.exit_code, result.err) == (1, f"error: {files['queries']}: file is UTF-16: save it as UTF-8\n")


def test_utf8_bom_in_imported_judgments_keeps_the_first_pair(settings, tmp_path, capsys):
    ingest(preset="sample", settings=settings)
    run = tmp_path / "run.txt"
    run.write_bytes(BOM + b"s1 0 e1 3\ns1 0 e2 2\n")
    result = run_cli(
        capsys,
        "import-judgments",
        str(run),
        "--name",
        "bom",
        "--collection",
        "sample",
        "--warehouse",
        str(settings.warehouse),
    )
    assert (result.exit_code, result.err) == (0, "")
    assert "pairs not in the qrels" not in result.out
    assert rows(
        settings,
        "select query_id, doc_id, label from judgments join judge_runs using (run_id) "
        "where run_name = 'bom' order by doc_id",
    ) == [("s1", "e1", 3), ("s1", "e2", 2)]
