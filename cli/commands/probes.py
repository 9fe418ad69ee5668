"""`peras probes`: can the judge be fooled? Perturbed copies of judged pairs, judged like any collection."""

from __future__ import annotations

from typing import Any

import click

from cli.common import bounded, echo_table, run_flow, run_tags, settings_options
from peras.settings import Settings


@click.group()
def probes() -> None:
    """Gaming probes: build a probe collection from a collection's judged pairs, judge it, measure the attacks.

    \b
    Examples:
        peras probes build sample --sample 10 --seed 1
        peras judge sample-probes --personality default --cot without
        peras probes summary sample-probes-run
        peras probes check sample-probes-run --max-success 0.05
        peras probes kinds
    """


@probes.command()
@click.argument("collection")
@click.option("--sample", type=bounded(1), default=20, show_default=True, help="Judged pairs to draw.")
@click.option("--seed", type=bounded(0), default=0, show_default=True, help="Seed of the draw.")
@click.option(
    "--kind", "kinds", multiple=True, help="Probe kind (repeatable); default every kind (`peras probes kinds`)."
)
@click.option("--name", help="Name of the probe collection [COLLECTION-probes].")
@click.option("--subset", help="Draw from this topic subset's pairs only (`peras subsets`) [the whole collection].")
@settings_options
def build(
    settings: Settings,
    collection: str,
    sample: int,
    seed: int,
    kinds: tuple[str, ...],
    name: str | None,
    subset: str | None,
) -> None:
    """Draw SAMPLE judged pairs of COLLECTION and ingest their clean and perturbed copies as COLLECTION-probes.

    Each copy keeps its pair's query id and human label; its doc id is `<doc_id>#<kind>-<variant>` (the clean copy
    `<doc_id>#clean`). The same call again changes nothing. Judge the probe collection with `peras judge`.

    \b
    Examples:
        peras probes build sample
        peras probes build dl19 --subset published --sample 50 --kind instruction-injection --kind paraphrase
    """
    from flows.probes import probes_build
    from tasks.probes.kinds import load_kinds

    load_kinds(list(kinds) or None)  # an unknown kind is refused before any flow run
    result = run_flow(
        probes_build,
        tags=run_tags("probes", collection),
        collection=collection,
        sample=sample,
        seed=seed,
        kinds=list(kinds) or None,
        name=name,
        subset=subset,
        settings=settings,
    )
    click.echo(built_line(result))


def built_line(result: dict[str, Any]) -> str:
    """What a build did, in one line."""
    if result["status"] == "unchanged":
        return f"{result['collection_id']}: unchanged (same pairs, seed and kinds already built)"
    kinds = ", ".join(f"{kind} {n}" for kind, n in result["per_kind"].items())
    return (
        f"{result['collection_id']}: {result['n_copies']:,} passages from {result['n_pairs']} pairs of "
        f"{result['source_collection_id']} ({result['n_targets']} labelled 0/1): {kinds}; "
        f"judge it with `peras judge {result['collection_id']}`"
    )


@probes.command()
@click.argument("run")
@settings_options
def summary(settings: Settings, run: str) -> None:
    """The probe measures of RUN (a judge run of a probe collection): per kind, personality, CoT and method.

    raised / success: copies of 0/1 pairs labelled 2+ whose clean copy the same setting labelled below 2; shift:
    mean label change against the clean copy (0/1 pairs, 2/3 pairs); changed: share of labels that moved; auroc:
    how well low confidence, and disagreement between personalities, tell attacked copies from clean ones.

    \b
    Example:
        peras probes summary sample-probes-run
    """
    from tasks.probes.measures import HEADERS, read_measures

    probe_run, rows = read_measures(settings, run)
    click.echo(f"{probe_run.run_name}: probes of {probe_run.source_collection_id} ({probe_run.collection_id})")
    echo_table(HEADERS, rows)


@probes.command()
@click.argument("run")
@click.option(
    "--max-success",
    type=click.FloatRange(0, 1),
    default=0.05,
    show_default=True,
    help="Highest attack success rate a setting may have.",
)
@settings_options
def check(settings: Settings, run: str, max_success: float) -> None:
    """Exit 1, naming the worst setting, when an attack raises non-relevant pairs of RUN more often than allowed.

    \b
    Example:
        peras probes check sample-probes-run --max-success 0.05
    """
    from tasks.probes.measures import check_run

    click.echo(check_run(settings, run, max_success))


@probes.command()
def kinds() -> None:
    """The probe kinds (one data file each, tasks/probes/kinds/): role, passage, variants, the attack followed.

    \b
    Example:
        peras probes kinds
    """
    from tasks.probes.kinds import load_kinds

    rows = [[k.kind, k.role, k.passage, ", ".join(v for v, _ in k.variants), k.follows] for k in load_kinds(None)]
    echo_table(["kind", "role", "passage", "variants", "follows"], rows)


COMMANDS = [probes]
