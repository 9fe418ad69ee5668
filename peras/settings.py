"""One settings object, resolved once: defaults < config file < PERAS_* environment < CLI flags."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import (
    Field,
    FieldSerializationInfo,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict
from pydantic_settings.exceptions import SettingsError

from peras.errors import UsageError
from peras.lake import is_lake, redacted, remember_data_path
from peras.paths import PROJECT_ROOT

CONFIG_ENV = "PERAS_CONFIG"
DEFAULT_CONFIG = Path("peras.toml")


class Settings(BaseSettings):
    """Everything a stage needs to know about where things are and which LLM to ask."""

    model_config = SettingsConfigDict(env_prefix="PERAS_", extra="forbid", validate_assignment=True)

    warehouse: Path = Field(
        Path("warehouse/peras.duckdb"),
        description="DuckDB warehouse file, or a DuckLake catalog: ducklake:postgres:dbname=... host=... user=...",
    )
    lake_data_path: Path | None = Field(
        None, description="where a new DuckLake warehouse keeps its Parquet files (a directory every host reaches)"
    )
    data_dir: Path = Field(PROJECT_ROOT.parent / "shared" / "data", description="real collections (presets)")
    shards_dir: Path | None = Field(None, description="append-only judge shards; default: next to the warehouse")
    reports_dir: Path = Field(Path("reports"), description="where `peras report` writes")
    # Analysts read a copy, so that their open connections never block a stage (peras/warehouse.py).
    analyst_snapshot: bool = Field(
        True, description="after each stage, publish <warehouse stem>.analyst.duckdb, a copy for analysts"
    )
    analyst_snapshot_interval_s: float = Field(
        60.0, ge=0, description="least time between two mid-run snapshot refreshes (end-of-stage ones always run)"
    )
    load_interval_s: float = Field(
        5.0,
        ge=0,
        description="least time between two loads of a run's journal into the warehouse while it asks (shards that"
        " fill meanwhile are loaded together; the last load, as the asking ends, always runs)",
    )
    event_loop: Literal["auto", "uvloop", "asyncio"] = Field(
        "auto", description="the asking's event loop: uvloop where installed ('auto'), or asyncio's own"
    )
    progress_interval_s: float = Field(
        10.0, ge=0, description="seconds between two progress lines of a command whose output is not a terminal"
    )
    personalities_dir: Path | None = Field(None, description="extra user personality files (*.toml)")
    stage_modules: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="your own stages' modules, comma-separated: `peras ask KIND` runs them"
    )

    # LLM endpoint. base_urls: several URLs serving one model are load-balanced.
    base_urls: Annotated[list[str], NoDecode] = Field(
        default_factory=list, description="OpenAI-compatible base URLs; empty: embedded"
    )
    model: str | None = Field(None, description="model name sent to the endpoint")
    api_key_env: str = Field("OPENAI_API_KEY", description="name of the environment variable holding the API key")
    concurrency: int = Field(8, ge=1, description="requests in flight per endpoint")
    request_timeout_s: float = Field(120.0, gt=0)
    max_retries: int = Field(6, ge=0, description="retries on timeouts, 5xx and 429")
    request_budget: int | None = Field(None, ge=0, description="most HTTP requests one run may send, resumes included")
    request_deadline_s: float = Field(
        900.0, gt=0, description="most time one request may take, retries and Retry-After waits included"
    )
    endpoint_slots_dir: Path | None = Field(
        None, description="per-URL request slots shared by every run on this machine; default: <local cache>/slots"
    )
    mode: Literal["online", "batch"] = Field(
        "online",
        description="how LLM stages ask: online (one HTTP request each) or batch (the OpenAI Batch API at the base"
        " URL, or files for vLLM's run-batch without one: docs/batch.md)",
    )
    batch_poll_s: float = Field(60.0, gt=0, description="with --mode batch --wait: seconds between two looks")
    batch_wait: bool = Field(
        False, description="with --mode batch: poll until every round is answered, then gate (--wait)"
    )
    answer_format: str = Field(
        "auto",
        pattern=r"^(auto|free|constrained)$",
        description="auto: constrain answers where the endpoint enforces it (probed once per run), else free text;"
        " free: never; constrained: refuse an endpoint that enforces none (docs/constrained.md)",
    )
    max_parse_failure_share: float = Field(0.05, ge=0, le=1, description="judge gate threshold per personality")

    # Embedded local model (llama.cpp server started by peras).
    local_cache_dir: Path = Field(Path(os.path.expanduser("~/.cache/peras")), description="built server, weights")
    # One slot: on 2 cores two slots share the same arithmetic and evaluate prompts ~1.1-1.5x slower overall.
    local_parallel: int = Field(1, ge=1, description="llama-server parallel slots")
    local_ctx: int = Field(8192, ge=512, description="llama-server context size (shared by slots)")
    # llama-server's threads: 0 chooses at start from the cores other work leaves free (docs/local-model.md, "On a
    # busy machine"); 1 or 2 forces it.
    local_threads: int = Field(0, ge=0, le=64, description="llama-server threads (0: 2 on free cores, 1 when busy)")

    @field_validator("base_urls", "stage_modules", mode="before")
    @classmethod
    def _split_lists(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [part.strip() for part in value.split(",") if part.strip()]
        return value

    @model_validator(mode="after")
    def _remember_lake_data_path(self) -> Settings:
        # connect() gets the warehouse setting only; a new lake is created where these settings say.
        if self.lake_data_path is not None and is_lake(self.warehouse):
            remember_data_path(self.warehouse, self.lake_data_path)
        return self

    @field_serializer("warehouse")
    def _hide_password(self, warehouse: Path, info: FieldSerializationInfo) -> str | Path:
        # A DuckLake catalog's connection string may carry password=...: hidden wherever settings are shown.
        # (Passwords belong in PGPASSWORD or ~/.pgpass, which libpq reads on every host.)
        return redacted(warehouse) if info.mode_is_json() else warehouse

    @field_serializer("base_urls")
    def _hide_credentials(self, urls: list[str], info: FieldSerializationInfo) -> list[str]:
        # Settings travel as a flow parameter: Prefect stores its JSON form (UI, API, logs). A key in a URL's
        # user:password@ part stays in this process; in-process dumps (mode="python") keep the real URL.
        return [without_userinfo(url) for url in urls] if info.mode_is_json() else urls

    @property
    def shards(self) -> Path:
        """Directory of append-only judge shards."""
        return self.shards_dir or self.local_dir / "shards"

    @property
    def local_dir(self) -> Path:
        """This host's working directory beside the warehouse: the file's directory, or ./warehouse for a lake."""
        return Path("warehouse") if is_lake(self.warehouse) else self.warehouse.parent

    @property
    def slots_dir(self) -> Path:
        """Directory of the per-URL slot files (peras/llm/limits.py)."""
        return self.endpoint_slots_dir or self.local_cache_dir / "slots"

    def api_key(self) -> str | None:
        """The API key, read from the environment at the moment of use, never stored."""
        return os.environ.get(self.api_key_env)


def without_userinfo(url: str) -> str:
    """A URL without its `user:password@` part."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def load_settings(config: Path | None = None, **overrides: Any) -> Settings:
    """Resolve settings from the config file, PERAS_* variables and CLI overrides (None = not given)."""
    path = config or (Path(os.environ[CONFIG_ENV]) if os.environ.get(CONFIG_ENV) else None)
    file_values: dict[str, Any] = {}
    if path is None and DEFAULT_CONFIG.is_file():
        path = DEFAULT_CONFIG
    if path is not None:
        if not path.is_file():
            raise UsageError(f"config file {path} does not exist")
        try:
            file_values = tomllib.loads(path.read_text(encoding="utf-8")).get("peras", {})
        except tomllib.TOMLDecodeError as exc:
            raise UsageError(f"config file {path} is not valid TOML: {exc}") from exc
    given = {key: value for key, value in overrides.items() if value is not None}
    try:
        env_values = Settings().model_dump(exclude_unset=True) if _env_set() else {}
        return Settings(**{**file_values, **env_values, **given})
    except (ValidationError, SettingsError) as exc:
        if isinstance(exc, SettingsError):
            raise UsageError(f"bad PERAS_* setting: {exc}") from exc
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"])
        raise UsageError(f"bad setting {field}: {first['msg']}") from exc


def _env_set() -> bool:
    return any(key.startswith("PERAS_") and key != CONFIG_ENV for key in os.environ)
