"""The one way SQL enters Python: files under sql/, loaded by name, parameters bound."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

from peras.paths import SQL_DIR

PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
RENDERED_VERSION = "1"  # part of every rendered template's key: change it when rendering itself changes


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
    values stay `$parameters`, bound when the statements run. What a template rendered is kept on disk, keyed by the
    template's text and the context's repr (`rendered_dir`): a command that renders what an earlier one did neither
    imports Jinja2 nor compiles the template (~0.08 s of a `peras judge`).
    """
    text = load_sql(name)
    described = repr(context)
    key = hashlib.sha256(f"{RENDERED_VERSION}\0{name}\0{text}\0{described}".encode()).hexdigest()
    kept = rendered_dir() / f"{key}.json"
    try:
        found = json.loads(kept.read_text(encoding="utf-8"))
        if isinstance(found, list) and all(isinstance(statement, str) for statement in found):
            return found
    except (OSError, ValueError):
        pass
    rendered = split_statements(_template(name).render(**context))
    if " at 0x" not in described:  # an object without a repr of its own would make a new key each time
        _keep(kept, json.dumps(rendered))
    return rendered


def rendered_dir() -> Path:
    """Where rendered templates are kept: <local cache>/sql (PERAS_LOCAL_CACHE_DIR, default ~/.cache/peras)."""
    return Path(os.environ.get("PERAS_LOCAL_CACHE_DIR") or Path.home() / ".cache" / "peras") / "sql"


def _keep(path: Path, text: str) -> None:
    """Write `path` whole or not at all (a reader never sees half a file); a cache that cannot be written is skipped."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        os.replace(name, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(name)


@cache
def _template(name: str) -> Any:
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=True)
    env.filters["ident"] = identifier
    env.filters["idents"] = lambda names, sep=", ", prefix="": sep.join(prefix + identifier(n) for n in names)
    return env.from_string(load_sql(name))


def _has_code(part: str) -> bool:
    return any(line.strip() and not line.strip().startswith("--") for line in part.splitlines())


def query_rows(con: Any, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """Run sql/<name>.sql and return its rows as dicts by column name (small results; no Polars)."""
    cursor = run_sql(con, name, params)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


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
