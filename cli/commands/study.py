"""`peras study`: the study's grid of models, collections, personalities and CoT settings, resumable."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cli import preflight
from cli.common import answer_format_option, bounded, run_flow, run_tags, settings_options
from peras.settings import Settings


@click.command()
@click.option(
    "--endpoints",
    "endpoints_file",
    type=click.Path(path_type=Path, dir_okay=False),
    required=True,
    help="TOML file: per model preset its base_urls, api_key_env (a variable's name) and concurrency.",
)
@click.option("--model", "models", multiple=True, help="Model preset (repeatable) [every preset of peras/models.toml].")
@click.option("--collection", "collections", multiple=True, help="Collection (repeatable) [llmjudge dl19 dl20 dl21].")
@click.option("--personality", "personalities", multiple=True, help="Personality code (repeatable) [all 11].")
@click.option("--limit-pairs", type=bounded(1), help="Judge only the first N pairs of each collection.")
@click.option("--classifier-trials", type=bounded(1), default=50, show_default=True, help="DL21 trials.")
@click.option("--priming-trials", type=bounded(1), default=20, show_default=True, help="DL19 trials.")
@click.option("--priming-topics", type=bounded(1), help="Prime only the first N DL19 topics.")
@click.option("--dry-run", is_flag=True, help="Print what would be asked and stop.")
@answer_format_option("auto, free or constrained for every model (an endpoints file's answer_format wins) [auto].")
@settings_options
def study(
    settings: Settings,
    endpoints_file: Path,
    models: tuple[str, ...],
    collections: tuple[str, ...],
    personalities: tuple[str, ...],
    limit_pairs: int | None,
    classifier_trials: int,
    priming_trials: int,
    priming_topics: int | None,
    dry_run: bool,
    answer_format: str | None,
) -> None:
    """Run the study: every model preset x collection x personality x CoT setting, then the analyses.

    Judges LLMJudge, DL19, DL20 (Experiment 1) and DL21 (Experiment 2) on their `published` subset (else
    `balanced`), computes the metrics, trains the classifier on DL21 per model, runs threshold priming on DL19
    and writes the report. Prints what it will ask first (requests, prompt tokens, cost of hosted models);
    running it again resumes.

    \b
    Examples:
        peras study --endpoints endpoints.toml --dry-run
        peras study --endpoints endpoints.toml --model llama-3-8b --collection dl19 --limit-pairs 50
    """
    if answer_format is not None:
        settings.answer_format = answer_format
    preflight.study_grid(
        settings, endpoints_file, list(models) or None, list(collections) or None, list(personalities) or None
    )
    from flows.study import study as study_flow  # Prefect: loaded once the checks above passed
    from tasks.study.estimate import format_estimate

    parameters: dict[str, Any] = {
        "endpoints_file": str(endpoints_file),
        "models": list(models) or None,
        "collections": list(collections) or None,
        "personalities": list(personalities) or None,
        "limit_pairs": limit_pairs,
        "classifier_trials": classifier_trials,
        "priming_trials": priming_trials,
        "priming_topics": priming_topics,
        "settings": settings,
    }
    planned = run_flow(study_flow, tags=run_tags("study"), flow_run_name="study-plan", dry_run=True, **parameters)
    click.echo("\n".join(format_estimate(planned["estimate"])))
    if dry_run:
        return
    echo_study(run_flow(study_flow, tags=run_tags("study"), dry_run=False, **parameters))


def echo_study(result: dict[str, Any]) -> None:
    """A line per judge and priming run, then the study's: or what still waits for batch answers."""
    for run in result["judge_runs"]:
        if run["n_waiting"]:
            click.echo(f"judge {run['run_name']}: {run['n_waiting']:,} judgments wait for batch answers")
            continue
        click.echo(
            f"judge {run['run_name']}: {run['n_planned']:,} judgments ({run['n_judged_now']:,} new; "
            f"{run['n_sent']:,} requests sent, {run['n_cached']:,} reused), {run['n_failures']:,} parse failures"
        )
    if result["n_waiting_runs"]:
        click.echo(
            f"study: {result['n_waiting_runs']} runs wait for batch answers; run this command again (or let the"
            " batch-poll deployment carry them: docs/batch.md), and the analyses follow once none waits"
        )
        return
    for run in result["priming_runs"]:
        click.echo(
            f"priming {run['run_name']}: {run['n_batches']:,} batches ({run['n_judged_now']:,} new; "
            f"{run['n_sent']:,} requests sent), {run['n_failures']:,} failed"
        )
    click.echo(
        f"study: {result['n_sent']:,} judge requests sent (estimated {result['estimate'].n_requests:,}), "
        f"{result['n_classified']} classifier tables; report: peras report (written to the reports directory)"
    )


COMMANDS = [study]
