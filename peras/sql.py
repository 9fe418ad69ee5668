"""The one way SQL enters Python: files under sql/, loaded by name, parameters bound."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

from peras.paths import SQL_DIR

PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


@cache
def load_sql(name: str) -> str:
    """Return the text of sql/<name>.sql (name like 'marts/publish_collection')."""
    path = SQL_DIR / f"{name}.sql"
    if not path.is_file():
        raise FileNotFoundError(f"no SQL file {path}")
    return path.read_text(encoding="utf-8")


def view_files() -> list[Path]:
    """Every view definition: each stage's `sql/<stage>/views/*.sql` (created in any order that works)."""
    return sorted(SQL_DIR.glob("*/views/*.sql"))


def statements(name: str) -> list[str]:
    """The statements of sql/<name>.sql, split at semicolons that end a line."""
    text = load_sql(name)
    parts = [part.strip() for part in text.replace("\r\n", "\n").split(";\n")]
    return [part.rstrip(";") for part in parts if _has_code(part)]


def run_sql(con: Any, name: str, params: dict[str, Any] | None = None) -> Any:
    """Execute every statement of sql/<name>.sql, binding to each the $parameters it names.

    Returns the connection positioned on the last statement's result.
    """
    params = params or {}
    result = con
    for statement in statements(name):
        result = _execute(con, statement, params)
    return result


def _has_code(part: str) -> bool:
    return any(line.strip() and not line.strip().startswith("--") for line in part.splitlines())


def query_frame(con: Any, name: str, params: dict[str, Any] | None = None) -> Any:
    """Run sql/<name>.sql and return its result as a Polars DataFrame."""
    import polars as pl

    params = params or {}
    *head, last = statements(name)
    for statement in head:
        _execute(con, statement, params)
    names = set(PARAMETER.findall(last))
    relation = con.sql(last, params={k: v for k, v in params.items() if k in names} or None)
    return pl.from_arrow(relation.to_arrow_table())


def _execute(con: Any, statement: str, params: dict[str, Any]) -> Any:
    names = set(PARAMETER.findall(statement))
    used = {key: value for key, value in params.items() if key in names}
    return con.execute(statement, used) if used else con.execute(statement)
