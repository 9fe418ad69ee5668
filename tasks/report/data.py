"""The report's reads: every view the report shows, for the runs and collection asked for, from one snapshot."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import UsageError
from peras.settings import Settings
from peras.sql import query_frame, run_sql
from peras.warehouse import open_current
from tasks.report.evaluate import HolesCurve, SystemsRanked, read_holes, read_systems_ranked
from tasks.report.fuse import FuseComparison, read_fuse_comparisons
from tasks.report.personas import PersonaCheck, read_persona_checks
from tasks.report.recognize import Recognition, read_recognitions
from tasks.report.tables import Setting, settings_of
from tasks.report.trust import TrustStudy, read_trust

PRIMING_VIEWS = ["priming_index", "priming_personality"]  # sql/priming/views/priming_*.sql
PRIMING_MAX_ROWS = 100
PAIRWISE_VIEWS = [
    "pairwise_accuracy",
    "pairwise_calibration",
    "pairwise_certainty_histogram",
    "pairwise_vs_pointwise_summary",
]
READS = [
    "failures",
    "imports",
    "table_metrics",
    "personality_kappa",
    "judge_kappa",
    "confidence_by_relevance",
    "confidence_of_predicted_zero",
    "calibration_bins",
    "classifier",
    "method_comparison",
    "probe_measures",
]


@dataclass(frozen=True)
class ReportData:
    """Everything the report shows, read from one snapshot of the warehouse."""

    runs: pl.DataFrame
    failures: pl.DataFrame
    imports: pl.DataFrame  # imported runs: their file and out-of-range policy (sql/report/select_imports.sql)
    table_metrics: pl.DataFrame
    personality_kappa: pl.DataFrame
    judge_kappa: pl.DataFrame
    confidence_by_relevance: pl.DataFrame
    confidence_of_predicted_zero: pl.DataFrame
    calibration_bins: pl.DataFrame
    classifier: pl.DataFrame
    method_comparison: pl.DataFrame  # settings judged with 2+ confidence methods (select_method_comparison.sql)
    probe_measures: pl.DataFrame  # the report's probe runs' measures (select_probe_measures.sql)
    priming_views: dict[str, tuple[pl.DataFrame, int]] = field(default_factory=dict)
    pairwise_views: dict[str, tuple[pl.DataFrame, int]] = field(default_factory=dict)  # sql/pairwise/views
    persona_checks: list[PersonaCheck] = field(default_factory=list)  # published personas check runs
    recognitions: list[Recognition] = field(default_factory=list)  # published recognize runs
    fuse_comparisons: list[FuseComparison] = field(default_factory=list)  # published fuse runs (sql/fuse/views)
    fuse_disagreement: pl.DataFrame = field(default_factory=pl.DataFrame)  # fuse_disagreement's rows
    systems_ranked: list[SystemsRanked] = field(default_factory=list)  # evaluations with LLM qrels (issue 21)
    holes: list[HolesCurve] = field(default_factory=list)  # holes experiments (issue 21)
    trust: list[TrustStudy] = field(default_factory=list)  # trust studies (issue 50)

    @property
    def settings(self) -> list[Setting]:
        return settings_of(self.table_metrics)


@task(cache_policy=NO_CACHE)
def read_report_data(settings: Settings, runs: list[str] | None, collection: str | None) -> ReportData:
    """The report's reads (sql/report/*.sql) for the runs and collection asked for, from one snapshot of the cells.

    No retries: the connection already waits for another process's write lock, and a usage error stays one.
    """
    filters = {"run_names": runs or None, "collection_id": collection, "cot": None}
    with open_current(settings.warehouse) as con:  # read-only: refresh_views has migrated it
        run_sql(con, "metrics/snapshot_cells", filters)
        found = query_frame(con, "report/select_runs")
        missing = sorted(set(runs or []) - set(found["run_name"].to_list()))
        if missing or found.height == 0:
            raise UsageError(_nothing_matches(con, missing, collection))
        run_sql(con, "metrics/snapshot_long")
        run_sql(con, "metrics/snapshot_costs", filters)
        frames = {name: query_frame(con, f"report/select_{name}") for name in READS}
        views = query_frame(con, "report/select_priming_views", {"view_names": PRIMING_VIEWS})["view_name"].to_list()
        priming = {name: _view_rows(con, name, collection) for name in views}
        pairwise = {name: _view_rows(con, name, collection) for name in PAIRWISE_VIEWS}
        checks = read_persona_checks(con)
        recognitions = read_recognitions(con)
        fuse_comparisons = read_fuse_comparisons(con, collection)
        fuse_disagreement = _view_rows(con, "fuse_disagreement", collection)[0]
        systems_ranked, holes = read_systems_ranked(con, collection), read_holes(con, collection)
        trust = read_trust(con, collection)
    priming_views = {name: rows for name, rows in priming.items() if rows[1]}
    pairwise_views = {name: rows for name, rows in pairwise.items() if rows[1]}
    return ReportData(
        runs=found,
        **frames,
        priming_views=priming_views,
        pairwise_views=pairwise_views,
        persona_checks=checks,
        recognitions=recognitions,
        fuse_comparisons=fuse_comparisons,
        fuse_disagreement=fuse_disagreement,
        systems_ranked=systems_ranked,
        holes=holes,
        trust=trust,
    )


def _view_rows(con: Any, name: str, collection: str | None) -> tuple[pl.DataFrame, int]:
    """A view's first PRIMING_MAX_ROWS rows, and how many it gave (one more is asked for, to tell there are more)."""
    params = {"view_name": name, "collection_id": collection, "max_rows": PRIMING_MAX_ROWS + 1}
    frame = query_frame(con, "report/select_view_rows", params)
    return frame.head(PRIMING_MAX_ROWS), frame.height


def _nothing_matches(con: Any, missing: list[str], collection: str | None) -> str:
    known = run_sql(con, "metrics/select_run_names").fetchall()
    if not known:
        return "no judgments in the warehouse yet: run `peras judge` or `peras import-judgments` first"
    names = ", ".join(sorted({name for name, _ in known}))
    where = f" on collection {collection!r}" if collection else ""
    what = f"no judgments for run {', '.join(map(repr, missing))}" if missing else "no judgments"
    return f"{what}{where}: runs with judgments are {names}"
