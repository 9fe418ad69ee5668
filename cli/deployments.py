"""The Prefect deployments of deploy/prefect.yaml: read them, check them, register them on a server."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from peras.errors import PerasError, UsageError
from peras.paths import PROJECT_ROOT

PREFECT_FILE = PROJECT_ROOT / "deploy" / "prefect.yaml"
START_SERVER = "start one with `peras server start` and set PREFECT_API_URL=http://127.0.0.1:4200/api"
LLM_STAGES = ("judge", "priming", "demo")  # the stages that ask a model: their runs carry a model: tag


@dataclass(frozen=True)
class DeploymentSpec:
    """One entry of the deployments list, as Prefect will name and schedule it."""

    flow_name: str
    name: str
    entrypoint: str
    pool: str
    parameters: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    crons: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)  # `flow/deployment` whose completed runs start this one

    @property
    def full_name(self) -> str:
        """`flow/deployment`, what `prefect deployment run` takes."""
        return f"{self.flow_name}/{self.name}"

    @property
    def path(self) -> Path:
        """The flow's file (entrypoints are relative to the repository root)."""
        return PROJECT_ROOT / self.entrypoint.split(":", 1)[0]

    @property
    def when(self) -> str:
        """When it runs, as `peras deploy` prints it."""
        if self.crons:
            return f"cron {'; '.join(self.crons)}"
        if self.after:
            return f"after {' or '.join(self.after)} completes"
        return "on demand"


def load_specs(prefect_file: Path | None = None) -> list[DeploymentSpec]:
    """Every deployment in the file (deploy/prefect.yaml), checked against Prefect's schema of prefect.yaml."""
    from prefect.cli.deploy._models import PrefectYamlModel
    from pydantic import ValidationError

    prefect_file = prefect_file or PREFECT_FILE
    try:
        raw = yaml.safe_load(prefect_file.read_text(encoding="utf-8"))
        model = PrefectYamlModel.model_validate(raw)
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        # prefect deploy would skip a bad file with a warning and deploy nothing
        first = str(exc).strip().splitlines()[0]
        raise UsageError(f"cannot read {prefect_file}: {first}") from exc
    specs = []
    for entry in model.deployments:
        if not (entry.name and entry.entrypoint and entry.work_pool and entry.work_pool.name):
            raise UsageError(f"{prefect_file}: every deployment needs name, entrypoint and work_pool.name")
        tags = [str(tag) for tag in entry.tags or []]
        specs.append(
            DeploymentSpec(
                flow_name=flow_name(entry.entrypoint),
                name=entry.name,
                entrypoint=entry.entrypoint,
                pool=entry.work_pool.name,
                parameters=dict(entry.parameters),
                tags=tags + model_tags(tags, entry.work_pool.job_variables.get("env") or {}),
                crons=[
                    f"{s.cron} {getattr(s, 'timezone', None) or 'UTC'}"  # type: ignore[union-attr]
                    for s in entry.schedules or []
                    if getattr(s, "cron", None)
                ],
                after=[upstream for trigger in entry.triggers or [] if (upstream := trigger_upstream(trigger))],
            )
        )
    return specs


def model_tags(tags: list[str], env: dict[str, Any]) -> list[str]:
    """The `model:` tag of an LLM stage's deployment, from the model it is configured with (its env), else none.

    The same rule as a `peras` command's runs: PERAS_BASE_URLS with PERAS_MODEL, or the embedded model.
    """
    from cli.common import model_and_backend

    if not any(tag in tags for tag in (f"stage:{stage}" for stage in LLM_STAGES)):
        return []
    base_urls = [url for url in str(env.get("PERAS_BASE_URLS", "")).split(",") if url.strip()]
    model = model_and_backend(base_urls, env.get("PERAS_MODEL"), None)["model"]
    return [f"model:{model}"] if model else []


def trigger_upstream(trigger: dict[str, Any]) -> str | None:
    """`flow/deployment` a trigger waits for (its match_related flow and deployment names), if it names both."""
    related = trigger.get("match_related") or []
    related = related if isinstance(related, list) else [related]
    names = {
        spec.get("prefect.resource.role"): spec.get("prefect.resource.name")
        for spec in related
        if isinstance(spec, dict)
    }
    if names.get("flow") and names.get("deployment"):
        return f"{names['flow']}/{names['deployment']}"
    return None


def flow_name(entrypoint: str) -> str:
    """The name in the entrypoint's @flow(name=...), read without importing the file."""
    from prefect.flows import load_flow_arguments_from_entrypoint

    file, function = entrypoint.split(":", 1)
    if not (PROJECT_ROOT / file).is_file():
        return function.replace("_", "-")  # Prefect's own default; the missing file is reported later
    return load_flow_arguments_from_entrypoint(f"{PROJECT_ROOT / file}:{function}", {"name"})["name"]


def select(specs: list[DeploymentSpec], names: list[str]) -> list[DeploymentSpec]:
    """The deployments named `flow/deployment` or just `deployment` (all when no name is given)."""
    if not names:
        return specs
    chosen: list[DeploymentSpec] = []
    for name in names:
        found = [s for s in specs if name in (s.full_name, s.name)]
        if not found:
            known = ", ".join(s.full_name for s in specs)
            raise UsageError(f"no deployment {name!r} in {PREFECT_FILE.name}; choose from {known}")
        chosen += [s for s in found if s not in chosen]
    return chosen


def check_entrypoints(specs: list[DeploymentSpec]) -> None:
    """Every chosen flow file exists: checked before anything is registered."""
    missing = sorted({s.entrypoint.split(":", 1)[0] for s in specs if not s.path.is_file()})
    if missing:
        raise UsageError(f"flow file(s) missing: {', '.join(missing)} (named in deploy/prefect.yaml)")


def api_url() -> str:
    """The Prefect server's API URL, after checking that it answers."""
    import httpx
    from prefect.settings import get_current_settings

    url = get_current_settings().api.url
    if not url:
        raise PerasError(f"no Prefect server configured (PREFECT_API_URL is not set): {START_SERVER}")
    try:
        healthy = httpx.get(f"{url.rstrip('/')}/health", timeout=5).status_code == 200
    except httpx.HTTPError:
        healthy = False
    if not healthy:
        raise PerasError(f"no Prefect server answers at {url}: {START_SERVER}, or fix PREFECT_API_URL")
    return url


def ensure_work_pool(name: str) -> bool:
    """Create the process work pool `name` unless it exists; True if created."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.actions import WorkPoolCreate
    from prefect.exceptions import ObjectNotFound
    from prefect.workers.process import ProcessWorker

    with get_client(sync_client=True) as client:
        try:
            pool = client.read_work_pool(name)
        except ObjectNotFound:
            # the process worker's default job template: without it the deployments' `env` would be ignored
            template = ProcessWorker.get_default_base_job_template()
            client.create_work_pool(WorkPoolCreate(name=name, type="process", base_job_template=template))
            return True
    if pool.type != "process":
        raise UsageError(f"work pool {name!r} is of type {pool.type!r}; peras deployments need a process pool")
    return False


def register(
    specs: list[DeploymentSpec], pool: str | None, all_chosen: bool, echo: Callable[[str], None] | None = None
) -> None:
    """Run `prefect deploy` from the repository root (entrypoints are relative to it); echo gets its output."""
    with tempfile.TemporaryDirectory(prefix="peras-deploy-") as tmp:
        prefect_file = deployable_copy(PREFECT_FILE, pool, Path(tmp))
        command = [sys.executable, "-m", "prefect", "--no-prompt", "deploy", "--prefect-file", str(prefect_file)]
        command += ["--all"] if all_chosen else [arg for s in specs for arg in ("--name", s.full_name)]
        # a wide console keeps each of Prefect's messages on one line
        env = {**os.environ, "COLUMNS": "1000"}
        done = subprocess.run(command, cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, check=False)
    output = done.stdout + done.stderr
    if echo is not None:
        echo(output)
    created = output.count("successfully created with id")
    if done.returncode != 0 or created != len(specs):
        raise PerasError(
            f"prefect deploy failed after {created} of {len(specs)} deployments: {last_error(output)} "
            "(`peras deploy --verbose` shows Prefect's output)"
        )


def deployable_copy(prefect_file: Path, pool: str | None, directory: Path) -> Path:
    """A copy of the file with each deployment's tags as load_specs reads them (model tag added), on `pool`.

    `prefect deploy --pool` applies to a single deployment only: with several (or --all) it is ignored.
    """
    data = yaml.safe_load(prefect_file.read_text(encoding="utf-8"))
    for entry, spec in zip(data["deployments"], load_specs(prefect_file), strict=True):
        entry["tags"] = list(spec.tags)
        if pool is not None:
            entry["work_pool"] = {**entry["work_pool"], "name": pool}
    copy = directory / "prefect.yaml"
    copy.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return copy


def last_error(output: str) -> str:
    """The line of Prefect's output that says what went wrong (its last, but for the closing remark)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    lines = [line for line in lines if line != "An exception occurred." and not line.startswith(("│", "╭", "╰"))]
    return lines[-1] if lines else "no output"
