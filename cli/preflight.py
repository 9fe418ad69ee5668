"""The checks a user can fail, run by a command before any flow or Prefect server starts.

A flow checks the same things again (a deployment run has no CLI in front of it), but from the terminal a
mistake must answer in a second or two, not after the Prefect server and the flow engine have started (~15-70 s
on a loaded machine). Nothing here imports Prefect, and nothing is written but the warehouse's own migrations.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb

from peras.errors import UsageError
from peras.lake import is_lake
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import connect, ensure_migrated, exists, not_ingested, pending_migrations, require_collection


def collection(settings: Settings, collection_id: str, subset: str | None = None) -> None:
    """The collection (and subset) is in the warehouse, else one line naming what to run."""
    if not exists(settings.warehouse):
        raise not_ingested(collection_id)  # not a new empty warehouse at a mistyped path
    with reading(settings) as con:
        require_collection(con, collection_id, subset)


def judge_run(settings: Settings, run_name: str | None) -> None:
    """A named judge run exists (any status: a stage that needs it published says so itself)."""
    if run_name is None:
        return
    found = exists(settings.warehouse)
    if found:
        with reading(settings) as con:
            found = bool(run_sql(con, "evaluate/select_judge_run", {"run_name": run_name}).fetchall())
    if not found:
        raise UsageError(f"no judge run named {run_name!r} (see `peras runs list`)")


def personalities(settings: Settings, codes: list[str] | None, personality_set: str | None) -> None:
    """The personality codes (of the set, when one is named) exist."""
    from tasks.shared.personalities import choose_personalities

    choose_personalities(settings, codes, personality_set)


def endpoint(settings: Settings) -> None:
    """A configured server answers and serves the model (the embedded model is started by the flow itself)."""
    if not settings.base_urls:
        return
    model = settings.model
    if not model:
        raise UsageError("--base-url needs --model (the name the server serves)")
    from tasks.engine.endpoint import Endpoint, make_client

    async def ready() -> None:
        async with make_client(settings, Endpoint(settings.base_urls, model, "")) as client:
            await client.check_ready(timeout_s=PREFLIGHT_TIMEOUT_S)

    asyncio.run(ready())


@contextmanager
def reading(settings: Settings) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection to the up-to-date warehouse (migrating only when a migration is missing: ~1.5 s less
    than opening it for writing, which re-applies every view). One opening when it is current (each costs ~0.1 s)."""
    if exists(settings.warehouse) and not is_lake(settings.warehouse):  # a lake migrates cheaply when current
        with connect(settings.warehouse, read_only=True) as con:
            if not pending_migrations(con):
                yield con
                return
    ensure_migrated(settings.warehouse)
    with connect(settings.warehouse, read_only=True) as con:
        yield con


PREFLIGHT_TIMEOUT_S = 5.0  # a server that does not list its models in 5 s would not judge either


def study_grid(
    settings: Settings,
    endpoints_file: Path,
    models: list[str] | None,
    collections: list[str] | None,
    personality_codes: list[str] | None,
) -> None:
    """The study's grid resolves: presets, an endpoints entry and key for each chosen model (only those), personalities,
    collections and their subsets in the warehouse."""
    from peras.models import load_model_presets
    from peras.prompting import select_personalities
    from tasks.study.endpoints import load_endpoints, model_settings
    from tasks.study.grid import COLLECTIONS, build_grid, choose

    presets = load_model_presets()
    entries = load_endpoints(endpoints_file, presets)
    for name in choose(models, list(presets.models), "model preset"):  # the chosen models' entries, no others
        model_settings(settings, presets.get(name), entries, endpoints_file)
    codes = [p.code for p in select_personalities(personality_codes, settings.personalities_dir)]
    for name in choose(collections, COLLECTIONS, "collection"):  # not a new empty warehouse at a mistyped path
        if not exists(settings.warehouse):
            raise not_ingested(name)
    build_grid(settings, presets, endpoints_file, models, collections, codes, None)
