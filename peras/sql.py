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
    return split_statements(load_sql(name))


def run_sql(con: Any, name: str, params: dict[str, Any] | None = None) -> Any:
    """Execute every statement of sql/<name>.sql, binding to each the $parameters it names.

    Returns the connection positioned on the last statement's result.
    """
    return run_statements(con, statements(name), params)


def run_statements(con: Any, parts: list[str], params: dict[str, Any] | None = None) -> Any:
    """Execute statements (of a file, or of a rendered template), binding to each the $parameters it names."""
    params = params or {}
    result = con
    for statement in parts:
        result = _execute(con, statement, params)
    return result


IDENTIFIER = re.compile(r"^[a-z_][a-z0-9_]*$")


def identifier(name: str) -> str:
    """A table or column name a template may place in SQL: lower-case letters, digits, underscores; else refused."""
    if not isinstance(name, str) or not IDENTIFIER.match(name):
        raise ValueError(f"not a plain SQL identifier: {name!r}")
    return name


def split_statements(text: str) -> list[str]:
    """The statements of a SQL text, split at semicolons that end a line."""
    parts = [part.strip() for part in text.replace("\r\n", "\n").split(";\n")]
    return [part.rstrip(";") for part in parts if _has_code(part)]


def render_sql(name: str, context: dict[str, Any]) -> list[str]:
    """The statements of the template sql/<name>.sql rendered with `context` (Jinja2).

    Templates place only names in SQL (every table and column name passes `identifier`, through the `ident` filter);
    values stay `$parameters`, bound when the statements run.
    """
    return split_statements(_template(name).render(**context))


@cache
def _template(name: str) -> Any:
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)
    env.filters["ident"] = identifier
    env.filters["idents"] = lambda names, sep=", ", prefix="": sep.join(prefix + identifier(n) for n in names)
    return env.from_string(load_sql(name))


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
