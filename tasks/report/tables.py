"""The report's tables as plain values for the template: the study's Tables 5, 7 and 8, and generic view tables.

Numbers are formatted here, once: null and NaN print as an en dash, so a degenerate metric never shows as 'nan'.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import polars as pl

from peras.metric_names import CLASSIFIER_METRIC_TITLES, METRIC_TITLES
from peras.prompting import CANONICAL_ORDER

AGREEMENT_METRICS = ["cohen_kappa", "qwk", "macro_f1"]
RELIABILITY_METRICS = ["ro", "ru", "hmr"]
DASH = "–"


class Setting(NamedTuple):
    """One run judged one way: the unit of every chart and of every column group of a table."""

    run_name: str
    collection_id: str
    model: str
    cot: bool
    confidence_method: str

    @property
    def setting_label(self) -> str:
        return f"{'CoT' if self.cot else 'no CoT'} · {self.confidence_method}"

    @property
    def label(self) -> str:
        return f"{self.run_name} · {self.setting_label}"

    @property
    def slug(self) -> str:
        name = f"{self.run_name}-{'cot' if self.cot else 'nocot'}-{self.confidence_method}"
        return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)

    def rows(self, frame: pl.DataFrame) -> pl.DataFrame:
        """The rows of `frame` that belong to this setting."""
        return frame.filter(
            (pl.col("run_name") == self.run_name)
            & (pl.col("cot") == self.cot)
            & (pl.col("confidence_method") == self.confidence_method)
        )


def settings_of(frame: pl.DataFrame) -> list[Setting]:
    """The distinct settings of a frame, by collection, model, run, no CoT before CoT, method."""
    keys = frame.select(list(Setting._fields)).unique()
    ordered = keys.sort(["collection_id", "model", "run_name", "cot", "confidence_method"])
    return [Setting(*row) for row in ordered.iter_rows()]


def order_personalities(names: list[str] | set[str]) -> list[str]:
    """The study's order (default, then H/L per trait), then user-defined personalities alphabetically."""
    known = [p for p in CANONICAL_ORDER if p in names]
    return known + sorted(set(names) - set(CANONICAL_ORDER))


def fmt(value: Any, digits: int = 3) -> str:
    """A number for a table cell: fixed decimals (tiny ones in e-notation), an en dash for null or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    if isinstance(value, float):
        small = value != 0 and abs(value) < 10**-digits  # p-values: 2.1e-05, not 0.000
        return f"{value:.1e}" if small else f"{value:.{digits}f}"
    return str(value)


def fmt_count(value: int | None) -> str:
    """A count with thousands separators, an en dash for null (not applicable)."""
    return DASH if value is None else f"{value:,}"


@dataclass(frozen=True)
class Cell:
    """One metric value; is_better marks a value that beats default of the same run and setting."""

    text: str
    is_better: bool = False


@dataclass(frozen=True)
class ColumnGroup:
    """The columns of one setting: its run, model and CoT / confidence method."""

    title: str
    subtitle: str
    has_values: bool


@dataclass(frozen=True)
class MetricTable:
    """Table 7 or 8 for one collection: personalities down, settings x metrics across."""

    collection_id: str
    metrics: list[str]
    groups: list[ColumnGroup]
    rows: list[tuple[str, list[Cell]]]
    layout = "wide"

    @property
    def metric_titles(self) -> list[str]:
        return [METRIC_TITLES[m] for m in self.metrics]


@dataclass(frozen=True)
class RunRowsTable:
    """Table 7 or 8 for a collection with many settings: a row per run x setting x personality, metrics across.

    Rows whose every metric is null (runs without confidences, in Table 8) are left out and counted.
    """

    collection_id: str
    metrics: list[str]
    rows: list[tuple[list[str], list[Cell]]]  # (run, model, setting, personality), a cell per metric
    n_without_values: int
    layout = "rows"

    @property
    def metric_titles(self) -> list[str]:
        return [METRIC_TITLES[m] for m in self.metrics]


MAX_SETTING_COLUMNS = 4  # a collection with more settings has runs as rows: 33 imports are 33 rows, not 99 columns


def metric_tables(values: pl.DataFrame, metrics: list[str]) -> list[MetricTable | RunRowsTable]:
    """One table per collection from select_table_metrics rows: a column group per setting, or (more than
    MAX_SETTING_COLUMNS settings) a row per run x setting x personality."""
    chosen = values.filter(pl.col("metric").is_in(metrics))
    tables: list[MetricTable | RunRowsTable] = []
    for collection_id in sorted(chosen["collection_id"].unique().to_list()):
        rows_of = chosen.filter(pl.col("collection_id") == collection_id)
        settings = settings_of(rows_of)
        if len(settings) > MAX_SETTING_COLUMNS:
            tables.append(_run_rows_table(collection_id, metrics, settings, rows_of))
            continue
        cells = _cells(rows_of)
        groups = [
            ColumnGroup(s.run_name, f"{s.model} · {s.setting_label}", s.rows(rows_of)["value"].is_not_null().any())
            for s in settings
        ]
        rows = [
            (personality, [cells(s, personality, metric) for s in settings for metric in metrics])
            for personality in order_personalities(set(rows_of["personality"].to_list()))
        ]
        tables.append(MetricTable(collection_id, metrics, groups, rows))
    return tables


def _run_rows_table(
    collection_id: str, metrics: list[str], settings: list[Setting], values: pl.DataFrame
) -> RunRowsTable:
    cells, rows, n_empty = _cells(values), [], 0
    for s in settings:
        mine = s.rows(values)
        for personality in order_personalities(set(mine["personality"].to_list())):
            if mine.filter(pl.col("personality") == personality)["value"].is_null().all():
                n_empty += 1
                continue
            labels = [s.run_name, s.model, s.setting_label, personality]
            rows.append((labels, [cells(s, personality, metric) for metric in metrics]))
    return RunRowsTable(collection_id, metrics, rows, n_empty)


def _cells(values: pl.DataFrame) -> Callable[[Setting, str, str], Cell]:
    """The cell of (setting, personality, metric): the value formatted, marked when it beats default."""
    lookup = {
        (r["run_name"], r["cot"], r["confidence_method"], r["personality"], r["metric"]): r
        for r in values.iter_rows(named=True)
    }

    def cell(s: Setting, personality: str, metric: str) -> Cell:
        row = lookup.get((s.run_name, s.cot, s.confidence_method, personality, metric))
        return Cell(fmt(row["value"]), bool(row["is_better"])) if row else Cell(DASH)

    return cell


@dataclass(frozen=True)
class ClassifierTable:
    """Table 5 for one classify run: a row per learner, mean (SD) per metric, best mean in bold."""

    classify_run_id: str
    caption: str
    rows: list[tuple[str, list[Cell]]]


CLASSIFIER_METRICS = list(CLASSIFIER_METRIC_TITLES)  # clf_summary column stems: kappa, qwk, f1


def classifier_tables(summary: pl.DataFrame, titles: dict[str, str]) -> list[ClassifierTable]:
    """Supervised learners, the oracle (best single stream per metric), then the votes: the study's order."""
    tables = []
    for run_id in summary["classify_run_id"].unique(maintain_order=True).to_list():
        rows = summary.filter(pl.col("classify_run_id") == run_id)
        first = rows.row(0, named=True)
        kinds = {kind: rows.filter(pl.col("learner_kind") == kind) for kind in ("supervised", "single", "vote")}
        lines = [
            *_learner_lines(kinds["supervised"], titles),
            _oracle_line(kinds["single"]),
            *_learner_lines(kinds["vote"], titles),
        ]
        lines = [line for line in lines if line[1]]  # no single streams: no oracle row
        best = {
            m: max((v for line in lines if (v := line[1].get(m)) is not None), default=None) for m in CLASSIFIER_METRICS
        }
        table_rows = [
            (
                title,
                [
                    Cell(
                        _mean_sd(mean.get(m), sd.get(m)) + (f" [{source[m]}]" if m in source else ""),
                        mean.get(m) is not None and mean.get(m) == best[m],
                    )
                    for m in CLASSIFIER_METRICS
                ],
            )
            for title, mean, sd, source in lines
        ]
        caption = (
            f"{first['collection_id']}: features from {first['source_runs']} (CoT {first['source_cot']}, "
            f"{first['source_confidence_methods']}; {first['feature_mode']}), {first['n_pairs']} pairs "
            f"({first['n_excluded']} excluded), {first['n_trials']} trials"
        )
        tables.append(ClassifierTable(run_id, caption, table_rows))
    return tables


Line = tuple[str, dict[str, float | None], dict[str, float | None], dict[str, str]]  # title, means, SDs, sources


def _learner_lines(rows: pl.DataFrame, titles: dict[str, str]) -> list[Line]:
    """Learners in the order of `titles` (the classify module's), unknown ones after by name."""
    order = list(titles)
    ranked = sorted(
        rows.iter_rows(named=True),
        key=lambda r: (order.index(r["learner"]) if r["learner"] in order else len(order), r["learner"]),
    )
    return [(titles.get(r["learner"], r["learner"]), _means(r), _sds(r), {}) for r in ranked]


def _means(row: dict[str, Any]) -> dict[str, float | None]:
    return {m: row[f"{m}_mean"] for m in CLASSIFIER_METRICS}


def _sds(row: dict[str, Any]) -> dict[str, float | None]:
    return {m: row[f"{m}_sd"] for m in CLASSIFIER_METRICS}


def _oracle_line(singles: pl.DataFrame) -> Line:
    """The single stream with the best mean per metric (ties to the first by name), named in brackets."""
    if singles.height == 0:
        return ("Oracle (best single)", {}, {}, {})
    mean, sd, source = {}, {}, {}
    for m in CLASSIFIER_METRICS:
        best = singles.sort([f"{m}_mean", "learner"], descending=[True, False], nulls_last=True).row(0, named=True)
        mean[m], sd[m], source[m] = best[f"{m}_mean"], best[f"{m}_sd"], best["learner"].removeprefix("single:")
    return ("Oracle (best single)", mean, sd, source)


def _mean_sd(mean: float | None, sd: float | None) -> str:
    """A metric's mean (SD) over trials, in fixed decimals: a mean of 3.7e-17 is a zero in float noise, not a
    p-value, and reads 0.000."""
    return DASH if mean is None else f"{fmt_fixed(mean)} ({fmt_fixed(sd)})"


def fmt_fixed(value: float | None, digits: int = 3) -> str:
    """Fixed decimals always (no e-notation, no -0.000); an en dash for null or NaN."""
    if value is None or math.isnan(value):
        return DASH
    return f"{round(value, digits) + 0.0:.{digits}f}"


@dataclass(frozen=True)
class FrameTable:
    """Any frame as header and formatted rows (the priming views, whose columns the report does not know)."""

    name: str
    columns: list[str]
    rows: list[list[str]]
    n_rows: int


def frame_table(name: str, frame: pl.DataFrame, n_rows: int) -> FrameTable:
    """A view's first rows, every value formatted; n_rows is how many the view has in all (or at least)."""
    return FrameTable(name, frame.columns, [[fmt(v) for v in row] for row in frame.iter_rows()], n_rows)
