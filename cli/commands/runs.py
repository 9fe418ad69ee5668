"""`peras runs`: list, show, rename and delete the runs of every stage (judge runs, judged here or imported, and the
runs of pairwise, priming, personas check and fuse), with what they hold.

Every run is found, listed and deleted through its stage's declaration (the registry, tasks/engine/stage.py), judge
runs too, so a new stage's runs appear here without a change. Judge runs keep two overrides, both because a judge run
is what other things are built on: `list` shows them in their own table with the collection, subset and source
(judged here or imported) that evaluations and reports pick a run by (sql/judge/select_runs.sql), and `delete` first
deletes what was built on their judgments (sql/judge/select_dependents.sql). `show` adds their judgments per setting.
"""

from __future__ import annotations

import json
import sys
import uuid
from typing import Any

import click

from cli.common import note, settings_options, text_table
from peras.errors import UsageError
from peras.settings import Settings

LIST_HEADERS = ["run", "collection", "subset", "model", "source", "status", "judgments", "failures", "created"]
OTHER_HEADERS = ["kind", "run", "model", "backend", "status", "items", "failures", "created"]
JUDGE = "judge"
GROUP_HEADERS = ["personality", "CoT", "method", "judgments", "ok", "failures"]


@click.group()
def runs() -> None:
    """List, show, rename or delete runs of every stage: judge runs (`peras judge`, `peras import-judgments`) and
    the runs of pairwise, priming, personas check and fuse.

    Deleting a run removes it and what it holds from the warehouse and so from every view; the LLM answers it
    asked for stay cached, so asking the same again sends no request twice. Deleting a judge run also deletes
    what was built on its judgments (evaluations, hole-filling experiments, fuse runs), listed first.

    \b
    Examples:
        peras runs list
        peras runs show sample-qwen2.5-coder-0.5b-instruct-q4_k_m
        peras runs rename sample-qwen2.5-coder-0.5b-instruct-q4_k_m sample-qwen-baseline
        peras runs delete sample-qwen-baseline --yes
        peras runs list --kind pairwise
        peras runs delete dl19-pairwise-qwen --kind pairwise --yes
    """


def kind_option(func: Any) -> Any:
    """--kind: which stage's run (judge, pairwise, priming, personas, fuse, ...); needed only when names clash."""

    def known(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        from tasks.engine.stage import declarations

        kinds = [stage.kind for stage in declarations()]
        if value is not None and value not in kinds:
            raise click.BadParameter(f"{value!r} is not a kind of run; one of: {', '.join(kinds)}")
        return value

    help_text = "The stage the run belongs to: judge, pairwise, priming, personas, fuse (default: any)."
    return click.option("--kind", callback=known, help=help_text)(func)


@runs.command(name="list")
@click.option("--collection", help="Only judge runs on this collection.")
@kind_option
@settings_options
def list_runs(settings: Settings, collection: str | None, kind: str | None) -> None:
    """Every run, oldest first: judge runs with their judgments and parse failures, then the runs of the other
    stages with their kind, status and items (a stage module of the setting stage_modules that cannot be used is
    skipped, said in one line).

    \b
    Examples:
        peras runs list
        peras runs list --collection dl19
        peras runs list --kind pairwise
    """
    from peras.sql import run_sql, run_statements
    from peras.warehouse import connect
    from tasks.engine.stage import runs_sql

    with connect(settings.warehouse, read_only=True) as con:
        others = [] if kind == JUDGE or collection else run_statements(con, runs_sql(con), {"kind": kind}).fetchall()
        # the override: judge runs in their own table, with the collection, subset and source they are picked by
        rows = run_sql(con, "judge/select_runs", {"collection_id": collection}).fetchall()
    others = [row for row in others if row[0] != JUDGE]
    if kind in (None, JUDGE):
        if not rows:
            where = f" on collection {collection!r}" if collection else ""
            click.echo(f"no judge runs{where} yet: `peras judge sample` or `peras import-judgments` makes one")
        else:
            for line in text_table(LIST_HEADERS, [[*row[:8], row[8].strftime("%Y-%m-%d %H:%M")] for row in rows]):
                click.echo(line)
    if kind not in (None, JUDGE) and not others:
        click.echo(f"no {kind} runs yet")
    if others:
        if kind is None:
            click.echo("")
        shown = [
            [k, name, model, backend, status, n, bad, created.strftime("%Y-%m-%d %H:%M")]
            for k, _, name, model, backend, status, _, created, _, n, bad in others
        ]
        for line in text_table(OTHER_HEADERS, shown):
            click.echo(line)
    note_skipped_modules()


def note_skipped_modules() -> None:
    """One line on stderr per stage module of the setting that was skipped (its kind's runs are not listed)."""
    from tasks.engine.own_stages import skipped_modules

    for skipped in skipped_modules().values():
        note(f"note: skipped: {skipped.reason}")


@runs.command()
@click.argument("name")
@kind_option
@settings_options
def show(settings: Settings, name: str, kind: str | None) -> None:
    """Run NAME: what it is, its settings, and what it holds (a judge run: its judgments per personality, CoT
    setting and method).

    \b
    Examples:
        peras runs show sample-qwen2.5-coder-0.5b-instruct-q4_k_m
        peras runs show dl19-pairwise-qwen --kind pairwise
    """
    from peras.sql import run_sql
    from peras.warehouse import connect

    with connect(settings.warehouse, read_only=True) as con:
        found_kind, run = find_any_run(con, name, kind)
        if found_kind != JUDGE:
            show_other(run)
            return
        groups = run_sql(con, "judge/select_run_groups", {"run_id": run["run_id"]}).fetchall()
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
@kind_option
@settings_options
def rename(settings: Settings, name: str, new_name: str, kind: str | None) -> None:
    """Call run NAME NEW_NAME from now on (metric views, reports and `--run` use the new name).

    A judge run keeps resuming under its new name: `peras judge ... --run-name NEW_NAME`.

    \b
    Example:
        peras runs rename sample-qwen2.5-coder-0.5b-instruct-q4_k_m sample-qwen-baseline
    """
    from peras.sql import run_statements
    from peras.warehouse import open_migrated, transaction
    from tasks.engine.stage import declaration

    if not new_name.strip() or new_name != new_name.strip():
        raise UsageError(f"bad new name {new_name!r}: no leading or trailing blanks, not empty")
    with open_migrated(settings.warehouse) as con:
        found_kind, run = find_any_run(con, name, kind)
        if found_kind != JUDGE:
            rename_other(con, found_kind, run, new_name)
            refresh_snapshot(settings)
            click.echo(f"renamed {found_kind} run {name} -> {new_name}")
            return
        if run_statements(con, declaration(JUDGE).sql("select_run_by_name"), {"run_name": new_name}).fetchone():
            raise UsageError(f"a run named {new_name!r} already exists: delete or rename it first")
        # an import's id is derived from its name: a fresh one leaves the old name free for a new import
        new_run_id = f"import-{uuid.uuid4().hex[:16]}" if run["source"] == "import" else run["run_id"]
        with transaction(con):
            run_statements(
                con,
                declaration(JUDGE).sql("rename_run"),
                {"run_id": run["run_id"], "new_run_id": new_run_id, "new_name": new_name},
            )
    refresh_snapshot(settings)
    click.echo(f"renamed {name} -> {new_name}")


@runs.command()
@click.argument("name")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@kind_option
@settings_options
def delete(settings: Settings, name: str, yes: bool, kind: str | None) -> None:
    """Delete run NAME and what it holds; its LLM answers stay cached (asking again sends nothing twice).

    A judge run goes with what was built on its judgments (evaluations, hole-filling experiments, fuse runs),
    listed before it is deleted. Asks first unless --yes. Do not delete a run while it is being asked.

    \b
    Examples:
        peras runs delete sample-qwen-baseline
        peras runs delete sample-qwen-baseline --yes
    """
    from peras.sql import run_sql, run_statements
    from peras.warehouse import connect, open_migrated, transaction
    from tasks.engine.stage import declaration

    with connect(settings.warehouse, read_only=True) as con:
        found_kind, run = find_any_run(con, name, kind)
        # the override: what was built on a judge run's judgments (evaluations, fuse runs, ...) goes with it
        key = {"run_id": run["run_id"], "run_name": run["run_name"]}
        dependents = run_sql(con, "judge/select_dependents", key).fetchall() if found_kind == JUDGE else []
    what = describe_run(found_kind, run, dependents)
    if not yes and not click.confirm(f"delete {what}?", err=True):
        click.echo("nothing deleted", err=True)
        sys.exit(1)  # click's own Exit is swallowed outside standalone mode
    with open_migrated(settings.warehouse) as con, transaction(con):
        if found_kind == JUDGE:
            run_sql(con, "judge/delete_dependents", {"run_id": run["run_id"]})
            for _, fuse_run_id, _ in (d for d in dependents if d[0] == "fuse run"):
                run_statements(con, declaration("fuse").sql("delete_run"), {"run_id": fuse_run_id})
        run_statements(con, declaration(found_kind).sql("delete_run"), {"run_id": run["run_id"]})
    remove_shards(settings, found_kind, run["run_id"])
    refresh_snapshot(settings)
    click.echo(f"deleted {what}; its LLM answers stay cached")


def describe_run(kind: str, run: dict[str, Any], dependents: list[Any]) -> str:
    """How `peras runs delete` names a run: a judge run by its source, collection and judgments, with what was built
    on it; any other by its kind, status and items."""
    if kind != JUDGE:
        return f"{kind} run {run['run_name']} ({run['status']}, {run['n_items']:,} items)"
    what = f"run {run['run_name']} ({run['source']}, {run['collection_id']}, {run['n_items']:,} judgments)"
    if dependents:
        built = ", ".join(f"{dependent_kind} {dependent_name}" for dependent_kind, _, dependent_name in dependents)
        what += f" with what was built on it: {built}"
    return what


def find_any_run(con: Any, name: str, kind: str | None) -> tuple[str, dict[str, Any]]:
    """The run called `name` among judge runs and every declared stage's runs (one kind if given); a name held by
    runs of two kinds needs --kind; a name not there is a usage error naming the runs that are."""
    from peras.sql import run_statements
    from tasks.engine.stage import present_declarations, runs_sql

    found: dict[str, dict[str, Any]] = {}
    for stage in present_declarations(con):
        if kind not in (None, stage.kind):
            continue
        result = run_statements(con, stage.sql("select_run_by_name"), {"run_name": name})
        row = result.fetchone()
        if row is not None:
            found[stage.kind] = dict(zip([column[0] for column in result.description], row, strict=True))
    if len(found) > 1:
        raise UsageError(f"runs of several kinds are named {name!r} ({', '.join(found)}): say which with --kind")
    if found:
        [(found_kind, run)] = found.items()
        return found_kind, run
    if kind in (None, JUDGE):  # without --kind, the message names the judge runs there are, by name
        names = sorted(r[2] for r in run_statements(con, runs_sql(con), {"kind": JUDGE}).fetchall())
        raise UsageError(f"no run named {name!r} ({'runs: ' + ', '.join(names) if names else 'no runs yet'})")
    names = [r[2] for r in run_statements(con, runs_sql(con), {"kind": kind}).fetchall()]
    known = f"{kind} runs: {', '.join(names)}" if names else f"no {kind} runs yet"
    raise UsageError(f"no {kind} run named {name!r} ({known})")


def show_other(run: dict[str, Any]) -> None:
    """A run of a declared stage, as `peras runs show` prints it."""
    for key in ("kind", "run_name", "run_id", "model", "backend", "status", "status_reason"):
        click.echo(f"{key + ':':<15}{run[key] if run[key] is not None else '-'}")
    for key in ("created_at", "finished_at"):
        click.echo(f"{key + ':':<15}{run[key].strftime('%Y-%m-%d %H:%M:%S') if run[key] else '-'}")
    params = json.loads(run["params"]) if run["params"] else {}
    click.echo(f"{'params:':<15}{json.dumps(params, sort_keys=True)}")
    click.echo(f"{run['n_items']:,} items, {run['n_failures']:,} failures")


def rename_other(con: Any, kind: str, run: dict[str, Any], new_name: str) -> None:
    """Rename a run of a declared stage; the new name must be free among that stage's runs."""
    from peras.sql import run_statements
    from peras.warehouse import transaction
    from tasks.engine.stage import declaration

    stage = declaration(kind)
    if kind == "persona_sets":
        raise UsageError(
            f"a personality set is named by its build ({run['run_name']}), which judge and check runs refer to: "
            "build a new set with `peras personas build NEW_NAME` instead"
        )
    if run_statements(con, stage.sql("select_run_by_name"), {"run_name": new_name}).fetchone() is not None:
        raise UsageError(f"a {kind} run named {new_name!r} already exists: delete or rename it first")
    with transaction(con):
        run_statements(con, stage.sql("rename_run"), {"run_id": run["run_id"], "new_name": new_name})


def remove_shards(settings: Settings, kind: str, run_id: str) -> None:
    """A deleted run's journal folder, if an interrupted run left one (its lines would be refused anyway)."""
    import shutil

    for folder in settings.shards.glob(f"*/{kind}/{run_id}"):
        shutil.rmtree(folder, ignore_errors=True)


def refresh_snapshot(settings: Settings) -> None:
    """Writers refresh the analysts' copy of the warehouse (what `peras sql` reads) after they change it."""
    from peras.warehouse import publish_snapshot

    publish_snapshot(settings)


COMMANDS = [runs]
