"""Metrics tasks: read metric views (once per read, from one snapshot of the cells), write them, describe them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.runtime import flow_run

from peras.errors import UsageError
from peras.metric_names import format_value, metric_title
from peras.outputs import write_files
from peras.prompting import load_personalities
from peras.settings import Settings
from peras.sql import load_sql, run_sql
from peras.warehouse import ensure_migrated, open_current

# what --view names -> the SQL view it reads (sql/metrics/<view>.sql)
VIEWS = {
    "summary": "metrics_summary",
    "agreement": "metrics_agreement",
    "reliability": "metrics_reliability",
    "calibration": "metrics_calibration",
    "thresholds": "metrics_thresholds",
    "comparison": "metrics_vs_default",
    "oracle": "metrics_oracle",
    "confusion": "metrics_confusion",
    "calibration_bins": "metrics_calibration_bins",
    "threshold_curve": "metrics_threshold_curve",
    "method_comparison": "metrics_method_comparison",
}
HEADLINE_VIEWS = ["agreement", "reliability", "calibration", "thresholds", "comparison", "oracle"]
GROUP_COLUMNS = ["run_name", "collection_id", "subset_name", "model", "personality", "cot", "confidence_method"]
# the columns a terminal table shows (csv and json carry every column)
DISPLAY_COLUMNS = {
    "summary": ["n_scored", "cohen_kappa", "qwk", "macro_f1", "hmr", "ece"],
    "agreement": ["n_scored", "n_label_failures", "accuracy", "cohen_kappa", "qwk", "macro_f1", "krippendorff_alpha"],
    "reliability": [
        "n_scored_confidence",
        "n_confidence_missing",
        "overconfidence",
        "underconfidence",
        "ro",
        "ru",
        "hmr",
    ],
    "calibration": ["n_scored_confidence", "ece", "ace", "mce", "brier", "nll", "th_score"],
    "thresholds": ["n_confident", "accuracy_confident", "coverage_confident", "n_unconfident", "accuracy_unconfident"],
    "comparison": ["metric", "value", "default_value", "delta", "is_better"],
    "oracle": ["metric", "best_personality", "best_value", "default_value", "delta_vs_default", "n_tied"],
    "confusion": ["relevance", "label", "n_judgments"],
    "calibration_bins": ["bin", "n_judgments", "mean_p", "accuracy", "gap"],
    "threshold_curve": ["threshold", "n_covered", "coverage", "accuracy"],
    "method_comparison": [
        "n_scored",
        "accuracy",
        "cohen_kappa",
        "ece",
        "nll",
        "hmr",
        "requests_per_judgment",
        "completion_tokens_per_judgment",
    ],
}
TERMINAL_COST_TITLES = {"requests_per_judgment": "requests/j", "completion_tokens_per_judgment": "out tokens/j"}
# the summary is for reading: its columns carry titles (the other views keep the names csv and json use)
SUMMARY_TITLES = {
    "run_name": "run",
    "collection_id": "collection",
    "subset_name": "subset",
    "confidence_method": "confidence",
    "cot": "CoT",
    "n_scored": "n",
}
# the method comparison is read across: short titles, so that a row fits a terminal (csv: every column)
TITLED_VIEWS = {"summary": SUMMARY_TITLES, "method_comparison": SUMMARY_TITLES | TERMINAL_COST_TITLES}
ARTIFACT_MAX_ROWS = 50


def resolve_views(names: list[str]) -> list[str]:
    """`all` means the summary and the six headline views; any other name must be a key of VIEWS."""
    chosen: list[str] = []
    for name in names:
        key = name.replace("-", "_")
        if key not in VIEWS and key != "all":
            raise UsageError(f"unknown metric view {name!r}: choose from all, {', '.join(VIEWS)}")
        chosen.extend(["summary", *HEADLINE_VIEWS] if key == "all" else [key])
    return list(dict.fromkeys(chosen))


@task
def refresh_views(settings: Settings) -> None:
    """Apply missing migrations; a current warehouse is only read, so a read-only file works."""
    ensure_migrated(settings.warehouse)


@task
def read_metrics(
    settings: Settings, views: list[str], run: str | None, collection: str | None, cot: bool | None
) -> dict[str, pl.DataFrame]:
    """Each chosen view as a frame, for the runs/collection/CoT setting asked for; the judgments are read once."""
    filters = {"run_names": [run] if run else None, "collection_id": collection, "cot": cot}
    with open_current(settings.warehouse) as con:  # read-only; the views are those of sql/ now
        run_sql(con, "metrics/snapshot_cells", filters)
        if run_sql(con, "metrics/count_snapshot").fetchall()[0][0] == 0:
            raise UsageError(_nothing_matches(con, run, collection, cot))
        if {"comparison", "oracle"} & set(views):
            run_sql(con, "metrics/snapshot_long")
        if "method_comparison" in views:
            run_sql(con, "metrics/snapshot_costs", filters)
        return {name: con.sql(load_sql(f"metrics/select_{name}")).pl() for name in views}


def _nothing_matches(con: Any, run: str | None, collection: str | None, cot: bool | None) -> str:
    runs = run_sql(con, "metrics/select_run_names").fetchall()
    if not runs:
        return "no judgments in the warehouse yet: run `peras judge` or `peras import-judgments` first"
    asked = ", ".join(
        f"{k} {v!r}" for k, v in (("run", run), ("collection", collection), ("cot", cot)) if v is not None
    )
    names = ", ".join(sorted({name for name, _ in runs})[:10])
    collections = ", ".join(sorted({coll for _, coll in runs}))
    known = f"runs are {names}{' ...' if len(runs) > 10 else ''}; collections {collections}"
    if not asked:  # judgments exist, but none of a published run on a pair of its collection's qrels
        return f"no judgments of a published run match the qrels of their collection: {known}"
    return f"no judgments for {asked}: {known}"


def write_metrics(frames: dict[str, pl.DataFrame], fmt: str, output: Path, warehouse: Path) -> list[Path]:
    """Write csv (one file per view; a directory when there are several) or json (one file), all or none."""
    if fmt == "json":
        files = {output: metrics_json(frames) + "\n"}
    elif len(frames) == 1:
        files = {output: next(iter(frames.values())).write_csv()}
    else:
        files = {output / f"{name}.csv": frame.write_csv() for name, frame in frames.items()}
    return write_files(files, warehouse, "--output", output)


def metrics_json(frames: dict[str, pl.DataFrame]) -> str:
    """One view: a list of records; several: {view: [records]}. NaN never appears (SQL nulls are null)."""
    records = {name: frame.to_dicts() for name, frame in frames.items()}
    body: Any = next(iter(records.values())) if len(records) == 1 else records
    return json.dumps(body, indent=2, default=str)


def display_frame(name: str, frame: pl.DataFrame) -> pl.DataFrame:
    """The columns worth a terminal: group columns that vary, then the view's main numbers (the summary titled)."""
    always = ("run_name", "personality", "cot") + (("confidence_method",) if name == "method_comparison" else ())
    varying = [c for c in GROUP_COLUMNS if c in frame.columns and (c in always or frame[c].n_unique() > 1)]
    if name == "oracle":
        varying = [c for c in varying if c != "personality"]
    shown = frame.select(varying + DISPLAY_COLUMNS[name])
    if name not in TITLED_VIEWS:
        return shown
    titled = shown.with_columns(pl.when(pl.col("cot")).then(pl.lit("yes")).otherwise(pl.lit("no")).alias("cot"))
    return titled.rename({c: TITLED_VIEWS[name].get(c, metric_title(c)) for c in shown.columns})


def markdown_table(name: str, frame: pl.DataFrame, max_rows: int = 200) -> str:
    """A view as a markdown table (the display columns, at most max_rows rows)."""
    shown = display_frame(name, frame)
    lines = [
        f"## {name} ({VIEWS[name]}, {frame.height} rows)",
        "",
        "| " + " | ".join(shown.columns) + " |",
        "|" + "---|" * len(shown.columns),
    ]
    for row in shown.head(max_rows).iter_rows():
        lines.append("| " + " | ".join(format_value(v) for v in row) + " |")
    if frame.height > max_rows:
        lines.append(f"\n... {frame.height - max_rows} more rows: `peras metrics --view {name} --format csv`")
    return "\n".join(lines)


def metrics_markdown(frames: dict[str, pl.DataFrame], max_rows: int = ARTIFACT_MAX_ROWS) -> str:
    """The summary when it was read (else each view read), at most max_rows rows each; the rest named."""
    shown = {"summary": frames["summary"]} if "summary" in frames else frames
    body = "\n\n".join(markdown_table(name, frame, max_rows) for name, frame in shown.items())
    others = [f"{name} ({frame.height} rows)" for name, frame in frames.items() if name not in shown]
    more = f"\n\nAlso read: {', '.join(others)}: `peras metrics --view NAME`." if others else ""
    return f"# PERAS metrics\n\n{body}{more}"


@task
def publish_metrics_artifact(frames: dict[str, pl.DataFrame]) -> None:
    """A short markdown artifact of the flow run: the summary (kappa, QWK, macro-F1, HMR, ECE per group)."""
    create_markdown_artifact(markdown=metrics_markdown(frames), key="metrics", description=", ".join(frames))


def metrics_run_name() -> str:
    """metrics-<run>, metrics-<collection> or metrics-all: what the run reads, as the UI shows it."""
    parameters = flow_run.parameters
    return f"metrics-{parameters.get('run') or parameters.get('collection') or 'all'}"


def headline_table(frames: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per personality x CoT: kappa, QWK, macro-F1 and HMR."""
    agreement = frames["agreement"].select("personality", "cot", "n_scored", "cohen_kappa", "qwk", "macro_f1")
    reliability = frames["reliability"].select("personality", "cot", "hmr")
    order = {p.code: rank for rank, p in enumerate(load_personalities())}
    rank = pl.col("personality").replace_strict(order, default=len(order), return_dtype=pl.Int64)
    joined = agreement.join(reliability, on=["personality", "cot"], how="left")
    return joined.sort(pl.col("cot"), rank, pl.col("personality"))
