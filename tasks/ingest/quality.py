"""Great Expectations gates: suites live in expectations/*.json; a failing suite raises CheckFailed.

GX reads DataFrames, not DuckDB (GX through duckdb-engine is broken in 1.x), so every stage validates the
frame it is about to publish, before publishing it.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from functools import cache
from typing import Any

import polars as pl

from peras.errors import CheckFailed
from peras.paths import EXPECTATIONS_DIR

MAX_EXAMPLES = 5


@dataclass(frozen=True)
class Failure:
    """One expectation that did not hold, in words a user can act on."""

    suite: str
    expectation: str
    why: str
    detail: str


@cache
def _context() -> Any:
    os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    for name in ("great_expectations.data_context.types.base",):
        logging.getLogger(name).setLevel(logging.ERROR)
    import great_expectations as gx
    from great_expectations.data_context.types.base import ProgressBarsConfig

    context = gx.get_context(mode="ephemeral")
    context.variables.progress_bars = ProgressBarsConfig(globally=False)
    return context


def load_suite_config(name: str) -> dict[str, Any]:
    """The suite as written in expectations/<name>.json (checked for the keys we rely on)."""
    path = EXPECTATIONS_DIR / f"{name}.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    for item in config["expectations"]:
        if not {"type", "kwargs"} <= item.keys() or "why" not in item.get("meta", {}):
            raise ValueError(f"{path}: every expectation needs type, kwargs and meta.why")
    return config


def validate_frame(name: str, frame: pl.DataFrame, parameters: dict[str, Any] | None = None) -> list[Failure]:
    """Validate a frame against suite `name`; return the failures (empty when it passes)."""
    import great_expectations as gx

    context = _context()
    config = load_suite_config(name)
    suite = gx.ExpectationSuite(name=config["name"], expectations=config["expectations"])
    source = context.data_sources.add_or_update_pandas(f"peras_{name}")
    asset = source.add_dataframe_asset(name=name)
    batch = asset.add_batch_definition_whole_dataframe("frame").get_batch(
        batch_parameters={"dataframe": frame.to_pandas()}
    )
    result = batch.validate(suite, expectation_parameters=parameters or {}, result_format="COMPLETE")
    return [_describe(name, frame, item) for item in result.results if not item.success]


def _describe(name: str, frame: pl.DataFrame, item: Any) -> Failure:
    config = item.expectation_config
    detail = ""
    result = item.result or {}
    indexes = result.get("unexpected_index_list") or []
    if indexes:
        rows = frame[sorted(set(indexes))[:MAX_EXAMPLES]]
        shown = "; ".join(str(row) for row in rows.iter_rows(named=True))
        detail = f"{result.get('unexpected_count', len(indexes))} rows, e.g. {shown}"
    elif result.get("observed_value") is not None:
        detail = f"observed {result['observed_value']}"
    if item.exception_info and item.exception_info.get("raised_exception"):
        detail = f"could not evaluate: {item.exception_info.get('exception_message')}"
    return Failure(name, config.type, (config.meta or {}).get("why", ""), detail)


def gate(checks: list[tuple[str, pl.DataFrame, dict[str, Any]]]) -> None:
    """Run every suite; raise CheckFailed listing all failures, so nothing downstream publishes."""
    failures = [failure for name, frame, params in checks for failure in validate_frame(name, frame, params)]
    if failures:
        lines = [f"  [{f.suite}] {f.why} ({f.expectation}): {f.detail}" for f in failures]
        raise CheckFailed("quality gate failed, nothing was published:\n" + "\n".join(lines))
