"""`peras personas`: personality conditions as BFI-2 respondents (`check`: the fidelity check)."""

from __future__ import annotations

from typing import Any

import click

from cli.common import endpoint_options, endpoint_tags, run_flow, run_tags, settings_options, text_table
from peras.settings import Settings

DOMAINS = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")


@click.group()
def personas() -> None:
    """Personality conditions as BFI-2 respondents: does each persona score as its instruction says?

    \b
    Example:
        peras personas check --samples 5
    """


@personas.command()
@click.option(
    "--set",
    "personality_set",
    type=click.Choice(["builtin"]),
    default="builtin",
    show_default=True,
    help="The personality set to check. Only the eleven built-in conditions for now (named sets come later).",
)
@click.option(
    "--samples",
    type=click.IntRange(min=2),
    default=5,
    show_default=True,
    help="Sampled answers per item, besides the greedy one (a score's spread needs 2+).",
)
@click.option("--temperature", type=click.FloatRange(min=0, min_open=True), default=0.7, show_default=True,
              help="Temperature of the sampled answers.")  # fmt: skip
@click.option("--seed", type=click.IntRange(min=0), default=42, show_default=True, help="Sample i is sent with seed+i.")
@click.option("--run-name", help="Name of the check run (re-using a name resumes it) [personas-SET-MODEL].")
@click.option("--retry-failed", is_flag=True, help="Ask again the answers this run stored as unreadable or refused.")
@endpoint_options
@settings_options
def check(
    settings: Settings,
    personality_set: str,
    samples: int,
    temperature: float,
    seed: int,
    run_name: str | None,
    retry_failed: bool,
    backend: str | None,
) -> None:
    """Administer the 60 BFI-2 items to every personality of a set and test high > default > low per trait.

    Each item is asked once greedily and SAMPLES times sampled, under the personality's instruction placed as in
    judging. Prints the personality x domain matrix (mean domain scores over the samples, 1-5, reverse-keyed items
    scored 6 - answer) and, per trait, whether the high persona exceeds default and default the low persona by at
    least a medium effect (95% interval of Cohen's d, in the samples' pooled SD, above 0.5). The scores are in the
    warehouse views persona_domain_scores, persona_domain_matrix and persona_fidelity (docs/personas.md).

    \b
    Examples:
        peras personas check
        peras personas check --samples 10 --base-url http://gpu:8000/v1 --model meta-llama/Llama-3.1-8B-Instruct
    """
    from flows.personas import personas_check

    summary = run_flow(
        personas_check,
        tags=run_tags("personas", **endpoint_tags(settings, backend)),
        personality_set=personality_set,
        samples=samples,
        temperature=temperature,
        seed=seed,
        run_name=run_name,
        backend=backend,
        retry_failed=retry_failed,
        settings=settings,
    )
    print_summary(summary)


def print_summary(summary: dict[str, Any]) -> None:
    """The matrix, the pass/fail table, then one line of counts."""
    click.echo(f"Mean domain scores (1-5) over {summary['n_samples']} sampled answers per item:")
    matrix = [[row["personality"], *(row[d] for d in DOMAINS)] for row in summary["matrix"]]
    for line in text_table(["personality", *DOMAINS], matrix):
        click.echo(line)
    click.echo("Fidelity: upper above lower by a medium effect (Cohen's d, 95% interval above 0.5):")
    headers = ["trait", "comparison", "upper", "lower", "difference", "d", "effect_ci_low", "effect_ci_high", "pass"]
    rows = [
        [r["trait"], r["comparison"], r["upper_score"], r["lower_score"], r["difference"], r["effect_size"],
         r["effect_ci_low"], r["effect_ci_high"], "pass" if r["is_pass"] else "FAIL"]
        for r in summary["fidelity"]
    ]  # fmt: skip
    for line in text_table(headers, rows):
        click.echo(line)
    n_pass = sum(1 for r in summary["fidelity"] if r["is_pass"])
    click.echo(
        f"{summary['run_name']}: set {summary['personality_set']}, {n_pass} of {len(summary['fidelity'])} "
        f"comparisons pass; {summary['n_answers']:,} answers ({summary['n_judged_now']:,} new; "
        f"{summary['n_sent']:,} requests sent, {summary['n_cached']:,} reused), {summary['n_failures']:,} failed; "
        f"model {summary['model']} via {summary['backend']}"
    )


COMMANDS = [personas]
