"""`peras sql`, `peras export` and docs/warehouse.md: read-only analyst access, every example query run."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from flows.import_judgments import import_judgments
from peras.warehouse import open_migrated, snapshot_path, wal_path
from peras.warehouse_docs import DOC_PATH, render, undocumented
from tests.helpers import run_cli, snapshot
from tests.metrics_fixtures import Judgment, load_judgments

# DL19 in miniature: two topics, four passages each, one at every level
QRELS = [
    ("q1", "a", 0),
    ("q1", "b", 1),
    ("q1", "c", 2),
    ("q1", "d", 3),
    ("q2", "e", 3),
    ("q2", "f", 2),
    ("q2", "g", 1),
    ("q2", "h", 0),
]
# an imported run (label, confidence): 6 of 8 right; kappa 2/3, QWK 0.875, macro-F1 0.7333 (scikit-learn)
IMPORTED = "q1 0 a 0 90\nq1 0 b 1 80\nq1 0 c 2 70\nq1 0 d 2 60\nq2 0 e 3 95\nq2 0 f 2 85\nq2 0 g 1 75\nq2 0 h 1 50\n"


@pytest.fixture
def warehouse(settings, tmp_path):
    """dl19 in miniature with an LLM run (default and HA, CoT on and off) and an imported run."""
    rows = []
    for cot in (False, True):
        for i, (query_id, doc_id, relevance) in enumerate(QRELS):
            rows.append(
                Judgment(
                    "r1",
                    "default",
                    cot,
                    "verbalized",
                    query_id,
                    doc_id,
                    relevance,
                    relevance if i != 3 else 1,
                    90.0 - i,
                )
            )
            rows.append(
                Judgment(
                    "r1", "HA", cot, "verbalized", query_id, doc_id, relevance, min(relevance + i % 2, 3), 60.0 + 5 * i
                )
            )
    with open_migrated(settings.warehouse) as con:
        con.execute(
            "insert into collections values ('dl19', 'DL19 in miniature', 'dl19', 'f', ?)", [datetime(2026, 1, 1)]
        )
        con.executemany("insert into queries values ('dl19', ?, ?)", [("q1", "cheap flights"), ("q2", "boil an egg")])
        load_judgments(con, rows, collection_id="dl19")
    path = tmp_path / "imported.txt"
    path.write_text(IMPORTED)
    import_judgments(
        path=str(path), name="imported", collection="dl19", confidence_column=5, model="m", settings=settings
    )
    return settings


# What every refused `peras sql` statement ends with.
REFUSED = "(peras sql reads only the warehouse; save a result with --format csv > FILE)"


def sql(capsys, settings, query: str, *options: str):
    return run_cli(capsys, "sql", query, "--warehouse", str(settings.warehouse), *options)


def example_queries() -> list[str]:
    """The SQL blocks of docs/warehouse.md's example section, as an analyst would copy them."""
    text = DOC_PATH.read_text()
    section = text.split("## Example queries", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sql\n(.*?)\n```", section, re.DOTALL)


@pytest.mark.integration
def test_every_example_query_runs_and_returns_rows(capsys, warehouse):
    queries = example_queries()
    assert len(queries) >= 5
    for query in queries:
        result = sql(capsys, warehouse, query, "--format", "json")
        assert (result.exit_code, result.err) == (0, ""), query
        assert json.loads(result.out), f"no rows: {query}"


@pytest.mark.integration
def test_kappa_example_gives_the_imported_runs_numbers(capsys, warehouse):
    result = sql(capsys, warehouse, example_queries()[0], "--format", "csv")
    assert result.exit_code == 0
    lines = result.out.splitlines()
    assert lines[0] == "run_name,personality,n_scored,n_label_failures,kappa,qwk,macro_f1"
    assert "imported,default,8,0,0.667,0.875,0.733" in lines
    assert len(lines) == 1 + 3  # imported default; r1 default and HA (without CoT only)


@pytest.mark.integration
def test_sql_prints_a_table_csv_and_json(capsys, warehouse):
    query = "select query_id, count(*) as n_pairs, avg(relevance) as mean_relevance from qrels group by 1 order by 1"
    table = sql(capsys, warehouse, query)
    assert table.exit_code == 0
    assert "│ q1       │       4 │         1.5000 │" in table.out and "2 rows" in table.out
    csv = sql(capsys, warehouse, query, "--format", "csv").out
    assert csv == "query_id,n_pairs,mean_relevance\nq1,4,1.5\nq2,4,1.5\n"
    assert json.loads(sql(capsys, warehouse, query, "--format", "json").out) == [
        {"query_id": "q1", "n_pairs": 4, "mean_relevance": 1.5},
        {"query_id": "q2", "n_pairs": 4, "mean_relevance": 1.5},
    ]
    long = sql(capsys, warehouse, "select * from range(150)", "--max-rows", "3")
    assert "150 rows; first 3 shown (--max-rows, or --format csv for all)" in long.out


@pytest.mark.integration
@pytest.mark.parametrize(
    ("query", "message"),
    [
        # a typo: DuckDB's first line only
        ("selec 1", 'error: Parser Error: syntax error at or near "selec"\n'),
        # an unknown table: with DuckDB's suggestion, on the same line
        ("select * from qrel", "error: Catalog Error: Table with name qrel does not exist! Did you mean"),
        # only queries run: nothing can change the warehouse
        ("delete from qrels", f"error: peras sql runs queries (SELECT), not DELETE statements {REFUSED}\n"),
    ],
)
def test_bad_sql_is_one_line_and_exit_2(capsys, warehouse, query, message):
    before = snapshot(warehouse.warehouse)
    result = sql(capsys, warehouse, query)
    assert result.exit_code == 2 and result.err.startswith(message) and result.err.count("\n") == 1
    assert snapshot(warehouse.warehouse) == before


@pytest.mark.core
def test_sql_without_a_warehouse_says_how_to_make_one(capsys, tmp_path):
    result = run_cli(capsys, "sql", "select 1", "--warehouse", str(tmp_path / "none.duckdb"))
    assert (result.exit_code, result.err) == (
        2,
        f"error: no warehouse at {tmp_path / 'none.duckdb'}: run `peras ingest sample` (or set PERAS_WAREHOUSE) "
        "first\n",
    )


@pytest.mark.integration
def test_sql_waits_for_a_writer_to_publish(capsys, warehouse):
    # another process holds the write lock for 2 s, as a stage does while it publishes
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time\n"
            f"con = duckdb.connect({str(warehouse.warehouse)!r})\n"
            "con.execute('insert into queries values (\\'dl19\\', \\'q3\\', \\'new\\')')\n"
            "print('locked', flush=True); time.sleep(2); con.close()",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "locked"
    started = time.monotonic()
    result = sql(capsys, warehouse, "select count(*) as n from queries", "--format", "csv")
    waited = time.monotonic() - started
    holder.wait(timeout=10)
    assert (result.exit_code, result.out) == (0, "n\n3\n")
    assert waited > 0.5


@pytest.mark.integration
def test_export_view_to_parquet_and_table_to_csv(capsys, warehouse, tmp_path):
    out = tmp_path / "out"
    result = run_cli(
        capsys,
        "export",
        "metrics_agreement",
        "--output",
        str(out / "agreement.parquet"),
        "--warehouse",
        str(warehouse.warehouse),
    )
    assert (result.exit_code, result.out) == (
        0,
        f"wrote 5 rows of metrics_agreement to {out / 'agreement.parquet'} (parquet)\n",
    )
    con = duckdb.connect(str(warehouse.warehouse), read_only=True)
    try:
        want = con.sql("select * from metrics_agreement").pl()
    finally:
        con.close()
    got = pl.read_parquet(out / "agreement.parquet")
    # DuckDB sums doubles in parallel, in no fixed order: the last bits may differ between two reads.
    assert_frame_equal(
        got.sort("run_name", "personality", "cot"),
        want.sort("run_name", "personality", "cot"),
        check_exact=False,
        rel_tol=1e-12,
        abs_tol=1e-12,
    )
    result = run_cli(
        capsys, "export", "qrels", "--output", str(out / "qrels.csv"), "--warehouse", str(warehouse.warehouse)
    )
    assert result.exit_code == 0
    header, *rows = (out / "qrels.csv").read_text().splitlines()
    assert header == "collection_id,query_id,doc_id,relevance,qrels_set"
    assert sorted(rows) == [f"dl19,{query_id},{doc_id},{relevance},test" for query_id, doc_id, relevance in QRELS]


@pytest.mark.integration
def test_export_quotes_a_name_that_needs_it(capsys, warehouse, tmp_path):
    with open_migrated(warehouse.warehouse) as con:
        con.execute('create table "odd ""name""" as select 1 as x')
    result = run_cli(
        capsys,
        "export",
        'odd "name"',
        "--format",
        "csv",
        "--output",
        str(tmp_path / "odd.csv"),
        "--warehouse",
        str(warehouse.warehouse),
    )
    assert result.exit_code == 0 and (tmp_path / "odd.csv").read_text() == "x\n1\n"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("name", "message"),
    [
        # a typo gets the nearest names
        ("qrel", "error: no table or view named 'qrel' in {wh}; did you mean qrels"),
        # SQL where a name belongs is just an unknown name: nothing runs
        ('qrels"; drop table qrels; --', "error: no table or view named 'qrels\"; drop table qrels; --' in {wh}"),
        # a table macro is not a relation: its result goes out through peras sql and COPY
        ("certainty_split", "error: no table or view named 'certainty_split' in {wh}"),
    ],
)
def test_export_rejects_unknown_names(capsys, warehouse, tmp_path, name, message):
    before = snapshot(warehouse.warehouse)
    result = run_cli(
        capsys, "export", name, "--output", str(tmp_path / "x.parquet"), "--warehouse", str(warehouse.warehouse)
    )
    # export read the analysts' snapshot, which the import that built the fixture published
    assert result.exit_code == 2 and result.err.startswith(message.format(wh=snapshot_path(warehouse.warehouse)))
    assert snapshot(warehouse.warehouse) == before and not (tmp_path / "x.parquet").exists()


def file_digests(*paths: Path) -> list[str]:
    """The bytes of each file, hashed ('absent' when missing): a read must leave them identical."""
    return [hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else "absent" for path in paths]


# Every way out of `peras sql` tried, on a DuckDB file and on a DuckLake warehouse alike (tests/test_lake.py):
# {warehouse} is a file the warehouse is made of (the DuckDB file; a Parquet file of the lake), {snapshot} another
# file beside it (the analysts' snapshot; a new file in the lake's data path), {other} an unrelated DuckDB file.
ATTACKS = [
    # overwrite the warehouse with COPY
    ("copy (select 1 as x) to '{warehouse}'", f"error: peras sql runs queries (SELECT), not COPY statements {REFUSED}"),
    # or write beside it
    (
        "copy (select 1 as x) to '{snapshot}' (format parquet)",
        f"error: peras sql runs queries (SELECT), not COPY statements {REFUSED}",
    ),
    # the whole database, to a directory
    ("export database '{snapshot}.d'", f"error: peras sql runs queries (SELECT), not EXPORT statements {REFUSED}"),
    # attach another DuckDB file read-write and delete from it
    (
        "attach '{other}' as other (read_write); delete from other.t",
        f"error: peras sql runs queries (SELECT), not ATTACH statements {REFUSED}",
    ),
    # a write hidden in the text of a query
    (
        "select * from query('copy (select 1 as x) to ''{warehouse}''')",
        f"error: peras sql does not run query() {REFUSED}",
    ),
    # read any file on the machine
    ("select * from read_csv('/etc/passwd')", 'error: Permission Error: Cannot access file "/etc/passwd"'),
    # list the home directory
    ("select * from glob('~/*')", "error: Permission Error: Cannot access file"),
    # switch the protection off first
    ("set enable_external_access = true", f"error: peras sql runs queries (SELECT), not SET statements {REFUSED}"),
    # checkpoint: a write of the database file
    ("checkpoint", f"error: peras sql runs queries (SELECT), not CALL statements {REFUSED}"),
]


@pytest.mark.integration
@pytest.mark.parametrize(("query", "message"), ATTACKS)
def test_sql_can_change_and_read_nothing_outside_the_warehouse(capsys, warehouse, tmp_path, query, message):
    other = tmp_path / "other.duckdb"
    con = duckdb.connect(str(other))
    con.execute("create table t as select 1 as x")
    con.close()
    paths = {"warehouse": warehouse.warehouse, "snapshot": snapshot_path(warehouse.warehouse), "other": other}
    before = file_digests(*paths.values())
    result = sql(capsys, warehouse, query.format(**paths))
    assert result.exit_code == 2 and result.err.count("\n") == 1
    assert result.err.startswith(message.format(**paths))
    assert file_digests(*paths.values()) == before


@pytest.mark.integration
@pytest.mark.parametrize("target", ["warehouse", "wal", "snapshot", "symlink"])
def test_export_never_overwrites_the_warehouse_files(capsys, warehouse, tmp_path, target):
    protected = {
        "warehouse": warehouse.warehouse,
        "wal": wal_path(warehouse.warehouse),
        "snapshot": snapshot_path(warehouse.warehouse),
        "symlink": warehouse.warehouse,
    }[target]
    output = protected
    if target == "symlink":  # a link elsewhere that points at the warehouse
        output = tmp_path / "innocent.parquet"
        output.symlink_to(warehouse.warehouse)
    before = file_digests(warehouse.warehouse, snapshot_path(warehouse.warehouse))
    result = run_cli(capsys, "export", "qrels", "--output", str(output), "--warehouse", str(warehouse.warehouse))
    assert (result.exit_code, result.err) == (
        2,
        f"error: --output {output} is the warehouse's file {protected}: choose another file name\n",
    )
    assert file_digests(warehouse.warehouse, snapshot_path(warehouse.warehouse)) == before
    assert not wal_path(warehouse.warehouse).exists()


@pytest.mark.core
@pytest.mark.parametrize("command", ["sql", "export"])
def test_help_says_which_file_is_read(capsys, command):
    result = run_cli(capsys, command, "--help")
    assert "analysts' snapshot" in result.out and "<warehouse stem>.analyst.duckdb" in result.out


@pytest.mark.core
def test_warehouse_doc_is_generated_from_the_current_sql():
    assert DOC_PATH.read_text() == render(), "docs/warehouse.md is stale: run `python -m peras.warehouse_docs`"


@pytest.mark.core
def test_every_column_is_explained():
    assert undocumented() == []
