"""`peras judge`: run the judge flow against the embedded model or any OpenAI-compatible endpoint."""

from __future__ import annotations

import click
from click.core import ParameterSource

from cli.common import endpoint_options, endpoint_tags, run_flow, run_tags, settings_options
from cli.model_presets import check_served, model_preset_option
from peras.errors import UsageError
from peras.models import ModelPreset
from peras.settings import Settings
from tasks.ingest.sources import default_subset


@click.command()
@click.argument("collection")
@click.option(
    "--subset",
    help="Topic subset (e.g. published, balanced, dev, test) [the study's: published for llmjudge, "
    "balanced for dl19, dl20, dl21; the whole collection otherwise].",
)
@click.option("--all-topics", is_flag=True, help="Judge the whole collection, not its default subset.")
@click.option("--personality", "personalities", multiple=True, help="Personality code (repeatable); default all 11.")
@click.option(
    "--cot",
    type=click.Choice(["both", "with", "without"]),
    default="both",
    show_default=True,
    help="Chain-of-thought setting(s).",
)
@click.option(
    "--confidence-method",
    "methods",
    multiple=True,
    type=click.Choice(["verbalized", "logprob", "sampling", "self", "certainty", "all"]),
    help="Confidence method (repeatable; 'all': every method on the same pairs); default verbalized.",
)
@click.option("--run-name", help="Name of the run (re-using a name resumes it).")
@click.option("--limit-pairs", type=click.IntRange(min=1), help="Judge only the first N pairs (a quick look).")
@click.option(
    "--n-samples",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="Answers per item for the sampling method.",
)
@click.option(
    "--chunk-size",
    type=click.IntRange(min=1),
    default=8192,
    show_default=True,
    help="Judgments per shard: each full shard is loaded into the warehouse (progress visible) while judging goes on.",
)
@click.option(
    "--retry-failed",
    is_flag=True,
    help="Ask again the answers this run stored as unreadable or refused (a new run always re-asks them).",
)
@endpoint_options
@model_preset_option
@settings_options
def judge(
    settings: Settings,
    collection: str,
    subset: str | None,
    all_topics: bool,
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
    """
    from flows.judge import judge as judge_flow

    if subset is not None and all_topics:
        raise UsageError("give --subset or --all-topics, not both")
    if subset is None and not all_topics:
        subset = default_subset(collection)
    check_served(model_preset, settings)
    cot_settings = {"both": [False, True], "with": [True], "without": [False]}[cot]
    cot_given = click.get_current_context().get_parameter_source("cot") is not ParameterSource.DEFAULT
    if model_preset is not None and not cot_given:
        cot_settings = model_preset.cot_settings  # the study's CoT settings for the model
    result = run_flow(
        judge_flow,
        tags=run_tags("judge", collection, subset, **endpoint_tags(settings, backend)),
        collection=collection,
        subset=subset,
        personalities=list(personalities) or None,
        cot=cot_settings,
        confidence_methods=list(methods) or None,
        run_name=run_name,
        limit_pairs=limit_pairs,
        chunk_size=chunk_size,
        retry_failed=retry_failed,
        n_samples=n_samples,
        backend=backend,
        settings=settings,
    )
    click.echo(
        f"{result['run_name']}: {result['n_planned']:,} judgments ({result['n_judged_now']:,} new; "
        f"{result['n_sent']:,} requests sent, {result['n_cached']:,} reused), "
        f"{result['n_failures']:,} parse failures; model {result['model']} via {result['backend']}"
    )


COMMANDS = [judge]
