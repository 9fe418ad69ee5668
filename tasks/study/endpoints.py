"""The study's endpoints file: for each model preset, where it is served, which key variable, how many in flight.

    [llama-3-8b]
    base_urls = ["http://gpu1:8000/v1", "http://gpu2:8000/v1"]   # several URLs serving the model: load-balanced
    concurrency = 64
    [gpt-4o]                      # base_urls default to the preset's API address
    api_key_env = "OPENAI_API_KEY"  # the NAME of the variable (default: the preset's); never a key
    concurrency = 16
    answer_format = "free"        # auto (default), free or constrained (docs/constrained.md); wins over the preset's
    mode = "batch"                # online (default) or batch (the provider's Batch API, docs/batch.md); the same

A bad file, a preset without an entry or a hosted preset whose key variable is unset is one UsageError line.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from peras.datafiles import read_toml
from peras.errors import UsageError
from peras.models import ModelPreset, ModelPresets
from peras.settings import Settings


class EndpointEntry(BaseModel):
    """One preset's endpoint(s) as the file gives them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_urls: list[str] = Field(default_factory=list)
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    concurrency: int | None = Field(None, ge=1)
    answer_format: Literal["auto", "free", "constrained"] | None = None
    mode: Literal["online", "batch"] | None = None


def load_endpoints(path: Path, presets: ModelPresets) -> dict[str, EndpointEntry]:
    """Every entry of the file, each named after a known preset."""
    raw = read_toml(path, "endpoints file")
    entries = {}
    for name, entry in raw.items():
        if name not in presets.models:
            raise UsageError(f"endpoints file {path}: [{name}] is not a model preset ({', '.join(presets.models)})")
        try:
            entries[name] = EndpointEntry.model_validate(entry)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"])
            raise UsageError(f"endpoints file {path}: [{name}] {where}: {first['msg']}") from exc
    return entries


def model_settings(settings: Settings, preset: ModelPreset, entries: dict[str, EndpointEntry], path: Path) -> Settings:
    """The settings a preset's stages run with: its URLs, model, key variable and concurrency (checked now)."""
    entry = entries.get(preset.name)
    if entry is None:
        raise UsageError(f"endpoints file {path} has no [{preset.name}] entry (base_urls, api_key_env, concurrency)")
    base_urls = entry.base_urls or ([preset.base_url] if preset.base_url else [])
    if not base_urls:
        raise UsageError(f"endpoints file {path}: [{preset.name}] needs base_urls (a {preset.backend} server)")
    key_env = entry.api_key_env or preset.api_key_env
    if key_env and not os.environ.get(key_env) and (preset.hosted or entry.api_key_env):
        raise UsageError(f"model preset {preset.name} reads its API key from ${key_env}, which is not set")
    update: dict[str, Any] = {
        "base_urls": base_urls,
        "model": preset.model,
        "api_key_env": key_env or settings.api_key_env,
    }
    if entry.concurrency is not None:
        update["concurrency"] = entry.concurrency
    answer_format = entry.answer_format or preset.answer_format
    if answer_format is not None:
        update["answer_format"] = answer_format
    mode = entry.mode or preset.mode
    if mode is not None:
        update["mode"] = mode
    return settings.model_copy(update=update)
