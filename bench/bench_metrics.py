"""Benchmark the metric views: 1,000,000 synthetic judgments (11 personalities x 2 CoT settings x 45,455 pairs).

Times (1) every metric view materialised on its own (`create temp table ... as select * from <view>`), which
is what an analyst querying the views pays, each view scanning the judgments once; (2) the path `peras metrics`
takes: one snapshot of the cells, then every metric macro over it; and (3) the same numbers per group with
scikit-learn, `krippendorff` and NumPy (the reference code of the tests), after extracting the judgments once.
Targets: all views <= 2 s, >= 10x faster than the per-group Python loop.

    .venv/bin/python bench/bench_metrics.py            # writes bench/results/metrics-<date>.json
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.common import finish, headline, machine, versions  # noqa: E402
from peras.prompting import CANONICAL_ORDER  # noqa: E402
from peras.sql import load_sql  # noqa: E402
from peras.warehouse import migrate  # noqa: E402
from support.reference_metrics import (  # noqa: E402
    reference_agreement,
    reference_calibration,
    reference_confusion,
    reference_reliability,
    reference_thresholds,
)

N_PAIRS, N_TOPICS, REPEATS, TARGET_S, TARGET_SPEEDUP = 45_455, 50, 3, 2.0, 10.0
QREL_SHARES = (0.45, 0.25, 0.18, 0.12)
VIEWS = [
    "metrics_cells",
    "metrics_groups",
    "metrics_agreement",
    "metrics_confusion",
    "metrics_reliability",
    "metrics_calibration",
    "metrics_calibration_bins",
    "metrics_thresholds",
    "metrics_threshold_curve",
    "metrics_long",
    "metrics_vs_default",
    "metrics_oracle",
]
READS = [
    "agreement",
    "confusion",
    "reliability",
    "calibration",
    "calibration_bins",
    "thresholds",
    "threshold_curve",
    "comparison",
    "oracle",
]


def synthetic_judgments(seed: int = 11) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Qrels of 45,455 pairs and one run judging them under 11 personalities x CoT off/on (1,000,010 rows).

    Labels are right ~55% of the time, confidences whole numbers clustered at 70-100 (as LLMs state them) and
    higher when right; 1% of labels fail to parse and 1% of confidences are missing.
    """
    rng = np.random.default_rng(seed)
    relevance = rng.choice(4, size=N_PAIRS, p=QREL_SHARES)
    qrels = pl.DataFrame(
        {
            "query_id": [f"q{i % N_TOPICS}" for i in range(N_PAIRS)],
            "doc_id": [f"msmarco_passage_{i % 70:02d}_{i * 7919 % 10**9:09d}" for i in range(N_PAIRS)],
            "relevance": relevance,
        }
    )
    frames = []
    for personality in CANONICAL_ORDER:
        for cot in (False, True):
            noisy = np.clip(np.rint(relevance + rng.normal(rng.normal(0, 0.3), 0.8, N_PAIRS)), 0, 3)
            right = noisy == relevance
            confidence = np.clip(np.rint(rng.normal(78 + 8 * right, 10)), 0, 100)
            frames.append(
                pl.DataFrame(
                    {
                        "personality": personality,
                        "cot": cot,
                        "label": np.where(rng.random(N_PAIRS) < 0.01, np.nan, noisy),
                        "confidence": np.where(rng.random(N_PAIRS) < 0.01, np.nan, confidence),
                    }
                ).with_columns(qrels["query_id"], qrels["doc_id"])
            )
    judgments = pl.concat(frames).with_columns(
        pl.col("label").fill_nan(None).cast(pl.Int32), pl.col("confidence").fill_nan(None)
    )
    return qrels, judgments


def load(con: duckdb.DuckDBPyConnection, qrels: pl.DataFrame, judgments: pl.DataFrame) -> None:
    """Insert the collection, the run and the judgments as the judge flow would."""
    con.register("bench_qrels", qrels.to_arrow())
    con.execute("insert into qrels select 'bench', query_id, doc_id, relevance, 'test' from bench_qrels")
    con.execute(
        "insert into judge_runs (run_id, run_name, source, task_type, collection_id, model, backend, params, "
        "created_at) values ('bench', 'bench', 'llm', 'pointwise', 'bench', 'synthetic', 'none', '{}', now())"
    )
    con.register("bench_judgments", judgments.to_arrow())
    con.execute("""insert into judgments (run_id, query_id, doc_id, personality, cot, confidence_method, label,
                   confidence, status, judged_at)
                   select 'bench', query_id, doc_id, personality, cot, 'verbalized', label, confidence,
                          case when label is null then 'label_parse_failure' else 'ok' end, now()
                   from bench_judgments""")
    con.execute("checkpoint")


def best_of(func, repeats: int = REPEATS) -> tuple[float, float, float]:
    """(best, median) wall seconds over repeats, and the least CPU seconds (all threads of this process).

    The machines are shared: CPU time is what the work costs, wall time also what the neighbours cost.
    """
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        func()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), statistics.median(walls), min(cpus)


def time_views(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[float, float, float]]:
    """Each view materialised fully, on its own."""

    def materialise(name: str) -> None:
        con.execute(f"create or replace temp table bench_out as select * from {name}")

    return {name: best_of(lambda name=name: materialise(name)) for name in VIEWS}


def read_all_once(con: duckdb.DuckDBPyConnection) -> None:
    """What the metrics flow does for --view all plus confusion, bins and curve: snapshots, nine reads."""
    con.execute(load_sql("metrics/snapshot_cells"), {"run_name": None, "collection_id": None, "cot": None})
    con.execute(load_sql("metrics/snapshot_long"))
    for name in READS:
        con.execute(f"create or replace temp table bench_out as {load_sql(f'metrics/select_{name}')}")


def python_metrics(facts: pl.DataFrame) -> int:
    """The same numbers per group with scikit-learn, krippendorff and NumPy; returns the number of groups."""
    n_groups = 0
    for _, group in facts.group_by(["personality", "cot"]):
        n_groups += 1
        labelled = group.filter(pl.col("label").is_not_null())
        truth, label = labelled["relevance"].to_numpy(), labelled["label"].to_numpy()
        reference_agreement(truth, label)
        reference_confusion(truth, label)
        scored = labelled.filter(pl.col("confidence").is_not_null())
        correct = (scored["relevance"] == scored["label"]).to_numpy()
        confidence = scored["confidence"].to_numpy()
        reference_reliability(correct, confidence / 100)
        reference_calibration(correct, confidence)
        reference_thresholds(correct, confidence, 80)
        for threshold in range(0, 101, 5):  # the accuracy/coverage curve
            covered = confidence >= threshold
            _ = covered.mean(), correct[covered].mean() if covered.any() else None
    return n_groups


def run() -> dict[str, Any]:
    """Generate, load, time the views, the flow path and the Python loop; return the result."""
    qrels, judgments = synthetic_judgments()
    with tempfile.TemporaryDirectory() as tmp:
        con = duckdb.connect(str(Path(tmp) / "bench.duckdb"))
        migrate(con)
        load(con, qrels, judgments)
        n_judgments = con.execute("select count(*) from judgments").fetchall()[0][0]
        views = time_views(con)
        flow_path = best_of(lambda: read_all_once(con))
        start = time.perf_counter()
        facts = con.sql("select personality, cot, relevance, label, confidence from stg_judgment_facts").pl()
        extract_s = time.perf_counter() - start
        con.close()
    python_s, _, python_cpu_s = best_of(lambda: python_metrics(facts), repeats=2)
    user_views = [v for v in VIEWS if v not in ("metrics_cells", "metrics_groups", "metrics_long")]
    all_views_s = sum(views[v][0] for v in VIEWS)
    all_views_cpu_s = sum(views[v][2] for v in VIEWS)
    user_views_s = sum(views[v][0] for v in user_views)
    python_total_s = python_s + extract_s
    speedup = python_total_s / all_views_s
    return {
        "versions": versions("scikit-learn", "krippendorff"),
        "n_judgments": n_judgments,
        "n_groups": 22,
        "views_best_s": {name: round(best, 4) for name, (best, _, _) in views.items()},
        "views_median_s": {name: round(median, 4) for name, (_, median, _) in views.items()},
        "views_cpu_s": {name: round(cpu, 4) for name, (_, _, cpu) in views.items()},
        "all_views_s": round(all_views_s, 3),
        "all_views_cpu_s": round(all_views_cpu_s, 3),
        "analyst_views_s": round(user_views_s, 3),
        "flow_path_best_s": round(flow_path[0], 3),
        "flow_path_cpu_s": round(flow_path[2], 3),
        "python_extract_s": round(extract_s, 3),
        "python_loop_s": round(python_s, 3),
        "python_loop_cpu_s": round(python_cpu_s, 3),
        "speedup_all_views_vs_python": round(python_total_s / all_views_s, 1),
        "speedup_flow_path_vs_python": round(python_total_s / flow_path[0], 1),
        "targets": {"all_views_s": TARGET_S, "speedup": TARGET_SPEEDUP},
        "headline": [
            headline(
                "metrics: all views over 1M judgments",
                all_views_s,
                "s",
                f"<= {TARGET_S:.0f} s",
                all_views_s <= TARGET_S,
            ),
            headline(
                "metrics: speed-up vs scikit-learn loop",
                speedup,
                "x",
                f">= {TARGET_SPEEDUP:.0f}x",
                speedup >= TARGET_SPEEDUP,
            ),
        ],
    }


def main() -> None:
    """Run, print the per-view table and the summary, write the JSON result."""
    started = machine()
    result = run()
    views = {
        name: (result["views_best_s"][name], result["views_median_s"][name], result["views_cpu_s"][name])
        for name in VIEWS
    }
    print(
        f"{result['n_judgments']:,} judgments, 22 groups; {started['nproc']} x {started['cpu']}; "
        f"load average {started['load_average_at_start'][0]:.1f}"
    )
    print(f"{'view (materialised alone)':32s} {'best s':>8s} {'median s':>9s} {'cpu s':>7s}")
    for name, (best, median, cpu) in views.items():
        print(f"{name:32s} {best:8.3f} {median:9.3f} {cpu:7.3f}")
    print(
        f"{'all views, each on its own':32s} {result['all_views_s']:8.3f} {'':9s} {result['all_views_cpu_s']:7.3f}"
        f"   (target <= {TARGET_S:.0f} s)"
    )
    print(f"{'  of which the 9 analyst views':32s} {result['analyst_views_s']:8.3f}")
    print(
        f"{'peras metrics path (1 scan)':32s} {result['flow_path_best_s']:8.3f} {'':9s} "
        f"{result['flow_path_cpu_s']:7.3f}"
    )
    python_total_s = result["python_extract_s"] + result["python_loop_s"]
    print(
        f"{'python: extract + per-group loop':32s} {python_total_s:8.3f} {'':9s} {result['python_loop_cpu_s']:7.3f}"
        f"   ({result['python_extract_s']:.3f} extract + {result['python_loop_s']:.3f} loop)"
    )
    print(
        f"speed-up vs python: {result['speedup_all_views_vs_python']}x (every view alone), "
        f"{result['speedup_flow_path_vs_python']}x (peras metrics path); target >= {TARGET_SPEEDUP:.0f}x"
    )
    finish("metrics", result, started)


if __name__ == "__main__":
    main()
