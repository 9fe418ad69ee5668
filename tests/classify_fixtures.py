"""Synthetic judgments for Experiment 2 tests, written straight into a fresh warehouse.

One collection `synth` with 240 judged pairs (qrels 0-3, skewed like DL21), an LLM run judged under
the eleven personalities (no CoT, verbalized confidence), and three imported label-only runs.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

from peras.warehouse import open_migrated
from tasks.shared.features import PERSONALITY_ORDER

COLLECTION = "synth"
LLM_RUN = "synth-llm"
IMPORTED = ("imp-a", "imp-b", "imp-c")
N_PAIRS = 240


def synthetic_pairs(n_pairs: int = N_PAIRS, seed: int = 3) -> pl.DataFrame:
    """query_id, doc_id, relevance: 6 topics, levels 0-3 in shares 40/30/20/10 %."""
    rng = np.random.default_rng(seed)
    relevance = np.repeat([0, 1, 2, 3], [n_pairs * 4 // 10, n_pairs * 3 // 10, n_pairs * 2 // 10, n_pairs // 10])
    rng.shuffle(relevance)
    return pl.DataFrame(
        {
            "query_id": [f"q{i % 6}" for i in range(n_pairs)],
            "doc_id": [f"d{i:04d}" for i in range(n_pairs)],
            "relevance": relevance.tolist(),
        }
    )


def judge(relevance: np.ndarray, rng: np.random.Generator, bias: float) -> tuple[np.ndarray, np.ndarray]:
    """A noisy judge: labels near the qrel, confidence higher when right."""
    labels = np.clip(np.rint(relevance + bias + rng.normal(0, 0.7, len(relevance))), 0, 3).astype(int)
    confidence = np.clip(np.rint(rng.normal(65 + 15 * (labels == relevance), 10)), 0, 100)
    return labels, confidence


def run_row(run_name: str, source: str, created_at: datetime) -> dict:
    return {
        "run_id": f"run-{run_name}",
        "run_name": run_name,
        "source": source,
        "task_type": "pointwise",
        "collection_id": COLLECTION,
        "subset_name": None,
        "model": "synthetic",
        "backend": source,
        "params": "{}",
        "created_at": created_at,
    }


def judgment_rows(
    run_name: str,
    pairs: pl.DataFrame,
    personality: str,
    method: str,
    labels: np.ndarray,
    confidence: np.ndarray | None,
) -> pl.DataFrame:
    return pairs.select("query_id", "doc_id").with_columns(
        pl.lit(f"run-{run_name}").alias("run_id"),
        pl.lit(personality).alias("personality"),
        pl.lit(False).alias("cot"),
        pl.lit(method).alias("confidence_method"),
        pl.Series("label", labels.tolist(), dtype=pl.Int32),
        pl.Series(
            "confidence",
            [None] * pairs.height if confidence is None else confidence.tolist(),
            dtype=pl.Float64,
        ),
    )


def build_synthetic_warehouse(path: Path, failures: int = 5) -> None:
    """Write qrels, the LLM run (with `failures` label parse failures under HA) and the imports."""
    pairs = synthetic_pairs()
    relevance = pairs["relevance"].to_numpy()
    rng = np.random.default_rng(11)
    frames = []
    for i, code in enumerate(PERSONALITY_ORDER):
        labels, confidence = judge(relevance, rng, bias=(i % 3 - 1) * 0.2)
        frame = judgment_rows(LLM_RUN, pairs, code, "verbalized", labels, confidence)
        if code == "HA":
            frame = frame.with_columns(
                pl.when(pl.int_range(pl.len()) < failures).then(None).otherwise(pl.col("label")).alias("label")
            )
        frames.append(frame)
    for name in IMPORTED:
        labels, _ = judge(relevance, rng, bias=0.0)
        frames.append(judgment_rows(name, pairs, "default", "none", labels, None))
    judgments = pl.concat(frames).with_columns(
        pl.when(pl.col("label").is_null()).then(pl.lit("label_parse_failure")).otherwise(pl.lit("ok")).alias("status"),
        pl.lit(datetime(2024, 1, 1)).alias("judged_at"),
    )
    runs = pl.DataFrame(
        [run_row(LLM_RUN, "llm", datetime(2024, 1, 2))]
        + [run_row(name, "import", datetime(2024, 1, 1)) for name in IMPORTED]
    )
    qrels = pairs.with_columns(pl.lit(COLLECTION).alias("collection_id"), pl.lit("test").alias("qrels_set"))
    insert(path, qrels, runs, judgments)


def insert(path: Path, qrels: pl.DataFrame, runs: pl.DataFrame, judgments: pl.DataFrame) -> None:
    """Append the frames to the warehouse tables (columns matched by name)."""
    with open_migrated(path) as con:
        for table, frame in (("qrels", qrels), ("judge_runs", runs), ("judgments", judgments)):
            con.register("frame", frame.to_arrow())
            con.execute(f"insert into {table} by name select * from frame")  # noqa: S608 - fixed table names
            con.unregister("frame")
