"""`peras trust`: how far a ranking of systems under LLM labels can be trusted, with error bars."""

from __future__ import annotations

import json
from typing import Any

import click

from cli.commands.evaluate import echo_duplicates, label_options
from cli.common import bounded, echo_table, run_flow, run_tags, settings_options
from peras.settings import Settings

STATISTIC_TITLES = {"kendall_tau": "Kendall's tau", "spearman_rho": "Spearman's rho", "tau_ap": "tau-AP"}
METHOD_TITLES = {"ppi": "PPI++", "human_only": "human only", "calibrated_ppi": "calibrated PPI++"}
SHOWN_FLIPS = 20


@click.command()
@click.argument("collection")
@click.argument("run_files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--run", "run_name", required=True, help="The judge run (judged here or imported) whose labels to test.")
@label_options
@click.option("--measure", default="nDCG@10", show_default=True, help="ir_measures measure the systems are ranked by.")
@click.option(
    "--human-sample",
    default="5%",
    show_default=True,
    help="Human labels drawn from the judged pool (5%, 0.05 or 500 pairs), or a qrels FILE of them.",
)
@click.option("--bootstrap", "replicates", type=bounded(1), default=1000, show_default=True, help="Replicates.")
@click.option("--level", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.90, show_default=True)
@click.option("--seed", type=bounded(0), default=0, show_default=True, help="Seeds the bootstrap and the sample.")
@click.option("--dedupe", is_flag=True, help="Rank one system of each near-duplicate group (the same top 10).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@settings_options
def trust(
    settings: Settings,
    collection: str,
    run_files: tuple[str, ...],
    run_name: str,
    labels: dict[str, Any],
    measure: str,
    human_sample: str,
    replicates: int,
    level: float,
    seed: int,
    dedupe: bool,
    fmt: str,
) -> None:
    """Rank RUN_FILES under COLLECTION's human qrels and a judge run's labels: how far can the LLM ranking be trusted?

    Prints Kendall's tau, Spearman's rho and tau-AP between the two rankings with a bootstrap interval over topics,
    the pairs of systems whose order flips (with the score gap under each qrels), and each system's interval for its
    human score from a human sample of the judged pool (PPI++, the human-only baseline, the calibrated variant where
    the labels have confidences). Stored as one study (trust_studies, views trust_summary, trust_systems); the same
    inputs again read it back and recompute nothing. See docs/evaluate.md.

    \b
    Examples:
        peras trust dl21 ../shared/data/dl21/runs/*.run.gz --run dl21-judge --dedupe
        peras trust dl21 runs/*.run.gz --run dl21-import --human-sample 10% --bootstrap 2000 --seed 7
    """
    from flows.evaluate import trust as trust_flow
    from tasks.evaluate.trust import TrustSpec, check_spec

    spec = check_spec(TrustSpec(measure, human_sample, replicates, level, seed, dedupe))
    summary = run_flow(
        trust_flow,
        tags=run_tags("trust", collection),
        collection=collection,
        run=run_name,
        run_files=list(run_files),
        spec=spec,
        settings=settings,
        **labels,
    )
    if fmt == "json":
        click.echo(json.dumps(summary, indent=2, default=str))
        return
    echo_summary(summary)


def echo_summary(summary: dict[str, Any]) -> None:
    """The study's head line, the agreement with intervals, the flips and the systems' intervals."""
    head = "stored earlier, nothing recomputed" if summary["reused"] else "stored"
    click.echo(
        f"{summary['collection_id']}: {summary['n_systems']} systems ranked by {summary['measure']} over "
        f"{summary['n_topics']} topics under the human qrels and judge run {summary['run_name']} "
        f"({summary['labels']}); study {summary['study_id'][:12]} ({head})"
    )
    echo_duplicates(summary["duplicates"], summary["dedupe"])
    percent = f"{summary['level']:.0%}"
    for row in summary["agreement"]:
        click.echo(
            f"{STATISTIC_TITLES[row['statistic']]}: {fmt(row['estimate'])} [{fmt(row['lower'])}, {fmt(row['upper'])}]"
            f" ({percent} bootstrap interval over topics, {row['n_defined']:,} of {summary['replicates']:,} "
            f"replicates, seed {summary['seed']})"
        )
    echo_flips(summary["flips"], summary["n_systems"])
    echo_systems(summary)


def fmt(value: float | None) -> str:
    """Three decimals, or '-' where undefined."""
    return "-" if value is None else f"{value:.3f}"


def echo_flips(flips: list[dict[str, Any]], n_systems: int) -> None:
    """The flipped pairs, the largest human gap first (the first SHOWN_FLIPS)."""
    n_pairs = n_systems * (n_systems - 1) // 2
    click.echo(f"\nPairs whose order flips: {len(flips):,} of {n_pairs:,} (human_gap = a - b > 0 > llm_gap)")
    keys = ["system_a", "system_b", "human_a", "human_b", "human_gap", "llm_a", "llm_b", "llm_gap"]
    echo_table(keys, [[round(r[k], 4) if isinstance(r[k], float) else r[k] for k in keys] for r in flips[:SHOWN_FLIPS]])
    if len(flips) > SHOWN_FLIPS:
        click.echo(f"... {len(flips) - SHOWN_FLIPS:,} more: view trust_flips (peras sql)")


def echo_systems(summary: dict[str, Any]) -> None:
    """One line per system: its human and LLM scores and ranks, and each method's interval for the human score."""
    percent = f"{summary['level']:.0%}"
    click.echo(
        f"\n{percent} intervals for each system's human {summary['measure']} from a {summary['human_sample']} human "
        f"sample ({summary['n_sample']:,} of {summary['n_pool']:,} pool pairs); covered: the interval holds the full "
        "human score"
    )
    by_system: dict[str, dict[str, Any]] = {}
    for row in summary["systems_table"]:
        entry = by_system.setdefault(row["system"], {**row, "methods": {}})
        if row["method"] is not None:
            entry["methods"][row["method"]] = row
    methods = [m for m in METHOD_TITLES if any(m in e["methods"] for e in by_system.values())]
    headers = ["system", "human", "llm", "rank_h", "rank_llm"] + [METHOD_TITLES[m] for m in methods] + ["covered"]
    rows = []
    for system, entry in by_system.items():
        cells = [interval(entry["methods"].get(m)) for m in methods]
        covered = "".join("y" if entry["methods"].get(m, {}).get("covers_human") else "n" for m in methods)
        rows.append([system, fmt(entry["human_score"]), fmt(entry["llm_score"]), entry["human_rank"],
                     entry["llm_rank"], *cells, covered])  # fmt: skip
    echo_table(headers, rows)


def interval(row: dict[str, Any] | None) -> str:
    """'0.512 [0.470, 0.551]', or '-'."""
    return "-" if row is None else f"{row['estimate']:.3f} [{row['lower']:.3f}, {row['upper']:.3f}]"


COMMANDS = [trust]
