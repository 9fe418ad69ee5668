"""`peras fuse`: several judges' answers fused per pair, by the study's voting baselines and by a fuser LLM."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from cli import preflight
from cli.common import (
    asking_endpoint_options,
    bounded,
    model_and_backend,
    retry_failed_option,
    run_flow,
    run_tags,
    seed_option,
    settings_options,
    waiting_line,
)
from cli.tables import TextTable, print_text_table
from peras.settings import Settings


def fuser_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The fuser's endpoint flags, as settings overrides (the settings a judge's --base-url/--model set). Place
    above @settings_options; `--backend` is passed on as `backend`."""
    return asking_endpoint_options(
        [
            click.option(
                "--fuser-model", "model", help="Model the fuser endpoint serves [the embedded model without a URL]."
            ),
            click.option(
                "--fuser-base-url", "base_urls", multiple=True, help="The fuser's OpenAI-compatible base URL."
            ),
        ],
        api_key_help="Environment variable holding the fuser endpoint's key [OPENAI_API_KEY].",
        backend_help="Backend label to record for the fuser (vllm, openai, ...).",
        concurrency_help="Fuser requests in flight per endpoint [8].",
    )(func)


@click.command()
@click.option("--collection", required=True, help="Collection whose judgments are fused (e.g. llmjudge, sample).")
@click.option(
    "--runs",
    "runs",
    multiple=True,
    required=True,
    help="Judge run name or glob (repeatable; 'llmjudge:*' = every run on llmjudge); each run x personality x "
    "setting is one judge.",
)
@click.option("--cot/--no-cot", default=None, help="Only the judgments with (without) chain of thought.")
@click.option("--confidence-method", help="Only the judgments of this confidence method (verbalized, self, ...).")
@click.option("--baselines-only", is_flag=True, help="Only the voting baselines: no fuser, no LLM.")
@click.option("--named", is_flag=True, help="Show the fuser the judges' names (default: anonymised, Judge 1..m).")
@click.option("--pairs", "n_pairs", type=bounded(1), help="Ask the fuser about N pairs only [all].")
@seed_option("Seed of the judges' order per pair.")
@click.option("--run-name", help="Name of the run (re-using a name resumes or extends it).")
@retry_failed_option("Ask again the fuser answers this run stored as failures.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["table", "csv", "json"]),
    default="table",
    show_default=True,
    help="table: fits 120 columns (split in parts); csv: the comparison, one row per method x metric; json: "
    "everything the run returned.",
)
@click.option("--wide", is_flag=True, help="With --format table: one table however wide.")
@fuser_options
@settings_options
def fuse(
    settings: Settings,
    collection: str,
    runs: tuple[str, ...],
    cot: bool | None,
    confidence_method: str | None,
    baselines_only: bool,
    named: bool,
    n_pairs: int | None,
    seed: int,
    run_name: str | None,
    retry_failed: bool,
    backend: str | None,
    fmt: str,
    wide: bool,
) -> None:
    """Fuse the judges of the runs matching --runs on --collection: the study's four voting baselines (majority,
    confidence-, sqrt-confidence- and entropy-weighted) and, unless --baselines-only, a fuser LLM that reads every
    judge's label, confidence and explanation. Prints the comparison (fuser, baselines, best single judge, default,
    the classifier on the same judges; deltas against default) and how the fuser and majority voting disagree.
    See docs/fuse.md.

    \b
    Examples:
        peras fuse --collection llmjudge --runs 'llmjudge:*' --baselines-only
        peras fuse --collection sample --runs 'sample-*' --pairs 4
        peras fuse --collection dl19 --runs dl19-balanced-llama --fuser-base-url http://gpu:8000/v1 \\
            --fuser-model meta-llama/Llama-3.1-70B-Instruct --format json
    """
    preflight.collection(settings, collection)
    if not baselines_only:
        preflight.endpoint(settings)
    from flows.fuse import fuse as fuse_flow  # Prefect: loaded once the checks above passed

    tags = model_and_backend(settings.base_urls, settings.model, backend)
    summary = run_flow(
        fuse_flow,
        tags=run_tags("fuse", collection, None, **({} if baselines_only else tags)),
        collection=collection,
        runs=list(runs),
        cot=cot,
        confidence_method=confidence_method,
        baselines_only=baselines_only,
        anonymised=not named,
        n_pairs=n_pairs,
        seed=seed,
        run_name=run_name,
        retry_failed=retry_failed,
        backend=backend,
        settings=settings,
    )
    echo_fused(summary, fmt, wide)


def echo_fused(summary: dict[str, Any], fmt: str, wide: bool) -> None:
    """What a fuse run returned, in the --format asked for (a batch-mode run still waiting: one line)."""
    if fmt == "json":
        click.echo(json.dumps(summary, indent=2, default=str))
        return
    if summary.get("n_waiting"):  # batch mode: the fuser's answers are still out
        click.echo(waiting_line(summary))
        return
    import polars as pl  # not loaded for --help

    from tasks.shared.fuse_comparison import disagreement_line

    if fmt == "csv":  # numbers, one row per method x metric: for a spreadsheet, not the eye
        columns = ["row_name", "row_kind", "metric", "value", "delta", "detail"]
        click.echo(pl.DataFrame(summary["rows"]).select(columns).write_csv(), nl=False)
        return
    click.echo(summary_line(summary))
    print_text_table(comparison(summary), wide=wide)
    click.echo(disagreement_line(summary["disagreement"]))


def summary_line(summary: dict[str, Any]) -> str:
    """One line: the run, its judges and pairs, what the fuser was asked."""
    line = f"{summary['run_name']}: {summary['n_judges']} judges, {summary['n_pairs']:,} pairs voted on"
    if "n_asked" in summary:
        line += (
            f"; fuser {summary['model']} asked {summary['n_asked']:,} pairs ({summary['n_sent']:,} requests sent, "
            f"{summary['n_cached']:,} reused), {summary['n_failures']:,} failed"
        )
    return line


def comparison(summary: dict[str, Any]) -> TextTable:
    """The comparison: values with (delta vs default) and the best single judge in [brackets], where there are
    some; the caption says only what the cells show."""
    from tasks.shared.fuse_comparison import comparison_table

    frame = comparison_table(summary["rows"])
    rows = summary["rows"]
    notes = []
    if any(r["delta"] is not None and r["row_kind"] != "default" for r in rows):
        notes.append("(delta against the default judge)")
    if any(r["row_kind"] == "best_single" and r["detail"] for r in rows):
        notes.append("[the best single judge per metric]")
    return TextTable(
        headers=frame.columns,
        rows=[list(row) for row in frame.iter_rows()],
        right=set(frame.columns[1:]),
        caption="; ".join(notes) or None,
    )


COMMANDS = [fuse]
