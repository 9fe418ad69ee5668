"""Judge-part flow: one part of a judge run spread over hosts (started by the judge flow with `parts`).

Its own module so that `peras judge` does not build this flow's parameter schema at import (~40 ms a command).
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from peras.settings import Settings, load_settings
from tasks.engine.shards import ROWS_PER_SHARD
from tasks.judge.fan_out import ask_part, part_settings
from tasks.judge.runs import check_methods
from tasks.judge.tasks import JudgeRecipe, load_pairs
from tasks.shared.personalities import choose_personalities


@flow(name="judge-part", flow_run_name="judge-part-{collection}-{part}", log_prints=True)
def judge_part(
    collection: str,
    run_name: str,
    part: str,
    model: str,
    attempt: int = 1,
    personalities: list[str] | None = None,
    topics: list[str] | None = None,
    subset: str | None = None,
    cot: list[bool] | None = None,
    confidence_methods: list[str] | None = None,
    limit_pairs: int | None = None,
    chunk_size: int = ROWS_PER_SHARD,
    n_samples: int = 10,
    backend: str | None = None,
    pool: str | None = None,
    personality_set: str | None = None,
    answer_format: str | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """One part of a judge run spread over hosts (started by the judge flow with `parts`), on this worker's endpoint
    (PERAS_BASE_URLS): asks what the part lacks, commits it, beats while it works; the parent gates and publishes the
    run. attempt: the parent's count of starts of this part; once it starts a newer one, this attempt's commits are
    refused."""
    settings = part_settings(settings or load_settings(model=model, answer_format=answer_format), part, attempt)
    if answer_format is not None:
        settings = settings.model_copy(update={"answer_format": answer_format})
    cot_settings = [False, True] if cot is None else cot
    methods = check_methods(confidence_methods)
    chosen = choose_personalities(settings, personalities, personality_set)
    pairs = load_pairs(settings, collection, subset, limit_pairs, pool, topics)
    recipe = JudgeRecipe(collection, subset, run_name, pool, chosen, pairs, cot_settings, methods, n_samples)
    return ask_part(settings, recipe, part, attempt, backend, chunk_size)
