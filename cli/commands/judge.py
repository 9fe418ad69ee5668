"""`peras judge`: run the judge flow against the embedded model or any OpenAI-compatible endpoint."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click
from click.core import ParameterSource

from cli import preflight
from cli.common import (
    bounded,
    endpoint_options,
    endpoint_tags,
    personality_set_option,
    retry_failed_option,
    run_flow,
    run_tags,
    settings_options,
    waiting_line,
)
from cli.model_presets import check_served, model_preset_option
from peras.errors import UsageError
from peras.models import ModelPreset
from peras.settings import Settings
from tasks.engine.shards import ROWS_PER_SHARD
from tasks.ingest.sources import default_subset

JUDGING_OPTIONS: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
    click.option(
        "--personality", "personalities", multiple=True, help="Personality code (repeatable); default all 11."
    ),
    click.option(
        "--cot",
        type=click.Choice(["both", "with", "without"]),
        default="both",
        show_default=True,
        help="Chain-of-thought setting(s).",
    ),
    click.option(
        "--confidence-method",
        "methods",
        multiple=True,
        type=click.Choice(["verbalized", "logprob", "sampling", "self", "certainty", "all"]),
        help="Confidence method (repeatable; 'all': every method on the same pairs); default verbalized.",
    ),
    click.option("--run-name", help="Name of the run (re-using a name resumes it)."),
    click.option(
        "--n-samples",
        type=bounded(1),
        default=10,
        show_default=True,
        help="Answers per item for the sampling method.",
    ),
    click.option(
        "--chunk-size",
        type=bounded(1),
        default=ROWS_PER_SHARD,
        show_default=True,
        help="Judgments per shard: full shards are loaded into the warehouse (progress visible) while judging "
        "goes on, at most every PERAS_LOAD_INTERVAL_S (5 s).",
    ),
    retry_failed_option(
        "Ask again the answers this run stored as unreadable or refused (a new run always re-asks them)."
    ),
]


def judging_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The judge's options, shared with `peras judge-run`: personalities, CoT, confidence methods, run name, ..."""
    for option in reversed(JUDGING_OPTIONS):
        func = option(func)
    return func


def cot_settings_for(cot: str, model_preset: ModelPreset | None) -> list[bool]:
    """The CoT settings asked: --cot, else the model preset's (the study's settings for the model)."""
    cot_settings = {"both": [False, True], "with": [True], "without": [False]}[cot]
    cot_given = click.get_current_context().get_parameter_source("cot") is not ParameterSource.DEFAULT
    return model_preset.cot_settings if model_preset is not None and not cot_given else cot_settings


def judging_parameters(judging: dict[str, Any], model_preset: ModelPreset | None) -> dict[str, Any]:
    """The judge flow's parameters from the options `judging_options` added, as a command received them."""
    return {
        "personalities": list(judging["personalities"]) or None,
        "cot": cot_settings_for(judging["cot"], model_preset),
        "confidence_methods": list(judging["methods"]) or None,
        "run_name": judging["run_name"],
        "n_samples": judging["n_samples"],
        "chunk_size": judging["chunk_size"],
        "retry_failed": judging["retry_failed"],
    }


def judged_line(result: dict[str, Any]) -> str:
    """What a judge run did, in one line (a batch-mode call whose items still wait says what to run next)."""
    if result.get("n_waiting"):
        return waiting_line(result, "judgments")
    return (
        f"{result['run_name']}: {result['n_planned']:,} judgments ({result['n_judged_now']:,} new; "
        f"{result['n_sent']:,} requests sent, {result['n_cached']:,} reused), "
        f"{result['n_failures']:,} parse failures; model {result['model']} via {result['backend']}"
    )


def spread_line(result: dict[str, Any]) -> str:
    """What a run spread over hosts did, in one line."""
    again = sum(len(runs) - 1 for runs in result["parts"].values())
    return (
        f"{result['run_name']}: {result['n_planned']:,} judgments in {len(result['parts'])} parts "
        f"({again} started again), {result['n_failures']:,} parse failures; model {result['model']}; published"
    )


@click.command()
@click.argument("collection")
@click.option(
    "--subset",
    help="Topic subset (e.g. published, balanced, dev, test) [the study's: published for llmjudge, "
    "dl19, dl20, dl21; the whole collection otherwise].",
)
@click.option("--all-topics", is_flag=True, help="Judge the whole collection, not its default subset.")
@click.option("--limit-pairs", type=bounded(1), help="Judge only the first N pairs (a quick look).")
@personality_set_option("Judge with")
@click.option(
    "--parts",
    type=bounded(1),
    help="Spread the run over hosts: N child runs of --deployment that the workers of its pool take, each on its "
    "own host's LLM server (needs a DuckLake warehouse every host reaches: docs/scaling.md).",
)
@click.option(
    "--split-by",
    type=click.Choice(["personality", "topic"]),
    default="personality",
    show_default=True,
    help="With --parts: split into groups of personalities or of topics.",
)
@click.option(
    "--deployment",
    default="judge-part/hosts",
    show_default=True,
    help="With --parts: the judge-part deployment the parts run as.",
)
@judging_options
@endpoint_options
@model_preset_option
@settings_options
def judge(
    settings: Settings,
    collection: str,
    subset: str | None,
    all_topics: bool,
    personality_set: str | None,
    personalities: tuple[str, ...],
    cot: str,
    methods: tuple[str, ...],
    run_name: str | None,
    limit_pairs: int | None,
    backend: str | None,
    n_samples: int,
    chunk_size: int,
    retry_failed: bool,
    model_preset: ModelPreset | None,
    parts: int | None,
    split_by: str,
    deployment: str,
) -> None:
    """Ask an LLM for a 0-3 label and a 0-100 confidence for every pair x personality x setting.

    Without --base-url, the embedded llama.cpp model (CPU) is started and stopped by peras. Without --subset, a
    preset collection's experiment subset is judged (docs/subsets.md); `peras subsets` lists them.

    \b
    Examples:
        peras judge sample
        peras judge llmjudge --cot without          # its published subset: the study's 21 dev topics
        peras judge dl19 --subset balanced --base-url http://gpu:8000/v1 --model meta-llama/Llama-3.1-8B-Instruct
        peras judge llmjudge --subset test --personality default --personality HA --cot without
        peras judge dl19 --model-preset llama-3-8b --base-url http://gpu:8000/v1   # the study's model and settings
        peras judge sample --personality-set mine    # a set built with `peras personas build mine`
        peras judge dl19 --model meta-llama/Llama-3.1-8B-Instruct --parts 4   # over the hosts' workers
        peras judge dl19 --mode batch --base-url https://api.openai.com/v1 --model gpt-4o-mini   # half price
    """
    subset = chosen_subset(collection, subset, all_topics)
    check_served(model_preset, settings)
    preflight.collection(settings, collection, subset)
    preflight.personalities(settings, list(personalities) or None, personality_set)
    cot_settings = cot_settings_for(cot, model_preset)
    # Nothing to ask and nothing to change: said without Prefect, and without asking the server whether it answers.
    if parts is None and not retry_failed:
        done = settled_call(
            settings, collection, subset, (personalities, personality_set), cot_settings, methods, run_name,
            limit_pairs, n_samples, backend,
        )  # fmt: skip
        if done is not None:
            click.echo(judged_line(done))
            return
    if parts is None:  # with --parts each host's worker uses its own server
        preflight.endpoint(settings)
    asked: dict[str, Any] = {
        "tags": run_tags("judge", collection, subset, **endpoint_tags(settings, backend)), "collection": collection,
        "subset": subset, "personalities": list(personalities) or None, "cot": cot_settings,
        "confidence_methods": list(methods) or None, "run_name": run_name, "limit_pairs": limit_pairs,
        "chunk_size": chunk_size, "n_samples": n_samples, "backend": backend, "personality_set": personality_set,
        "retry_failed": retry_failed, "settings": settings,
    }  # fmt: skip
    ask_judge(asked, parts, split_by, deployment)


def ask_judge(asked: dict[str, Any], parts: int | None, split_by: str, deployment: str) -> None:
    """Run the judge flow (spread over --parts when given) and print its line."""
    from flows.judge import judge as judge_flow  # Prefect: loaded once the command's checks passed

    if parts is not None:
        click.echo(spread_line(run_flow(judge_flow, parts=parts, split_by=split_by, deployment=deployment, **asked)))
        return
    click.echo(judged_line(run_flow(judge_flow, **asked)))


def chosen_subset(collection: str, subset: str | None, all_topics: bool) -> str | None:
    """--subset as given, none with --all-topics, else the collection's experiment subset (docs/subsets.md)."""
    if subset is not None and all_topics:
        raise UsageError("give --subset or --all-topics, not both")
    return default_subset(collection) if subset is None and not all_topics else subset


def settled_call(
    settings: Settings,
    collection: str,
    subset: str | None,
    chosen: tuple[tuple[str, ...], str | None],
    cot_settings: list[bool],
    methods: tuple[str, ...],
    run_name: str | None,
    limit_pairs: int | None,
    n_samples: int,
    backend: str | None,
) -> dict[str, Any] | None:
    """The judge flow's summary of a call with nothing to ask (tasks/judge/settled.py), or None: run the flow."""
    from tasks.judge.runs import check_methods
    from tasks.judge.settled import settled
    from tasks.shared.personalities import choose_personalities

    personalities, personality_set = chosen
    asked = choose_personalities(settings, list(personalities) or None, personality_set)
    methods_asked = check_methods(list(methods) or None)
    return settled(
        settings, collection, subset, asked, cot_settings, methods_asked, run_name, limit_pairs, n_samples, backend
    )


COMMANDS = [judge]
