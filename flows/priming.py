"""Priming flow: the threshold-priming experiment in batch judging, under each personality condition.

For each topic, trial and batch setting (PL, EL), the same EL qrel-2 passages (the epilogue) are judged in
one batch after PL qrel-3 passages (HT) and in another after PL qrel-0 passages (LT); a lower mean epilogue
score after HT is threshold priming. See docs/priming.md.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from peras.settings import Settings, load_settings
from tasks.engine.running import run_stage
from tasks.engine.tasks import opaque
from tasks.priming.draws import check_batch_settings, choose_topics, draw_trials, load_pools, plan_batches
from tasks.priming.stats import compute_priming_index, compute_priming_tests, load_priming_pairs, publish_priming_stats
from tasks.priming.tables import load_priming_tables, plot_priming_topics, publish_priming_artifact
from tasks.priming.tasks import PrimingRecipe, personality_codes, summarize
from tasks.publish.tasks import publish_analyst_snapshot
from tasks.shared.personalities import choose_personalities


@flow(name="priming", flow_run_name="priming-{collection}", log_prints=True)
def priming(
    collection: str = "dl19",
    topics: list[str] | None = None,
    limit_topics: int | None = None,
    trials: int = 20,
    batch_settings: list[tuple[int, int]] | None = None,
    personalities: list[str] | None = None,
    personality_set: str | None = None,
    seed: int = 42,
    run_name: str | None = None,
    frequency_penalty: float | None = None,
    presence_penalty: float | None = None,
    min_per_level: int = 12,
    chunk_size: int = 256,
    backend: str | None = None,
    retry_failed: bool = False,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Judge HT and LT batches for every topic x trial x setting x personality; test, publish, plot.

    personalities: codes; default ['default'], ['all'] for every condition (of personality_set when one is named:
    NAME, NAME@VERSION, builtin). A run keeps its collection, model,
    seed, prompt and request parameters; calling it again with other topics, trials, settings or personalities
    extends it and re-tests that scope. Stored answers are reused: no request is sent twice.
    """
    settings = settings or load_settings()
    layouts = check_batch_settings(batch_settings)
    chosen = choose_personalities(settings, personality_codes(personalities), personality_set)
    topic_ids = choose_topics(settings, collection, topics, min_per_level, limit_topics, layouts)
    pools = load_pools(settings, collection, topic_ids)
    planned = plan_batches(draw_trials(pools, trials, layouts, seed), [p.code for p in chosen])
    scope = {
        "topics": topic_ids,
        "trials": trials,
        "batch_settings": layouts,
        "personalities": [p.code for p in chosen],
    }
    recipe = PrimingRecipe(
        collection, seed, scope, run_name, frequency_penalty, presence_penalty, chosen, pools, planned
    )
    outcome = run_stage(settings, recipe, backend, chunk_size, retry_failed)
    if outcome.n_waiting:  # batch mode: answers still out (docs/batch.md); this command again goes on
        return outcome.waiting(len(planned))
    run = outcome.run
    pairs = load_priming_pairs(settings, run.run_id, opaque(planned))
    publish_priming_stats(settings, run.run_id, compute_priming_tests(pairs), compute_priming_index(pairs))
    publish_analyst_snapshot(settings)
    tables = load_priming_tables(settings, run.run_name)
    plots = plot_priming_topics(settings, run.run_name, tables.analysis)
    summary = summarize(outcome, scope, len(planned), tables, plots)
    publish_priming_artifact(summary)
    return summary
