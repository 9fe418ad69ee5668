"""What every command shares: the settings options and running a flow with clean errors."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from pydantic import BaseModel

from peras.errors import UsageError
from peras.llm.constraints import ANSWER_FORMATS
from peras.settings import Settings, load_settings

# Every number a flag takes ends in a BIGINT column, a numpy seed or a Prefect parameter: past 64 bits it is refused
# as a usage error naming the range, not an OverflowError or a flow run Prefect cannot list.
INT64_MAX = 2**63 - 1


def bounded(low: int, high: int = INT64_MAX) -> click.IntRange:
    """An integer flag from `low` to `high` (at most the largest 64-bit integer)."""
    return click.IntRange(min=low, max=min(high, INT64_MAX))


def settings_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add --config and --warehouse; pass a resolved Settings object as `settings`."""

    @click.option("--config", type=click.Path(path_type=Path), help="TOML config file ([peras] table).")
    @click.option("--warehouse", type=click.Path(path_type=Path), help="DuckDB file [env PERAS_WAREHOUSE].")
    @functools.wraps(func)
    def wrapper(*args: Any, config: Path | None, warehouse: Path | None, **kwargs: Any) -> Any:
        overrides = kwargs.pop("_settings_overrides", {})
        settings = load_settings(config, warehouse=warehouse, **overrides)
        if settings.batch_wait and settings.mode != "batch":
            raise UsageError("--wait waits for batch rounds: give it with --mode batch")
        return func(*args, settings=settings, **kwargs)

    return wrapper


def endpoint_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the LLM endpoint flags; they override the matching settings. Place above @settings_options.

    `--backend` (a label recorded with the run) is passed on to the command as `backend`.
    """
    return asking_endpoint_options(
        [
            click.option(
                "--base-url", "base_urls", multiple=True, help="OpenAI-compatible base URL (repeat to load-balance)."
            ),
            click.option("--model", help="Model name the endpoint serves."),
        ],
        api_key_help="Environment variable holding the API key [OPENAI_API_KEY].",
        backend_help="Backend label to record (vllm, openai, deepseek, ...).",
        concurrency_help="Requests in flight per endpoint [8].",
    )(func)


def asking_endpoint_options(
    url_and_model: list[Callable[[Callable[..., Any]], Callable[..., Any]]],
    *,
    api_key_help: str,
    backend_help: str,
    concurrency_help: str,
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The endpoint flags of whatever asks an LLM (the judge's, the fuser's, ...), as settings overrides.

    `url_and_model`: the two options naming the endpoint, with the destinations `base_urls` and `model`, in the
    order --help lists them; the help texts of the other flags say whose endpoint they set. --mode and --wait
    come with them (mode_options); `--backend` is passed on to the command as `backend`.
    """
    options: list[Callable[[Callable[..., Any]], Callable[..., Any]]] = [
        *url_and_model,
        click.option("--api-key-env", help=api_key_help),
        click.option("--backend", help=backend_help),
        click.option("--concurrency", type=bounded(1), help=concurrency_help),
        click.option("--request-budget", type=bounded(0), help="Most requests this run may send."),
        answer_format_option(
            "auto: constrain answers where the endpoint enforces it (probed once), else free text; free: never;"
            " constrained: refuse an endpoint that enforces none [auto]."
        ),
        mode_options,
    ]

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(
            *args: Any,
            base_urls: tuple[str, ...],
            model: str | None,
            api_key_env: str | None,
            concurrency: int | None,
            request_budget: int | None,
            answer_format: str | None,
            **kwargs: Any,
        ) -> Any:
            overrides = kwargs.pop("_settings_overrides", {}) | {
                "base_urls": list(base_urls) or None,
                "model": model,
                "api_key_env": api_key_env,
                "concurrency": concurrency,
                "request_budget": request_budget,
                "answer_format": answer_format,
            }
            return func(*args, _settings_overrides=overrides, **kwargs)

        decorated: Callable[..., Any] = wrapper
        for option in reversed(options):  # listed top down, as --help shows them
            decorated = option(decorated)
        return decorated

    return decorate


def seed_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--seed: an integer >= 0, the study's 42 unless given; `help_text` says what it seeds in the command."""
    return click.option("--seed", type=bounded(0), default=42, show_default=True, help=help_text)


def personality_set_option(verb: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--personality-set: a stored personality set the command asks under; `verb` says what the command does."""
    return click.option(
        "--personality-set",
        help=f"{verb} a stored personality set: NAME (latest published), NAME@VERSION (`peras personas build`) "
        "or builtin [the built-in eleven and PERAS_PERSONALITIES_DIR].",
    )


def retry_failed_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--retry-failed: ask again what the run stored as failures; `help_text` says what they are in the command."""
    return click.option("--retry-failed", is_flag=True, help=help_text)


def answer_format_option(help_text: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--answer-format (auto, free or constrained: peras/llm/constraints.py), with what it means for the command."""
    return click.option("--answer-format", type=click.Choice(ANSWER_FORMATS), help=help_text)


def mode_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add --mode and --wait (how an LLM command asks: docs/batch.md), as settings overrides merged into those the
    wrapped endpoint flags pass on."""

    @click.option(
        "--mode",
        type=click.Choice(["online", "batch"]),
        help="How to ask: online, or batch (the OpenAI Batch API at --base-url at the provider's batch price; "
        "without --base-url, files for vLLM's run-batch): docs/batch.md [settings: mode, online].",
    )
    @click.option("--wait", is_flag=True, help="With --mode batch: poll until every round is answered, then gate.")
    @functools.wraps(func)
    def wrapper(*args: Any, mode: str | None, wait: bool, **kwargs: Any) -> Any:
        overrides = kwargs.pop("_settings_overrides", {})
        overrides = overrides | {"mode": mode, "batch_wait": True if wait else None}
        return func(*args, _settings_overrides=overrides, **kwargs)

    return wrapper


def waiting_line(result: dict[str, Any], made: str = "answers") -> str:
    """What a batch-mode call submitted and what to run next (`made`: what the stage makes, e.g. judgments)."""
    name = result["run_name"]
    head = (
        f"{name}: {result['n_judged_now']:,} {made} made now, {result['n_waiting']:,} wait for batch answers; "
        f"submitted now: {', '.join(result['batches']) or 'nothing (the requests are already out)'}. "
    )
    if result.get("budget_line"):
        head += result["budget_line"] + ". "
    if result.get("offline"):
        return head + (
            f"Next: peras batch export {name} --output DIR, run `vllm run-batch -i FILE -o OUT` on each file, "
            f"peras batch import {name} OUT..., then this command again"
        )
    return head + f"Next: this command again (or with --wait) collects and goes on; peras batch status {name}"


def run_flow(flow: Any, *, tags: list[str], flow_run_name: str | None = None, **parameters: Any) -> Any:
    """Run a Prefect flow in this process, its run tagged like the deployment runs of the same stage.

    Prefect is reached through cli.prefect_server: the user's PREFECT_API_URL, else the local server peras
    starts once and reuses. The flow run is created with `tags` and then run, as a worker does: tags given
    through `prefect.tags()` would also land on every task run, and Prefect then asks the server for a
    tag concurrency slot before each task (~35 ms each; deployment runs' tasks carry no tags).
    `flow_run_name` overrides the flow's own run-name template.
    """
    from prefect.client.orchestration import get_client
    from prefect.flow_engine import run_flow as run_flow_run
    from prefect.states import Pending

    from cli.prefect_server import prefect_api

    chosen = flow.with_options(flow_run_name=flow_run_name) if flow_run_name else flow
    with prefect_api(echo=note):
        with get_client(sync_client=True) as client:
            flow_run = client.create_flow_run(
                flow=chosen, parameters=recorded_parameters(chosen, parameters), state=Pending(), tags=tags
            )
        return run_flow_run(chosen, flow_run=flow_run, parameters=parameters)


def recorded_parameters(flow: Any, parameters: dict[str, Any]) -> dict[str, Any]:
    """The flow run's parameters as Prefect records them: what `flow.serialize_parameters` makes of them (FastAPI's
    jsonable_encoder), without importing FastAPI for the types a command passes (~0.1 s of every command)."""
    recorded = {}
    for key, value in parameters.items():
        try:
            recorded[key] = jsonable(value)
        except TypeError:
            recorded |= flow.serialize_parameters({key: value})
    return recorded


def jsonable(value: Any) -> Any:
    """JSON types as they are, a path as its text, a pydantic model (the settings) dumped as JSON by alias (a secret
    masked), lists and string-keyed dicts of those; anything else is a TypeError."""
    if value is None or isinstance(value, str | int | float):
        return value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if isinstance(value, dict) and all(isinstance(key, str) for key in value):
        return {key: jsonable(item) for key, item in value.items()}
    raise TypeError(type(value).__name__)


def run_asking_flow(
    flow: Any,
    stage: str,
    settings: Settings,
    backend: str | None,
    *,
    where: tuple[str | None, ...] = (),
    **parameters: Any,
) -> dict[str, Any] | None:
    """Run a stage's flow that asks an LLM, with `settings` and `backend`, tagged with the stage, `where` (collection
    and subset) and the endpoint's model and backend. A batch-mode call whose answers are still out prints what it
    submitted and what to run next (waiting_line) and returns None; else the flow's summary."""
    summary: dict[str, Any] = run_flow(
        flow,
        tags=run_tags(stage, *where, **endpoint_tags(settings, backend)),
        backend=backend,
        settings=settings,
        **parameters,
    )
    if summary.get("n_waiting"):  # batch mode: answers still out
        click.echo(waiting_line(summary))
        return None
    return summary


def note(message: str) -> None:
    """A line about what peras is doing, on stderr (stdout stays the command's result)."""
    click.echo(message, err=True)


def run_tags(
    stage: str,
    collection: str | None = None,
    subset: str | None = None,
    model: str | None = None,
    backend: str | None = None,
) -> list[str]:
    """The tags of a flow run, the same for `peras` commands and deployment runs: filter on them in the UI."""
    tags = ["peras", f"stage:{stage}"]
    named = {"collection": collection, "subset": subset, "model": model, "backend": backend}
    return tags + [f"{key}:{value}" for key, value in named.items() if value]


def endpoint_tags(settings: Settings, backend: str | None) -> dict[str, str | None]:
    """The model and backend a stage that asks an LLM will use, as run_tags arguments."""
    return model_and_backend(settings.base_urls, settings.model, backend)


def model_and_backend(base_urls: list[str], model: str | None, backend: str | None) -> dict[str, str | None]:
    """The same rule as the flows' endpoint: no base URL means the embedded llama.cpp model."""
    if not base_urls:
        from peras.local_model import DEFAULT_MODEL

        return {"model": model_slug(DEFAULT_MODEL.name), "backend": "llama.cpp"}
    return {"model": model_slug(model), "backend": backend or "openai-compatible"}


def model_slug(model: str | None) -> str | None:
    """A model name as a tag value: its last path part, lower case (meta-llama/Llama-3.1-8B -> llama-3.1-8b)."""
    return model.rstrip("/").rsplit("/", 1)[-1].lower() if model else None


def text_table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    """Rows as aligned text lines (numbers right-aligned, with thousands separators; None as '-')."""
    cells = [[_cell(value) for value in row] for row in rows]
    numeric = [
        all(isinstance(row[i], int | float) or row[i] is None for row in rows)
        and any(row[i] is not None for row in rows)
        for i in range(len(headers))
    ]
    widths = [max([len(h), *(len(row[i]) for row in cells)]) for i, h in enumerate(headers)]

    def line(values: list[str]) -> str:
        parts = [v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric, strict=True)]
        return "  ".join(parts).rstrip()

    return [line(headers), *(line(row) for row in cells)]


def echo_table(headers: list[str], rows: list[list[Any]]) -> None:
    """A text table, line by line."""
    for line in text_table(headers, rows):
        click.echo(line)


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}"
    return str(value)
