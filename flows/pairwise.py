"""Pairwise flow: which of two judged passages is more relevant, asked in both orders under each personality.

Pairs are drawn from the qrels per topic, stratified over grade differences (0 = a tie, 1, 2, 3), from a seed;
every pair is asked in both orders with each chosen prompt (certainty, tie, self, logp, mp). See docs/pairwise.md.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from peras.settings import Settings, load_settings
from tasks.engine.running import run_stage
from tasks.pairwise.asking import plan_items
from tasks.pairwise.tasks import PairwiseRecipe, check_prompts, draw, load_judged, named_prompts, summarize
from tasks.publish.tasks import publish_analyst_snapshot
from tasks.shared.personalities import choose_personalities


@flow(name="pairwise", flow_run_name="pairwise-{collection}", log_prints=True)
def pairwise(
    collection: str,
    subset: str | None = None,
    personalities: list[str] | None = None,
    personality_set: str | None = None,
    prompts: list[str] | None = None,
    pairs_per_topic: int = 8,
    seed: int = 42,
    run_name: str | None = None,
    chunk_size: int = 1024,
    backend: str | None = None,
    retry_failed: bool = False,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Ask every drawn pair x order x personality x prompt; gate, publish.

    prompts: 'certainty' (default), 'tie', 'self', 'logp', 'mp' (the last two: the overconfidence study's MP and
    LogP template, its confidence from the log-probabilities or from 10 samples), 'all' (every prompt the endpoint
    supports: logp only where it returns log-probabilities; logp named on one without them is refused).
    personality_set: ask under a stored set's personas (NAME, NAME@VERSION, builtin) instead of the built-in and
    PERAS_PERSONALITIES_DIR ones, as judge does. A run keeps its collection, subset, model, seed and request
    parameters; calling it again with more pairs per topic, personalities or prompts extends it. Stored answers are
    reused: a rerun sends nothing.
    """
    settings = settings or load_settings()
    chosen_prompts = check_prompts(prompts)
    chosen = choose_personalities(settings, personalities, personality_set)
    judged = load_judged(settings, collection, subset)
    pairs = draw(judged, seed, pairs_per_topic)
    planned = plan_items(pairs, [p.code for p in chosen], chosen_prompts)
    scope = {"pairs_per_topic": pairs_per_topic, "prompts": chosen_prompts, "personalities": [p.code for p in chosen]}
    recipe = PairwiseRecipe(collection, subset, seed, scope, run_name, chosen, judged, planned, named_prompts(prompts))
    outcome = run_stage(settings, recipe, backend, chunk_size, retry_failed)  # the recipe fitted to the endpoint
    if outcome.n_waiting:  # batch mode: answers still out (docs/batch.md); this command again goes on
        return outcome.waiting(len(recipe.planned))
    publish_analyst_snapshot(settings)
    return summarize(outcome, recipe.scope | {"n_pairs": len(pairs)}, len(recipe.planned))
