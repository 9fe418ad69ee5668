"""The multi-writer warehouse: a DuckLake catalog in PostgreSQL, data as Parquet files in a shared directory.

`PERAS_WAREHOUSE=ducklake:postgres:dbname=peras host=db.lab port=5432 user=peras` selects it (any other value is a
DuckDB file). Each connection is an in-memory DuckDB that loads the `ducklake` and `postgres_scanner` extensions
from their PyPI packages (never from the network), attaches the lake as `lake` and makes it the default
database, so every stage's SQL runs unchanged. Writers on many hosts commit concurrently; a reader sees one
snapshot per transaction and blocks nobody. DuckLake refuses PRIMARY KEY, UNIQUE and CHECK constraints: the
migrations are applied without them (`strip_constraints`), and the few writes that relied on a key say so
explicitly. Two transactions that delete from the same data file conflict; writers retry the whole transaction
(`is_conflict`). docs/scaling.md says how it was measured.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb

PREFIX = "ducklake:"
ALIAS = "lake"
EXTENSIONS = (("duckdb_extension_ducklake", "ducklake"), ("duckdb_extension_postgres_scanner", "postgres_scanner"))
# PRIMARY KEY / UNIQUE / CHECK are refused by DuckLake ("Not implemented Error: ... not supported in DuckLake").
CONSTRAINTS = (
    (re.compile(r",\s*primary key\s*\([^)]*\)", re.IGNORECASE), ""),
    (re.compile(r",\s*unique\s*\([^)]*\)", re.IGNORECASE), ""),
    (re.compile(r"\s+primary key\b", re.IGNORECASE), ""),
    (re.compile(r"\s+unique\b", re.IGNORECASE), ""),
    (re.compile(r"\s+check\s*\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)", re.IGNORECASE), ""),
)
CONFLICT_HINTS = ("Transaction conflict", "Failed to commit DuckLake transaction")
# Two hosts creating a new catalog at the same moment: PostgreSQL refuses the second's CREATE TABLEs.
CREATION_RACE_HINTS = ("duplicate key value violates unique constraint", "already exists")
PASSWORD = re.compile(r"""(password\s*=\s*)([^\s"']+)""", re.IGNORECASE)  # up to a space or a quote


# Where a new catalog keeps its data, by warehouse setting: recorded by every Settings object that names both
# (peras/settings.py), so that a flow given Settings(lake_data_path=...) creates the lake there.
DATA_PATHS: dict[str, Path] = {}


def remember_data_path(target: Path | str, data_path: Path) -> None:
    """Record the data path a Settings object gives for this lake."""
    DATA_PATHS[str(target)] = data_path


def is_lake(target: Path | str) -> bool:
    """Whether a warehouse setting names a DuckLake catalog rather than a DuckDB file."""
    return str(target).startswith(PREFIX)


def redacted(target: Path | str) -> str:
    """The warehouse setting as it may be shown: a `password=` in the catalog's connection string is hidden.

    Passwords belong in PGPASSWORD or ~/.pgpass (libpq reads both), never in the setting.
    """
    return PASSWORD.sub(r"\1***", str(target))


def extension_path(package: str, name: str) -> Path:
    """The `.duckdb_extension` file a PyPI package carries for this DuckDB version."""
    import importlib

    try:
        module = importlib.import_module(package)
    except ImportError:
        raise FileNotFoundError(f"the package {package.replace('_', '-')} is not installed") from None
    path = Path(str(module.__file__)).parent / "extensions" / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
    if not path.is_file():
        raise FileNotFoundError(f"{package.replace('_', '-')} carries no {name} build for DuckDB {duckdb.__version__}")
    return path


def quoted(text: str) -> str:
    """A SQL string literal (ATTACH takes no parameters)."""
    return "'" + text.replace("'", "''") + "'"


def attach_statement(target: str, data_path: Path | None, read_only: bool) -> str:
    """ATTACH the lake as `lake`; DATA_PATH is needed only when the catalog is created."""
    options = []
    if data_path is not None:
        options.append(f"data_path {quoted(str(data_path).rstrip('/') + '/')}")
    if read_only:
        options.append("read_only")
    suffix = f" ({', '.join(options)})" if options else ""
    return f"attach {quoted(target)} as {ALIAS}{suffix}"


def open_lake(target: str, data_path: Path | None, read_only: bool) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the lake attached and in use; raises duckdb.Error or FileNotFoundError."""
    paths = [extension_path(package, name) for package, name in EXTENSIONS]
    con = duckdb.connect(config=extension_config(paths))
    try:
        # No progress bar: DuckDB draws one on stdout for any statement over 2 s (all migrations' commit to a loaded
        # PostgreSQL can take that), into a command's output (tests/test_lake.py's migrators read a blank line).
        con.execute("set enable_progress_bar = false")
        for path in paths:
            con.execute(f"load {quoted(str(path))}")
        remember_verified(paths)
        con.execute(attach_statement(target, data_path, read_only))
        con.execute(f"use {ALIAS}")
    except BaseException:
        con.close()
        raise
    return con


# The extension files whose signature DuckDB checked in this process, with what identified each file then. DuckDB
# checks a file's signature at every LOAD into a new instance: 77 MB read and hashed, 0.28 s CPU of the 0.32 s a lake
# connection costs. A file checked once and unchanged since (same inode, size and modification time) is loaded
# into later connections without checking it again.
_VERIFIED: dict[Path, tuple[int, int, int]] = {}


def _identity(path: Path) -> tuple[int, int, int]:
    found = path.stat()
    return (found.st_ino, found.st_size, found.st_mtime_ns)


def extension_config(paths: list[Path]) -> dict[str, str | bool | int | float | list[str]]:
    """A lake connection's configuration: no extension installed or loaded behind PERAS's back, and the signature
    check of `paths` left out only when this process has checked each of them already and none has changed."""
    config: dict[str, str | bool | int | float | list[str]] = {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
    }
    if all(_VERIFIED.get(path) == _identity(path) for path in paths):
        config["allow_unsigned_extensions"] = True
    return config


def remember_verified(paths: list[Path]) -> None:
    """`paths` were loaded: checked by DuckDB (or loaded unchanged since it checked them)."""
    for path in paths:
        _VERIFIED[path] = _identity(path)


def strip_constraints(sql: str) -> str:
    """A migration as DuckLake takes it: without PRIMARY KEY, UNIQUE and CHECK."""
    for pattern, replacement in CONSTRAINTS:
        sql = pattern.sub(replacement, sql)
    return sql


def is_conflict(exc: BaseException) -> bool:
    """A commit another writer's commit beat (the whole transaction may be retried)."""
    return isinstance(exc, duckdb.Error) and any(hint in str(exc) for hint in CONFLICT_HINTS)


def open_failure(target: str, exc: BaseException) -> str:
    """Why the lake cannot be opened, in one line that says what to do."""
    text = redacted(" ".join(str(exc).split()))  # DuckLake's own message quotes the connection string
    shown = redacted(target)
    if isinstance(exc, FileNotFoundError):
        return f"cannot open the DuckLake warehouse: {exc}; reinstall PERAS (pip install -e .)"
    if "Unable to connect to Postgres" in text:
        reason = text.split("Unable to connect to Postgres", 1)[1]
        reason = reason.split(":", 1)[1].strip() if ":" in reason else reason
        return (
            f"cannot reach the DuckLake catalog of {shown} ({reason[:200]}): start PostgreSQL or fix PERAS_WAREHOUSE "
            "(ducklake:postgres:dbname=... host=... port=... user=...)"
        )
    if "data_path is not set" in text:
        return (
            f"the DuckLake catalog of {shown} is new: set PERAS_LAKE_DATA_PATH to the directory (shared by every "
            "host) where its Parquet files go"
        )
    return f"cannot open the DuckLake warehouse {shown}: {text[:300]}"


def in_lake(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether `con` works in an attached lake (opened by `open_lake`)."""
    row = con.execute("select current_database()").fetchone()
    return row is not None and row[0] == ALIAS
