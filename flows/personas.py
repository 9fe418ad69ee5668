"""Personas flows: build a personality set the study's way, and check any set with the BFI-2.

personas_build: for each of the ten conditions, keywords are elicited (Step 1) and an instruction generated from
them (Step 2), through the asking engine; the round's candidates are then checked (personas_check), and the
conditions that fail are built again with a new sample, up to max_rounds. The set is stored, named and versioned.

personas_check: the 60 BFI-2 items are asked of every personality of a set, default included, under the same
instruction placement as judging: once greedily and k times sampled. The views then score facets and domains
(reverse-keyed items count 6 - answer), lay out the personality x domain matrix and test, per trait,
high > default > low. See docs/personas.md.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from peras.settings import Settings, load_settings
from tasks.engine.endpoint import serving_endpoint
from tasks.engine.lease import held
from tasks.engine.run_status import recorded_run
from tasks.engine.running import run_stage
from tasks.engine.tasks import ask_all, check_endpoint, identify_warehouse, opaque
from tasks.personas.build_sets import (
    build_config,
    build_stage,
    check_run_name,
    choose_conditions,
    choose_items,
    choose_set,
    finish_build,
    has_candidates,
    plan_round,
    record_round,
    register_build,
)
from tasks.personas.tasks import CheckRecipe, load_fidelity, plan_answers, summarize
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
    items_per_domain: int = 12,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Ask the BFI-2 items of every personality of the set (greedy, then `samples` sampled); gate, publish.

    The set: `builtin` (the study's Table 1), NAME (a built set's latest published version) or NAME@VERSION.
    items_per_domain < 12 asks only the first items of each domain (a quick look). A run keeps its set, model,
    samples, temperature, seed, prompt and items; calling it again resumes it: no request is sent twice.
    """
    settings = settings or load_settings()
    chosen = choose_set(settings, personality_set)
    items = choose_items(items_per_domain)
    planned = plan_answers(chosen, items, samples)
    recipe = CheckRecipe(personality_set, samples, temperature, seed, run_name, chosen, items, planned)
    outcome = run_stage(settings, recipe, backend, chunk_size, retry_failed)
    if outcome.n_waiting:  # batch mode: answers still out (docs/batch.md); this command again goes on
        return outcome.waiting(len(planned))
    publish_analyst_snapshot(settings)
    tables = load_fidelity(settings, outcome.run.run_name)
    return summarize(outcome, personality_set, len(planned), tables)


@flow(name="personas-build", flow_run_name="personas-build-{set_name}", log_prints=True)
def personas_build(
    set_name: str,
    conditions: list[str] | None = None,
    max_rounds: int = 3,
    seed: int = 42,
    check_samples: int = 5,
    check_temperature: float = 0.7,
    items_per_domain: int = 12,
    chunk_size: int = 64,
    backend: str | None = None,
    retry_failed: bool = False,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Build a named personality set (all ten conditions, or `conditions`) the study's way, checking each round.

    Round r asks both steps with seed + r for the conditions without a faithful candidate, then checks the set's
    candidates (personas_check, run build-NAME-vV-roundR); a failing condition is built again, up to max_rounds.
    The set is published when every condition has an instruction; each records its rounds and fidelity. Calling it
    again with the same settings resumes an unfinished build (stored answers are reused); else it makes a new version.
    """
    settings = settings or load_settings()
    chosen = choose_conditions(conditions)
    warehouse_id = identify_warehouse(settings)
    with serving_endpoint(settings, backend) as endpoint:
        endpoint = check_endpoint(settings, endpoint)
        config = build_config(endpoint, chosen, seed, max_rounds, check_samples, check_temperature, items_per_domain)
        build = register_build(settings, warehouse_id, set_name, config)
    with held(settings.warehouse, build.kind, build.run_id), recorded_run(settings, build):
        for round_no in range(1, max_rounds + 1):
            plan = plan_round(settings, build, config, round_no)
            if plan is None:
                break
            with serving_endpoint(settings, backend) as endpoint:
                stage = opaque(build_stage(config, build))
                ask_all(settings, endpoint, build, stage, opaque(plan), chunk_size, retry_failed)
            if not has_candidates(settings, build):
                continue  # no instruction was readable yet: nothing to check this round
            personas_check(
                build.run_name, check_samples, check_temperature, seed, check_run_name(build, round_no),
                backend=backend, items_per_domain=items_per_domain, settings=settings,
            )  # fmt: skip
            record_round(settings, build, round_no)
        summary = finish_build(settings, build, config)
    publish_analyst_snapshot(settings)
    return summary
