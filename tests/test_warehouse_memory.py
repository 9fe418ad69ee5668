"""Issue 13, memory flat with the run and the warehouse: how PERAS opens the file (row groups of 16,384 rows),
the two run tables without key indexes (V520), and writes capped in memory with one wider second try.

The peak RSS of whole judge runs at three sizes is a benchmark (bench/bench_engine.py), not a test.
"""

from __future__ import annotations

import subprocess
import sys

import duckdb
import pytest

from peras import warehouse_migrations
from peras.errors import UsageError
from peras.sql import run_sql
from peras.warehouse import ROW_GROUP_ROWS, bounded, connect, migrate, migrations, transaction

pytestmark = pytest.mark.core

RUN_TABLES = ("judgments", "llm_requests")


def keys(con: duckdb.DuckDBPyConnection, table: str) -> list[str]:
    return [
        row[0]
        for row in con.execute(
            "select constraint_type from duckdb_constraints() where table_name = ? "
            "and constraint_type in ('PRIMARY KEY', 'UNIQUE') order by all",
            [table],
        ).fetchall()
    ]


def row_group_sizes(con: duckdb.DuckDBPyConnection) -> list[int]:
    return [
        row[0]
        for row in con.execute(
            "select max(count) from pragma_storage_info('t') where column_id = 0 group by row_group_id order by all"
        ).fetchall()
    ]


def fill(con: duckdb.DuckDBPyConnection, start: int) -> None:
    if start == 0:
        con.execute("create table t (i integer, s varchar)")
    con.execute("insert into t select i, repeat('x', 100) from range(?, ?) r(i)", [start, start + 15_000])


def test_a_table_written_through_connect_has_row_groups_of_16384_rows(tmp_path):
    """DuckDB rewrites a table's last row group whole at each checkpoint: at its default 122,880 rows, every
    shard load of a long run cost memory in proportion to the run. 45,000 rows in three commits, through
    `connect`: groups of at most 16,384 rows; through a plain duckdb.connect a group grows to 30,000."""
    ours, plain = tmp_path / "ours.duckdb", tmp_path / "plain.duckdb"
    for start in (0, 15_000, 30_000):
        with connect(ours) as con:
            fill(con, start)
        con = duckdb.connect(str(plain))
        fill(con, start)
        con.close()
    with connect(ours, read_only=True) as con:
        assert row_group_sizes(con) == [15_000, 15_000, 15_000]  # none grows past ROW_GROUP_ROWS
        assert ROW_GROUP_ROWS == 16_384
    con = duckdb.connect(str(plain), read_only=True)
    assert row_group_sizes(con) == [15_000, 30_000]  # the second grew over two commits, past 16,384
    con.close()


def test_connections_of_one_process_share_the_file_and_other_processes_wait(tmp_path):
    """Two connections at once in one process (the engine's reader and a writer's check) share one instance, as
    duckdb.connect(path) did; another process is still refused while either is open."""
    path = tmp_path / "w.duckdb"
    with connect(path) as first, connect(path) as second:
        first.execute("create table t (i integer)")
        second.execute("insert into t values (1)")
        assert first.execute("select count(*) from t").fetchone() == (1,)
        other = subprocess.run(
            [sys.executable, "-c", f"import duckdb; duckdb.connect({str(path)!r})"], capture_output=True, text=True
        )
        assert other.returncode != 0 and "Could not set lock" in other.stderr
    with connect(path, read_only=True) as reader:
        assert reader.execute("select current_database(), count(*) from t").fetchone() == ("peras", 1)


def test_a_locked_file_is_still_one_line_naming_the_wait(tmp_path):
    path = tmp_path / "w.duckdb"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"import duckdb, time; c = duckdb.connect({str(path)!r}); print('held', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(UsageError, match=r"is locked by .*still after 0 s"), connect(path, wait_s=0.2):
            pass
    finally:
        holder.kill()
        holder.wait()


def test_v520_drops_the_keys_of_the_run_tables_and_keeps_their_rows(tmp_path, monkeypatch):
    """A warehouse made before V520 (keys on both tables) keeps every row, column and check; only the two key
    indexes go. A duplicate is then refused by the judge gate (sql/judge/assert_no_copies.sql), not by an index."""
    path = tmp_path / "w.duckdb"
    every = migrations()
    monkeypatch.setattr(warehouse_migrations, "migrations", lambda: [m for m in every if m[0] < 520])
    up_to_v520 = [m for m in every if m[0] <= 520]  # later migrations are not this test's
    with connect(path) as con:
        migrate(con)
        assert [keys(con, table) for table in RUN_TABLES] == [["PRIMARY KEY"], ["PRIMARY KEY"]]
        con.execute(
            "insert into llm_requests (request_id, model, backend, prompt_hash, purpose, params, messages, attempts, "
            "attempt_texts, parse_status, created_at) values ('r1', 'm', 'b', 'h', 'label', '{}', '[]', 1, '[]', "
            "'ok', '2026-11-23 00:00:00')"
        )
        con.execute(
            "insert into judgments (run_id, query_id, doc_id, personality, cot, confidence_method, label, status, "
            "judged_at, label_request_id) values ('run', 'q', 'd', 'default', false, 'verbalized', 2, 'ok', "
            "'2026-11-23 00:00:00', 'r1')"
        )
        columns_before = {t: [c[:3] for c in con.execute(f"describe {t}").fetchall()] for t in RUN_TABLES}
    monkeypatch.setattr(warehouse_migrations, "migrations", lambda: up_to_v520)
    with connect(path) as con:
        assert migrate(con) == [520]
        assert [keys(con, table) for table in RUN_TABLES] == [[], []]
        assert {t: [c[:3] for c in con.execute(f"describe {t}").fetchall()] for t in RUN_TABLES} == columns_before
        assert con.execute("select request_id, parse_status from llm_requests").fetchall() == [("r1", "ok")]
        assert con.execute("select query_id, label, label_request_id from judgments").fetchall() == [("q", 2, "r1")]
        with pytest.raises(duckdb.ConstraintException, match="CHECK constraint"):
            con.execute(
                "insert into judgments (run_id, query_id, doc_id, personality, cot, confidence_method, label, "
                "status, judged_at) values ('run', 'q2', 'd', 'default', false, 'verbalized', 7, 'ok', now())"
            )
        with pytest.raises(duckdb.ConstraintException, match="NOT NULL"):
            con.execute(
                "insert into judgments (run_id, query_id, doc_id, personality, cot, confidence_method, status, "
                "judged_at) values ('run', null, 'd', 'default', false, 'verbalized', 'ok', now())"
            )


def huge_list(con: duckdb.DuckDBPyConnection) -> int:
    """A statement that needs ~240 MB DuckDB cannot spill (one list of 30 million integers)."""
    return int(con.execute("select len(list(i)) from range(30_000_000) r(i)").fetchone()[0])


def test_a_write_that_runs_out_of_memory_under_the_cap_is_rolled_back_and_run_once_more_with_more(tmp_path, caplog):
    path = tmp_path / "w.duckdb"
    with connect(path) as con:
        con.execute("create table written (try integer, n bigint)")
    tries: list[str] = []

    def write(limits: str) -> int:
        tries.append(limits)
        with connect(path) as con:
            run_sql(con, limits)
            with transaction(con):
                con.execute("insert into written values (?, null)", [len(tries)])
                n = huge_list(con)
                con.execute("update written set n = ? where try = ?", [n, len(tries)])
        return n

    assert bounded(write) == 30_000_000
    assert tries == ["warehouse/set_memory_tight", "warehouse/set_memory_wide"]
    assert "ran out of memory under its cap" in caplog.text
    with connect(path, read_only=True) as con:
        assert con.execute("select try, n from written").fetchall() == [(2, 30_000_000)]  # the first try: nothing


def test_a_write_within_the_cap_runs_once(tmp_path):
    tries: list[str] = []

    def write(limits: str) -> str:
        tries.append(limits)
        with connect(tmp_path / "w.duckdb") as con:
            run_sql(con, limits)
            return str(con.execute("select current_setting('memory_limit')").fetchone()[0])

    assert bounded(write) == "91.5 MiB"
    assert tries == ["warehouse/set_memory_tight"]
