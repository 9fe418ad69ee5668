"""Personality sets: build one (register a version, plan each round, record its check), resolve one by name, export.

A set is named and versioned: each `peras personas build NAME` is a new version, unless the latest version of
NAME is unfinished and was started the same way (then it resumes). Its personas carry the codes
`<NAME>-v<version>-<condition>`, so versions can be judged side by side and exported beside the built-in eleven.
`builtin` is the study's Table 1 (peras/personalities/).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.bfi2 import DOMAINS, Bfi2Item, load_items
from peras.errors import CheckFailed, UsageError
from peras.outputs import write_files
from peras.prompting import Personality, load_personalities, load_prompt
from peras.settings import Settings
from peras.sql import query_frame, run_sql
from peras.warehouse import connect, now, open_migrated
from tasks.engine.endpoint import Endpoint
from tasks.engine.runs import RunClaim, claim_run, stored_run
from tasks.engine.spec import RunIdentity
from tasks.engine.stage import declaration
from tasks.engine.stages import HeldPlan
from tasks.personas.build import BuildAsk, BuildConfig, BuildStage
from tasks.personas.prompt import prompt_file
from tasks.shared.personalities import BUILTIN, CONDITIONS, SET_NAME, resolve_set


def choose_conditions(conditions: list[str] | None) -> tuple[str, ...]:
    """The conditions to build, in the study's order (all ten for None)."""
    unknown = sorted(set(conditions or ()) - set(CONDITIONS))
    if unknown:
        raise UsageError(f"unknown condition {', '.join(unknown)}; the conditions are {', '.join(CONDITIONS)}")
    return tuple(c for c in CONDITIONS if conditions is None or c in conditions)


def build_config(
    endpoint: Endpoint,
    conditions: tuple[str, ...],
    seed: int,
    max_rounds: int,
    check_samples: int,
    check_temperature: float,
    items_per_domain: int,
) -> BuildConfig:
    """How the set is built (both steps sampled, seed + round) and how each round is checked."""
    if max_rounds < 1:
        raise UsageError("--max-rounds must be at least 1")
    return BuildConfig(
        endpoint.model,
        endpoint.backend,
        conditions,
        seed,
        max_rounds,
        check_samples,
        check_temperature,
        items_per_domain,
    )


def build_parameters(config: BuildConfig) -> dict[str, Any]:
    """What fixes a build besides its name and model: conditions, seeds, rounds, check, both prompts."""
    fixed = {k: v for k, v in asdict(config).items() if k not in ("model", "backend")}
    prompts = {step: load_prompt(prompt_file(step)) for step in ("persona_keywords", "persona_instruction")}
    return fixed | {
        "conditions": list(config.conditions),
        "step_sampling": {step: prompt.sampling for step, prompt in prompts.items()},
        "prompts_sha256": {s: hashlib.sha256(p.template.encode("utf-8")).hexdigest() for s, p in prompts.items()},
    }


@task(cache_policy=NO_CACHE)
def register_build(settings: Settings, warehouse_id: str, set_name: str, config: BuildConfig) -> RunIdentity:
    """A new version of the set, or the latest one resumed when it is unfinished and was started the same way (the
    engine's one claim rule finds nothing that differs, tasks/engine/runs.py); claimed with its lease."""
    if not SET_NAME.fullmatch(set_name) or set_name == BUILTIN:
        raise UsageError(
            f"set name {set_name!r}: up to 20 letters, digits, '-' or '_' (not {BUILTIN!r}, the study's set)"
        )
    params = build_parameters(config)
    with open_migrated(settings.warehouse) as con:
        versions = run_sql(con, "persona_sets/select_versions", {"set_name": set_name}).fetchall()
        version = versions[0][0] + 1 if versions else 1
        if versions and versions[0][1] != "published":
            unfinished = build_claim(set_name, versions[0][0], config, params)
            if not stored_run(con, unfinished, config.model)[1]:
                version = versions[0][0]
    claim = build_claim(set_name, version, config, params)
    return claim_run(settings, warehouse_id, claim, config.model, config.backend)


def build_claim(set_name: str, version: int, config: BuildConfig, params: dict[str, Any]) -> RunClaim:
    """A set version as a run: named NAME@V, fixed by its model and build settings."""
    values = {"set_name": set_name, "version": version}
    return RunClaim(declaration("persona_sets"), f"{set_name}@{version}", values, params)


@task(cache_policy=NO_CACHE)
def plan_round(settings: Settings, build: RunIdentity, config: BuildConfig, round_no: int) -> HeldPlan[BuildAsk] | None:
    """The conditions to build in this round (those without a faithful candidate); None when there are none."""
    params = {"set_id": build.run_id, "conditions": list(config.conditions)}
    with connect(settings.warehouse, read_only=True) as con:
        pending = {row[0] for row in run_sql(con, "persona_sets/select_unfaithful", params).fetchall()}
    asks = [BuildAsk(condition, round_no) for condition in config.conditions if condition in pending]
    return HeldPlan("persona_sets", build.run_id, asks) if asks else None


def build_stage(config: BuildConfig, build: RunIdentity) -> BuildStage:
    """The build half of the engine contract: conditions to both steps' requests, answers to build rows."""
    names = {p.code: p.name for p in load_personalities(None)}
    return BuildStage(config, names, member_prefix(build.run_name))


def member_prefix(set_label: str) -> str:
    """`name@3` -> `name-v3-`: the code prefix of a set version's personas."""
    name, version = set_label.split("@")
    return f"{name}-v{version}-"


def check_run_name(build: RunIdentity, round_no: int) -> str:
    """The personas check run of a build round."""
    return f"build-{build.run_name.replace('@', '-v')}-round{round_no}"


@task(cache_policy=NO_CACHE)
def record_round(settings: Settings, build: RunIdentity, round_no: int) -> None:
    """Each checked candidate gets its comparison's verdict (persona_fidelity) from the round's check run."""
    params = {"set_id": build.run_id, "check_run_name": check_run_name(build, round_no)}
    with open_migrated(settings.warehouse) as con:
        run_sql(con, "persona_sets/record_fidelity", params)


@task(cache_policy=NO_CACHE)
def has_candidates(settings: Settings, build: RunIdentity) -> bool:
    """Whether any condition of the build has a readable instruction yet (else there is no set to check)."""
    with connect(settings.warehouse, read_only=True) as con:
        return int(run_sql(con, "persona_sets/count_candidates", {"set_id": build.run_id}).fetchone()[0]) > 0


@task(cache_policy=NO_CACHE)
def finish_build(settings: Settings, build: RunIdentity, config: BuildConfig) -> dict[str, Any]:
    """Publish the set when every condition has an instruction (faithful or not); its summary per condition."""
    with open_migrated(settings.warehouse) as con:
        rows = query_frame(con, "persona_sets/select_summary", {"set_id": build.run_id}).to_dicts()
        missing = sorted(set(config.conditions) - {row["condition"] for row in rows})
        params = {"set_id": build.run_id, "conditions": missing}
        failures = run_sql(con, "persona_sets/select_build_failures", params).fetchall() if missing else []
        why = "; ".join(f"{c} round {r}: {status} ({reason})" for c, r, status, reason in failures)
        if not missing:
            status = {"run_id": build.run_id, "status": "published", "status_reason": None, "finished_at": now()}
            run_sql(con, "persona_sets/set_run_status", status)
    if missing:
        raise CheckFailed(
            f"set {build.run_name} not published: no readable instruction for {', '.join(missing)} in "
            f"{config.max_rounds} round(s) ({why}); run the same build again with --retry-failed to ask those "
            "again, or raise --max-rounds or use another model"
        )
    order = {code: index for index, code in enumerate(CONDITIONS)}
    conditions = sorted(rows, key=lambda row: order[row["condition"]])
    return {"personality_set": build.run_name, "model": build.model, "conditions": conditions}


@task(cache_policy=NO_CACHE)
def choose_set(settings: Settings, personality_set: str) -> list[Personality]:
    """The personalities of a set, default first (resolve_set)."""
    return resolve_set(settings, personality_set)


@task(cache_policy=NO_CACHE)
def choose_items(items_per_domain: int) -> list[Bfi2Item]:
    """The BFI-2 items to ask: all 60, or the first N of each domain (a quick look: N=2 gives 10 items)."""
    if not 1 <= items_per_domain <= 12:
        raise UsageError("--items-per-domain must be between 1 and 12 (a domain has 12 items)")
    items = load_items()
    return [item for domain in DOMAINS.values() for item in [i for i in items if i.domain == domain][:items_per_domain]]


def export_set(settings: Settings, personality_set: str, output: Path) -> list[Path]:
    """Write a set's personas as personality files (PERAS_PERSONALITIES_DIR reads them); check they load."""
    chosen = [p for p in resolve_set(settings, personality_set) if p.instruction]
    files: dict[Path, str | bytes] = {}
    for persona in chosen:
        fields = {"code": persona.code, "name": persona.name, "trait": persona.trait, "pole": persona.pole}
        lines = [f"# {persona.name}: built by `peras personas build`, exported from the warehouse."]
        # JSON strings are valid TOML basic strings (the same escapes).
        lines += [f"{key} = {json.dumps(value, ensure_ascii=False)}" for key, value in fields.items()]
        lines.append(f"instruction = {json.dumps(persona.instruction, ensure_ascii=False)}")
        files[output / f"{persona.code}.toml"] = "\n".join(lines) + "\n"
    paths = write_files(files, settings.warehouse, "--output", output)
    output.mkdir(parents=True, exist_ok=True)  # a set without instructions: an empty directory
    load_personalities(output)  # what was written reads back, or this fails here rather than in judging
    return paths
