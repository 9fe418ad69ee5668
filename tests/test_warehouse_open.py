"""Opening a warehouse (peras/warehouse.py): the views are created when their files changed or a migration was just
applied, not on every open (issue 35: about a second of every command's fixed cost on 2 cores)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from peras import warehouse, warehouse_views
from peras.sql import view_files
from peras.warehouse import connect, kept_open, open_current, open_migrated

pytestmark = pytest.mark.core


def stamps(path: Path) -> int:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("select count(*) from schema_views").fetchone()[0]


def test_views_are_created_once_then_again_only_when_their_files_change(tmp_path, monkeypatch):
    path = tmp_path / "w.duckdb"
    with open_migrated(path):  # new: every migration applied, so the views are created
        pass
    assert stamps(path) == 1
    created: list[bool] = []
    apply_views = warehouse_views.apply_views

    def recorded(con: duckdb.DuckDBPyConnection, temporary: bool = False) -> None:
        created.append(temporary)
        apply_views(con, temporary)

    monkeypatch.setattr(warehouse_views, "apply_views", recorded)
    for _ in range(3):
        with open_migrated(path):
            pass
        with open_current(path):
            pass
    assert (created, stamps(path)) == ([], 1)
    # a view file changed (new code): the writer re-creates the views, a reader sees the new ones as temporary
    extra = tmp_path / "views" / "zz_open_test.sql"
    extra.parent.mkdir()
    extra.write_text("select 42 as answer\n", encoding="utf-8")
    files = view_files()
    monkeypatch.setattr(warehouse_views, "view_files", lambda: [*files, extra])
    with open_current(path) as con:
        assert con.execute("select answer from zz_open_test").fetchall() == [(42,)]
    assert created == [True]
    with open_migrated(path) as con:
        assert con.execute("select answer from zz_open_test").fetchall() == [(42,)]
    assert (created, stamps(path)) == ([True, False], 2)
    with open_migrated(path):
        pass
    with open_current(path):
        pass
    assert (created, stamps(path)) == ([True, False], 2)


def test_a_migration_applied_recreates_the_views_even_with_the_same_files(tmp_path):
    path = tmp_path / "w.duckdb"
    with open_migrated(path) as con:
        con.execute("delete from schema_migrations where version = 535")  # V535__schema_views.sql: idempotent
        con.execute("drop view pair_texts")
    with open_migrated(path) as con:  # that migration is applied again, then every view
        assert con.execute("select count(*) from pair_texts").fetchall() == [(0,)]
    assert stamps(path) == 2


def other_process_opens(path: Path) -> bool:
    """Whether another process can open the file for writing now (the lock is free)."""
    code = "import duckdb, sys; duckdb.connect(sys.argv[1]).close()"
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True).returncode == 0


def test_steps_in_kept_open_share_one_migrated_open_and_free_the_file_after(tmp_path, monkeypatch):
    path = tmp_path / "w.duckdb"
    with open_migrated(path):
        pass
    checks: list[int] = []
    migrate = warehouse.migrate
    monkeypatch.setattr(warehouse, "migrate", lambda con: checks.append(1) or migrate(con))
    with kept_open(path):
        assert {path.resolve(): 1} == warehouse._KEPT
        with open_migrated(path) as con:
            con.execute("create table kept_steps (step integer)")
            con.execute("insert into kept_steps values (1)")
        with connect(path, read_only=True) as con:  # served by the kept instance (DuckDB allows one per file)
            assert con.execute("select step from kept_steps").fetchall() == [(1,)]
        with open_migrated(path) as con:
            con.execute("insert into kept_steps values (2)")
        assert not other_process_opens(path)
    assert (checks, warehouse._KEPT, other_process_opens(path)) == ([1], {}, True)
    with open_migrated(path) as con:  # not kept: checked again
        assert con.execute("select list(step order by step) from kept_steps").fetchall() == [([1, 2],)]
    assert checks == [1, 1]
