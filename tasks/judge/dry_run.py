"""A judge run as it would ask, without sending: the run of that name (or a new one), its plan of what is left and its
stage. The study's estimate counts its requests (tasks/study/estimate.py); flows/study.py hands `judge_dry_run` to
it, as a stage imports no other stage."""

from __future__ import annotations

import uuid
from typing import Any

from peras.prompting import select_personalities
from peras.settings import Settings
from peras.warehouse import connect
from tasks.engine.endpoint import Endpoint
from tasks.engine.runs import refusal, stored_run
from tasks.engine.spec import RunIdentity
from tasks.judge.asking import JudgeConfig
from tasks.judge.runs import judge_claim, judge_config
from tasks.judge.tasks import judge_stage, load_pairs, plan_judgments
from tasks.shared.dry_run import DryRun


def judge_dry_run(
    *,
    settings: Settings,
    endpoint: Endpoint,
    run_name: str,
    collection: str,
    subset: str | None,
    personalities: list[str],
    cot: list[bool],
    limit_pairs: int | None,
    methods: list[str],
) -> DryRun:
    """What the judge flow would plan and ask with these parameters (a new run: nothing done, under an id no row
    has)."""
    config = judge_config(endpoint, n_samples=10)
    chosen = select_personalities(personalities, settings.personalities_dir)
    pairs = load_pairs(settings, collection, subset, limit_pairs)
    with connect(settings.warehouse, read_only=True) as con:
        run_id = existing_run_id(con, run_name, collection, config, methods)
    identity = RunIdentity("", "judge", run_id or uuid.uuid4().hex, run_name, config.model, "")
    plan = plan_judgments(identity, pairs, chosen, cot, methods)
    return DryRun(run_id, config.model, plan, judge_stage(config, chosen, pairs))


def existing_run_id(con: Any, run_name: str, collection: str, config: JudgeConfig, methods: list[str]) -> str | None:
    """The id of the run of that name, checked to ask the same way (the judge flow would refuse it later)."""
    claim = judge_claim(run_name, collection, None, config, methods)
    run_id, differences = stored_run(con, claim, config.model)
    if differences:
        raise refusal(claim, differences)
    return run_id
