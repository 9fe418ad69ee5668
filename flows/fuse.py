"""Fuse flow: several judges' answers on the same pairs fused into one label with a confidence, per pair.

The judges are the streams of the runs matching a pattern (the personalities of one judge run, or imported runs);
the study's four voting baselines fuse every pair the judges all answered, and unless baselines_only a fuser LLM
reads every judge's label, confidence and explanation (shuffled, anonymised by default) and answers with its own.
See docs/fuse.md.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from peras.settings import Settings, load_settings
from tasks.engine.run_status import recorded_run
from tasks.engine.running import run_stage
from tasks.engine.tasks import identify_warehouse, opaque
from tasks.fuse.tasks import (
    FuseRecipe,
    claim_baselines_run,
    collect_answers,
    load_comparison,
    load_explanations,
    name_judges,
    plan_fuse,
    store_votes,
    summarize,
    summarize_votes,
    vote,
)
from tasks.publish.tasks import publish_analyst_snapshot
from tasks.shared.features import (
    build_feature_matrix,
    choose_feature_set,
    list_feature_streams,
    load_feature_values,
)


@flow(name="fuse", flow_run_name="fuse-{collection}", log_prints=True)
def fuse(
    collection: str,
    runs: list[str],
    cot: bool | None = None,
    confidence_method: str | None = None,
    baselines_only: bool = False,
    anonymised: bool = True,
    n_pairs: int | None = None,
    seed: int = 42,
    run_name: str | None = None,
    chunk_size: int = 256,
    backend: str | None = None,
    retry_failed: bool = False,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Vote on every pair the judges all answered; unless baselines_only, ask the fuser (n_pairs of them); publish.

    runs: run names or globs ('llmjudge:*'). A run keeps its collection, judges, fuser model, seed and request
    parameters; calling it again with more pairs extends it. Stored answers are reused: a rerun sends nothing.
    """
    settings = settings or load_settings()
    streams = list_feature_streams(settings, collection)
    feature_set = choose_feature_set(streams, collection, None, cot, confidence_method, runs)
    judges = name_judges(feature_set)
    values = load_feature_values(settings, collection, feature_set)
    matrix = build_feature_matrix(values, feature_set)
    explanations = load_explanations(settings, collection, judges)
    fused = collect_answers(settings, collection, judges, opaque(values), opaque(explanations))
    votes = vote(matrix, opaque(fused))
    scope = {"runs": runs, "n_pairs": n_pairs}
    planned = plan_fuse(fused, judges, seed, n_pairs)
    recipe = FuseRecipe(collection, judges, fused, votes, seed, scope, run_name, anonymised, planned)
    if baselines_only:
        run = claim_baselines_run(settings, identify_warehouse(settings), opaque(recipe))
        with recorded_run(settings, run):
            store_votes(settings, run, judges, opaque(votes), publish=True)
        publish_analyst_snapshot(settings)
        return summarize_votes(run, judges, votes) | load_comparison(settings, run.run_id)
    outcome = run_stage(settings, recipe, backend, chunk_size, retry_failed)
    if outcome.n_waiting:  # batch mode: answers still out (docs/batch.md); this command again goes on
        return outcome.waiting(len(planned))
    publish_analyst_snapshot(settings)
    counts = summarize(outcome, summarize_votes(outcome.run, judges, votes), len(planned))
    return counts | load_comparison(settings, outcome.run.run_id)
