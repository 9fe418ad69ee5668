"""The study's models as presets (peras/models.toml): model name, backend, CoT settings, parameters, price.

Loaded and checked as a whole: a bad file is one UsageError line naming the file, the preset and the field.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from peras.datafiles import read_toml
from peras.errors import UsageError

MODELS_FILE = Path(__file__).with_name("models.toml")
STUDY_PARAMS = ("temperature", "top_p")  # the only request parameters the study set


class Price(BaseModel):
    """USD per 1M tokens."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    batch_input: float | None = Field(None, ge=0)  # the provider's Batch API price, if it has one
    batch_output: float | None = Field(None, ge=0)

    @model_validator(mode="after")
    def _both_batch_prices(self) -> Price:
        if (self.batch_input is None) != (self.batch_output is None):
            raise ValueError("give batch_input and batch_output together (the provider's Batch API price)")
        return self

    @property
    def batch(self) -> tuple[float, float] | None:
        """USD per 1M input, output tokens through the provider's Batch API; None if it has none."""
        return None if self.batch_input is None or self.batch_output is None else (self.batch_input, self.batch_output)


class PrimingParams(BaseModel):
    """Extra parameters of the threshold-priming batch requests."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    frequency_penalty: float | None = None
    presence_penalty: float | None = None


class ModelPreset(BaseModel):
    """One model of the study and how the study asked it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    model: str = Field(min_length=1)
    backend: str = Field(min_length=1)
    hosted: bool = False
    base_url: str | None = None
    api_key_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    cot: list[Literal["without", "with"]] = Field(min_length=1)
    params: dict[str, float]
    priming: PrimingParams = PrimingParams()
    price: Price | None = None
    # How answers are asked (docs/constrained.md); unset: the settings' (--answer-format, default auto).
    answer_format: Literal["auto", "free", "constrained"] | None = None
    # How requests are sent (docs/batch.md); unset: the settings' (--mode, default online).
    mode: Literal["online", "batch"] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> ModelPreset:
        unknown = sorted(set(self.params) - set(STUDY_PARAMS))
        if unknown:
            raise ValueError(f"params may set only {', '.join(STUDY_PARAMS)}, not {unknown[0]}")
        if len(set(self.cot)) != len(self.cot):
            raise ValueError("cot lists a setting twice")
        if self.hosted and (self.price is None or self.api_key_env is None):
            raise ValueError("a hosted preset needs a price and an api_key_env")
        if not self.hosted and self.price is not None:
            raise ValueError("a price belongs to hosted presets only")
        return self

    @property
    def cot_settings(self) -> list[bool]:
        """The CoT settings as the judge flow takes them, without first."""
        return [setting == "with" for setting in sorted(self.cot, key=lambda s: s == "with")]


class ModelPresets(BaseModel):
    """The whole file: when its prices were read and where, and the presets by name."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prices_as_of: str = Field(min_length=1)
    prices_source: str = Field(min_length=1)
    models: dict[str, ModelPreset] = Field(min_length=1)

    def get(self, name: str) -> ModelPreset:
        """A preset by name; an unknown name is a usage error listing the known ones."""
        if name not in self.models:
            raise UsageError(f"unknown model preset {name!r}; choose from {', '.join(self.models)}")
        return self.models[name]


def load_model_presets(path: Path = MODELS_FILE) -> ModelPresets:
    """The presets of `path` (default: the shipped peras/models.toml), checked."""
    return _load(path.resolve())


@cache
def _load(path: Path) -> ModelPresets:
    raw = read_toml(path, "model presets")
    models = raw.get("models")
    if isinstance(models, dict):
        raw["models"] = {
            name: {"name": name, **entry} if isinstance(entry, dict) else entry for name, entry in models.items()
        }
    try:
        return ModelPresets.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        message = str(first["msg"]).removeprefix("Value error, ")
        raise UsageError(f"model presets {path}: {where}: {message}") from exc
