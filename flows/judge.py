"""Judge flow: every pair x personality x CoT setting x confidence method, asked of one LLM, stored and gated."""

from __future__ import annotations

from typing import Any

from prefect import flow

from peras.settings import Settings, load_settings
from peras.warehouse import kept_open
from tasks.engine.running import run_stage
from tasks.engine.shards import ROWS_PER_SHARD
from tasks.judge.fan_out import check_spread, judge_on_hosts
from tasks.judge.runs import check_methods
from tasks.judge.tasks import JudgeRecipe, load_pairs, publish_judge_artifact, read_failure_shares, summarize
from tasks.publish.tasks import publish_analyst_snapshot
from tasks.shared.personalities import choose_personalities


@flow(name="judge", flow_run_name="judge-{collection}", log_prints=True)
def judge(
    collection: str,
    subset: str | None = None,
    personalities: list[str] | None = None,
    cot: list[bool] | None = None,
    confidence_methods: list[str] | None = None,
    run_name: str | None = None,
    limit_pairs: int | None = None,
    chunk_size: int = ROWS_PER_SHARD,
    n_samples: int = 10,
    backend: str | None = None,
    retry_failed: bool = False,
    pool: str | None = None,
    personality_set: str | None = None,
    wait: bool = False,
    parts: int | None = None,
    split_by: str = "personality",
    deployment: str = "judge-part/hosts",
    max_attempts: int = 3,
    lost_after_s: float = 60.0,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Judge a collection (or subset) under each personality, with and without CoT, storing every request.

    Re-running the same run name resumes (limits, subsets and personalities extend or narrow the same run):
    what is judged on the current texts is never asked again. chunk_size: judgments per shard (loaded as they
    fill). retry_failed: ask again answers this run stored as unreadable or refused. pool: judge the pairs of this
    judge-run pool (top-K passages of run files no human judged; flows/judge_run.py) instead of the qrels pairs.
    personality_set: judge with a stored set (NAME, NAME@VERSION, builtin; `peras personas build`) instead of
    the built-in and PERAS_PERSONALITIES_DIR personalities. With settings.mode 'batch' the requests go in batch
    rounds (docs/batch.md): a call collects what ended and submits the next round; the run is gated once no item
    waits. wait: poll until then.

    parts: spread the run over hosts (docs/scaling.md): `parts` child runs of `deployment` (flow judge-part) that any
    worker of its pool takes, each on its own host's endpoint, committing its own shards; a part whose run fails or
    whose host is lost (no beat for lost_after_s) is started again (max_attempts), resuming from what was committed.
    Then the whole run is gated and published here. split_by: personality (groups of personalities) or topic
    (groups of queries, balanced by pairs). Needs a warehouse every host reaches: a DuckLake catalog.
    """
    settings = (settings or load_settings()).model_copy(update={"batch_wait": True} if wait else {})
    cot_settings, methods = [False, True] if cot is None else cot, check_methods(confidence_methods)
    if parts is not None:
        check_spread(settings, deployment, retry_failed)
    chosen = choose_personalities(settings, personalities, personality_set)
    pairs = load_pairs(settings, collection, subset, limit_pairs, pool)
    recipe = JudgeRecipe(collection, subset, run_name, pool, chosen, pairs, cot_settings, methods, n_samples)
    if parts is not None:
        asked = {"limit_pairs": limit_pairs, "chunk_size": chunk_size, "personality_set": personality_set}
        supervision = (deployment, max_attempts, lost_after_s)
        return judge_on_hosts(settings, recipe, (parts, split_by), asked, backend, supervision)
    outcome = run_stage(settings, recipe, backend, chunk_size, retry_failed)
    if outcome.n_waiting:  # batch mode: answers still out (docs/batch.md); a later call gates
        return outcome.waiting(recipe.n_planned)
    with kept_open(settings.warehouse):  # the summary's table and the snapshot: one opening of the file
        shares = read_failure_shares(settings, outcome.run)
        publish_analyst_snapshot(settings)
    summary = summarize(outcome.run, outcome.endpoint, recipe.n_planned, outcome.stats, shares)
    publish_judge_artifact(summary, shares)
    return summary
