"""Experiment 2 outputs: trial rows into the warehouse, the summary table (the study's Table 5)."""

from __future__ import annotations

import json
import platform
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from importlib.metadata import version
from typing import Any

import polars as pl
from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from peras.metric_names import CLASSIFIER_METRIC_TITLES as METRIC_TITLES
from peras.settings import Settings
from peras.sql import run_sql
from peras.warehouse import now, open_migrated, read_frame, transaction
from tasks.shared.aggregate import VOTE_NAMES
from tasks.shared.features import FeatureMatrix, FeatureSet
from tasks.shared.method_titles import TITLES

METRICS = ("kappa", "qwk", "f1")
VERSIONED = ("scikit-learn", "xgboost-cpu", "lightgbm", "numpy", "scipy", "polars", "duckdb")


@dataclass(frozen=True)
class TableRow:
    """One line of the table: mean and SD (ddof=1) per metric; the oracle also names its stream."""

    learner: str
    title: str
    mean: dict[str, float]
    sd: dict[str, float]
    source: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ResultTable:
    """What `peras classify` prints: one row per learner, the best mean per metric marked."""

    classify_run_id: str
    collection: str
    feature_mode: str
    feature_keys: list[str]
    n_features: int
    n_pairs: int
    n_excluded: int
    n_trials: int
    rows: list[TableRow]

    def best(self, metric: str) -> float:
        return max(row.mean[metric] for row in self.rows)

    def cell(self, row: TableRow, metric: str) -> str:
        text = f"{row.mean[metric]:.3f} ({row.sd[metric]:.3f})"
        return f"{text} [{row.source[metric]}]" if metric in row.source else text


def library_versions() -> dict[str, str]:
    """The versions that produced the numbers, stored with every run."""
    return {"python": platform.python_version(), **{name: version(name) for name in VERSIONED}}


@task(retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def publish_results(
    settings: Settings,
    collection: str,
    feature_set: FeatureSet,
    matrix: FeatureMatrix,
    params: dict[str, Any],
    rows: list[dict[str, Any]],
    started_at: datetime,
) -> str:
    """Write the run and its trial rows in one transaction; return the classify run id."""
    finished_at = now()
    run_id = f"clf-{finished_at:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:6]}"
    trials = pl.DataFrame(rows).with_columns(
        pl.lit(run_id).alias("classify_run_id"),
        pl.lit(feature_set.feature_set_id).alias("feature_set_id"),
        pl.lit(finished_at).alias("created_at"),
    )
    sources = feature_set.streams.to_dicts()
    record = {
        "classify_run_id": run_id,
        "collection_id": collection,
        "feature_set_id": feature_set.feature_set_id,
        "feature_mode": feature_set.mode,
        "feature_sources": json.dumps(sources),
        "feature_columns": json.dumps(matrix.columns),
        "n_pairs": len(matrix.relevance),
        "n_excluded": matrix.n_excluded,
        "n_trials": params["trials"],
        "base_seed": params["seed"],
        "train_fraction": params["train_fraction"],
        "learners": json.dumps(params["learners"]),
        "versions": json.dumps(library_versions()),
        "started_at": started_at,
        "finished_at": finished_at,
    }
    with open_migrated(settings.warehouse) as con, transaction(con):
        run_sql(con, "classify/insert_run", record)
        con.register("clf_new_trials", trials.to_arrow())
        run_sql(con, "classify/insert_trials")
    return run_id


@task(retries=2, retry_delay_seconds=1, cache_policy=NO_CACHE)
def load_summary(settings: Settings, classify_run_id: str) -> pl.DataFrame:
    """The clf_summary rows of one classify run."""
    return read_frame(settings.warehouse, "classify/select_summary", {"classify_run_id": classify_run_id})


@task(cache_policy=NO_CACHE)
def build_results_table(
    summary: pl.DataFrame,
    classify_run_id: str,
    collection: str,
    feature_set: FeatureSet,
    matrix: FeatureMatrix,
    learners: list[str],
) -> ResultTable:
    """Supervised learners, then the oracle (best single stream per metric), then the votes."""
    by_name = {row["learner"]: row for row in summary.to_dicts()}
    rows = [_table_row(by_name[name], TITLES[name]) for name in learners]
    singles = [by_name[f"single:{key}"] for key in matrix.keys]
    best = {m: _best_single(singles, m) for m in METRICS}
    rows.append(
        TableRow(
            "oracle",
            "Oracle (best single)",
            mean={m: best[m][f"{m}_mean"] for m in METRICS},
            sd={m: best[m][f"{m}_sd"] for m in METRICS},
            source={m: best[m]["learner"].removeprefix("single:") for m in METRICS},
        )
    )
    rows += [_table_row(by_name[name], title) for name, title in VOTE_NAMES.items() if name in by_name]
    return ResultTable(
        classify_run_id,
        collection,
        feature_set.mode,
        matrix.keys,
        len(matrix.columns),
        len(matrix.relevance),
        matrix.n_excluded,
        summary.select(pl.col("n_trials").max()).item(),
        rows,
    )


def _best_single(singles: list[dict[str, Any]], metric: str) -> dict[str, Any]:
    """The stream with the highest mean of `metric`; ties to the first in column order."""
    return max(singles, key=lambda row: row[f"{metric}_mean"])


def _table_row(summary_row: dict[str, Any], title: str) -> TableRow:
    return TableRow(
        summary_row["learner"],
        title,
        mean={m: summary_row[f"{m}_mean"] for m in METRICS},
        sd={m: summary_row[f"{m}_sd"] for m in METRICS},
    )


def render_markdown(table: ResultTable) -> str:
    """The table as markdown, best mean per column in bold."""
    lines = [
        f"## Experiment 2 on {table.collection}: {table.n_trials} trials, {table.n_pairs} pairs "
        f"({table.n_excluded} excluded), {table.n_features} features ({table.feature_mode})",
        "",
        "| Learner | " + " | ".join(METRIC_TITLES[m] for m in METRICS) + " |",
        "|---|" + "---|" * len(METRICS),
    ]
    for row in table.rows:
        cells = [f"**{table.cell(row, m)}**" if row.mean[m] == table.best(m) else table.cell(row, m) for m in METRICS]
        lines.append(f"| {row.title} | " + " | ".join(cells) + " |")
    lines += ["", f"Mean (SD, ddof=1) over trials. Run `{table.classify_run_id}`."]
    return "\n".join(lines)


@task(cache_policy=NO_CACHE)
def publish_table_artifact(table: ResultTable) -> str:
    """Attach the table to the flow run as a markdown artifact; return the markdown."""
    markdown = render_markdown(table)
    create_markdown_artifact(markdown=markdown, key="classify-table", description="Experiment 2 results")
    return markdown
