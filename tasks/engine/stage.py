"""A stage is a declaration: what identifies its items, what an answer holds, what fixes a run.

From a `StageDeclaration` the engine derives everything that used to be written once per stage: the run's tables
(`sql/engine/stage/create_tables.sql`), claiming and resuming a run, its status, the items already done, reading the
journal's outcome lines, merging them (a replaced failure kept in the history table), the gate and deleting a run.
The templates live once in `sql/engine/stage/`; a stage's own folder `sql/<kind>/` keeps its views and the checks that
are truly its own (`checks`), and a stage whose outcomes are not one answer per request (judge) names the files it
keeps (`own_sql`).

A stage's declaration is a data file, `tasks/<stage>/stage.toml` (`<kind>.stage.toml` for a folder's second
stage), checked when it is read (`load_declaration`); `declarations()` reads every one of them, so `peras runs` sees
every kind of run without a list kept by hand and without importing a stage's code. A stage built in code (a test's,
a stage module of your own: tasks/engine/own_stages.py) registers itself with `declare`.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import Any

from peras.sql import identifier, render_sql, run_sql, statements

# What the engine adds to every stored answer: the outcome's status, why it failed, the request it read, and when.
OUTCOME_COLUMNS = ("status", "reason", "request_id")


@dataclass(frozen=True)
class Column:
    """A column of a stage's table: a plain name and its DuckDB type."""

    name: str
    type: str = "varchar"

    def __post_init__(self) -> None:
        identifier(self.name)
        if not all(part.isalnum() or part in "[] ()," for part in self.type):
            raise ValueError(f"not a plain column type: {self.type!r}")


def columns(spec: str) -> tuple[Column, ...]:
    """Columns written as 'name type, name type' (type defaults to varchar): `columns("query_id, trial integer")`."""
    parsed = []
    for part in filter(str.strip, spec.split(",")):
        name, *kind = part.split()
        parsed.append(Column(name, " ".join(kind) or "varchar"))
    return tuple(parsed)


@dataclass(frozen=True)
class StageDeclaration:
    """What a stage asks and what it keeps; the engine derives the run's bookkeeping from it.

    kind: names the stage everywhere (shard folder, `sql/<kind>/`, `peras runs` kind column).
    label: how messages name one run ('pairwise run').
    runs_table, run_id: the table of its runs and the column holding a run's id.
    fixed: what a run is fixed by besides its request parameters (compared when an existing run is called again).
    run_columns: the other values a call records on its run (its scope), updated when it is called again.
    created: values recorded when the run is made and kept as they were when it is called again (judge: the subset
    the run was made for; a later call may narrow or extend what it judges).
    answers_table, history_table: one row per item; failures replaced by a retry go to the history ('' for a stage
    that keeps no history: persona-set builds accumulate rounds instead).
    keys: the columns that identify an item within a run; planned: what a call's plan also fixes per item (the gate
    finds a stored answer that differs from it, `planned_<name>`); values: what an answer holds.
    time_column: when the answer was made.
    failure_group: the columns grouping items for the failure-share threshold ('personality', ...); with none, every
    item is in one group named `failure_label`.
    item_name: how the gate names one item, a printf format and its columns.
    items: how the gate names items in its messages ('answers', 'batches').
    token_caps: the answer cap per backend (a small embedded model rambles; remote models are not capped).
    checks: the stage's own gate checks, `sql/<kind>/<check>.sql` over `gate_items` (problem, detail).
    batch: whether its runs may be asked in batch rounds (`--mode batch`, tasks/engine/batch_tasks.py).
    own_sql: the files under `sql/<kind>/` that replace a template of the same name (judge: its own merge).
    owned_tables: other tables whose rows belong to a run (same run id column) and go when it is deleted.
    differs: how a refusal to reuse a run name lists what may differ ('collection, model, seed, prompt or ...').
    run_name: a run's name when none is given, pieces joined by '-' (a piece whose value is empty is left out):
    '{collection}-{subset}-pairwise-{model}' names dl19-balanced-pairwise-qwen or, without a subset, dl19-pairwise-qwen.
    """

    kind: str
    label: str
    runs_table: str
    run_id: str
    fixed: tuple[Column, ...]
    answers_table: str
    history_table: str
    keys: tuple[Column, ...]
    values: tuple[Column, ...]
    run_columns: tuple[Column, ...] = (Column("scope", "json"),)
    created: tuple[Column, ...] = ()
    planned: tuple[Column, ...] = ()
    time_column: str = "judged_at"
    failure_group: tuple[str, ...] = ("personality",)
    failure_label: str = "all"
    item_name: tuple[str, tuple[str, ...]] = ("", ())
    items: str = "answers"
    token_caps: Mapping[str, int] = field(default_factory=dict)
    checks: tuple[str, ...] = ()
    batch: bool = True
    own_sql: frozenset[str] = frozenset()
    owned_tables: tuple[str, ...] = ()
    differs: str = "settings"
    run_name: str = "{kind}-{model}"
    command: str | None = None

    def __post_init__(self) -> None:
        for name in (self.kind, self.runs_table, self.run_id, self.answers_table, self.time_column):
            identifier(name)
        if self.history_table:
            identifier(self.history_table)
        for name in (self.failure_label, *self.failure_group, *self.item_name[1], *self.owned_tables):
            identifier(name)
        if any(quote in self.item_name[0] for quote in "'\\"):
            raise ValueError(f"stage {self.kind}: item_name's format may not hold quotes")
        known = {c.name for c in (*self.keys, *self.values, *self.planned)}
        unknown = [name for name in (*self.failure_group, *self.item_name[1]) if name not in known]
        if unknown:
            raise ValueError(f"stage {self.kind}: failure_group/item_name name unknown columns {unknown}")
        if self.command not in (None, "ask"):
            raise ValueError(f"stage {self.kind}: command may only be 'ask' (a stage with no command of its own)")

    @cached_property
    def context(self) -> dict[str, Any]:
        """What the templates of `sql/engine/stage/` are rendered with."""
        run_table_columns = _unique((*self.fixed, *self.run_columns, *self.created, Column("model"), Column("backend")))
        return {
            "kind": self.kind,
            "runs_table": self.runs_table,
            "run_id": self.run_id,
            "fixed": self.fixed,
            "fixed_names": [c.name for c in self.fixed],
            "run_table_columns": run_table_columns,
            "insert_names": [c.name for c in run_table_columns],
            "run_columns": self.run_columns,
            "answers_table": self.answers_table,
            "history_table": self.history_table,
            "keys": self.keys,
            "key_names": [c.name for c in self.keys],
            "values": self.values,
            "value_names": [c.name for c in self.values],
            "planned": self.planned,
            "time_column": self.time_column,
            "failure_group": self.failure_group,
            "failure_label": self.failure_label,
            "item_format": self.item_name[0],
            "item_columns": self.item_name[1],
            "owned_tables": self.owned_tables,
        }

    @property
    def tables(self) -> tuple[str, ...]:
        """The tables its runs write: runs, answers, history (if any) and those it owns."""
        return tuple(t for t in (self.runs_table, self.answers_table, self.history_table, *self.owned_tables) if t)

    def sql(self, name: str) -> list[str]:
        """The statements of one piece of the run's SQL: the stage's own file if it keeps one, else the template."""
        if name in self.own_sql:
            return statements(f"{self.kind}/{name}")
        return render_sql(f"engine/stage/{name}", self.context)

    def check_sql(self) -> list[list[str]]:
        """The stage's own gate checks, each a list of statements."""
        return [statements(f"{self.kind}/{check}") for check in self.checks]

    def default_run_name(self, **parts: Any) -> str:
        """The run's name when none is given: the declaration's pattern with these parts ('/' in a model is '_')."""
        values = {"kind": self.kind} | {k: "" if v is None else str(v).replace("/", "_") for k, v in parts.items()}
        return "-".join(piece for piece in (p.format(**values) for p in self.run_name.split("-")) if piece)

    def token_cap(self, backend: str, *, embedded: bool = False) -> int | None:
        """The answer cap of requests to this backend (None: not capped); the embedded model's is 'embedded'."""
        return self.token_caps.get("embedded" if embedded else backend)


def _unique(found: tuple[Column, ...]) -> list[Column]:
    """Columns in order, each name once (the first wins)."""
    seen: dict[str, Column] = {}
    for column in found:
        seen.setdefault(column.name, column)
    return list(seen.values())


def sql_of(kind: str, name: str) -> list[str]:
    """The statements of one piece of a kind's run SQL: its declaration's, or `sql/<kind>/<name>.sql` for a stage that
    is not declared (persona sets keep their own files)."""
    found = _DECLARED.get(kind)
    if found is None:
        discover()
        found = _DECLARED.get(kind)
    return found.sql(name) if found is not None else statements(f"{kind}/{name}")


def runs_sql(con: Any) -> list[str]:
    """Every run of every declared stage whose tables exist in the warehouse of `con`: kind, run_id, run_name, model,
    backend, status, status_reason, created_at, finished_at, n_items, n_failures (bind `$kind`: one kind, or null)."""
    return render_sql("engine/stage/select_runs", {"stages": present_declarations(con)})


def present_declarations(con: Any) -> list[StageDeclaration]:
    """The declared stages whose tables exist in the warehouse of `con` (a stage's tables come with its first run)."""
    tables = {row[0] for row in run_sql(con, "engine/select_table_names").fetchall()}
    return [stage for stage in declarations() if {stage.runs_table, stage.answers_table} <= tables]


_DECLARED: dict[str, StageDeclaration] = {}
_READ: set[Path] = set()
STAGE_FILE = "stage.toml"
FIELDS = {
    "kind", "label", "runs_table", "run_id", "fixed", "created", "answers_table", "history_table", "keys", "planned",
    "values", "run_columns", "time_column", "failure_group", "failure_label", "item_format", "item_columns", "items",
    "token_caps", "checks", "batch", "own_sql", "owned_tables", "differs", "run_name", "command",
}  # fmt: skip


def load_declaration(path: Path) -> StageDeclaration:
    """A stage's declaration from its data file; an unknown or missing field, or a bad name, is refused here."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        unknown = sorted(set(data) - FIELDS)
        if unknown:
            raise ValueError(f"unknown fields {unknown}")
        for name in ("fixed", "created", "keys", "planned", "values", "run_columns"):
            if name in data:
                data[name] = columns(data[name])
        data["item_name"] = (data.pop("item_format", ""), tuple(data.pop("item_columns", ())))
        for name in ("failure_group", "checks", "owned_tables"):
            if name in data:
                data[name] = tuple(data[name])
        data["own_sql"] = frozenset(data.get("own_sql", ()))
        found = StageDeclaration(**data)
    except (ValueError, TypeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"stage declaration {path}: {exc}") from exc
    named = path.parent.name if path.name == STAGE_FILE else path.name.removesuffix(f".{STAGE_FILE}")
    if found.kind != named:
        raise ValueError(f"stage declaration {path}: kind {found.kind!r} is not the name of its folder or file")
    return found


class DeclarationRefused(ValueError):
    """A stage built in code that would stand in for PERAS's own: one of its kinds, or one of its tables."""


def declare(declaration: StageDeclaration) -> StageDeclaration:
    """Register a stage built in code (a test's, a stage of your own package); declaring the same kind again replaces
    it, but a kind one of PERAS's own stage files declares is refused (a module may not stand in for the judge), and
    so is a table of PERAS's own (its stages' or its migrations': a stage writing `pairwise_runs` would break both)."""
    discover_files()
    kind = declaration.kind
    if kind in _FROM_FILES and _DECLARED.get(kind) is not declaration:
        raise DeclarationRefused(f"stage kind {kind!r} is one of PERAS's own: declare your stage under another")
    taken = sorted(set(declaration.tables) & peras_tables()) if kind not in _FROM_FILES else []
    if taken:
        raise DeclarationRefused(
            f"stage kind {kind!r} declares table(s) of PERAS's own ({', '.join(taken)}): name your stage's tables "
            f"after its kind ({kind}_runs, {kind}_answers, ...)"
        )
    _DECLARED[kind] = declaration
    return declaration


def peras_tables() -> set[str]:
    """The tables of PERAS's own: those its stage files declare and those its migrations create."""
    discover_files()
    return {table for kind in _FROM_FILES for table in _DECLARED[kind].tables} | migration_tables()


@cache
def migration_tables() -> frozenset[str]:
    """The tables `sql/migrations/` creates (each `create table if not exists NAME (` line)."""
    from peras.warehouse import migrations
    from peras.warehouse_docs import CREATE_TABLE

    lines = (line for _, _, path in migrations() for line in path.read_text(encoding="utf-8").splitlines())
    return frozenset(found.group(1) for found in map(CREATE_TABLE.match, lines) if found)


@contextmanager
def undone_on_failure() -> Iterator[None]:
    """A block that declares stages (a stage module of your own being imported): if it fails, what it declared goes
    (a module that raised after its `declare`, or that is refused after it, leaves no kind behind)."""
    discover_files()
    before = dict(_DECLARED)
    try:
        yield
    except BaseException:
        _DECLARED.clear()
        _DECLARED.update(before)
        raise


def declaration(kind: str) -> StageDeclaration:
    """The declaration of one kind of stage (read from its `tasks/<kind>/stage.toml` the first time)."""
    if kind not in _DECLARED:
        discover()
    if kind not in _DECLARED:
        raise KeyError(f"no stage declares kind {kind!r}")
    return _DECLARED[kind]


def declarations() -> list[StageDeclaration]:
    """Every declared stage, in kind order."""
    discover()
    return [_DECLARED[kind] for kind in sorted(_DECLARED)]


def discover() -> None:
    """Read every `tasks/<stage>/stage.toml` (and `tasks/<stage>/<kind>.stage.toml`, a folder's second stage), then
    import the stage modules the settings name (`stage_modules`: PERAS_STAGE_MODULES or the config file), once; one
    that cannot be used is skipped (tasks/engine/own_stages.py)."""
    discover_files()
    if not _CONFIGURED_READ:
        from peras.settings import load_settings
        from tasks.engine.own_stages import configured_stage_modules

        _CONFIGURED_READ.append(True)  # first: a module that reads the declarations while it is imported is not re-read
        configured_stage_modules(load_settings().stage_modules)


def discover_files() -> None:
    """Read every `tasks/<stage>/stage.toml` (and `tasks/<stage>/<kind>.stage.toml`) not read yet."""
    import tasks

    for root in tasks.__path__:
        for path in sorted(Path(root).glob(f"*/*{STAGE_FILE}")):
            if path not in _READ:
                found = load_declaration(path)
                _DECLARED.setdefault(found.kind, found)
                _FROM_FILES.add(found.kind)
                _READ.add(path)


_FROM_FILES: set[str] = set()  # the kinds PERAS's own stages declare in their files
_CONFIGURED_READ: list[bool] = []  # whether discover has imported the configured stage modules (once a process)
