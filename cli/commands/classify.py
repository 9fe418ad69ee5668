"""`peras classify`: run Experiment 2 (the multi-judge classifier) and print its table."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from cli.common import bounded, run_flow, run_tags, seed_option, settings_options
from peras.settings import Settings

if TYPE_CHECKING:
    from tasks.classify.results import ResultTable

LEARNER_NAMES = ("rf", "xgboost", "lightgbm", "ordinal_logit", "rf_no_conf")


@click.command()
@click.option("--collection", default="dl21", show_default=True, help="Collection whose judgments are used.")
@click.option("--run", help="Judge run whose personalities are the features [newest LLM run].")
@click.option("--cot/--no-cot", default=None, help="CoT setting of --run [its only one].")
@click.option("--confidence-method", help="Confidence method of --run, e.g. verbalized [its only one].")
@click.option(
    "--runs",
    "runs",
    multiple=True,
    metavar="GLOB",
    help="Runs whose judgments are the features, one column each (repeatable); a glob matches NAME or COLLECTION:NAME.",
)
@click.option("--trials", type=bounded(1), default=50, show_default=True, help="Random splits.")
@seed_option("Base seed; each trial's seed is drawn from it and recorded.")
@click.option(
    "--train-fraction",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=0.1,
    show_default=True,
    help="Share of pairs in each (stratified) training part.",
)
@click.option("--learners", help=f"Comma-separated subset of: {', '.join(LEARNER_NAMES)} [all].")
@settings_options
def classify(
    settings: Settings,
    collection: str,
    run: str | None,
    cot: bool | None,
    confidence_method: str | None,
    runs: tuple[str, ...],
    trials: int,
    seed: int,
    train_fraction: float,
    learners: str | None,
) -> None:
    """Predict the human qrel from several judges' labels and confidences (Experiment 2).

    Each trial trains on a stratified share of the pairs (10% by default) and scores Cohen's kappa,
    QWK and macro-F1 on the rest; the table gives mean (SD, ddof=1) over trials, with the best single
    judge (oracle) and unsupervised votes on the same test parts. Trials go to the warehouse
    (clf_trials, clf_summary).

    \b
    Examples:
        peras classify                                   # personalities of the newest LLM run on dl21
        peras classify --run dl21-qwen --no-cot --confidence-method verbalized
        peras classify --collection llmjudge --runs 'llmjudge:*' --trials 10
    """
    # No pre-flight checks here: classify reads judgments imported or judged, on any collection id they name, and
    # says itself which run or learner is unknown (tests/test_classify_flow.py).
    chosen = [name.strip() for name in learners.split(",") if name.strip()] if learners else None
    from flows.classify import classify as classify_flow  # Prefect: loaded once the checks above passed

    table = run_flow(
        classify_flow,
        tags=run_tags("classify", collection),
        collection=collection,
        run=run,
        cot=cot,
        confidence_method=confidence_method,
        runs=list(runs) or None,
        trials=trials,
        seed=seed,
        train_fraction=train_fraction,
        learners=chosen,
        settings=settings,
    )
    print_table(table)


def print_table(table: ResultTable) -> None:
    """The result table as the terminal shows it: best mean per column in bold with a star."""
    from tasks.classify.results import METRIC_TITLES, METRICS

    out = Table(
        title=f"{table.collection}: {table.n_trials} trials, {table.n_pairs:,} pairs "
        f"({table.n_excluded:,} excluded), {table.n_features} features ({table.feature_mode})",
        caption=f"mean (SD, ddof=1) over trials; * best per column; run {table.classify_run_id}",
    )
    out.add_column("Learner")
    for metric in METRICS:
        out.add_column(METRIC_TITLES[metric], justify="right")
    for row in table.rows:
        cells = []
        for metric in METRICS:
            text = escape(table.cell(row, metric))  # stream names in [brackets] are not markup
            cells.append(f"[bold]{text} *[/bold]" if row.mean[metric] == table.best(metric) else text)
        out.add_row(row.title, *cells)
    Console(width=140).print(out)


COMMANDS = [classify]
