"""`peras runs`: list, show, rename and delete judge runs (judged here or imported) and their judgments."""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

import click

from cli.common import settings_options, text_table
from peras.errors import UsageError
from peras.settings import Settings

LIST_HEADERS = ["run", "collection", "subset", "model", "source", "status", "judgments", "failures", "created"]
GROUP_HEADERS = ["personality", "CoT", "method", "judgments", "ok", "failures"]


@click.group()
def runs() -> None:
    """List, show, rename or delete judge runs: those of `peras judge` and of `peras import-judgments`.

    Deleting a run removes it and its judgments from the warehouse and so from every metric view; the LLM
    answers it asked for stay cached, so judging the same pairs again sends no request twice.

    \b
    Examples:
        peras runs list
        peras runs show sample-qwen2.5-coder-0.5b-instruct-q4_k_m
        peras runs rename sample-qwen2.5-coder-0.5b-instruct-q4_k_m sample-qwen-baseline
        peras runs delete sample-qwen-baseline --yes
    """


@runs.command(name="list")
@click.option("--collection", help="Only runs on this collection.")
@settings_options
def list_runs(settings: Settings, collection: str | None) -> None:
    """Every judge run, oldest first, with its judgments and parse failures.

    \b
    Examples:
        peras runs list
        peras runs list --collection dl19
    """
    from peras.sql import run_sql
    from peras.warehouse import connect

    with connect(settings.warehouse, read_only=True) as con:
        rows = run_sql(con, "runs/select_runs", {"collection_id": collection}).fetchall()
    if not rows:
        where = f" on collection {collection!r}" if collection else ""
        click.echo(f"no judge runs{where} yet: `peras judge sample` or `peras import-judgments` makes one")
        return
    shown = [[*row[:8], row[8].strftime("%Y-%m-%d %H:%M")] for row in rows]
    for line in text_table(LIST_HEADERS, shown):
        click.echo(line)


@runs.command()
@click.argument("name")
@settings_options
def show(settings: Settings, name: str) -> None:
    """Run NAME: what it is, its settings, and its judgments per personality, CoT setting and method.

    \b
    Example:
        peras runs show sample-qwen2.5-coder-0.5b-instruct-q4_k_m
    """
    from peras.sql import run_sql
    from peras.warehouse import connect

    with connect(settings.warehouse, read_only=True) as con:
        run = find_run(con, name)
        groups = run_sql(con, "runs/select_run_groups", {"run_id": run["run_id"]}).fetchall()
    for key in ("run_name", "run_id", "source", "collection_id", "subset_name", "model", "backend", "status"):
        click.echo(f"{key + ':':<15}{run[key] if run[key] is not None else '-'}")
    for key in ("created_at", "finished_at"):
        click.echo(f"{key + ':':<15}{run[key].strftime('%Y-%m-%d %H:%M:%S') if run[key] else '-'}")
    params = json.loads(run["params"]) if run["params"] else {}
    click.echo(f"{'params:':<15}{json.dumps(params, sort_keys=True)}")
    total = sum(row[3] for row in groups)
    failures = sum(row[5] for row in groups)
    click.echo(f"{total:,} judgments, {failures:,} failures")
    if groups:
        rows = [[p, "with" if cot else "without", m, n, ok, bad] for p, cot, m, n, ok, bad in groups]
        for line in text_table(GROUP_HEADERS, rows):
            click.echo(line)


@runs.command()
@click.argument("name")
@click.argument("new_name")
@settings_options
def rename(settings: Settings, name: str, new_name: str) -> None:
    """Call run NAME NEW_NAME from now on (metric views, reports and `--run` use the new name).

    A judge run keeps resuming under its new name: `peras judge ... --run-name NEW_NAME`.

    \b
    Example:
        peras runs rename sample-qwen2.5-coder-0.5b-instruct-q4_k_m sample-qwen-baseline
    """
    from peras.sql import run_sql
    from peras.warehouse import open_migrated, transaction

    if not new_name.strip() or new_name != new_name.strip():
        raise UsageError(f"bad new name {new_name!r}: no leading or trailing blanks, not empty")
    with open_migrated(settings.warehouse) as con:
        run = find_run(con, name)
        if run_sql(con, "runs/select_run", {"run_name": new_name}).fetchone() is not None:
            raise UsageError(f"a run named {new_name!r} already exists: delete or rename it first")
        # an import's id is derived from its name: a fresh one leaves the old name free for a new import
        new_run_id = f"import-{uuid.uuid4().hex[:16]}" if run["source"] == "import" else run["run_id"]
        with transaction(con):
            run_sql(
                con,
                "runs/rename_run",
                {"run_id": run["run_id"], "new_run_id": new_run_id, "new_name": new_name},
            )
    refresh_snapshot(settings)
    click.echo(f"renamed {name} -> {new_name}")


@runs.command()
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@settings_options
def delete(settings: Settings, name: str, yes: bool) -> None:
    """Delete run NAME and its judgments; its LLM answers stay cached (re-judging sends nothing twice).

    Asks first unless --yes. Do not delete a run while a `peras judge` of it is going.

    \b
    Examples:
        peras runs delete sample-qwen-baseline
        peras runs delete sample-qwen-baseline --yes
    """
    from peras.sql import run_sql
    from peras.warehouse import connect, open_migrated, transaction

    with connect(settings.warehouse, read_only=True) as con:
        run = find_run(con, name)
        groups = run_sql(con, "runs/select_run_groups", {"run_id": run["run_id"]}).fetchall()
    n_judgments = sum(row[3] for row in groups)
    what = f"run {name} ({run['source']}, {run['collection_id']}, {n_judgments:,} judgments)"
    if not yes and not click.confirm(f"delete {what}?", err=True):
        click.echo("nothing deleted", err=True)
        sys.exit(1)  # click's own Exit is swallowed outside standalone mode
    with open_migrated(settings.warehouse) as con, transaction(con):
        run_sql(con, "runs/delete_run", {"run_id": run["run_id"]})
    refresh_snapshot(settings)
    click.echo(f"deleted {what}; its LLM answers stay cached")


def find_run(con: Any, name: str) -> dict[str, Any]:
    """The judge_runs row of `name`; a name that is not there is a usage error naming the runs that are."""
    from peras.sql import run_sql

    result = run_sql(con, "runs/select_run", {"run_name": name})
    row = result.fetchone()
    if row is None:
        names = [r[0] for r in run_sql(con, "runs/select_run_names").fetchall()]
        known = f"runs: {', '.join(names)}" if names else "no runs yet"
        raise UsageError(f"no run named {name!r} ({known})")
    return dict(zip([column[0] for column in result.description], row, strict=True))


def refresh_snapshot(settings: Settings) -> None:
    """Writers refresh the analysts' copy of the warehouse (what `peras sql` reads) after they change it."""
    from peras.warehouse import publish_snapshot

    publish_snapshot(settings)


COMMANDS = [runs]
