"""`peras pairwise`: which of two judged passages is more relevant, asked in both orders under each personality."""

from __future__ import annotations

from typing import Any

import click

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
from peras.errors import UsageError
from peras.settings import Settings
from tasks.ingest.sources import default_subset


@click.command()
@click.argument("collection")
@click.option(
    "--subset",
    help="Topic subset [the collection's experiment subset, as for `peras judge`; the whole collection otherwise].",
)
@click.option("--all-topics", is_flag=True, help="Draw from the whole collection, not its default subset.")
@click.option(
    "--prompt",
    "prompts",
    multiple=True,
    type=click.Choice(["certainty", "tie", "self", "logp", "mp", "all"]),
    help="Prompt (repeatable; 'all': every prompt the endpoint supports on the same pairs, logp only where it returns"
    " log-probabilities; 'mp' sends 10 requests per answer) [certainty].",
)
@click.option(
    "--pairs-per-topic",
    type=bounded(1),
    default=8,
    show_default=True,
    help="Pairs drawn per topic, spread over grade differences 0-3.",
)
@click.option("--personality", "personalities", multiple=True, help="Personality code (repeatable); default all 11.")
@personality_set_option("Ask under")
@seed_option("Seed of the pair draws.")
@click.option("--run-name", help="Name of the run (re-using a name resumes or extends it).")
@retry_failed_option("Ask again the answers this run stored as unreadable or refused (a new run always re-asks them).")
@endpoint_options
@settings_options
def pairwise(
    settings: Settings,
    collection: str,
    subset: str | None,
    all_topics: bool,
    prompts: tuple[str, ...],
    pairs_per_topic: int,
    personalities: tuple[str, ...],
    personality_set: str | None,
    seed: int,
    run_name: str | None,
    retry_failed: bool,
    backend: str | None,
) -> None:
    """Pairwise judging on COLLECTION: for drawn pairs of judged passages, which one is more relevant?

    Pairs are drawn per topic from the qrels, stratified over grade differences (0 = a tie); each is asked in both
    orders (A/B and B/A), so position bias shows. Prompts: certainty ([[A]]/[[B]] and a 1-100 certainty), tie
    ([[A]]/[[B]]/[[C]]), self (the SC template's JSON with a 0-100 confidence), logp and mp (the MP and LogP
    template's JSON choice; confidence from the two options' log-probabilities, or the share of 10 answers sampled
    at temperature 0.7 that agree with the majority). See docs/pairwise.md.

    \b
    Examples:
        peras pairwise sample --pairs-per-topic 2 --personality default
        peras pairwise dl19 --prompt all --base-url http://gpu:8000/v1 --model meta-llama/Llama-3.1-8B-Instruct
        peras pairwise llmjudge --subset test --prompt tie --personality HA --run-name llmjudge-tie-HA
        peras pairwise dl19 --prompt logp --prompt mp --base-url http://gpu:8000/v1 --model Qwen/Qwen2.5-7B-Instruct
        peras pairwise sample --personality-set mine    # a set built with `peras personas build mine`
    """
    if subset is not None and all_topics:
        raise UsageError("give --subset or --all-topics, not both")
    if subset is None and not all_topics:
        subset = default_subset(collection)
    preflight.collection(settings, collection, subset)
    preflight.personalities(settings, list(personalities) or None, personality_set)
    preflight.endpoint(settings)
    from flows.pairwise import pairwise as pairwise_flow  # Prefect: loaded once the checks above passed

    summary = run_asking_flow(
        pairwise_flow,
        "pairwise",
        settings,
        backend,
        where=(collection, subset),
        collection=collection,
        subset=subset,
        personalities=list(personalities) or None,
        personality_set=personality_set,
        prompts=list(prompts) or None,  # 'all': the flow asks every prompt the endpoint supports
        pairs_per_topic=pairs_per_topic,
        seed=seed,
        run_name=run_name,
        retry_failed=retry_failed,
    )
    if summary is not None:
        print_summary(summary)


def print_summary(summary: dict[str, Any]) -> None:
    """One line: the run, its size, what was sent."""
    click.echo(
        f"{summary['run_name']}: {summary['n_pairs']:,} pairs, {summary['n_planned']:,} answers "
        f"({summary['n_judged_now']:,} new; {summary['n_sent']:,} requests sent, {summary['n_cached']:,} reused), "
        f"{summary['n_failures']:,} failed; model {summary['model']} via {summary['backend']}"
    )


COMMANDS = [pairwise]
