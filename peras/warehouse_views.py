"""The views and macros of sql/<stage>/views: created from their files, recorded by a fingerprint of those files
(peras/warehouse.py re-exports every name)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from peras import lake
from peras.sql import view_files
from peras.warehouse_writes import first_line, now, retrying, transaction

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MISSING_TABLE = re.compile(r"(?:Table|View) with name (?P<name>\w+) does not exist")
CREATE_PERSISTENT = re.compile(r"^(\s*create\s+or\s+replace\s+)(macro|view)\b", re.IGNORECASE | re.MULTILINE)


def views_fingerprint() -> str:
    """sha256 over the view and macro files' names and bytes (sql/*/views), in name order."""
    return hashlib.sha256(
        b"".join(path.name.encode() + b"\0" + path.read_bytes() for path in sorted(view_files()))
    ).hexdigest()


def store_views(con: duckdb.DuckDBPyConnection, force: bool = False) -> None:
    """(Re)create the views when sql/*/views changed since they were created (or, on a file, `force`: a migration
    was just applied and may have replaced a table they read). On a lake in one transaction: one catalog commit
    instead of one per view (a new lake's views: 24-35 s -> 2 s on a loaded 2-core machine)."""
    fingerprint = views_fingerprint()
    if lake.in_lake(con):  # V535 is file-only: a lake's hosts race to this table, so it is made here, retried
        schema = "create table if not exists schema_views (fingerprint varchar not null, applied_at timestamp not null)"
        retrying(lambda: con.execute(schema))
    if stored_views_fingerprint(con) == fingerprint and not force:
        return
    retrying(lambda: _apply_views_together(con) if lake.in_lake(con) else apply_views(con))
    stamp = {"fingerprint": fingerprint, "applied_at": now()}
    try:
        con.execute("insert into schema_views values ($fingerprint, $applied_at)", stamp)
    except duckdb.CatalogException:
        return  # migrated only up to a version before V535 (a test of an older schema): nowhere to record it


def _apply_views_together(con: duckdb.DuckDBPyConnection) -> None:
    """`apply_views` in one transaction: on a lake, one catalog commit instead of one per view."""
    with transaction(con):
        apply_views(con)


def stored_views_fingerprint(con: duckdb.DuckDBPyConnection) -> str | None:
    """The fingerprint the views were last created from; None if never (or before V535 made schema_views)."""
    try:
        stored = con.execute("select fingerprint from schema_views order by applied_at desc limit 1").fetchall()
    except duckdb.CatalogException:
        return None
    return str(stored[0][0]) if stored else None


@dataclass(frozen=True)
class ViewFile:
    """One file of sql/<stage>/views: the view or macro named after it, what it reads, how it is created."""

    path: Path
    name: str
    reads: frozenset[str]  # the other views and macros its SQL names (derived: every word of it, strings included)
    needs: tuple[str, ...]  # the tables of its `-- needs:` line: without one of them it is left out, not failed

    def statement(self, temporary: bool) -> str:
        """The statement that creates it (a macro file runs as written; `temporary`: in the temp schema)."""
        text = self.path.read_text(encoding="utf-8")
        if _strip_comments(text).lstrip().lower().startswith("create"):
            return CREATE_PERSISTENT.sub(r"\1temp \2", text) if temporary else text
        return f"create or replace {'temp ' if temporary else ''}view {self.name} as\n{text}"


def read_view_files(paths: list[Path]) -> list[ViewFile]:
    """The files as ViewFiles, each `reads` narrowed to the names of the others."""
    texts = {path.stem: path.read_text(encoding="utf-8") for path in paths}
    names = set(texts)
    return [
        ViewFile(path, path.stem, frozenset(_words(texts[path.stem]) & names - {path.stem}), _needs(texts[path.stem]))
        for path in paths
    ]


def in_order(files: list[ViewFile]) -> list[ViewFile]:
    """The files in dependency order (each after every one it reads; otherwise by name); a cycle is refused."""
    by_name = {file.name: file for file in files}
    done: dict[str, ViewFile] = {}
    visiting: list[str] = []

    def visit(file: ViewFile) -> None:
        if file.name in done:
            return
        if file.name in visiting:
            cycle = " -> ".join([*visiting[visiting.index(file.name) :], file.name])
            raise RuntimeError(f"views read each other in a cycle ({cycle}): break it in one of their files")
        visiting.append(file.name)
        for name in sorted(file.reads):
            visit(by_name[name])
        visiting.pop()
        done[file.name] = file

    for file in sorted(files, key=lambda file: file.name):
        visit(file)
    return list(done.values())


def apply_views(
    con: duckdb.DuckDBPyConnection,
    temporary: bool = False,
    paths: list[Path] | None = None,
    only_missing: bool = False,
) -> list[str]:
    """Create the views of sql/<stage>/views (or of `paths`), each once, in dependency order; their names.

    A view is named after its file; a file that starts with `create` (a macro) runs as written. What a view reads
    among the others is found in its SQL (`in_order`); the tables it may find missing are named in a
    `-- needs: table, ...` line: while one is missing (a declared stage's table before its first run, a warehouse
    whose migrations stop before it) the view is left out, with every view that reads it, and created with those
    tables (`apply_views_needing`). Any other failure is one line naming the file. `temporary` creates them in the
    connection's temporary schema, where they shadow the stored ones: how a read-only reader gets the definitions
    of the code it runs without writing anything. `only_missing` skips views that already exist.
    """
    files = in_order(read_view_files(view_files() if paths is None else paths))
    have = _relations(con)
    created: list[str] = []
    left_out: set[str] = set()
    for file in files:
        if any(table not in have for table in file.needs) or file.reads & left_out:
            left_out.add(file.name)
        elif not (only_missing and file.name in have):
            _create(con, file, temporary)
            created.append(file.name)
    return created


def apply_views_needing(con: duckdb.DuckDBPyConnection, tables: tuple[str, ...] | list[str]) -> list[str]:
    """Create the stored views that need one of `tables` in their `-- needs:` line and do not exist yet, with the
    views that read them: what creating a declared stage's tables calls (tasks/engine/runs.py, `claim_run`)."""
    files = read_view_files(view_files())
    wanted = {file.name for file in files if set(file.needs) & set(tables)}
    grown = True
    while grown:  # every view that reads a wanted one is wanted too
        more = {file.name for file in files if file.reads & wanted} - wanted
        grown, wanted = bool(more), wanted | more
    if not wanted:
        return []
    return apply_views(con, paths=[file.path for file in files if file.name in wanted], only_missing=True)


def create_views(con: duckdb.DuckDBPyConnection, *names: str, temporary: bool = False) -> list[str]:
    """Create the views named (a view, or a stage: every view of its `sql/<stage>/views`), with every view they read
    that `con` lacks; their names, in the order created. How a test creates a view set over a tiny inline table on
    an in-memory DuckDB, with no flow and no Prefect server (a table standing in for a view it reads is kept)."""
    files = read_view_files(view_files())
    by_name = {file.name: file for file in files}
    wanted = {file.name for file in files if file.name in names or file.path.parent.parent.name in names}
    have = _relations(con)
    pending = list(wanted)
    while pending:
        for name in by_name[pending.pop()].reads - wanted - have:
            wanted.add(name)
            pending.append(name)
    return apply_views(con, temporary, [by_name[name].path for name in sorted(wanted)])


def _create(con: duckdb.DuckDBPyConnection, file: ViewFile, temporary: bool) -> None:
    try:
        con.execute(file.statement(temporary))
    except duckdb.CatalogException as exc:
        missing = MISSING_TABLE.search(str(exc))
        hint = (
            f" (if {missing['name']} is a table that may not exist yet, name it in a `-- needs:` line of the file)"
            if missing
            else ""
        )
        raise RuntimeError(f"cannot create view from {file.path}: {first_line(exc)}{hint}") from None


def _relations(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Every table and view name `con` sees (temporary ones included)."""
    return {row[0] for row in con.execute("select table_name from information_schema.tables").fetchall()}


def _needs(text: str) -> tuple[str, ...]:
    """The tables named in a file's `-- needs: table, ...` lines."""
    return tuple(
        name.strip()
        for line in text.splitlines()
        if line.startswith("-- needs:")
        for name in line.removeprefix("-- needs:").split(",")
        if name.strip()
    )


def _words(text: str) -> set[str]:
    """Every identifier-like word of the SQL outside comments (a macro's default `'metrics_cells'` included: it
    names the view the macro reads when called)."""
    code = "\n".join(line.split("--", 1)[0] for line in text.splitlines())
    return {word.lower() for word in WORD.findall(code)}


def _strip_comments(text: str) -> str:
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--"))
