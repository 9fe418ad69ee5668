"""A trust study stored (sql/evaluate/insert_trust_study.sql, one transaction) and read back as its summary: the
summary of a study just computed and of one stored earlier are the same rows read from the warehouse."""

from __future__ import annotations

import json
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.settings import Settings
from peras.sql import query_frame, run_sql
from peras.warehouse import now, open_migrated, transaction
from tasks.evaluate.tasks import RunLabels, system_sources
from tasks.evaluate.trust import TrustSpec

PARTS = ("scores", "agreement", "flips", "intervals")


@task(cache_policy=NO_CACHE)
def store_study(settings: Settings, study_id: str, inputs: dict[str, Any], parts: dict[str, pl.DataFrame]) -> str:
    """Publish the study and its parts (scores, agreement, flips, intervals) together, or nothing."""
    with open_migrated(settings.warehouse) as con, transaction(con):
        for name in PARTS:
            con.register(f"trust_new_{name}", parts[name].to_arrow())
        run_sql(con, "evaluate/insert_trust_study", {"study_id": study_id, **inputs, "created_at": now()})
        for name in PARTS:
            con.unregister(f"trust_new_{name}")
    return study_id


def study_inputs(
    collection_id: str, labels: RunLabels, chosen: str, spec: TrustSpec, runs: pl.DataFrame, counts: dict[str, int],
    duplicates: list[list[str]],
) -> dict[str, Any]:  # fmt: skip
    """The study's row: what it ranked, with what, and the sizes (n_sample, n_pool, n_topics)."""
    return {
        "collection_id": collection_id,
        "judge_run_id": labels.run_id,
        "labels": chosen,
        "cot": labels.cot,
        "confidence_method": labels.confidence_method,
        "measure": spec.measure,
        "human_sample": spec.human_sample,
        "replicates": spec.replicates,
        "level": spec.level,
        "seed": spec.seed,
        "dedupe": spec.dedupe,
        "duplicates": json.dumps(duplicates),
        "systems": json.dumps(system_sources(runs)),
        **counts,
    }


@task(cache_policy=NO_CACHE)
def load_study(settings: Settings, study_id: str, reused: bool = False) -> dict[str, Any] | None:
    """The stored study's summary (None: not stored): its inputs, agreement, flips and systems with intervals."""
    with open_migrated(settings.warehouse) as con:
        found = query_frame(con, "evaluate/select_trust_study", {"study_id": study_id})
        if found.is_empty():
            return None
        params = {"study_id": study_id}
        agreement = query_frame(con, "evaluate/select_trust_agreement", params)
        flips = query_frame(con, "evaluate/select_trust_flips", params)
        systems = query_frame(con, "evaluate/select_trust_systems", params)
    record = found.drop("created_at").row(0, named=True)
    record["duplicates"] = json.loads(record["duplicates"])
    return {
        **record,
        "reused": reused,
        "n_systems": systems["system"].n_unique(),
        "agreement": agreement.to_dicts(),
        "flips": flips.to_dicts(),
        "systems_table": systems.to_dicts(),
    }
