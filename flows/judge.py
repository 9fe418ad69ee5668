"""Judge flow: every pair x personality x CoT setting x confidence method, asked of one LLM, stored and gated."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact
from prefect.utilities.annotations import quote

from peras.errors import UsageError
from peras.progress import track
from peras.prompting import select_personalities
from peras.settings import Settings, load_settings
from tasks.judge.judging import METHODS, JudgeConfig
from tasks.judge.tasks import (
    check_endpoint,
    check_judge_run,
    chunked,
    judge_chunk,
    load_cached_answers,
    load_pairs,
    load_shards,
    plan_work,
    register_run,
    run_id_for,
    store_personalities,
)

T = TypeVar("T")

EMBEDDED_MAX_TOKENS = {"label": 4, "cot": 24, "confidence": 6}  # the 0.5B model answers in 1-3 tokens


@dataclass(frozen=True)
class Endpoint:
    """Where requests go: base URLs, model name, backend label."""

    base_urls: list[str]
    model: str
    backend: str


@flow(name="judge", flow_run_name="judge-{collection}", log_prints=True)
def judge(
    collection: str,
    subset: str | None = None,
    personalities: list[str] | None = None,
    cot: list[bool] | None = None,
    confidence_methods: list[str] | None = None,
    run_name: str | None = None,
    limit_pairs: int | None = None,
    chunk_size: int = 256,
    n_samples: int = 10,
    backend: str | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Judge a collection (or subset) under each personality, with and without CoT, storing every request.

    Re-running the same run name resumes: stored results are never asked for again.
    """
    settings = settings or load_settings()
    cot_settings = [False, True] if cot is None else cot
    methods = check_methods(confidence_methods or ["verbalized"])
    chosen = select_personalities(personalities, settings.personalities_dir)
    pairs = load_pairs(settings, collection, subset, limit_pairs)
    with endpoint_for(settings, backend) as endpoint:
        check_endpoint(settings, endpoint.base_urls, endpoint.model)
        name = run_name or default_run_name(collection, subset, endpoint.model)
        config = judge_config(run_id_for(name), endpoint, n_samples)
        run_id = register_run(
            settings,
            name,
            collection,
            subset,
            config,
            run_parameters(config, chosen, cot_settings, methods, limit_pairs),
        )
        store_personalities(settings, chosen)
        load_shards(settings, run_id)
        items = plan_work(settings, run_id, opaque(pairs), [p.code for p in chosen], cot_settings, methods)
        by_code = {p.code: p for p in chosen}
        cache = load_cached_answers(settings, config, opaque(items), opaque(pairs), by_code)
        with endpoint_slots(settings, endpoint), track(f"judging {name}", len(items)) as bar:
            stats = [
                judge_chunk(
                    settings,
                    endpoint.base_urls,
                    config,
                    f"chunk-{index:05d}-{len(items)}",
                    opaque(chunk),
                    opaque(pairs),
                    by_code,
                    opaque(cache),
                    bar,
                )
                for index, chunk in enumerate(chunked(items, chunk_size))
            ]
    load_shards(settings, run_id)
    n_planned = len(pairs) * len(chosen) * len(cot_settings) * len(methods)
    shares = check_judge_run(settings, run_id, n_planned)
    summary = summarize(name, run_id, endpoint, n_planned, stats, shares)
    report_artifact(summary, shares)
    return summary


def opaque(value: T) -> T:
    """Pass a large collection to a task without Prefect walking every element (to find futures) on each call.

    Without it, judging DL19 against a fast server spent most of its time in Prefect's parameter resolution:
    every chunk task visited all 9,260 pairs and 101,860 cached answers. The task receives the value itself.
    """
    return cast(T, quote(value))


def check_methods(methods: list[str]) -> list[str]:
    """Confidence methods must be known."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise UsageError(f"unknown confidence method {unknown[0]!r}; choose from {', '.join(METHODS)}")
    return methods


@contextlib.contextmanager
def endpoint_for(settings: Settings, backend: str | None) -> Iterator[Endpoint]:
    """The configured endpoint, or the embedded llama.cpp server started (and stopped) for this flow."""
    if settings.base_urls:
        if not settings.model:
            raise UsageError("--base-url needs --model (the name the server serves)")
        yield Endpoint(settings.base_urls, settings.model, backend or "openai-compatible")
        return
    from peras.local_model import local_server

    with local_server(settings) as server:
        yield Endpoint([server.base_url], server.model, "llama.cpp")


def judge_config(run_id: str, endpoint: Endpoint, n_samples: int) -> JudgeConfig:
    """Remote models get the study's defaults; the embedded model gets short answer caps (recorded)."""
    if endpoint.backend == "llama.cpp":
        return JudgeConfig(
            run_id,
            endpoint.model,
            endpoint.backend,
            EMBEDDED_MAX_TOKENS["label"],
            EMBEDDED_MAX_TOKENS["cot"],
            EMBEDDED_MAX_TOKENS["confidence"],
            n_samples,
            extra_body={"cache_prompt": True},
        )
    return JudgeConfig(run_id, endpoint.model, endpoint.backend, n_samples=n_samples)


def run_parameters(
    config: JudgeConfig,
    personalities: list[Any],
    cot: list[bool],
    methods: list[str],
    limit_pairs: int | None,
) -> dict[str, Any]:
    """What defines a run (stored in judge_runs.params; never credentials)."""
    return {
        "personalities": [p.code for p in personalities],
        "cot": cot,
        "confidence_methods": methods,
        "limit_pairs": limit_pairs,
        "label_params_nocot": config.label_params(False, methods[0]),
        "label_params_cot": config.label_params(True, methods[0]),
        "confidence_params": config.confidence_params(),
        "n_samples": config.n_samples,
        "sampling_temperature": config.sampling_temperature,
    }


def default_run_name(collection: str, subset: str | None, model: str) -> str:
    """e.g. dl19-balanced-qwen2.5-coder-0.5b-instruct-q4_k_m."""
    return "-".join(part for part in (collection, subset, model.replace("/", "_")) if part)


@contextlib.contextmanager
def endpoint_slots(settings: Settings, endpoint: Endpoint) -> Iterator[None]:
    """Hold slots of the endpoint's Prefect global concurrency limit while this run sends requests.

    The limit (created at settings.concurrency per URL if missing; raise it in the UI) bounds the requests in
    flight to an endpoint across every flow run. Slots are held for the whole run, not per chunk: per-chunk
    acquisition costs a poll interval each time. The 60 s lease (the API minimum) frees the slots of a
    killed run within a minute.
    """
    from prefect.client.orchestration import get_client
    from prefect.concurrency.sync import concurrency

    host = urlsplit(endpoint.base_urls[0]).netloc.replace(":", "-")
    name = f"llm-{host}" if endpoint.backend != "llama.cpp" else "llm-embedded"
    wanted = settings.concurrency * len(endpoint.base_urls)
    with get_client(sync_client=True) as client:
        try:
            limit = client.read_global_concurrency_limit_by_name(name).limit
        except Exception:  # noqa: BLE001 - Prefect raises ObjectNotFound; create it then
            client.upsert_global_concurrency_limit_by_name(name, wanted)
            limit = wanted
    with concurrency(name, occupy=min(wanted, limit), lease_duration=60):
        yield


def summarize(
    name: str, run_id: str, endpoint: Endpoint, n_planned: int, stats: list[dict[str, Any]], shares: Any
) -> dict[str, Any]:
    """Counts for the CLI and the artifact."""
    return {
        "run_name": name,
        "run_id": run_id,
        "model": endpoint.model,
        "backend": endpoint.backend,
        "n_planned": n_planned,
        "n_judged_now": sum(s["n_items"] for s in stats),
        "n_sent": sum(s["n_sent"] for s in stats),
        "n_cached": sum(s["n_cached"] for s in stats),
        "n_failures": int(shares["n_failures"].sum()) if shares.height else 0,
    }


def report_artifact(summary: dict[str, Any], shares: Any) -> None:
    """A markdown table of the run in the Prefect UI."""
    lines = [
        f"# Judge run `{summary['run_name']}`",
        "",
        f"{summary['n_planned']:,} judgments planned; {summary['n_judged_now']:,} made now "
        f"({summary['n_sent']:,} requests sent, {summary['n_cached']:,} from the warehouse).",
        "",
        "| personality | CoT | method | items | parse failures |",
        "|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['personality']} | {r['cot']} | {r['confidence_method']} | {r['n_items']} | {r['n_failures']} |"
        for r in shares.iter_rows(named=True)
    ]
    try:
        create_markdown_artifact("\n".join(lines), key="judge-summary", description="judge run summary")
    except Exception as exc:  # noqa: BLE001 - an artifact is a nicety; the run itself succeeded
        get_run_logger().warning("could not create artifact: %s", exc)
