"""Personas flow: the BFI-2 fidelity check. Do the personality conditions answer a personality inventory as their
instructions say?

The 60 BFI-2 items are asked of every personality of a set, default included, under the same instruction placement
as judging: once greedily and k times sampled. The views then score facets and domains (reverse-keyed items count
6 - answer), lay out the personality x domain matrix and test, per trait, high > default > low. See docs/personas.md.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from peras.bfi2 import load_items
from peras.settings import Settings, load_settings
from tasks.engine.endpoint import serving_endpoint
from tasks.engine.tasks import ask_all, check_endpoint, identify_warehouse, opaque, recorded_run, store_personalities
from tasks.personas.tasks import (
    check_answers,
    check_config,
    choose_set,
    load_fidelity,
    personas_stage,
    plan_answers,
    plan_check,
    register_check_run,
    summarize,
)
from tasks.publish.tasks import publish_analyst_snapshot


@flow(name="personas-check", flow_run_name="personas-check-{personality_set}", log_prints=True)
def personas_check(
    personality_set: str = "builtin",
    samples: int = 5,
    temperature: float = 0.7,
    seed: int = 42,
    run_name: str | None = None,
    chunk_size: int = 256,
    backend: str | None = None,
    retry_failed: bool = False,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Ask the 60 BFI-2 items of every personality of the set (greedy, then `samples` sampled); gate, publish.

    A run keeps its set, model, samples, temperature, seed, prompt and items; calling it again resumes it, and
    stored answers are reused: no request is sent twice.
    """
    settings = settings or load_settings()
    chosen = choose_set(personality_set)
    items = load_items()
    planned = plan_answers(chosen, items, samples)
    warehouse_id = identify_warehouse(settings)
    with serving_endpoint(settings, backend) as endpoint:
        check_endpoint(settings, endpoint)
        config = check_config(endpoint, samples, temperature, seed)
        run = register_check_run(settings, warehouse_id, run_name, personality_set, config, chosen)
        store_personalities(settings, chosen)
        with recorded_run(settings, run):
            plan = plan_check(run, planned)
            stage = personas_stage(config, chosen, items)
            stats = ask_all(settings, endpoint, run, opaque(stage), opaque(plan), chunk_size, retry_failed)
            n_failures = check_answers(settings, run, opaque(planned))
    publish_analyst_snapshot(settings)
    tables = load_fidelity(settings, run.run_name)
    return summarize(run, endpoint, personality_set, config, len(planned), n_failures, stats, tables)
