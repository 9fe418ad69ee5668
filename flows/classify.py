"""Experiment 2: can several judges' labels (and confidences) predict the human qrel?

Feature columns come from judgment streams (the personalities of one run, or a set of runs); the
learners are trained on a stratified 10% of the pairs and scored on the other 90%, over many trials
with recorded seeds. Nothing is written unless the inputs pass the quality gate.
"""

from __future__ import annotations

from prefect import flow

from peras.settings import Settings, load_settings
from peras.warehouse import now
from tasks.classify.results import (
    ResultTable,
    build_results_table,
    load_summary,
    publish_results,
    publish_table_artifact,
)
from tasks.classify.tasks import (
    choose_learners,
    draw_splits,
    evaluate_learner,
    evaluate_single_streams,
    evaluate_votes,
)
from tasks.publish.tasks import publish_analyst_snapshot
from tasks.shared.features import (
    build_feature_matrix,
    choose_feature_set,
    list_feature_streams,
    load_feature_values,
)


@flow(name="classify", flow_run_name="classify-{collection}", log_prints=True)
def classify(
    collection: str = "dl21",
    run: str | None = None,
    cot: bool | None = None,
    confidence_method: str | None = None,
    runs: list[str] | None = None,
    trials: int = 50,
    seed: int = 42,
    train_fraction: float = 0.1,
    learners: list[str] | None = None,
    settings: Settings | None = None,
) -> ResultTable:
    """Train and score every learner over `trials` stratified splits; publish trials and the table."""
    settings = settings or load_settings()
    started_at = now()
    streams = list_feature_streams(settings, collection)
    feature_set = choose_feature_set(streams, collection, run, cot, confidence_method, runs)
    values = load_feature_values(settings, collection, feature_set)
    matrix = build_feature_matrix(values, feature_set)
    chosen = choose_learners(learners, matrix)
    splits = draw_splits(matrix.relevance, trials, seed, train_fraction)
    rows = [row for name in chosen for row in evaluate_learner(name, matrix, splits)]
    rows += evaluate_votes(matrix, splits) + evaluate_single_streams(matrix, splits)
    params = {"trials": trials, "seed": seed, "train_fraction": train_fraction, "learners": chosen}
    run_id = publish_results(settings, collection, feature_set, matrix, params, rows, started_at)
    publish_analyst_snapshot(settings)
    summary = load_summary(settings, run_id)
    table = build_results_table(summary, run_id, collection, feature_set, matrix, chosen)
    publish_table_artifact(table)
    return table
