"""Judge flow: every pair x personality x CoT setting x confidence method, asked of one LLM, stored and gated."""

from __future__ import annotations

from typing import Any

from prefect import flow

from peras.settings import Settings, load_settings
from tasks.engine.endpoint import serving_endpoint
from tasks.engine.tasks import (
    ask_all,
    check_endpoint,
    identify_warehouse,
    opaque,
    recorded_run,
    store_personalities,
)
from tasks.judge.tasks import (
    check_judge_run,
    check_methods,
    judge_config,
    judge_stage,
    load_pairs,
    plan_judgments,
    publish_judge_artifact,
    register_run,
    summarize,
)
from tasks.personas.build_sets import choose_personalities
from tasks.publish.tasks import publish_analyst_snapshot


@flow(name="judge", flow_run_name="judge-{collection}", log_prints=True)
def judge(
    collection: str,
    subset: str | None = None,
    personalities: list[str] | None = None,
    cot: list[bool] | None = None,
    confidence_methods: list[str] | None = None,
    run_name: str | None = None,
    limit_pairs: int | None = None,
    chunk_size: int = 8192,
    n_samples: int = 10,
    backend: str | None = None,
    retry_failed: bool = False,
    pool: str | None = None,
    personality_set: str | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Judge a collection (or subset) under each personality, with and without CoT, storing every request.

    Re-running the same run name resumes (limits, subsets and personalities extend or narrow the same run):
    what is judged on the current texts is never asked again. chunk_size: judgments per shard (loaded as they
    fill). retry_failed: ask again answers this run stored as unreadable or refused. pool: judge the pairs of this
    judge-run pool (top-K passages of run files no human judged; flows/judge_run.py) instead of the qrels pairs.
    personality_set: judge with a stored set (NAME, NAME@VERSION, builtin; `peras personas build`) instead of
    the built-in and PERAS_PERSONALITIES_DIR personalities.
    """
    settings = settings or load_settings()
    cot_settings = [False, True] if cot is None else cot
    methods = check_methods(confidence_methods)
    chosen = choose_personalities(settings, personalities, personality_set)
    pairs = load_pairs(settings, collection, subset, limit_pairs, pool)
    warehouse_id = identify_warehouse(settings)
    with serving_endpoint(settings, backend) as endpoint:
        check_endpoint(settings, endpoint)
        config = judge_config(endpoint, n_samples)
        run = register_run(settings, warehouse_id, run_name, collection, subset, config, methods, pool)
        store_personalities(settings, chosen)
        with recorded_run(settings, run):
            plan = plan_judgments(run, pairs, chosen, cot_settings, methods)
            stage = judge_stage(config, chosen, pairs)
            stats = ask_all(settings, endpoint, run, opaque(stage), opaque(plan), chunk_size, retry_failed)
            shares = check_judge_run(settings, run, opaque(plan), config)
    publish_analyst_snapshot(settings)
    summary = summarize(run, endpoint, len(pairs) * len(chosen) * len(cot_settings) * len(methods), stats, shares)
    publish_judge_artifact(summary, shares)
    return summary
