"""`peras batch`: the batch rounds of a run asked with --mode batch: status, collect, cancel, export, import."""

from __future__ import annotations

from pathlib import Path

import click

from cli.common import settings_options, text_table
from peras.errors import UsageError
from peras.settings import Settings
from peras.warehouse import open_migrated

STATUS_HEADERS = ["batch", "round", "status", "requests", "answered", "failed", "submitted", "collected"]


@click.group()
def batch() -> None:
    """The batch rounds of a run (any LLM stage) asked with --mode batch (docs/batch.md).

    Running the judge command again collects what ended and submits the next round; these commands look at the
    rounds, collect or cancel them without asking anything, and move rounds to and from vLLM's offline batch runner.

    \b
    Examples:
        peras batch status sample-gpt-4o-mini
        peras batch collect sample-gpt-4o-mini
        peras batch cancel sample-gpt-4o-mini
        peras batch export sample-llama --output rounds/     # then: vllm run-batch -i FILE -o OUT
        peras batch import sample-llama out/*.jsonl
    """


def find_run(settings: Settings, run_name: str) -> tuple[str, str]:
    """A run's id and model by name, whatever its stage (judge, pairwise, priming, ...), or a usage error."""
    from peras.sql import run_statements
    from tasks.engine.stage import present_declarations

    found: list[tuple[str, str]] = []
    with open_migrated(settings.warehouse) as con:
        for stage in present_declarations(con):
            row = run_statements(con, stage.sql("select_run_by_name"), {"run_name": run_name}).fetchone()
            found += [(str(row[1]), str(row[3]))] if row else []
    if not found:
        raise UsageError(f"no run named {run_name!r}; `peras runs list` shows the runs")
    if len(found) > 1:
        raise UsageError(f"runs of several stages are named {run_name!r}: rename one with `peras runs rename`")
    return found[0]


def echo_status(settings: Settings, run_id: str) -> None:
    """The run's batches as a table."""
    from tasks.engine.batch_store import run_batches

    batches = run_batches(settings, run_id)
    if not batches:
        click.echo("no batches: the run was not asked with --mode batch, or everything it needed was stored")
        return
    rows = [
        [
            b["batch_id"],
            b["round"],
            b["status"],
            b["n_requests"],
            b["n_answered"],
            b["n_failed"],
            b["submitted_at"].strftime("%Y-%m-%d %H:%M"),
            b["collected_at"].strftime("%Y-%m-%d %H:%M") if b["collected_at"] else None,
        ]
        for b in batches
    ]
    for line in text_table(STATUS_HEADERS, rows):
        click.echo(line)


@batch.command()
@click.argument("run_name")
@settings_options
def status(settings: Settings, run_name: str) -> None:
    """Show a run's batches: round, status, requests, answered and failed lines, when submitted and collected.

    \b
    Example:
        peras batch status sample-gpt-4o-mini
    """
    run_id, _ = find_run(settings, run_name)
    echo_status(settings, run_id)


@batch.command()
@click.argument("run_name")
@click.option("--api-key-env", help="Environment variable holding the API key [OPENAI_API_KEY].")
@settings_options
def collect(settings: Settings, run_name: str, api_key_env: str | None) -> None:
    """Poll a run's live batches once and store what the ended ones answered (the judge command, run again, reads
    them and submits the next round).

    \b
    Example:
        peras batch collect sample-gpt-4o-mini
    """
    from tasks.engine.batch_store import collect_run

    run_id, model = find_run(settings, run_name)
    collect_run(settings, run_id, model, api_key_env or settings.api_key_env)
    echo_status(settings, run_id)


@batch.command()
@click.argument("run_name")
@click.option("--api-key-env", help="Environment variable holding the API key [OPENAI_API_KEY].")
@settings_options
def cancel(settings: Settings, run_name: str, api_key_env: str | None) -> None:
    """Cancel a run's live batches. What a provider answered before it stopped is collected as usual; the rest goes
    in the next round.

    \b
    Example:
        peras batch cancel sample-gpt-4o-mini
    """
    from tasks.engine.batch_store import cancel_batches

    run_id, model = find_run(settings, run_name)
    cancelled = cancel_batches(settings, run_id, model, api_key_env or settings.api_key_env)
    click.echo(f"{run_name}: " + (", ".join(f"{b} {s}" for b, s in cancelled) or "no live batch to cancel"))


@batch.command(name="export")
@click.argument("run_name")
@click.option("--output", type=click.Path(path_type=Path), required=True, help="Directory for the input files.")
@settings_options
def export_round(settings: Settings, run_name: str, output: Path) -> None:
    """Write a run's round waiting for vLLM's offline runner: one input file per batch (at most 50,000 lines).

    \b
    Example:
        peras batch export sample-llama --output rounds/
        vllm run-batch -i rounds/file-....jsonl -o out/file-....jsonl --model meta-llama/Llama-3.1-8B-Instruct
    """
    from tasks.engine.batch_files import export_files

    run_id, _ = find_run(settings, run_name)
    paths = export_files(settings, run_id, output)
    if not paths:
        click.echo(f"{run_name}: no round waits for export (run the judge command with --mode batch first)")
    for path in paths:
        click.echo(str(path))


@batch.command(name="import")
@click.argument("run_name")
@click.argument("outputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@settings_options
def import_round(settings: Settings, run_name: str, outputs: tuple[Path, ...]) -> None:
    """Read output files of vLLM's run-batch into a run's exported round: every line checked first (a bad one is
    named with its file and line, and nothing is imported); then run the judge command again.

    \b
    Example:
        peras batch import sample-llama out/*.jsonl
    """
    from tasks.engine.batch_files import import_files

    run_id, _ = find_run(settings, run_name)
    counts = import_files(settings, run_id, run_name, list(outputs))
    click.echo(
        f"{run_name}: {counts['n_lines']:,} answers imported into {counts['n_batches']} batch(es)"
        f" ({counts['n_same']:,} lines imported before skipped)"
    )


COMMANDS = [batch]
