"""`peras export-qrels`, `peras evaluate`, `peras build-runs`, `peras holes`, `peras export-autojudge`: LLM labels
as qrels, systems ranked, a judge run handed in as a TREC AutoJudge submission."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from cli.common import bounded, endpoint_options, endpoint_tags, run_flow, run_tags, settings_options, text_table
from peras.errors import UsageError
from peras.settings import Settings

AGGREGATES = ["majority", "classifier", "fuser"]


def label_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Which labels of a judge run: one personality's or an aggregate's, one CoT setting and confidence method."""
    options = [
        click.option("--personality", help="Whose labels: a personality code [default; evaluate: every one]."),
        click.option("--aggregate", type=click.Choice(AGGREGATES), help="Pool the personalities' labels instead."),
        click.option("--cot/--no-cot", default=None, help="CoT setting of the labels (needed if the run has both)."),
        click.option("--confidence-method", help="Confidence method of the labels (needed if the run has several)."),
    ]

    @functools.wraps(func)
    def wrapper(
        *args: Any,
        personality: str | None,
        aggregate: str | None,
        cot: bool | None,
        confidence_method: str | None,
        **kwargs: Any,
    ) -> Any:
        if personality is not None and aggregate is not None:
            raise UsageError("--personality and --aggregate each choose whose labels: give one of them")
        labels = {
            "personality": personality,
            "aggregate": aggregate,
            "cot": cot,
            "confidence_method": confidence_method,
        }
        return func(*args, labels=labels, **kwargs)

    for option in reversed(options):
        wrapper = option(wrapper)
    return wrapper


@click.command("export-qrels")
@click.option("--run", "run_name", help="The judge run (judged here or imported) whose labels to write.")
@label_options
@click.option("--fill-from-human", is_flag=True, help="Keep every human label; LLM labels only where there is none.")
@click.option("--hybrid", "plan", help="An assessment plan (docs/assess.md): its people's labels, its run's elsewhere.")
@click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The qrels file.")
@settings_options
def export_qrels(
    settings: Settings,
    run_name: str,
    labels: dict[str, Any],
    fill_from_human: bool,
    plan: str | None,
    output: Path,
) -> None:
    """Write a judge run's labels as TREC qrels (`query_id 0 doc_id label`), and OUTPUT.confidence.tsv beside it.

    Labels are one personality's (default: 'default') or the personalities' majority; unreadable answers are left
    out. --fill-from-human writes the human qrels with the run's labels for the pairs they do not judge.

    \b
    Examples:
        peras export-qrels --run sample-default --output sample.qrels
        peras export-qrels --run dl19-judge --aggregate majority --fill-from-human --output dl19-filled.qrels
        peras export-qrels --hybrid sample-default-random --output sample-hybrid.qrels
    """
    if plan is not None:
        from cli.commands.assess import export_hybrid

        return export_hybrid(settings, plan, labels, output)
    if run_name is None:
        raise UsageError("give --run (the judge run whose labels to write) or --hybrid (an assessment plan)")
    from flows.evaluate import export_qrels_flow

    summary = run_flow(
        export_qrels_flow,
        tags=run_tags("export-qrels"),
        run=run_name,
        output=str(output),
        fill_from_human=fill_from_human,
        settings=settings,
        **labels,
    )
    click.echo(
        f"{summary['output']}: {summary['n_pairs']:,} pairs ({summary['n_llm']:,} LLM labels, "
        f"{summary['n_human']:,} human); confidences in {summary['output']}.confidence.tsv"
    )


@click.command()
@click.argument("run_files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--collection", required=True, help="The collection the runs answer (its human qrels).")
@click.option(
    "--qrels",
    default="human",
    show_default=True,
    help="'human', a judge run's name (its labels alone), 'filled' (human + the --run's labels in the holes), or "
    "'hybrid:PLAN' (an assessment plan's people's labels, its judge run's elsewhere: docs/assess.md).",
)
@click.option("--run", "run_name", help="With --qrels filled: the judge run whose labels fill the holes.")
@label_options
@click.option("--measure", "measures", multiple=True, help="ir_measures measure (repeatable) [nDCG@10].")
@click.option(
    "--missing-topics",
    type=click.Choice(["skip", "zero"]),
    default="skip",
    show_default=True,
    help="Qrels topics a run lacks: left out of the mean (trec_eval) or scored 0 (trec_eval -c).",
)
@click.option(
    "--dedupe", is_flag=True, help="Score one system of each near-duplicate group (the same top 10 on every topic)."
)
@click.option(
    "--autojudge",
    type=click.Path(exists=True, dir_okay=False),
    help="A TREC AutoJudge leaderboard file: its scores of the same systems ranked against the human ones too.",
)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
@settings_options
def evaluate(
    settings: Settings,
    run_files: tuple[str, ...],
    collection: str,
    qrels: str,
    run_name: str | None,
    labels: dict[str, Any],
    measures: tuple[str, ...],
    missing_topics: str,
    dedupe: bool,
    autojudge: str | None,
    fmt: str,
) -> None:
    """Score the systems of RUN_FILES with ir_measures, and compare their ranking under LLM vs human qrels.

    With an LLM qrels (a judge run, or 'filled'), every personality's labels (or --personality / --aggregate) make
    a qrels set; for each, Kendall's tau, Spearman's rho and tau-AP against the human ranking, overall and per topic,
    best first. Stored in the warehouse (system_scores, rank_agreement, view rank_agreement_summary). Scores follow
    plain trec_eval: ties broken by doc id descending for every measure, topics a run lacks left out of the mean
    (--missing-topics zero: scored 0, as trec_eval -c); the output says which applies.

    \b
    Examples:
        peras evaluate runs/dl19/*.run --collection dl19
        peras evaluate runs/dl19/*.run --collection dl19 --qrels dl19-judge --measure nDCG@10 --measure AP@100
        peras evaluate my.run --collection llmjudge --qrels filled --run llmjudge-import-1 --format json
        peras evaluate runs/sample/*.run --collection sample --qrels hybrid:sample-default-random
        peras evaluate partial.run --collection dl19 --missing-topics zero
        peras evaluate ../shared/data/dl21/runs/*.run.gz --collection dl21 --dedupe
        peras evaluate runs/dl19/*.run --collection dl19 --autojudge out/trec-leaderboard.txt
    """
    from flows.evaluate import evaluate as evaluate_flow
    from tasks.evaluate.ranking import parse_measures

    parse_measures(measures)  # before a flow run: a bad measure is a usage error, never a crash in pytrec_eval
    source, judge_run = qrels_source(qrels, run_name)
    chosen: dict[str, Any] = {
        "run_files": list(run_files),
        "qrels": source,
        "run": judge_run,
        "measures": list(measures) or None,
        "missing_topics": missing_topics,
        "dedupe": dedupe,
        "autojudge": autojudge,
    }
    summary = run_flow(
        evaluate_flow,
        tags=run_tags("evaluate", collection),
        collection=collection,
        settings=settings,
        **chosen,
        **labels,
    )
    if fmt == "json":
        click.echo(json.dumps(summary, indent=2))
        return
    echo_evaluation(summary)


def qrels_source(qrels: str, run_name: str | None) -> tuple[str, str | None]:
    """What --qrels names (human, filled, hybrid:PLAN or a judge run's LLM labels) and the judge run it reads."""
    source = qrels if qrels in ("human", "filled") or qrels.startswith("hybrid:") else "llm"
    if source.startswith("hybrid:") and (run_name or not source.removeprefix("hybrid:")):
        raise UsageError(f"--qrels {qrels}: give hybrid:PLAN alone (the plan names its judge run), no --run")
    if source == "filled" and not run_name:
        raise UsageError("--qrels filled needs --run NAME: the judge run whose labels fill the holes")
    return source, qrels if source == "llm" else run_name


def echo_evaluation(summary: dict[str, Any]) -> None:
    """The scores, the conventions they follow, the near-duplicates and the rank agreement, as tables."""
    headers = ["qrels", "system", "measure", "value"]
    keys = ["qrels_name", "system", "measure", "value"]
    click.echo("\n".join(text_table(headers, [[r[k] for k in keys] for r in summary["scores"]])))
    conventions = summary["conventions"]
    click.echo(f"Scores: {conventions['missing']}; {conventions['ties']}.")
    echo_duplicates(summary["duplicates"], summary["deduped"])
    if summary["agreement"]:
        keys = ["qrels_name", "measure", "n_systems", "kendall_tau", "spearman_rho", "tau_ap", "mean_topic_tau"]
        headers = ["qrels", "measure", "systems", "kendall_tau", "spearman_rho", "tau_ap", "mean_topic_tau"]
        click.echo("")
        click.echo("\n".join(text_table(headers, [[r[k] for k in keys] for r in summary["agreement"]])))


def echo_duplicates(groups: list[list[str]], deduped: bool) -> None:
    """One line on the near-duplicate systems: which, and whether only the first of each was scored."""
    if not groups:
        return
    shown = "; ".join(" = ".join(group) for group in groups)
    then = "only the first of each scored (--dedupe)" if deduped else "each scored (--dedupe keeps the first of each)"
    click.echo(f"Near-duplicates (the same top 10 on every judged topic): {shown}; {then}.")


@click.command("build-runs")
@click.option("--collection", required=True, help="Whose judged passages and topics to rank.")
@click.option("--output-dir", help="Where the run files go [runs/<collection> beside the warehouse].")
@click.option("--depth", type=bounded(1), default=100, show_default=True, help="Passages per topic.")
@settings_options
def build_runs(settings: Settings, collection: str, output_dir: str | None, depth: int) -> None:
    """Build real lexical runs over a collection's judged passages with bm25s, as TREC run files.

    Eleven systems: Lucene BM25 at k1/b 0.9/0.4, 0.82/0.68, 1.2/0.75 and 2/0, each with and without English
    stemming, and the Robertson, BM25L and BM25+ variants (stemmed, 1.2/0.75). bm25s has no query-likelihood model.

    \b
    Example:
        peras build-runs --collection dl19 --output-dir runs/dl19
    """
    from flows.evaluate import build_runs_flow

    paths = run_flow(
        build_runs_flow,
        tags=run_tags("build-runs", collection),
        collection=collection,
        output_dir=output_dir,
        depth=depth,
        settings=settings,
    )
    click.echo("\n".join(paths))


@click.command()
@click.argument("collection")
@click.option("--run", "run_name", help="Judge run whose labels fill the holes [judge the collection now].")
@click.option(
    "--run-file",
    "run_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="A system's TREC run file (repeatable) [the bm25s runs built over the collection].",
)
@label_options
@click.option("--share", "shares", multiple=True, type=float, help="Share of labels to hide (repeatable) [0.1..0.9].")
@click.option("--measure", "measures", multiple=True, help="ir_measures measure (repeatable) [nDCG@10].")
@click.option("--seed", type=bounded(0), default=42, show_default=True, help="Seed of the hiding draws.")
@endpoint_options
@settings_options
def holes(
    settings: Settings,
    collection: str,
    run_name: str | None,
    run_files: tuple[str, ...],
    labels: dict[str, Any],
    shares: tuple[float, ...],
    measures: tuple[str, ...],
    seed: int,
    backend: str | None,
) -> None:
    """Hide a growing share of COLLECTION's human labels, fill them with LLM labels, and rank the systems again.

    Per share (stratified by grade, seeded; a larger share hides a superset): how alike the filled qrels rank the
    systems to the full human qrels (Kendall's tau, Spearman's rho, tau-AP, mean per-topic tau). Without --run the
    collection is judged now (run holes-<collection>); without --run-file the bm25s runs are built.

    \b
    Examples:
        peras holes sample
        peras holes llmjudge --run llmjudge-import-1 --share 0.3 --share 0.6 --share 0.9
        peras holes dl19 --run dl19-judge --personality HA --run-file bm25.run --run-file splade.run
    """
    from flows.evaluate import holes as holes_flow
    from tasks.evaluate.ranking import parse_measures

    parse_measures(measures)
    summary = run_flow(
        holes_flow,
        tags=run_tags("holes", collection, **endpoint_tags(settings, backend)),
        collection=collection,
        run=run_name,
        run_files=list(run_files) or None,
        shares=list(shares) or None,
        measures=list(measures) or None,
        seed=seed,
        backend=backend,
        settings=settings,
        **labels,
    )
    click.echo(
        f"{summary['collection_id']}: labels of {summary['run_name']} ({summary['personality']}) fill the holes of "
        f"{summary['n_pairs']:,} human labels; {summary['n_systems']} systems"
    )
    keys = [
        "share",
        "measure",
        "n_hidden",
        "hidden_accuracy",
        "kendall_tau",
        "spearman_rho",
        "tau_ap",
        "mean_topic_tau",
    ]
    click.echo("\n".join(text_table(keys, [[r[k] for k in keys] for r in summary["results"]])))


@click.command("export-autojudge")
@click.argument("run_files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--run", "run_name", required=True, help="The judge run (judged here or imported) to hand in.")
@label_options
@click.option("--measure", "measures", multiple=True, help="ir_measures measure of the leaderboard (repeatable).")
@click.option("--output-dir", required=True, type=click.Path(file_okay=False, path_type=Path), help="Where to write.")
@settings_options
def export_autojudge(
    settings: Settings,
    run_files: tuple[str, ...],
    run_name: str,
    labels: dict[str, Any],
    measures: tuple[str, ...],
    output_dir: Path,
) -> None:
    """Write a judge run as a TREC AutoJudge submission: trec-leaderboard.txt (RUN_FILES' systems scored under its
    labels, per topic and `all`), qrels.txt (its labels) and ir-metadata.yml (its provenance), in OUTPUT_DIR.

    \b
    Examples:
        peras export-autojudge runs/dl19/*.run --run dl19-judge --output-dir autojudge/dl19-judge
        peras export-autojudge runs/dl19/*.run --run dl19-judge --aggregate majority --measure nDCG@10 --output-dir aj
    """
    from flows.evaluate import export_autojudge_flow
    from tasks.evaluate.ranking import parse_measures

    parse_measures(measures)
    summary = run_flow(
        export_autojudge_flow,
        tags=run_tags("export-autojudge"),
        run=run_name,
        run_files=list(run_files),
        output_dir=str(output_dir),
        measures=list(measures) or None,
        settings=settings,
        **labels,
    )
    click.echo(f"{summary['output_dir']}: {summary['n_systems']} systems, {summary['n_pairs']:,} judged pairs")


COMMANDS = [export_qrels, evaluate, build_runs, holes, export_autojudge]
