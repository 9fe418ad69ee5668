"""Priming flow: the threshold-priming experiment in batch judging, under each personality condition.

For each topic, trial and batch setting (PL, EL), the same EL qrel-2 passages (the epilogue) are judged in
one batch after PL qrel-3 passages (HT) and in another after PL qrel-0 passages (LT); a lower mean epilogue
score after HT is threshold priming. See docs/priming.md.
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from flows.judge import Endpoint, endpoint_for, endpoint_slots, opaque
from peras.progress import track
from peras.prompting import DEFAULT_CODE, Personality, select_personalities
from peras.settings import Settings, load_settings
from tasks.judge.tasks import check_endpoint, run_id_for, store_personalities
from tasks.priming.draws import (
    Pools,
    check_batch_settings,
    choose_topics,
    draw_trials,
    load_pools,
    plan_batches,
)
from tasks.priming.judging import BatchConfig, BatchItem
from tasks.priming.prompt import batch_prompt
from tasks.priming.stats import (
    compute_priming_index,
    compute_priming_tests,
    load_priming_pairs,
    publish_priming_stats,
)
from tasks.priming.tables import load_priming_tables, plot_priming_topics, publish_priming_artifact
from tasks.priming.tasks import (
    check_priming_run,
    chunked,
    judge_batches,
    load_cached_answers,
    load_priming_shards,
    register_priming_run,
    select_pending,
)

EMBEDDED_MAX_TOKENS = 256  # a JSON object of 16 ids and scores is about 130 tokens


@flow(name="priming", flow_run_name="priming-{collection}", log_prints=True)
def priming(
    collection: str = "dl19",
    topics: list[str] | None = None,
    limit_topics: int | None = None,
    trials: int = 20,
    batch_settings: list[tuple[int, int]] | None = None,
    personalities: list[str] | None = None,
    seed: int = 42,
    run_name: str | None = None,
    frequency_penalty: float | None = None,
    presence_penalty: float | None = None,
    min_per_level: int = 12,
    chunk_size: int = 256,
    backend: str | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Judge HT and LT batches for every topic x trial x setting x personality; test, publish, plot.

    personalities: codes; default ['default'], ['all'] for every condition. A run keeps its collection, model,
    seed, prompt and request parameters; calling it again with other topics, trials, settings or personalities
    extends it and re-tests that scope. Stored answers are reused: no request is sent twice.
    """
    settings = settings or load_settings()
    layouts = check_batch_settings(batch_settings)
    chosen = select_personalities(personality_codes(personalities), settings.personalities_dir)
    by_code = {p.code: p for p in chosen}
    topic_ids = choose_topics(settings, collection, topics, min_per_level, limit_topics, layouts)
    pools = load_pools(settings, collection, topic_ids)
    planned = plan_batches(draw_trials(pools, trials, layouts, seed), list(by_code))
    with endpoint_for(settings, backend) as endpoint:
        check_endpoint(settings, endpoint.base_urls, endpoint.model)
        name = run_name or default_run_name(collection, endpoint.model)
        config = batch_config(run_id_for(f"priming:{name}"), endpoint, frequency_penalty, presence_penalty)
        scope = {"topics": topic_ids, "trials": trials, "batch_settings": layouts, "personalities": list(by_code)}
        register_priming_run(settings, name, collection, config, seed, run_parameters(config), scope)
        store_personalities(settings, chosen)
        load_priming_shards(settings, config.run_id)
        pending = select_pending(settings, config.run_id, planned)
        cache = load_cached_answers(settings, config, opaque(pending), opaque(pools), by_code)
        stats = ask_batches(settings, endpoint, config, name, pending, pools, by_code, cache, chunk_size)
    load_priming_shards(settings, config.run_id)
    n_failures = check_priming_run(settings, config.run_id, planned)
    pairs = load_priming_pairs(settings, config.run_id, planned)
    publish_priming_stats(settings, config.run_id, compute_priming_tests(pairs), compute_priming_index(pairs))
    tables = load_priming_tables(settings, name)
    plots = plot_priming_topics(settings, name, tables.analysis)
    summary = summarize(name, config, endpoint, scope, len(planned), n_failures, stats, tables, plots)
    publish_priming_artifact(summary)
    return summary


def ask_batches(
    settings: Settings,
    endpoint: Endpoint,
    config: BatchConfig,
    name: str,
    pending: list[BatchItem],
    pools: Pools,
    personalities: dict[str, Personality],
    cache: dict[str, str],
    chunk_size: int,
) -> list[dict[str, Any]]:
    """Ask the pending batches chunk by chunk, holding endpoint slots only when there is something to ask."""
    if not pending:
        return []
    with endpoint_slots(settings, endpoint), track(f"priming {name}", len(pending)) as bar:
        return [
            judge_batches(
                settings,
                endpoint.base_urls,
                config,
                f"chunk-{index:05d}-{len(pending)}",
                opaque(chunk),
                opaque(pools),
                personalities,
                opaque(cache),
                bar,
            )
            for index, chunk in enumerate(chunked(pending, chunk_size))
        ]


def personality_codes(personalities: list[str] | None) -> list[str] | None:
    """The codes to select: none given means the default condition only, 'all' means every one (None)."""
    if not personalities:
        return [DEFAULT_CODE]
    return None if "all" in personalities else personalities


def default_run_name(collection: str, model: str) -> str:
    """e.g. dl19-priming-qwen2.5-coder-0.5b-instruct-q4_k_m."""
    return f"{collection}-priming-{model.replace('/', '_')}"


def batch_config(
    run_id: str, endpoint: Endpoint, frequency_penalty: float | None, presence_penalty: float | None
) -> BatchConfig:
    """Remote models get the prompt's sampling alone; the embedded model also an answer cap (recorded)."""
    sampling = batch_prompt().sampling
    if endpoint.backend == "llama.cpp":
        return BatchConfig(
            run_id,
            endpoint.model,
            endpoint.backend,
            sampling,
            EMBEDDED_MAX_TOKENS,
            frequency_penalty,
            presence_penalty,
            extra_body={"cache_prompt": True},
        )
    return BatchConfig(run_id, endpoint.model, endpoint.backend, sampling, None, frequency_penalty, presence_penalty)


def run_parameters(config: BatchConfig) -> dict[str, Any]:
    """What fixes a run besides collection, model and seed: the request parameters and the prompt file."""
    return {"request_params": config.params(), "prompt_sha256": batch_prompt().fingerprint}


def summarize(
    name: str,
    config: BatchConfig,
    endpoint: Endpoint,
    scope: dict[str, Any],
    n_batches: int,
    n_failures: int,
    stats: list[dict[str, Any]],
    tables: Any,
    plots: list[str],
) -> dict[str, Any]:
    """Counts and tables for the CLI and the artifact."""
    return {
        "run_name": name,
        "run_id": config.run_id,
        "model": endpoint.model,
        "backend": endpoint.backend,
        "n_topics": len(scope["topics"]),
        **scope,
        "n_batches": n_batches,
        "n_judged_now": sum(s["n_items"] for s in stats),
        "n_sent": sum(s["n_sent"] for s in stats),
        "n_cached": sum(s["n_cached"] for s in stats),
        "n_failures": n_failures,
        "analysis": tables.analysis,
        "pooled": tables.personalities,
        "index": tables.index,
        "plots": plots,
    }
