"""Stage modules of your own (docs/architecture.md, "Adding an LLM stage"): imported by name, checked, and refused in
one line naming the module when they cannot be used.

A module is refused when importing it raises (a syntax error, a package not installed, any exception), when it
declares a kind or a table of PERAS's own (`declare`), or a kind another stage module declares, or, named by the
setting `stage_modules`, has no DECLARATION. Whatever it declared before it failed is undone.

The setting's modules are imported by every process that reads the declarations: `peras runs`, every stage's
command. There a module refused is skipped and its reason kept (`skipped_modules`): every other command works as if
it were not named (`peras runs list` also says, in one line each, which it skipped), while `peras ask` of that
module, or of its kind, exits 2 with the reason.

A stage of your own whose tables exist with other columns than it declares now (its module changed them after its
first run) is refused before its run is read or written (`check_own_tables`).
"""

from __future__ import annotations

import importlib
import traceback
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import duckdb

from peras.errors import UsageError, clip
from peras.sql import run_sql, run_statements
from tasks.engine.stage import DeclarationRefused, StageDeclaration, declare, peras_tables, undone_on_failure

SETTING = " (setting stage_modules)"


@dataclass(frozen=True)
class Skipped:
    """A module of the setting that could not be used: why (one line naming it), and the kind it claimed, if any."""

    reason: str
    kind: str | None = None


class _Refused(Exception):
    """Why a module cannot be used, as its one line."""

    def __init__(self, message: str, kind: str | None = None) -> None:
        super().__init__(message)
        self.kind = kind


_MODULE_OF: dict[str, str] = {}  # kind -> the stage module that declares it
_SKIPPED: dict[str, Skipped] = {}  # module name -> why the setting's module was skipped


def configured_stage_modules(names: list[str]) -> dict[str, str]:
    """The kinds, and module names, of the setting's stage modules that can be used, each imported; the others are
    skipped, their reasons kept for `peras runs list` and `peras ask` (`skipped_modules`)."""
    found: dict[str, str] = {}
    for name in names:
        try:
            module = import_stage_module(name, SETTING)
        except UsageError:
            continue
        declared = getattr(module, "DECLARATION", None)
        if isinstance(declared, StageDeclaration):
            found[declared.kind] = name
        else:
            _SKIPPED[name] = Skipped(f"stage module {name!r}{SETTING} has no DECLARATION (a StageDeclaration)")
    return found


def skipped_modules() -> dict[str, Skipped]:
    """The setting's modules skipped in this process, by name."""
    return dict(_SKIPPED)


def import_stage_module(name: str, named_by: str = "") -> ModuleType:
    """The stage module `name`, imported and its DECLARATION declared; anything that keeps it from being used is a
    UsageError naming it (and, `named_by` the setting, kept: a module is tried once a process)."""
    if name in _SKIPPED:
        raise UsageError(_SKIPPED[name].reason)
    try:
        with undone_on_failure():
            module = _imported(name, named_by)
            declared = getattr(module, "DECLARATION", None)
            if isinstance(declared, StageDeclaration):
                _claim_kind(name, declared, named_by)
    except _Refused as refused:
        if named_by == SETTING:
            _SKIPPED[name] = Skipped(str(refused), refused.kind)
        raise UsageError(str(refused)) from refused.__cause__
    return module


def _imported(name: str, named_by: str) -> ModuleType:
    """The module imported; what it raised, as one line saying where."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        hint = "is its package installed?"
        raise _Refused(f"stage module {name!r}{named_by} cannot be imported ({exc}): {hint}") from exc
    except DeclarationRefused as exc:
        raise _Refused(f"stage module {name!r}{named_by} is refused: {exc}") from exc
    except Exception as exc:  # a module of one's own may raise anything: a syntax error, its own RuntimeError
        frames = traceback.extract_tb(exc.__traceback__)
        where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames and not isinstance(exc, SyntaxError) else ""
        raise _Refused(
            f"stage module {name!r}{named_by} cannot be imported: it raised {type(exc).__name__}{where}: "
            f"{clip(exc, 300)}"
        ) from exc


def _claim_kind(name: str, declared: StageDeclaration, named_by: str) -> None:
    """Declare the module's stage, its kind no other stage module's."""
    kind = declared.kind
    other = _MODULE_OF.get(kind)
    if other is not None and other != name:
        raise _Refused(
            f"stage modules {other!r} and {name!r}{named_by} both declare kind {kind!r}: give each stage its own "
            f"kind ({name!r} is not used)",
            kind,
        )
    try:
        declare(declared)
    except DeclarationRefused as exc:
        raise _Refused(f"stage module {name!r}{named_by} is refused: {exc}", kind) from exc
    _MODULE_OF[kind] = name


def check_own_tables(con: Any, stage: StageDeclaration) -> None:
    """A stage of your own whose tables exist with other columns than it declares is refused in one line naming its
    module (PERAS's own stages' tables come from their migrations and are not compared)."""
    if stage.runs_table in peras_tables():
        return
    with duckdb.connect() as memory:
        wanted = _columns(memory, stage, create=True)
    stored = _columns(con, stage, create=False)
    for table, columns in wanted.items():
        have = stored.get(table)
        if have is not None and have != columns:
            owner = f"stage module {_MODULE_OF[stage.kind]!r}" if stage.kind in _MODULE_OF else f"stage {stage.kind!r}"
            added, gone = sorted(columns - have), sorted(have - columns)
            raise UsageError(
                f"{owner} declares table {table} with other columns than the warehouse's (declared, not stored: "
                f"{', '.join(added) or 'none'}; stored, not declared: {', '.join(gone) or 'none'}): its runs were "
                "made by another version of the stage; declare new table names, or put the columns back"
            )


def _columns(con: Any, stage: StageDeclaration, create: bool) -> dict[str, set[str]]:
    """The column names of the stage's tables in `con` (created there first with `create`: as declared)."""
    if create:
        run_statements(con, stage.sql("create_tables"))
    rows = run_sql(con, "engine/select_table_columns", {"tables": list(stage.tables)}).fetchall()
    found: dict[str, set[str]] = {}
    for table, column in rows:
        found.setdefault(table, set()).add(column)
    return found
