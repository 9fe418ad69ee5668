"""What every command shares: the settings options and running a flow with clean errors."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from peras.settings import load_settings


def settings_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add --config and --warehouse; pass a resolved Settings object as `settings`."""

    @click.option("--config", type=click.Path(path_type=Path), help="TOML config file ([peras] table).")
    @click.option("--warehouse", type=click.Path(path_type=Path), help="DuckDB file [env PERAS_WAREHOUSE].")
    @functools.wraps(func)
    def wrapper(*args: Any, config: Path | None, warehouse: Path | None, **kwargs: Any) -> Any:
        overrides = kwargs.pop("_settings_overrides", {})
        settings = load_settings(config, warehouse=warehouse, **overrides)
        return func(*args, settings=settings, **kwargs)

    return wrapper


def endpoint_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add the LLM endpoint flags; they override the matching settings. Place above @settings_options.

    `--backend` (a label recorded with the run) is passed on to the command as `backend`.
    """

    @click.option("--base-url", "base_urls", multiple=True, help="OpenAI-compatible base URL (repeat to load-balance).")
    @click.option("--model", help="Model name the endpoint serves.")
    @click.option("--api-key-env", help="Environment variable holding the API key [OPENAI_API_KEY].")
    @click.option("--backend", help="Backend label to record (vllm, openai, deepseek, ...).")
    @click.option("--concurrency", type=click.IntRange(min=1), help="Requests in flight per endpoint [8].")
    @click.option("--request-budget", type=click.IntRange(min=0), help="Most requests this run may send.")
    @functools.wraps(func)
    def wrapper(
        *args: Any,
        base_urls: tuple[str, ...],
        model: str | None,
        api_key_env: str | None,
        concurrency: int | None,
        request_budget: int | None,
        **kwargs: Any,
    ) -> Any:
        overrides = {
            "base_urls": list(base_urls) or None,
            "model": model,
            "api_key_env": api_key_env,
            "concurrency": concurrency,
            "request_budget": request_budget,
        }
        return func(*args, _settings_overrides=overrides, **kwargs)

    return wrapper
