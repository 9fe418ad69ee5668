"""`--model-preset NAME`: a model of the study (peras/models.toml) as the defaults of the endpoint flags."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from peras.errors import UsageError
from peras.models import ModelPreset, load_model_presets
from peras.settings import Settings


def model_preset_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """Add --model-preset; place it between @endpoint_options and @settings_options.

    The preset gives the model name, the backend label and, for hosted presets, the API's URL and key variable;
    a flag given explicitly still wins. The command receives the preset (or None) as `model_preset`.
    """

    @click.option("--model-preset", help="A model preset of peras/models.toml (e.g. llama-3-8b); flags still win.")
    @functools.wraps(func)
    def wrapper(*args: Any, model_preset: str | None, _settings_overrides: dict[str, Any], **kwargs: Any) -> Any:
        preset = load_model_presets().get(model_preset) if model_preset else None
        overrides = dict(_settings_overrides)
        if preset is not None:
            given = {
                "model": preset.model,
                "base_urls": [preset.base_url] if preset.base_url else None,
                "api_key_env": preset.api_key_env,
                "mode": preset.mode,
            }
            overrides |= {key: value for key, value in given.items() if overrides.get(key) is None}
            kwargs["backend"] = kwargs.get("backend") or preset.backend
        return func(*args, _settings_overrides=overrides, model_preset=preset, **kwargs)

    return wrapper


def check_served(preset: ModelPreset | None, settings: Settings) -> None:
    """A preset served by you (vLLM) needs its URL: without one the embedded model would answer instead."""
    if preset is not None and not settings.base_urls:
        raise UsageError(f"model preset {preset.name} is served by {preset.backend}: give its --base-url")
