"""What every command shares: the settings options and running a flow with clean errors."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from peras.settings import Settings, load_settings


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


def settings_from(settings: Settings) -> dict[str, Any]:
    """Settings as flow parameters (JSON-safe, no secrets: keys are only ever named, not stored)."""
    return settings.model_dump(mode="json")
