"""`peras assess`: where people still judge. A plan of the pairs to send them, the assessor page, offline pages and
files of labels, and (`peras export-qrels --hybrid PLAN`) qrels of their labels and the LLM's. See docs/assess.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cli.common import bounded, run_flow, run_tags, settings_options
from peras.settings import Settings

STRATEGY_NAMES = ["combined", "random", "low-confidence", "disagreement", "ranking-impact"]  # tasks/assess/plan.py


@click.group()
def assess() -> None:
    """Send a budget of pairs to people and bring their labels back.

    \b
    Examples:
        peras assess plan sample --run sample-default --budget 10% --strategy low-confidence
        peras assess serve sample-default-low-confidence
        peras assess export sample-default-low-confidence --format html --output assess.html
        peras assess import labels.qrels --plan sample-default-low-confidence
        peras export-qrels --hybrid sample-default-low-confidence --output hybrid.qrels
    """


@assess.command("plan")
@click.argument("collection")
@click.option("--run", "run_name", required=True, help="The published judge run whose pool and labels to plan from.")
@click.option("--budget", required=True, help="The plan's size: a number of pairs (40) or a share of the pool (10%).")
@click.option("--strategy", type=click.Choice(STRATEGY_NAMES), default="combined", show_default=True)
@click.option("--name", "plan_name", help="The plan's name [<run>-<strategy>]; an existing plan grows to --budget.")
@click.option("--seed", type=bounded(0), default=42, show_default=True, help="Orders equal-ranked pairs.")
@click.option("--run-file", "run_files", multiple=True, type=click.Path(dir_okay=False),
              help="A system's TREC run (repeatable): what --strategy ranking-impact ranks by.")  # fmt: skip
@settings_options
def plan(
    settings: Settings,
    collection: str,
    run_name: str,
    budget: str,
    strategy: str,
    plan_name: str | None,
    seed: int,
    run_files: tuple[str, ...],
) -> None:
    """Pick the pairs of a judge run's pool people should label, up to a budget, and store them as a plan.

    combined (the default): ranking-impact's weight times how unsure the run is of the pair, from whichever signals
    the run holds (docs/assess.md: best or level with the best on LLMJudge and DL21); random: a seeded draw;
    low-confidence: the pairs the judge was least sure of; disagreement: the pairs its personalities label most
    differently; ranking-impact: the pairs whose label moves the systems of --run-file apart most (minimal test
    collections' weight at nDCG@10). Run again with a larger budget to extend the plan:
    the pairs it holds stay, and a plan of 20 extended to 40 holds the same pairs as a plan of 40.

    \b
    Examples:
        peras assess plan sample --run sample-default --budget 8 --strategy low-confidence
        peras assess plan dl21 --run dl21-judge --budget 10% --run-file runs/dl21/*.run
        peras assess plan dl19 --run dl19-personas --budget 5% --strategy disagreement --name dl19-people
        peras assess plan dl19 --run dl19-judge --budget 100 --strategy ranking-impact --run-file runs/*.run
    """
    from flows.assess import assess_plan

    summary = run_flow(
        assess_plan,
        tags=run_tags("assess-plan"),
        collection=collection,
        run=run_name,
        budget=budget,
        strategy=strategy,
        name=plan_name,
        seed=seed,
        run_files=list(run_files),
        settings=settings,
    )
    click.echo(
        f"plan {summary['plan_name']} ({summary['strategy']}): {summary['n_added']:,} pairs added, "
        f"{summary['n_pairs']:,} of a pool of {summary['n_pool']:,}"
    )


@assess.command("import")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--plan", "plan_name", required=True, help="The plan whose pairs the file labels.")
@click.option("--assessor", help="Whose labels [the file's assessor column; else 'import'].")
@settings_options
def import_file(settings: Settings, path: Path, plan_name: str, assessor: str | None) -> None:
    """Store a file of human labels for a plan's pairs: TREC qrels (`query_id 0 doc_id relevance`, what the offline
    page downloads) or the TSV `peras assess export --format tsv` writes, filled in. Every line is checked first:
    a pair not in the plan or a label outside 0-3 stores nothing.

    \b
    Examples:
        peras assess import assess-sample.qrels --plan sample-default-random --assessor ana
    """
    from flows.assess import assess_import

    summary = run_flow(
        assess_import,
        tags=run_tags("assess-import"),
        plan=plan_name,
        path=str(path),
        assessor=assessor,
        settings=settings,
    )
    click.echo(f"plan {summary['plan_name']}: {summary['n_labels']:,} labels stored ({summary['n_pairs']:,} pairs)")


@assess.command("export")
@click.argument("plan_name", metavar="PLAN")
@click.option("--format", "fmt", type=click.Choice(["tsv", "html"]), default="tsv", show_default=True)
@click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The file to write.")
@click.option("--show-llm", is_flag=True, help="Show the judge's label beside each pair (anchors the assessor).")
@settings_options
def export(settings: Settings, plan_name: str, fmt: str, output: Path, show_llm: bool) -> None:
    """Write a plan's pairs for people to label offline: a TSV to fill in (the relevance column), or a page that
    works without a server or network, keeps its labels in the browser and downloads them as TREC qrels. Both come
    back with `peras assess import`.

    \b
    Examples:
        peras assess export sample-default-random --format html --output assess.html
        peras assess export sample-default-random --format tsv --output assess.tsv
    """
    from peras.outputs import write_files
    from tasks.assess.pages import offline_page, pairs_tsv
    from tasks.assess.tasks import read_plan

    stored = read_plan(settings.warehouse, plan_name)
    text = offline_page(stored, show_llm) if fmt == "html" else pairs_tsv(stored)
    write_files({output: text}, settings.warehouse, "--output", output)
    click.echo(f"{output}: {stored.pairs.height:,} pairs of plan {plan_name} ({fmt})")


@assess.command("serve")
@click.argument("plan_name", metavar="PLAN")
@click.option("--host", default="127.0.0.1", show_default=True, help="Where to listen (other than loopback: shared).")
@click.option("--port", type=click.IntRange(1, 65535), default=8751, show_default=True)
@click.option("--overlap", type=click.IntRange(1, 100), default=1, show_default=True,
              help="How many assessors get each pair (2 or more: for their agreement).")  # fmt: skip
@click.option("--show-llm", is_flag=True, help="Show the judge's label beside each pair (anchors the assessor).")
@click.option("--token", help="A secret every label must carry (open the page as /?token=T).")
@settings_options
def serve(
    settings: Settings, plan_name: str, host: str, port: int, overlap: int, show_llm: bool, token: str | None
) -> None:
    """Serve the assessor page of a plan: one pair at a time, the query, the passage and the judges' 0-3 scale;
    the keys 0-3 label and move on, s skips, u undoes. Each label is written to the warehouse as it is given.
    Two assessors never get the same pair unless --overlap. One server per plan.

    \b
    Examples:
        peras assess serve sample-default-random
        peras assess serve dl19-people --host 0.0.0.0 --port 8080 --token s3cret --overlap 2
    """
    import uvicorn

    from tasks.assess.desk import Desk
    from tasks.assess.server import app, exposure_warning, serving_lock
    from tasks.assess.tasks import read_plan

    stored = read_plan(settings.warehouse, plan_name)
    desk = Desk(settings.warehouse, stored.row["plan_id"], overlap, show_llm)
    with serving_lock(settings.local_dir, stored.row["plan_id"], plan_name):
        warning = exposure_warning(host, port, token)
        if warning:
            click.echo(warning, err=True)
        shown = f"[{host}]" if ":" in host else host
        query = f"?token={token}" if token else ""
        click.echo(f"assessor page of plan {plan_name}: http://{shown}:{port}/{query} (Ctrl-C stops)", err=True)
        uvicorn.run(app(desk, plan_name, token), host=host, port=port, log_level="warning")


def export_hybrid(settings: Settings, plan_name: str, labels: dict[str, Any], output: Path) -> None:
    """`peras export-qrels --hybrid PLAN`: human labels where given, the plan's judge run's elsewhere."""
    from flows.assess import export_hybrid_qrels

    summary = run_flow(
        export_hybrid_qrels, tags=run_tags("export-qrels"), plan=plan_name, output=str(output), settings=settings,
        **labels,
    )  # fmt: skip
    click.echo(
        f"{summary['output']}: {summary['n_pairs']:,} pairs ({summary['n_human']:,} human labels, "
        f"{summary['n_llm']:,} LLM); provenance in {summary['output']}.provenance.tsv"
    )


COMMANDS = [assess]
