"""`peras personas`: build personality sets the study's way (`build`, `export`), check any set with the BFI-2
(`check`: the fidelity check), and read the personas in a judge's own reasoning (`recognize`: explainable personality
recognition over a judge run's with-CoT answers)."""

from __future__ import annotations

from pathlib import Path
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
from peras.prompting import CANONICAL_ORDER
from peras.settings import Settings

CONDITIONS = CANONICAL_ORDER[1:]

ITEMS_OPTION = click.option(
    "--items-per-domain",
    type=bounded(1, 12),
    default=12,
    show_default=True,
    help="Ask the first N items of each BFI-2 domain (12: all 60; 2: a quick look at 10).",
)
DOMAINS = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")


@click.group()
def personas() -> None:
    """Personality sets: build one the study's way; does each persona score as its instruction says (BFI-2)?

    \b
    Examples:
        peras personas check --samples 5
        peras personas build mine --max-rounds 3
        peras personas export mine --output my-personalities
        peras personas recognize --run sample-judge-run --sample 10
    """


@personas.command()
@click.option(
    "--set",
    "personality_set",
    default="builtin",
    show_default=True,
    help="The set: builtin (the study's Table 1), NAME (a built set's latest published version) or NAME@VERSION.",
)
@click.option(
    "--samples",
    type=bounded(2),
    default=5,
    show_default=True,
    help="Sampled answers per item, besides the greedy one (a score's spread needs 2+).",
)
@click.option("--temperature", type=click.FloatRange(min=0, min_open=True), default=0.7, show_default=True,
              help="Temperature of the sampled answers.")  # fmt: skip
@seed_option("Sample i is sent with seed+i.")
@click.option("--run-name", help="Name of the check run (re-using a name resumes it) [personas-SET-MODEL].")
@retry_failed_option("Ask again the answers this run stored as unreadable or refused.")
@ITEMS_OPTION
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
    items_per_domain: int,
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
        peras personas check --set mine@2 --items-per-domain 2
    """
    from flows.personas import personas_check

    summary = run_asking_flow(
        personas_check,
        "personas",
        settings,
        backend,
        personality_set=personality_set,
        samples=samples,
        temperature=temperature,
        seed=seed,
        run_name=run_name,
        retry_failed=retry_failed,
        items_per_domain=items_per_domain,
    )
    if summary is not None:
        print_summary(summary)


def print_summary(summary: dict[str, Any]) -> None:
    """The matrix, the pass/fail table, then one line of counts."""
    click.echo(f"Mean domain scores (1-5) over {summary['n_samples']} sampled answers per item:")
    echo_table(
        ["personality", *DOMAINS], [[row["personality"], *(row[d] for d in DOMAINS)] for row in summary["matrix"]]
    )
    click.echo("Fidelity: upper above lower by a medium effect (Cohen's d, 95% interval above 0.5):")
    headers = ["trait", "comparison", "upper", "lower", "difference", "d", "effect_ci_low", "effect_ci_high", "pass"]
    rows = [
        [r["trait"], r["comparison"], r["upper_score"], r["lower_score"], r["difference"], r["effect_size"],
         r["effect_ci_low"], r["effect_ci_high"], "pass" if r["is_pass"] else "FAIL"]
        for r in summary["fidelity"]
    ]  # fmt: skip
    echo_table(headers, rows)
    n_pass = sum(1 for r in summary["fidelity"] if r["is_pass"])
    click.echo(
        f"{summary['run_name']}: set {summary['personality_set']}, {n_pass} of {len(summary['fidelity'])} "
        f"comparisons pass; {summary['n_answers']:,} answers ({summary['n_judged_now']:,} new; "
        f"{summary['n_sent']:,} requests sent, {summary['n_cached']:,} reused), {summary['n_failures']:,} failed; "
        f"model {summary['model']} via {summary['backend']}"
    )


@personas.command()
@click.argument("name")
@click.option("--condition", "conditions", multiple=True, type=click.Choice(CONDITIONS),
              help="Build only this condition (repeatable) [all ten].")  # fmt: skip
@click.option("--max-rounds", type=bounded(1), default=3, show_default=True,
              help="Rounds a condition may take: one failing its check is built again with a new sample.")  # fmt: skip
@seed_option("Round r samples both steps with seed + r (and the check's sample i with seed + i).")
@click.option("--check-samples", type=bounded(2), default=5, show_default=True,
              help="Sampled answers per BFI-2 item in each round's check.")  # fmt: skip
@click.option("--check-temperature", type=click.FloatRange(min=0, min_open=True), default=0.7, show_default=True,
              help="Temperature of the check's sampled answers.")  # fmt: skip
@ITEMS_OPTION
@retry_failed_option("Ask again the steps stored as unreadable or refused (resume a failed build).")
@endpoint_options
@settings_options
def build(
    settings: Settings,
    name: str,
    conditions: tuple[str, ...],
    max_rounds: int,
    seed: int,
    check_samples: int,
    check_temperature: float,
    items_per_domain: int,
    retry_failed: bool,
    backend: str | None,
) -> None:
    """Build the personality set NAME the study's way: keywords, then an instruction, per condition; check; repeat.

    Step 1 asks "Please provide keywords related to High Openness." and Step 2 gives the keywords back and asks for
    a prompt that instructs an LLM to imitate the person (the study's wording). The instruction is extracted from
    the answer (docs/personas.md). Each round's candidates are checked with the BFI-2 (as `peras personas check`);
    a condition that fails is built again, up to --max-rounds. The set is stored as NAME@VERSION (a new version per
    build; an unfinished build started the same way resumes) with model, keywords, raw answers, instructions,
    rounds and fidelity (tables persona_sets, persona_set_builds; view persona_set_members).

    \b
    Examples:
        peras personas build mine
        peras personas build mine --condition HO --max-rounds 2 --items-per-domain 2
        peras judge sample --personality-set mine
    """
    from flows.personas import personas_build

    summary = run_asking_flow(
        personas_build,
        "personas",
        settings,
        backend,
        set_name=name,
        conditions=list(conditions) or None,
        max_rounds=max_rounds,
        seed=seed,
        check_samples=check_samples,
        check_temperature=check_temperature,
        items_per_domain=items_per_domain,
        retry_failed=retry_failed,
    )
    if summary is not None:
        print_build(summary)


def print_build(summary: dict[str, Any]) -> None:
    """Per condition: its persona, rounds, fidelity and keywords; then how many are faithful."""
    conditions = summary["conditions"]
    echo_table(
        ["condition", "personality", "rounds", "faithful", "d", "d_ci_low", "keywords"],
        [[r["condition"], r["personality"], r["rounds"], {True: "yes", False: "no"}.get(r["is_faithful"], "-"),
          r["effect_size"], r["effect_ci_low"], r["keywords"]] for r in conditions],
    )  # fmt: skip
    n_faithful = sum(1 for r in conditions if r["is_faithful"])
    click.echo(f"set {summary['personality_set']}: {n_faithful} of {len(conditions)} conditions faithful; "
               f"model {summary['model']}")  # fmt: skip


DIMENSIONS = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")


@personas.command()
@click.option("--run", "judge_run", required=True, help="The judge run whose with-CoT answers are read.")
@click.option("--dimension", "dimensions", multiple=True, type=click.Choice(DIMENSIONS),
              help="Big-Five dimension to read (repeatable) [all five].")  # fmt: skip
@click.option("--sample", type=bounded(1), default=30, show_default=True,
              help="CoT answers per personality (the same pairs under each, by a seeded hash).")  # fmt: skip
@seed_option("Seed of the sample and the requests.")
@click.option("--recognizer-model", help="Model name of the recognizer [the --model / PERAS_MODEL endpoint's].")
@click.option("--recognizer-base-url", help="Base URL of the recognizer [the --base-url endpoint's; none: embedded].")
@click.option("--evidence-judge-model", help="Score the recognizer's check-set evidence 1-5 with this model [none].")
@click.option("--evidence-judge-base-url", help="Base URL of the evidence judge [the recognizer's].")
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
    evidence_judge_model: str | None,
    evidence_judge_base_url: str | None,
    run_name: str | None,
    retry_failed: bool,
    backend: str | None,
) -> None:
    """Read each persona's sampled CoT answers for its Big-Five levels, with the sentences as evidence.

    Per answer and dimension the recognizer (PersonalityEvd's Figure 6 prompt) says high, low or uncertain and
    cites the sentences; per persona and dimension it writes the trait evidence (one paragraph per facet). Prints
    the shares per persona x dimension, each persona's own-dimension verdict against default and the BFI-2 check,
    and the pole accuracy; with --evidence-judge-model, that LLM scores the recognizer's check-set evidence 1-5
    against the check set's (PersonalityEvd's §4.1-4.2 evaluation). Views
    recognize_shares, recognize_shift, recognize_accuracy, recognize_bfi2_agreement, recognize_evidence,
    recognize_trait_levels, recognize_check_scores, recognize_evidence_quality (docs/personas.md).

    \b
    Examples:
        peras personas recognize --run sample-judge-run --sample 10
        peras personas recognize --run dl19-llama --dimension neuroticism --recognizer-model gpt-4o \\
            --recognizer-base-url https://api.openai.com/v1 --evidence-judge-model gpt-4-turbo
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
        evidence_judge_model=evidence_judge_model,
        evidence_judge_base_url=evidence_judge_base_url,
        retry_failed=retry_failed,
    )
    if summary is not None:
        print_recognized(summary)


def print_recognized(summary: dict[str, Any]) -> None:
    """The check set's figures first (how far to trust what follows), shares, verdicts, accuracy, then counts."""
    for r in summary["check_scores"]:
        f1 = "-" if r["id_f1"] is None else f"{r['id_f1']:.2f}"
        accuracy = "-" if r["accuracy"] is None else f"{r['accuracy']:.2f}"
        click.echo(
            f"Recognizer on the check set (written for PERAS): {r['n_correct']} of {r['n_texts']} levels right "
            f"(accuracy {accuracy}), evidence-id F1 {f1} over {r['n_id_texts']} texts with evidence."
        )
    for r in summary.get("evidence_quality", []):
        mean = "-" if r["mean_score"] is None else f"{r['mean_score']:.2f}"
        click.echo(
            f"Its evidence scored 1-5 by {r['judge_model']} against the check set's: mean {mean} over "
            f"{r['n_scored']} of {r['n_texts']} texts ({r['evidence_run_name']})."
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


@personas.command()
@click.argument("personality_set", metavar="SET")
@click.option("--output", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Directory to write the personality files to (created if needed).")  # fmt: skip
@settings_options
def export(settings: Settings, personality_set: str, output: Path) -> None:
    """Write a stored set's personas as personality files, one TOML per persona, that PERAS_PERSONALITIES_DIR reads.

    SET is NAME (the latest published version) or NAME@VERSION. The codes are NAME-vVERSION-CONDITION, so the
    files sit beside the built-in eleven.

    \b
    Example:
        peras personas export mine --output my-personalities
        PERAS_PERSONALITIES_DIR=my-personalities peras judge sample --personality mine-v1-HO
    """
    from tasks.personas.build_sets import export_set

    paths = export_set(settings, personality_set, output)
    click.echo(f"{len(paths)} personality files written to {output}")


COMMANDS = [personas]
