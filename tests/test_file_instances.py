"""A process keeps one DuckDB instance per warehouse file and mode, and attaches the file only while a connection
uses it (peras/file_instances.py): closing the last connection lets go of the lock and checkpoints, as destroying
the instance did, and nothing one connection set on the instance reaches the next."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from peras import file_instances
from peras.sql import run_sql
from peras.warehouse import MEMORY_TIGHT, connect, lock_down, wal_path

pytestmark = pytest.mark.core

OTHER_PROCESS = (
    "import sys, duckdb\n"
    "con = duckdb.connect(sys.argv[1])\n"
    "con.execute('insert into t values (2)')\n"
    "print(con.execute('select count(*) from t').fetchone()[0])\n"
)


@pytest.fixture
def warehouse(tmp_path: Path) -> Path:
    path = tmp_path / "w.duckdb"
    with connect(path) as con:
        con.execute("create table t (i integer)")
        con.execute("insert into t values (1)")
    return path


def setting(path: Path, name: str) -> object:
    with connect(path) as con:
        return con.execute("select current_setting($name)", {"name": name}).fetchone()[0]  # type: ignore[index]


def test_closing_the_last_connection_checkpoints_and_lets_another_process_write_at_once(warehouse: Path):
    with connect(warehouse) as con:
        con.execute("insert into t values (1)")
        assert wal_path(warehouse).exists()  # committed, not checkpointed yet
    assert not wal_path(warehouse).exists()
    done = subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(warehouse)], capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "3")
    with connect(warehouse, read_only=True) as con:  # and this process sees what the other one wrote
        assert con.execute("select count(*) from t").fetchone() == (3,)


def test_a_write_s_memory_cap_does_not_reach_the_next_connection(warehouse: Path):
    default_limit, default_threads = setting(warehouse, "memory_limit"), setting(warehouse, "threads")
    assert default_threads != 1 or os.cpu_count() == 1
    with connect(warehouse) as con:
        run_sql(con, MEMORY_TIGHT)
        assert con.execute("select current_setting('threads')").fetchone() == (1,)
        assert setting(warehouse, "threads") == 1  # shared while it is open: DuckDB settings are the instance's
    assert setting(warehouse, "threads") == default_threads
    assert setting(warehouse, "memory_limit") == default_limit


def test_a_locked_down_instance_is_made_again_for_the_next_connection(warehouse: Path):
    with connect(warehouse, read_only=True) as con:
        lock_down(con)
        assert con.execute("select current_setting('enable_external_access')").fetchone() == (False,)
    with connect(warehouse, read_only=True) as con:
        assert con.execute("select current_setting('enable_external_access')").fetchone() == (True,)
        assert con.execute("select count(*) from t").fetchone() == (1,)


def test_the_file_stays_attached_while_any_connection_of_the_process_uses_it(warehouse: Path):
    opened, closing = threading.Event(), threading.Event()
    seen: list[tuple[int, ...]] = []

    def other() -> None:
        with connect(warehouse) as con:
            opened.set()
            closing.wait(5)
            seen.append(con.execute("select count(*) from t").fetchone())  # type: ignore[arg-type]

    thread = threading.Thread(target=other)
    thread.start()
    assert opened.wait(5)
    with connect(warehouse) as con:
        con.execute("insert into t values (5)")
    closing.set()  # this thread's connection closed; the other one still reads the file
    thread.join(5)
    assert seen == [(2,)]
    done = subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(warehouse)], capture_output=True, text=True)
    assert (done.returncode, done.stdout.strip()) == (0, "3")


def test_few_instances_are_kept_without_a_file(tmp_path: Path):
    for index in range(file_instances.IDLE_INSTANCES + 6):
        with connect(tmp_path / f"w{index}.duckdb") as con:
            con.execute("create table t (i integer)")
    idle = [i for i in file_instances._INSTANCES.values() if not i.users and not i.attached]
    assert len(idle) <= file_instances.IDLE_INSTANCES
    assert not any(i.attached for i in file_instances._INSTANCES.values())


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
def test_a_forked_child_makes_its_own_instance(warehouse: Path):
    with connect(warehouse, read_only=True) as con:  # the parent keeps an instance for the file
        assert con.execute("select count(*) from t").fetchone() == (1,)
    pid = os.fork()
    if pid == 0:  # the child: its own instance, the parent's left alone
        code = 1
        try:
            with connect(warehouse) as con:
                con.execute("insert into t values (7)")
            code = 0 if file_instances._LEFT_BY_PARENT else 3  # the parent's instance was set aside
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    with connect(warehouse, read_only=True) as con:
        assert con.execute("select count(*) from t").fetchone() == (2,)
