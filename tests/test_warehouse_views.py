"""Issue 49: views are created in dependency order, each once, never by retrying (peras/warehouse_views.py); a view
whose tables a declared stage makes is left out until they exist; a view set is testable on a tiny inline table on an
in-memory DuckDB (no flow, no Prefect server)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from peras import warehouse_views
from peras.warehouse_views import apply_views, apply_views_needing, create_views, in_order, read_view_files

pytestmark = pytest.mark.core


def view_folder(tmp_path: Path, files: dict[str, str]) -> list[Path]:
    """View files under tmp_path/<stage>/views, one per (stage/name, text)."""
    paths = []
    for name, text in files.items():
        path = tmp_path / f"{name.split('/')[0]}" / "views" / f"{name.split('/')[1]}.sql"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


class Recorded:
    """A DuckDB connection that records every statement it runs (to show each view is created once)."""

    def __init__(self) -> None:
        self.con = duckdb.connect()
        self.statements: list[str] = []

    def execute(self, statement: str, *args: object) -> duckdb.DuckDBPyConnection:
        self.statements.append(statement.split("\n")[0])
        return self.con.execute(statement, *args)


def test_views_are_created_each_once_in_the_order_they_read_each_other(tmp_path):
    # named against their order: aa reads mm, mm reads the macro zz_of; a name inside a comment is no dependency
    paths = view_folder(
        tmp_path,
        {
            "s/aa": "-- reads bb only in this comment\nselect n + 1 as n from mm\n",
            "s/bb": "select 1 as n\n",
            "s/mm": "select * from zz_of(2)\n",
            "t/zz_of": "create or replace macro zz_of(k) as table select k as n\n",
        },
    )
    assert [(f.name, sorted(f.reads)) for f in read_view_files(paths)] == [
        ("aa", ["mm"]),
        ("bb", []),
        ("mm", ["zz_of"]),
        ("zz_of", []),
    ]
    con = Recorded()
    assert apply_views(con, paths=paths) == ["zz_of", "mm", "aa", "bb"]  # type: ignore[arg-type]
    assert con.statements[1:] == [  # after the one look-up of the tables there are
        "create or replace macro zz_of(k) as table select k as n",
        "create or replace view mm as",
        "create or replace view aa as",
        "create or replace view bb as",
    ]
    assert con.con.execute("select n from aa").fetchall() == [(3,)]


def test_a_cycle_or_a_missing_table_is_one_line_naming_the_files(tmp_path):
    cycle = view_folder(tmp_path, {"s/p": "select * from q\n", "s/q": "select * from p\n"})
    with pytest.raises(RuntimeError, match=r"^views read each other in a cycle \(p -> q -> p\): break it"):
        in_order(read_view_files(cycle))
    [lost] = view_folder(tmp_path, {"u/lost": "select * from nowhere_table\n"})
    with pytest.raises(RuntimeError) as raised:
        apply_views(duckdb.connect(), paths=[lost])
    assert str(raised.value).startswith(f"cannot create view from {lost}: Catalog Error: Table with name nowhere_table")
    assert str(raised.value).endswith(
        "(if nowhere_table is a table that may not exist yet, name it in a `-- needs:` line of the file)"
    )


def test_a_view_waits_for_the_tables_it_needs_and_is_created_with_them(tmp_path, monkeypatch):
    """What a declared stage's first run does (tasks/engine/runs.py, claim_run): its tables, then the views that
    name them in `-- needs:` and the views that read those."""
    paths = view_folder(
        tmp_path,
        {
            "yes/yes_share": "-- needs: yes_answers\nselect avg(answer::int) as share from yes_answers\n",
            "yes/yes_percent": "select 100 * share as percent from yes_share\n",
            "other/plain": "select 7 as n\n",
        },
    )
    monkeypatch.setattr(warehouse_views, "view_files", lambda: paths)
    con = duckdb.connect()
    assert apply_views(con) == ["plain"]  # the warehouse opens: yes_share and what reads it are left out
    con.execute("create table yes_answers as select * from (values (true), (false), (true), (true)) t(answer)")
    assert apply_views_needing(con, ("yes_runs",)) == []
    assert apply_views_needing(con, ("yes_runs", "yes_answers")) == ["yes_share", "yes_percent"]
    assert apply_views_needing(con, ("yes_answers",)) == []  # each once: they exist now
    assert con.execute("select percent from yes_percent").fetchall() == [(75.0,)]


def test_one_view_of_a_stage_on_a_tiny_inline_table_in_memory():
    """recognize_shares (sql/recognize/views) over two inline tables standing in for the declared stage's."""
    con = duckdb.connect()
    con.execute(
        "create table recognize_runs as select * from (values ('R1', 'r', 'J', 'rec', 'published'),"
        " ('R2', 'x', 'J', 'rec', 'running')) t(recognize_run_id, run_name, judge_run, model, status)"
    )
    con.execute(
        "create table recognize_states as select * from (values"
        " ('R1', 'HN', 'neuroticism', 'ok', 'high'), ('R1', 'HN', 'neuroticism', 'ok', 'high'),"
        " ('R1', 'HN', 'neuroticism', 'ok', 'low'), ('R1', 'HN', 'neuroticism', 'parse_failure', null),"
        " ('R2', 'HN', 'neuroticism', 'ok', 'low')) t(recognize_run_id, personality, dimension, status, level)"
    )
    assert create_views(con, "recognize_shares") == ["recognize_shares"]
    assert con.execute(
        "select run_name, n_answers, n_read, n_failures, share_high, lean, verdict from recognize_shares"
    ).fetchall() == [("r", 4, 3, 1, 2 / 3, 1 / 3, "high")]
