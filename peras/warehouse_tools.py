"""The analyst's read-only access to the warehouse: ad-hoc SQL and exports of any table or view."""

from __future__ import annotations

import difflib
import functools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import polars as pl

from peras.errors import PerasError, UsageError
from peras.sql import query_frame
from peras.warehouse import LOCK_HINTS, connect

EXPORT_FORMATS = ("parquet", "csv")
# What analysts' SQL may be: queries. COPY, EXPORT, ATTACH, DETACH, CALL, SET, INSERT, ... are refused by their type,
# whatever a connection's settings would allow (on a lake, the data path is readable and so was writable).
QUERY_TYPES = ("SELECT", "EXPLAIN")
# Table functions that run SQL given as text: what they run is not the statement checked here.
SQL_TEXT_FUNCTIONS = frozenset({"query", "query_table"})
QUERY_HINT = "peras sql reads only the warehouse; save a result with --format csv > FILE"


def run_query(warehouse: Path, sql: str, wait_s: float = 120.0) -> pl.DataFrame | None:
    """Run `sql` on a read-only connection and return its result (None for a statement without one).

    The connection is closed before the caller prints anything, so a judge run waiting to publish waits
    only for the query itself.
    """
    with read_only(warehouse, wait_s) as con:
        try:
            relation = con.sql(sql)
            return None if relation is None else relation.pl()
        except duckdb.Error as exc:
            raise UsageError(one_line(exc)) from exc


def refuse_changes(con: duckdb.DuckDBPyConnection, text: str) -> None:
    """A UsageError unless every statement of `text` is a query that calls no function of a loaded extension.

    The lake's extensions add functions that change the lake or reach past it (ducklake_cleanup_old_files deletes
    data files, ducklake_merge_adjacent_files writes them, postgres_query runs SQL on the catalog's server): any
    function `con` has that a bare DuckDB has not is refused by name, and so are query() and query_table().
    """
    try:
        statements = con.extract_statements(text)
    except duckdb.Error as exc:
        raise UsageError(one_line(exc)) from exc
    for statement in statements:
        kind = statement.type.name
        # A PIVOT comes as a SELECT after a CREATE TYPE of the pivoted values that DuckDB derived (no text of its own)
        derived = kind == "CREATE" and not statement.query.strip()
        if kind not in QUERY_TYPES and not derived:
            raise UsageError(f"peras sql runs queries (SELECT), not {kind} statements ({QUERY_HINT})")
    refused = (extension_functions(con) | SQL_TEXT_FUNCTIONS) & called_names(text)
    if refused:
        raise UsageError(f"peras sql does not run {', '.join(sorted(refused))}() ({QUERY_HINT})")


def called_names(text: str) -> set[str]:
    """The name before every `(` of `text` (functions and table functions called), lower case, without quotes."""
    tokens = duckdb.tokenize(text)
    ends = [start for start, _ in tokens[1:]] + [len(text)]
    words = [text[start:end].strip() for (start, _), end in zip(tokens, ends, strict=True)]
    return {
        words[i].strip('"').lower()
        for i in range(len(tokens) - 1)
        if tokens[i][1] == duckdb.token_type.identifier and words[i + 1] == "("
    }


def extension_functions(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Names of the functions `con` has that a bare in-memory DuckDB has not (those its extensions added)."""
    return function_names(con) - bare_functions()


@functools.cache
def bare_functions() -> frozenset[str]:
    """Names of a bare in-memory DuckDB's functions (and macros)."""
    with duckdb.connect() as con:
        return frozenset(function_names(con))


def function_names(con: duckdb.DuckDBPyConnection) -> set[str]:
    """Names of every function and macro `con` knows, lower case."""
    return {name.lower() for (name,) in query_frame(con, "warehouse/select_function_names").iter_rows()}


@contextmanager
def read_only(warehouse: Path, wait_s: float) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection; a write lock held past `wait_s` becomes one clear error."""
    try:
        with connect(warehouse, read_only=True, wait_s=wait_s) as con:
            yield con
    except duckdb.IOException as exc:
        if not any(hint in str(exc) for hint in LOCK_HINTS):
            raise
        raise PerasError(
            f"{warehouse} stayed locked by another process for {wait_s:.0f} s (a stage publishing?); try again"
        ) from exc


def relations(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """Every table and view: name -> 'table' or 'view'."""
    frame = query_frame(con, "warehouse/select_relations")
    return dict(zip(frame["relation_name"], frame["relation_kind"], strict=True))


def export_relation(warehouse: Path, name: str, fmt: str, output: Path, wait_s: float = 120.0) -> int:
    """Write table or view `name` to `output` as Parquet or CSV (with a header); return the rows written."""
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"unknown export format {fmt!r}: choose from {', '.join(EXPORT_FORMATS)}")
    output.parent.mkdir(parents=True, exist_ok=True)
    with read_only(warehouse, wait_s) as con:
        known = relations(con)
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else " (`peras sql 'show tables'` lists them)"
            raise UsageError(f"no table or view named {name!r} in {warehouse}{hint}")
        # An identifier cannot be a bound parameter. `name` is one of the names information_schema just
        # listed, and doubling any quote inside it keeps it one quoted identifier: this is the only place
        # a name is formatted into SQL. The path is bound.
        relation = '"' + name.replace('"', '""') + '"'
        options = "format parquet, compression zstd" if fmt == "parquet" else "format csv, header true"
        statement = f"copy (select * from {relation}) to $path ({options})"  # noqa: S608 - see above
        staged = output.with_name(output.name + ".partial")  # renamed in place once whole
        try:
            row = con.execute(statement, {"path": str(staged)}).fetchone()
            staged.replace(output)
        except (duckdb.Error, OSError) as exc:
            staged.unlink(missing_ok=True)
            raise PerasError(f"cannot export {name}: {one_line(exc)}") from exc
    return int(row[0]) if row else 0


def infer_format(output: Path | None, fmt: str | None) -> str:
    """--format, else the output file's suffix, else parquet."""
    if fmt:
        return fmt
    suffix = output.suffix.lower().lstrip(".") if output else ""
    return suffix if suffix in EXPORT_FORMATS else "parquet"


def one_line(exc: Exception) -> str:
    """DuckDB's message on one line: its first line, plus its 'Did you mean' hint if any."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    hints = [line for line in lines[1:] if line.startswith("Did you mean")]
    return " ".join([lines[0], *hints])
