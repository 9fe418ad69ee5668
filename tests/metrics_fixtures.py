"""Test helpers for the metric views: load judgments into a warehouse, groups of judgments, exact comparison.

The independent reference metrics the views are checked against are in support/reference_metrics.py (the metrics
benchmark checks against them too).
"""

from __future__ import annotations

import copy
import functools
import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import duckdb
import numpy as np
import polars as pl
from hypothesis import strategies as st

from peras.prompting import CANONICAL_ORDER
from peras.warehouse import migrate
from support.ingested import Ingested

T = TypeVar("T")
GROUP_KEYS = ["run_id", "personality", "cot", "confidence_method"]
JUDGED_AT = datetime(2026, 1, 1)


@dataclass(frozen=True)
class Judgment:
    """One judgment of a test group; label or confidence None for a failure."""

    run_id: str
    personality: str
    cot: bool
    confidence_method: str
    query_id: str
    doc_id: str
    relevance: int
    label: int | None
    confidence: float | None


def load_judgments(con: duckdb.DuckDBPyConnection, rows: Iterable[Judgment], collection_id: str = "coll") -> None:
    """Insert qrels, one pointwise run per run_id and the judgments, as a judge or an import would."""
    frame = pl.DataFrame([r.__dict__ for r in rows], schema_overrides={"label": pl.Int32, "confidence": pl.Float64})
    qrels = frame.select("query_id", "doc_id", "relevance").unique(["query_id", "doc_id"], keep="first")
    con.register("test_qrels", qrels.to_arrow())
    con.execute(
        "insert into qrels select ?, query_id, doc_id, relevance, 'test' from test_qrels on conflict do nothing",
        [collection_id],
    )
    for run_id in frame["run_id"].unique().sort():
        con.execute(
            "insert into judge_runs (run_id, run_name, source, task_type, collection_id, subset_name, model, "
            "backend, params, created_at) values (?, ?, 'llm', 'pointwise', ?, null, 'test-model', 'test', '{}', ?) "
            "on conflict do nothing",
            [run_id, f"name-{run_id}", collection_id, JUDGED_AT],
        )
    con.register("test_judgments", frame.to_arrow())
    con.execute(
        """insert into judgments (run_id, query_id, doc_id, personality, cot, confidence_method, label, confidence,
            expected_score, status, reason, label_request_id, confidence_request_id, judged_at)
        select run_id, query_id, doc_id, personality, cot, confidence_method, label, confidence, null,
               case when label is null then 'label_parse_failure'
                    when confidence is null then 'confidence_parse_failure' else 'ok' end,
               null, null, null, ?
        from test_judgments""",
        [JUDGED_AT],
    )


def view(con: duckdb.DuckDBPyConnection, name: str) -> pl.DataFrame:
    """A metric view (or any query) as a Polars frame.

    execute, not sql: con.sql() binds the query to make a relation and .pl() then plans it again; the metric views
    are macros over macros, and that first binding alone cost ~3 ms a query (a third of a hypothesis example's)."""
    query = name if " " in name else f"select * from {name}"
    return con.execute(query).pl()


def fresh_warehouse() -> duckdb.DuckDBPyConnection:
    """An in-memory warehouse with every migration, view and macro.

    One DuckDB thread: the test groups are tens of rows, so a second thread only adds its scheduling (~15 % more
    CPU a metric query) and competes with the other pytest-xdist worker for the two cores."""
    con = duckdb.connect(config={"threads": 1})
    migrate(con)
    return con


def import_llmjudge(root: Path, ingested: Ingested) -> tuple[Any, dict[str, Any]]:
    """A warehouse in root with LLMJudge ingested and its 33 submissions imported; the import reports by run name.

    Made once per session by the real flows (`ingested`); each caller gets its own copy of the warehouse.
    """
    from flows.import_judgments import import_judgments
    from flows.ingest import ingest
    from peras.settings import load_settings
    from tests.conftest import SHARED_DATA

    def make(settings: Any) -> dict[str, Any]:
        ingest(preset="llmjudge", settings=settings)
        runs = sorted((SHARED_DATA / "llmjudge" / "judge-runs").glob("*.txt"))
        return {
            path.stem: import_judgments(path=str(path), name=path.stem, collection="llmjudge", settings=settings)
            for path in runs
        }

    settings = load_settings(warehouse=root / "peras.duckdb", data_dir=SHARED_DATA, reports_dir=root / "reports")
    return settings, ingested.made("import llmjudge", settings, make)


def clear_judgments(con: duckdb.DuckDBPyConnection) -> None:
    """Empty the tables a metric test writes, so one warehouse serves many hypothesis examples."""
    for table in ("judgments", "judge_runs", "qrels"):
        con.execute(f"delete from {table}")


# ------------------------------------------------------------------------------------- groups of judgments

PERSONALITIES = list(CANONICAL_ORDER)
Cell = tuple[int, int | None, float | None]  # relevance, label (None: parse failure), confidence (None: missing)


def group_key(index: int) -> tuple[str, str, bool, str]:
    """A distinct (run_id, personality, cot, confidence_method) for the index-th test group."""
    return ("run", PERSONALITIES[index % 11], bool(index // 11 % 2), f"method{index // 22}")


def judgments_of(groups: list[list[Cell]]) -> list[Judgment]:
    """Each group judges its own pairs, so any relevance mix is possible in any group."""
    return [
        Judgment(*group_key(g), f"q{g}-{j % 3}", f"d{g}-{j}", relevance, label, confidence)
        for g, cells in enumerate(groups)
        for j, (relevance, label, confidence) in enumerate(cells)
    ]


def rows_by_key(frame: pl.DataFrame) -> dict[tuple[str, str, bool, str], dict[str, object]]:
    """A group-level view's rows keyed like group_key."""
    return {tuple(row[k] for k in GROUP_KEYS): row for row in frame.iter_rows(named=True)}  # type: ignore[misc]


def frames_by_key(frame: pl.DataFrame) -> dict[tuple[str, str, bool, str], pl.DataFrame]:
    """A view's rows split by group (keyed like group_key); a group with no rows gets an empty frame.

    The same frames as `frame.filter(run_id=..., personality=..., ...)` per group, split in one pass: a filter per
    group and view cost ~4 ms (a Polars query each) of a hypothesis example."""
    parts = frame.partition_by(GROUP_KEYS, as_dict=True, maintain_order=True)
    empty = frame.clear()
    return defaultdict(lambda: empty, parts)  # type: ignore[arg-type]


def labelled(cells: list[Cell]) -> tuple[np.ndarray, np.ndarray]:
    """Relevance and label of the cells that have a label."""
    kept = [(r, lab) for r, lab, _ in cells if lab is not None]
    return np.array([r for r, _ in kept], dtype=int), np.array([lab for _, lab in kept], dtype=int)


def scored(cells: list[Cell]) -> tuple[np.ndarray, np.ndarray]:
    """Correctness and confidence of the cells that have a label and a confidence."""
    kept = [(r == lab, c) for r, lab, c in cells if lab is not None and c is not None]
    return np.array([k for k, _ in kept], dtype=bool), np.array([c for _, c in kept], dtype=float)


LABELS = st.one_of(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.none())
CONFIDENCES = st.one_of(
    st.integers(0, 100).map(float),  # verbalized: whole numbers, many ties
    st.sampled_from([0.0, 5.0, 10.0, 80.0, 90.0, 95.0, 100.0]),  # the edges of every bin and tail
    st.floats(0, 100, allow_nan=False),  # logprob / sampling: anything in between
    st.none(),
)
CELLS = st.tuples(st.integers(0, 3), LABELS, CONFIDENCES)
# many groups at once, as the views see them; small groups make degenerate cases (one class, one label) common
GROUPS = st.lists(st.lists(CELLS, min_size=1, max_size=30), min_size=1, max_size=12)


def remembered(reference: Callable[..., T]) -> Callable[..., T]:
    """reference, computed once per distinct input and handed out as a copy: hypothesis draws the same small groups
    again and again (~130 distinct groups among the ~850 of a 150-example run), and scikit-learn's input checks cost
    ~1 ms a call, seven calls a group. Same inputs, same reference values: only the repeats are not recomputed."""
    memory: dict[tuple[object, ...], T] = {}

    def key_of(value: object) -> object:
        return (value.dtype.str, value.shape, value.tobytes()) if isinstance(value, np.ndarray) else value

    @functools.wraps(reference)
    def cached(*args: object, **kwargs: object) -> T:
        key = (*map(key_of, args), *sorted(kwargs.items()))
        if key not in memory:
            memory[key] = reference(*args, **kwargs)
        return copy.deepcopy(memory[key])

    return cached


def assert_close(actual: object, expected: object, where: str, tol: float = 1e-9) -> None:
    """Equal within tol (absolute, and relative for large values); None only equals None."""
    if expected is None or actual is None:
        assert actual is None and expected is None, f"{where}: view {actual!r}, reference {expected!r}"
        return
    assert math.isclose(float(actual), float(expected), rel_tol=tol, abs_tol=tol), (
        f"{where}: view {actual!r}, reference {expected!r}"
    )
