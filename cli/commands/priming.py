"""`peras priming`: the threshold-priming experiment in batch judging, and its table."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from cli import preflight
from cli.common import (
    bounded,
    endpoint_options,
    personality_set_option,
    retry_failed_option,
    run_asking_flow,
    seed_option,
    settings_options,
)
from cli.model_presets import check_served, model_preset_option
from peras.models import ModelPreset
from peras.settings import Settings

SETTING = re.compile(r"\s*(\d+)\s*[,x]\s*(\d+)\s*")


def parse_setting(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[tuple[int, int]]:
    """--setting PL,EL (or PLxEL), repeatable."""
    settings = []
    for value in values:
        match = SETTING.fullmatch(value)
        if match is None:
            raise click.BadParameter(f"{value!r} is not PL,EL (e.g. 4,8)", ctx, param)
        settings.append((int(match.group(1)), int(match.group(2))))
    return settings


DEFAULT_COLLECTION = "dl19"


@click.command()
@click.argument("collection", required=False)
@click.option(
    "--collection",
    "collection_option",
    metavar="COLLECTION",
    help=f"The same as the COLLECTION argument (kept for old scripts) [{DEFAULT_COLLECTION}].",
)
@click.option(
    "--topic", "topics", multiple=True, help="Topic id (repeatable) [those with 12+ passages at every level]."
)
@click.option("--limit-topics", type=bounded(1), help="Only the first N topics (a quick look).")
@click.option("--trials", type=bounded(1), default=20, show_default=True, help="Trials per topic.")
@click.option(
    "--setting",
    "batch_settings",
    multiple=True,
    callback=parse_setting,
    metavar="PL,EL",
    help="Prologue and epilogue sizes (repeatable) [4,4 4,8 8,8].",
)
@click.option("--personality", "personalities", multiple=True, help="Personality code (repeatable), or all [default].")
@personality_set_option("Ask under")
@seed_option("Seed of the draws.")
@click.option("--run-name", help="Name of the run (re-using a name resumes or extends it).")
@click.option(
    "--frequency-penalty", type=float, help="Sent with every request [the preset's: the study's 1 for Llama]."
)
@click.option("--presence-penalty", type=float, help="Sent with every request [the preset's: the study's 0 for Llama].")
@click.option(
    "--min-per-level",
    type=bounded(1),
    default=12,
    show_default=True,
    help="Topic rule: judged passages needed at each level 0-3.",
)
@retry_failed_option("Ask again the batches this run stored as unreadable or refused (a new run always re-asks them).")
@endpoint_options
@model_preset_option
@settings_options
def priming(
    settings: Settings,
    collection: str | None,
    collection_option: str | None,
    topics: tuple[str, ...],
    limit_topics: int | None,
    trials: int,
    batch_settings: list[tuple[int, int]],
    personalities: tuple[str, ...],
    personality_set: str | None,
    seed: int,
    run_name: str | None,
    frequency_penalty: float | None,
    presence_penalty: float | None,
    min_per_level: int,
    retry_failed: bool,
    backend: str | None,
    model_preset: ModelPreset | None,
) -> None:
    """Threshold priming on COLLECTION [dl19]: are passages scored lower after highly relevant ones in a batch?

    Each trial judges the same qrel-2 passages after PL qrel-3 passages (HT) and after PL qrel-0
    passages (LT), in one request per batch; the table gives mean epilogue scores, the gap LT - HT and a
    paired t-test. Plots go to REPORTS_DIR/priming/RUN_NAME/.

    \b
    Examples:
        peras priming dl19 --limit-topics 2 --trials 3
        peras priming dl19 --base-url http://gpu:8000/v1 --model meta-llama/Llama-3.1-8B-Instruct --frequency-penalty 1
        peras priming dl19 --personality all --setting 4,4 --run-name dl19-priming-all
        peras priming dl19 --model-preset llama-3-8b --base-url http://gpu:8000/v1   # penalties 1 and 0
    """
    collection = chosen_collection(collection, collection_option)
    check_served(model_preset, settings)
    preflight.collection(settings, collection)
    preflight.personalities(settings, list(personalities) or None, personality_set)
    preflight.endpoint(settings)
    frequency_penalty, presence_penalty = penalties(model_preset, frequency_penalty, presence_penalty)
    from flows.priming import priming as priming_flow  # Prefect: loaded once the checks above passed

    summary = run_asking_flow(  # None: a batch-mode run whose answers are still out (said by run_asking_flow)
        priming_flow, "priming", settings, backend, where=(collection,), collection=collection,
        topics=list(topics) or None, limit_topics=limit_topics, trials=trials, batch_settings=batch_settings or None,
        personalities=list(personalities) or None, personality_set=personality_set, seed=seed,
        retry_failed=retry_failed, run_name=run_name, frequency_penalty=frequency_penalty,
        presence_penalty=presence_penalty, min_per_level=min_per_level,
    )  # fmt: skip
    print_summary(summary)


def chosen_collection(collection: str | None, collection_option: str | None) -> str:
    """COLLECTION or --collection (not two different ones), else dl19."""
    if collection and collection_option and collection != collection_option:
        raise click.UsageError(f"two collections given: {collection} and --collection {collection_option}")
    return collection or collection_option or DEFAULT_COLLECTION


def penalties(
    preset: ModelPreset | None, frequency: float | None, presence: float | None
) -> tuple[float | None, float | None]:
    """The penalties given, else the model preset's (none without a preset)."""
    if preset is None:
        return frequency, presence
    return (
        preset.priming.frequency_penalty if frequency is None else frequency,
        preset.priming.presence_penalty if presence is None else presence,
    )


def print_summary(summary: dict[str, Any] | None) -> None:
    """The topic table of the first personality, the pooled table when there are several, the index (nothing for
    None)."""
    if summary is None:
        return
    from tasks.priming.tables import format_number, format_p

    console = Console(width=120)
    first = summary["personalities"][0]
    click.echo(f"Mean epilogue score after a high (HT) and a low (LT) prologue; personality {first}:")
    topics = _table("topic", "PL", "EL", "HT", "LT", "gap", "t", "p", "n")
    for r in summary["analysis"]:
        if r["personality"] == first:
            topics.add_row(
                r["query_id"],
                str(r["n_prologue"]),
                str(r["n_epilogue"]),
                format_number(r["mean_ht"]),
                format_number(r["mean_lt"]),
                format_number(r["gap"], signed=True),
                format_number(r["t_stat"], 2),
                format_p(r["p_value"]),
                str(r["n_pairs"]),
            )
    console.print(topics)
    if len(summary["personalities"]) > 1:
        click.echo("Per personality, pooled over topics; vs default: change of the gap on the same passages:")
        console.print(_pooled_table(summary))
    click.echo("Priming index: mean over trials of (mean LT - mean HT), 95% t interval:")
    index = _table("personality", "index", "95% CI", "trials")
    for r in summary["index"]:
        interval = f"[{format_number(r['ci_low'], signed=True)}, {format_number(r['ci_high'], signed=True)}]"
        index.add_row(r["personality"], format_number(r["priming_index"], signed=True), interval, str(r["n_trials"]))
    console.print(index)
    where = f"; plots in {Path(summary['plots'][0]).parent}" if summary["plots"] else ""
    click.echo(
        f"{summary['run_name']}: {summary['n_batches']:,} batches ({summary['n_judged_now']:,} new; "
        f"{summary['n_sent']:,} requests sent, {summary['n_cached']:,} reused), {summary['n_failures']:,} "
        f"failed; model {summary['model']} via {summary['backend']}{where}"
    )


def _table(*columns: str) -> Table:
    """Text columns left, numbers right; gap = LT - HT (positive: priming), p from paired t-tests."""
    table = Table()
    for column in columns:
        table.add_column(column, justify="left" if column in ("topic", "personality", "change") else "right")
    return table


def _pooled_table(summary: dict[str, Any]) -> Table:
    from tasks.priming.tables import format_number, format_p

    table = _table("PL", "EL", "personality", "HT", "LT", "gap", "p", "vs default", "p vs default", "change")
    for r in summary["pooled"]:
        table.add_row(
            str(r["n_prologue"]),
            str(r["n_epilogue"]),
            r["personality"],
            format_number(r["mean_ht"]),
            format_number(r["mean_lt"]),
            format_number(r["gap"], signed=True),
            format_p(r["p_value"]),
            format_number(r["gap_vs_default"], signed=True),
            format_p(r["p_vs_default"]),
            r["gap_change"] or "-",
        )
    return table


COMMANDS = [priming]
