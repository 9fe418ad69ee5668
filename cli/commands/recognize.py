"""`peras personas recognize`: does the persona show in the judge's own reasoning? (explainable personality
recognition over a judge run's with-CoT answers; registered on `peras personas`)."""

from __future__ import annotations

from typing import Any

import click

from cli.common import (
    bounded,
    echo_table,
    endpoint_options,
    retry_failed_option,
    run_asking_flow,
    seed_option,
    settings_options,
)
from peras.settings import Settings

DIMENSIONS = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")


@click.command()
@click.option("--run", "judge_run", required=True, help="The judge run whose with-CoT answers are read.")
@click.option("--dimension", "dimensions", multiple=True, type=click.Choice(DIMENSIONS),
              help="Big-Five dimension to read (repeatable) [all five].")  # fmt: skip
@click.option("--sample", type=bounded(1), default=30, show_default=True,
              help="CoT answers per personality (the same pairs under each, by a seeded hash).")  # fmt: skip
@seed_option("Seed of the sample and the requests.")
@click.option("--recognizer-model", help="Model name of the recognizer [the --model / PERAS_MODEL endpoint's].")
@click.option("--recognizer-base-url", help="Base URL of the recognizer [the --base-url endpoint's; none: embedded].")
@click.option("--run-name", help="Name of the recognize run (re-using a name resumes it) [JUDGE_RUN-recognize-MODEL].")
@retry_failed_option("Ask again the readings this run stored as unreadable or refused.")
@endpoint_options
@settings_options
def recognize(
    settings: Settings,
    judge_run: str,
    dimensions: tuple[str, ...],
    sample: int,
    seed: int,
    recognizer_model: str | None,
    recognizer_base_url: str | None,
    run_name: str | None,
    retry_failed: bool,
    backend: str | None,
) -> None:
    """Read each persona's sampled CoT answers for its Big-Five levels, with the sentences as evidence.

    Per answer and dimension the recognizer (PersonalityEvd's Figure 6 prompt) says high, low or uncertain and
    cites the sentences; per persona and dimension it writes the trait evidence (one paragraph per facet). Prints
    the shares per persona x dimension, each persona's own-dimension verdict against default and the BFI-2 check,
    and the pole accuracy. Views recognize_shares, recognize_shift, recognize_accuracy, recognize_bfi2_agreement,
    recognize_evidence, recognize_trait_levels (docs/personas.md).

    \b
    Examples:
        peras personas recognize --run sample-judge-run --sample 10
        peras personas recognize --run dl19-llama --dimension neuroticism --recognizer-model gpt-4o \\
            --recognizer-base-url https://api.openai.com/v1
    """
    from flows.recognize import recognize as recognize_flow

    summary = run_asking_flow(
        recognize_flow,
        "recognize",
        settings,
        backend,
        judge_run=judge_run,
        dimensions=list(dimensions) or None,
        sample=sample,
        seed=seed,
        run_name=run_name,
        recognizer_model=recognizer_model,
        recognizer_base_url=recognizer_base_url,
        retry_failed=retry_failed,
    )
    if summary is not None:
        print_summary(summary)


def print_summary(summary: dict[str, Any]) -> None:
    """The check set's figures first (how far to trust what follows), shares, verdicts, accuracy, then counts."""
    for r in summary["check_scores"]:
        f1 = "-" if r["id_f1"] is None else f"{r['id_f1']:.2f}"
        accuracy = "-" if r["accuracy"] is None else f"{r['accuracy']:.2f}"
        click.echo(
            f"Recognizer on the check set (written for PERAS): {r['n_correct']} of {r['n_texts']} levels right "
            f"(accuracy {accuracy}), evidence-id F1 {f1} over {r['n_id_texts']} texts with evidence."
        )
    click.echo("Readings of the sampled CoT answers (shares of those read):")
    headers = ["personality", "dimension", "n_read", "n_failures", "high", "low", "uncertain", "verdict"]
    rows = [
        [r["personality"], r["dimension"], r["n_read"], r["n_failures"], r["share_high"], r["share_low"],
         r["share_uncertain"], r["verdict"]]
        for r in summary["shares"]
    ]  # fmt: skip
    echo_table(headers, rows)
    if summary["verdicts"]:
        click.echo("Own dimension: verdict against the intended pole, shift from default, BFI-2 check:")
        headers = ["personality", "dimension", "pole", "verdict", "shift", "bfi2_check", "bfi2", "agrees"]
        rows = [
            [r["personality"], r["dimension"], r["intended_pole"], r["verdict"], r["shift"], r["check_run"],
             None if r["is_bfi2_pass"] is None else ("pass" if r["is_bfi2_pass"] else "FAIL"),
             None if r["agrees"] is None else ("yes" if r["agrees"] else "no")]
            for r in summary["verdicts"]
        ]  # fmt: skip
        echo_table(headers, rows)
    for r in summary["accuracy"]:
        click.echo(
            f"Pole recognised for {r['n_recognised']} of {r['n_personas']} personas (accuracy {r['accuracy']:.2f})."
        )
        if r["is_default_mostly_uncertain"] is False:
            click.echo(
                f"Control: default's answers read uncertain in only {r['default_share_uncertain']:.0%} of readings "
                "(expected mostly uncertain): the recognizer reads personality where none was asked for."
            )
    click.echo(
        f"{summary['run_name']}: {summary['n_states']:,} readings ({summary['n_judged_now']:,} new; "
        f"{summary['n_sent']:,} requests sent, {summary['n_cached']:,} reused), {summary['n_failures']:,} failed; "
        f"{summary['n_traits']:,} trait judgments in {summary['traits_run_name']} "
        f"({summary['n_trait_failures']:,} failed); recognizer {summary['model']} via {summary['backend']}"
    )


COMMANDS: list[click.Command] = []  # registered on `peras personas`, not on `peras`
