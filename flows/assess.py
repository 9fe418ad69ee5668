"""Assess flows: a plan of the pairs to send to people (picked, stored, extended), their labels imported, and
hybrid qrels (human where assessed, LLM elsewhere). The assessor page is `peras assess serve`. See docs/assess.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from peras.settings import Settings, load_settings
from tasks.assess.hybrid import HybridQrels, hybrid_qrels, write_hybrid
from tasks.assess.plan import DEFAULT_STRATEGY
from tasks.assess.tasks import import_labels, load_plan, load_stored_plan, pick_pairs, store_plan
from tasks.evaluate.tasks import describe_qrels, load_run_labels, one_qrels
from tasks.publish.tasks import publish_analyst_snapshot


@flow(name="assess-plan", flow_run_name="assess-plan-{name}", log_prints=True)
def assess_plan(
    collection: str,
    run: str,
    budget: str,
    strategy: str = DEFAULT_STRATEGY,
    name: str | None = None,
    seed: int = 42,
    run_files: list[str] | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Pick the pairs of a judge run's pool to send to people, up to the budget, and store them as plan `name`
    (a plan that exists grows to the budget: the pairs it holds stay, none is picked twice)."""
    settings = settings or load_settings()
    plan = load_plan(settings, name or f"{run}-{strategy}", collection, run, strategy, seed, run_files)
    added = pick_pairs(plan, budget)
    summary = store_plan(settings, plan, added)
    publish_analyst_snapshot(settings)
    return summary


@flow(name="assess-import", flow_run_name="assess-import-{plan}", log_prints=True)
def assess_import(
    plan: str, path: str, assessor: str | None = None, settings: Settings | None = None
) -> dict[str, Any]:
    """Store a file of human labels for the plan's pairs (all of them, or none when a line is wrong)."""
    settings = settings or load_settings()
    stored = load_stored_plan(settings, plan)
    summary = import_labels(settings, stored, Path(path), assessor)
    publish_analyst_snapshot(settings)
    return summary


@flow(name="hybrid-qrels", flow_run_name="hybrid-qrels-{plan}", log_prints=True)
def plan_hybrid_qrels(
    plan: str,
    personality: str | None = None,
    aggregate: str | None = None,
    cot: bool | None = None,
    confidence_method: str | None = None,
    settings: Settings | None = None,
) -> HybridQrels:
    """The plan's human labels where given, its judge run's LLM labels elsewhere (what `export-qrels --hybrid`
    writes and `evaluate --qrels hybrid:PLAN` scores), with the run's labels they came from."""
    settings = settings or load_settings()
    stored = load_stored_plan(settings, plan)
    labels = load_run_labels(settings, stored.row["judge_run_name"], cot, confidence_method)
    llm = one_qrels(labels, personality, aggregate)
    return HybridQrels(plan, stored.row["collection_id"], labels, hybrid_qrels(llm, stored.labels))


@flow(name="export-hybrid-qrels", flow_run_name="export-hybrid-{plan}", log_prints=True)
def export_hybrid_qrels(
    plan: str,
    output: str,
    personality: str | None = None,
    aggregate: str | None = None,
    cot: bool | None = None,
    confidence_method: str | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """The plan's human labels where given, its judge run's LLM labels elsewhere, as TREC qrels with provenance."""
    settings = settings or load_settings()
    hybrid = plan_hybrid_qrels(plan, personality, aggregate, cot, confidence_method, settings)
    header = describe_qrels(settings, hybrid.labels, personality, aggregate, False, hybrid=plan)
    return write_hybrid(settings, hybrid.qrels, Path(output), header)
