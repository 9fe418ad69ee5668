"""The DuckLake warehouse (PostgreSQL catalog, Parquet data) against the default DuckDB-file warehouse.

1. The same run on both: `peras judge dl19 --all-topics --cot without` (all 43 topics, not the default balanced
   subset; 11 personalities, verbalized confidence, default chunk size; 101,860 judgments with all 9,260 pairs)
   against the instant scripted server, on a freshly ingested
   DuckDB file and on a freshly ingested DuckLake (catalog in a real PostgreSQL, support/postgres.py; data in
   a temporary directory). Wall time, judgments/s, peak RSS of the `peras judge` process (GNU time), CPU time, the
   Parquet files the lake holds afterwards, and the final counts of judgments and llm_requests (equal on both, or
   the benchmark fails). Rounds interleave the two backends, alternating which goes first; median and spread.
2. Commit latency on the lake: N commits of 8,192 judgment-shaped rows each (a transaction inserting into the
   migrated `judgments` table, the size of a loader's shard commit), from 1 process and from 2 processes at once
   (median, p95, max; conflicts retried and counted), and the same single-process commits on a DuckDB file.
3. A read after the run: `select * from metrics_summary` on the lake vs on the file of the last round (opening the
   warehouse, the first query, the median of 3 more). Then reads during a run: one more (untimed) run on each
   backend while a reader opens the warehouse every 2 s, counts judgments and queries metrics_summary: on the lake
   itself; for the file, its analyst snapshot (the file is locked by the writer).

The file warehouse runs with its defaults (analyst snapshot included); the lake has none (there is no file to copy).

    .venv/bin/python bench/bench_lake.py [--rounds 2] [--limit-pairs N] [--commits 50]
    # writes bench/results/lake-<date>.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, finish, headline, machine, peras_command, peras_env, versions  # noqa: E402
from peras import lake  # noqa: E402
from peras.warehouse import connect, migrate, snapshot_path  # noqa: E402
from support.fake_openai import DEFAULT_MODEL, fake_openai_process  # noqa: E402
from support.postgres import Postgres, create_database, missing_reason, postgres_server  # noqa: E402
from support.prefect_server import prefect_server  # noqa: E402

COLLECTION, PERSONALITIES, ROWS_PER_COMMIT = "dl19", 11, 8192
LAKE_PACKAGES = ("duckdb-extension-ducklake", "duckdb-extension-postgres-scanner")
# Judgment-shaped rows for the commit test: every column of the judgments table, values like a run's.
COMMIT_ROWS = """
    insert into judgments by name
    select $run_id as run_id, 'q' || (i % 43) as query_id, 'd' || i as doc_id,
           ['default','HA','LA','HC','LC','HE','LE','HN','LN','HO','LO'][1 + i % 11] as personality,
           false as cot, 'verbalized' as confidence_method, (i % 4)::integer as label,
           (i % 101)::double as confidence, 'ok' as status, sha256(i::varchar) as label_request_id,
           sha256((-i)::varchar) as confidence_request_id, now()::timestamp as judged_at,
           sha256('d' || i) as text_sha
    from range($first, $first + $rows) t(i)"""


def spread(values: list[float], digits: int = 3) -> dict[str, Any]:
    """Median, min, max and every value (the rounds' spread)."""
    return {
        "median": round(statistics.median(values), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "values": [round(v, digits) for v in values],
    }


def latency(values: list[float]) -> dict[str, Any]:
    """Median, p95 and max of commit latencies, in milliseconds."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "n": len(values),
        "median_ms": round(1000 * statistics.median(ordered), 1),
        "p95_ms": round(1000 * p95, 1),
        "max_ms": round(1000 * ordered[-1], 1),
    }


def judge_command(base_url: str, limit_pairs: int | None) -> list[str]:
    """`peras judge dl19 --all-topics --cot without` under GNU time (peak RSS, wall and CPU time on stderr)."""
    limit = ["--limit-pairs", str(limit_pairs)] if limit_pairs else []
    judge = peras_command(
        "judge", COLLECTION, "--all-topics", "--cot", "without", "--base-url", base_url, "--model", DEFAULT_MODEL,
        "--run-name", "bench-lake", *limit,
    )  # fmt: skip
    return ["/usr/bin/time", "-f", "%M %e %U %S", *judge]


def run_checked(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run a command; fail loudly, with its output, on a non-zero exit."""
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


def counts(warehouse: str) -> dict[str, int]:
    """Judgments and llm_requests stored in the warehouse."""
    with connect(Path(warehouse), read_only=True) as con:
        return {
            table: int(con.execute(f"select count(*) from {table}").fetchone()[0])  # type: ignore[index]
            for table in ("judgments", "llm_requests")
        }


def time_summary(warehouse: str, repeat: int = 3) -> dict[str, Any]:
    """Open the warehouse read-only, query metrics_summary once cold and `repeat` times more."""
    started = time.perf_counter()
    with connect(Path(warehouse), read_only=True) as con:
        opened = time.perf_counter()
        rows = con.execute("select * from metrics_summary").fetchall()
        first = time.perf_counter()
        again = []
        for _ in range(repeat):
            before = time.perf_counter()
            con.execute("select * from metrics_summary").fetchall()
            again.append(time.perf_counter() - before)
    return {
        "rows": len(rows),
        "open_s": round(opened - started, 3),
        "first_query_s": round(first - opened, 3),
        "warm_query_median_s": round(statistics.median(again), 3),
    }


def poll_reads(warehouse: str, stop: threading.Event, interval_s: float = 2.0) -> list[dict[str, Any]]:
    """While a run writes: every `interval_s`, open the warehouse read-only (for a file: its analyst snapshot,
    the file itself being locked by the writer), count judgments and query metrics_summary."""
    polls: list[dict[str, Any]] = []
    source = warehouse if lake.is_lake(warehouse) else str(snapshot_path(Path(warehouse)))
    started = time.perf_counter()
    while not stop.wait(interval_s):
        at = time.perf_counter()
        poll: dict[str, Any] = {"at_s": round(at - started, 1)}
        try:
            with connect(Path(source), read_only=True, wait_s=0) as con:
                opened = time.perf_counter()
                poll["judgments_seen"] = int(con.execute("select count(*) from judgments").fetchone()[0])  # type: ignore[index]
                counted = time.perf_counter()
                poll["metrics_summary_rows"] = len(con.execute("select * from metrics_summary").fetchall())
                poll |= {
                    "open_s": round(opened - at, 3),
                    "count_s": round(counted - opened, 3),
                    "metrics_summary_s": round(time.perf_counter() - counted, 3),
                }
        except Exception as exc:  # no snapshot yet, a locked file, a view missing: recorded, not fatal
            poll["error"] = " ".join(str(exc).split())[:200]
        polls.append(poll)
    return polls


def read_during(backend: str, env: dict[str, str], base_url: str, limit_pairs: int | None) -> dict[str, Any]:
    """An extra, untimed run with a reader polling the warehouse meanwhile (what an analyst sees mid-run)."""
    run_checked(peras_command("ingest", COLLECTION), env)
    stop = threading.Event()
    polls: list[dict[str, Any]] = []
    reader = threading.Thread(target=lambda: polls.extend(poll_reads(env["PERAS_WAREHOUSE"], stop)))
    reader.start()
    try:
        done = run_checked(judge_command(base_url, limit_pairs), env)
    finally:
        stop.set()
        reader.join()
    ok = [p for p in polls if "error" not in p]
    summary: dict[str, Any] = {
        "backend": backend,
        "reads_from": "the lake" if backend == "lake" else "the analyst snapshot (<stem>.analyst.duckdb)",
        "judge_wall_s": float(done.stderr.strip().splitlines()[-1].split()[1]),
        "polls": len(polls),
        "polls_ok": len(ok),
        "judgments_seen": [p["judgments_seen"] for p in ok],
        "errors": sorted({p["error"] for p in polls if "error" in p}),
    }
    if ok:
        summary["metrics_summary_s"] = spread([p["metrics_summary_s"] for p in ok])
        summary["open_s"] = spread([p["open_s"] for p in ok])
    print(f"  {backend:4s} read during run: {len(ok)}/{len(polls)} polls answered", flush=True)
    return summary


def judge_on(backend: str, env: dict[str, str], base_url: str, limit_pairs: int | None) -> dict[str, Any]:
    """Ingest (untimed), then the timed judge run; its figures and the warehouse's counts."""
    started = time.perf_counter()
    run_checked(peras_command("ingest", COLLECTION), env)
    ingest_s = time.perf_counter() - started
    done = run_checked(judge_command(base_url, limit_pairs), env)
    kilobytes, wall, user, system = done.stderr.strip().splitlines()[-1].split()
    stored = counts(env["PERAS_WAREHOUSE"])
    run = {
        "backend": backend,
        "ingest_s": round(ingest_s, 2),
        "wall_s": float(wall),
        "cpu_s": round(float(user) + float(system), 2),
        "judgments_per_s": round(stored["judgments"] / float(wall), 1),
        "peak_rss_mb": round(int(kilobytes) / 1024, 1),
        **stored,
        "cli_output_tail": done.stdout.strip().splitlines()[-2:],
    }
    if backend == "lake":
        parquet = list(Path(env["PERAS_LAKE_DATA_PATH"]).rglob("*.parquet"))
        run["parquet_files"] = len(parquet)
        run["parquet_bytes"] = sum(p.stat().st_size for p in parquet)
    else:
        run["warehouse_bytes"] = Path(env["PERAS_WAREHOUSE"]).stat().st_size
    print(
        f"  {backend:4s}: {run['judgments']:,} judgments in {run['wall_s']} s ({run['judgments_per_s']:,}/s), "
        f"peak RSS {run['peak_rss_mb']} MB",
        flush=True,
    )
    return run


def compare_runs(
    tmp: Path, pg: Postgres, api_url: str, base_url: str, rounds: int, limit_pairs: int | None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rounds of file and lake runs (alternating which goes first); the last round's warehouses for the read test."""
    runs: list[dict[str, Any]] = []
    last: dict[str, dict[str, str]] = {}
    for index in range(rounds):
        here = tmp / f"round-{index + 1}"
        envs = {
            "file": peras_env(tmp / "prefect", api_url, here / "file" / "peras.duckdb"),
            "lake": peras_env(tmp / "prefect", api_url, here / "unused")
            | {
                "PERAS_WAREHOUSE": "ducklake:postgres:" + create_database(pg, f"lake_{index + 1}"),
                "PERAS_LAKE_DATA_PATH": str(here / "lake-data"),
                "PERAS_SHARDS_DIR": str(here / "lake-shards"),
            },
        }
        order = ("file", "lake") if index % 2 == 0 else ("lake", "file")
        print(f"round {index + 1}/{rounds} ({' then '.join(order)})", flush=True)
        for backend in order:
            runs.append({"round": index + 1, **judge_on(backend, envs[backend], base_url, limit_pairs)})
        last = envs
    reads: dict[str, Any] = {backend: time_summary(env["PERAS_WAREHOUSE"]) for backend, env in last.items()}
    print("reads during a run (extra, untimed)", flush=True)
    here = tmp / "during"
    during = {
        "file": peras_env(tmp / "prefect", api_url, here / "file" / "peras.duckdb"),
        "lake": peras_env(tmp / "prefect", api_url, here / "unused")
        | {
            "PERAS_WAREHOUSE": "ducklake:postgres:" + create_database(pg, "lake_during"),
            "PERAS_LAKE_DATA_PATH": str(here / "lake-data"),
            "PERAS_SHARDS_DIR": str(here / "lake-shards"),
        },
    }
    reads["during_run"] = {backend: read_during(backend, env, base_url, limit_pairs) for backend, env in during.items()}
    return runs, reads


def commit_worker(spec: dict[str, Any]) -> dict[str, Any]:
    """One writer process: open the lake (or file), wait for the common start, time each commit."""
    target = spec["target"]
    con = lake.open_lake(target, None, False) if lake.is_lake(target) else None
    if con is None:
        import duckdb

        con = duckdb.connect(target)
    times, retries = [], 0
    while time.time() < spec["start_at"]:
        time.sleep(0.005)
    for commit in range(spec["commits"]):
        first = (spec["writer"] * spec["commits"] + commit) * ROWS_PER_COMMIT
        params = {"run_id": f"commit-bench-{spec['writer']}", "first": first, "rows": ROWS_PER_COMMIT}
        started = time.perf_counter()
        while True:
            try:
                con.execute("begin transaction")
                con.execute(COMMIT_ROWS, params)
                con.execute("commit")
                break
            except Exception as exc:
                with contextlib.suppress(Exception):  # a failed commit has ended the transaction already
                    con.execute("rollback")
                if not lake.is_conflict(exc):
                    raise
                retries += 1
        times.append(time.perf_counter() - started)
    con.close()
    return {"times_s": times, "retries": retries}


def commit_latency(target: str, commits: int, writers: int) -> dict[str, Any]:
    """`writers` processes committing `commits` shard-sized transactions each, started together."""
    start_at = time.time() + 5.0  # time to load the extensions and attach in every process
    processes = [
        subprocess.Popen(
            [sys.executable, __file__, "--commit-worker", json.dumps(spec)],
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        for spec in (
            {"target": target, "writer": writer, "commits": commits, "start_at": start_at} for writer in range(writers)
        )
    ]
    outputs = []
    for process in processes:
        out, _ = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"commit worker failed ({process.returncode})")
        outputs.append(json.loads(out.strip().splitlines()[-1]))
    times = [t for out in outputs for t in out["times_s"]]
    span = max(sum(out["times_s"]) for out in outputs)
    return {
        "writers": writers,
        "commits_per_writer": commits,
        "rows_per_commit": ROWS_PER_COMMIT,
        **latency(times),
        "retries": sum(out["retries"] for out in outputs),
        "rows_per_s": round(writers * commits * ROWS_PER_COMMIT / span),
    }


def commits_part(tmp: Path, pg: Postgres, commits: int) -> dict[str, Any]:
    """Commit latency: 1 and 2 writers on a fresh migrated lake, 1 writer on a fresh migrated DuckDB file."""
    target = "ducklake:postgres:" + create_database(pg, "commits")
    with lake.open_lake(target, (tmp / "commits-data").resolve(), False) as con:
        migrate(con)
    file_target = tmp / "commits.duckdb"
    with connect(file_target) as con:
        migrate(con)
    result: dict[str, Any] = {
        "lake_1_writer": commit_latency(target, commits, 1),
        "lake_2_writers": commit_latency(target, commits, 2),
        "file_1_writer": commit_latency(str(file_target), commits, 1),
    }
    result["lake_parquet_files_after"] = len(list((tmp / "commits-data").rglob("*.parquet")))
    for name in ("lake_1_writer", "lake_2_writers", "file_1_writer"):
        r = result[name]
        print(f"  {name}: median {r['median_ms']} ms, p95 {r['p95_ms']} ms, max {r['max_ms']} ms", flush=True)
    return result


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median and spread of each figure by backend, and the lake/file ratios of the medians."""
    by: dict[str, dict[str, Any]] = {}
    for backend in ("file", "lake"):
        mine = [r for r in runs if r["backend"] == backend]
        figures = ["wall_s", "judgments_per_s", "peak_rss_mb", "cpu_s"] + (
            ["parquet_files"] if backend == "lake" else []
        )
        by[backend] = {figure: spread([float(r[figure]) for r in mine]) for figure in figures}
    by["lake_over_file"] = {
        figure: round(by["lake"][figure]["median"] / by["file"][figure]["median"], 3)
        for figure in ("wall_s", "judgments_per_s", "peak_rss_mb", "cpu_s")
    }
    return by


def git_state() -> dict[str, Any]:
    """The commit measured and the files other work had changed in the tree at the time."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--short"], cwd=ROOT, capture_output=True, text=True).stdout
    return {"commit": head, "uncommitted": dirty.splitlines()}


def run(rounds: int = 2, limit_pairs: int | None = None, commits: int = 50) -> dict[str, Any]:
    """All three parts on one PostgreSQL, one Prefect server and one instant server; the result."""
    reason = missing_reason()
    if reason:
        raise SystemExit(f"cannot run the lake benchmark here: {reason}")
    state = git_state()
    with (
        tempfile.TemporaryDirectory(prefix="peras-bench-lake-") as tmp_name,
        postgres_server() as pg,
        prefect_server(Path(tmp_name) / "prefect") as api_url,
        fake_openai_process() as base_url,
    ):
        tmp = Path(tmp_name)
        runs, reads = compare_runs(tmp, pg, api_url, base_url, rounds, limit_pairs)
        print("commit latency", flush=True)
        commit = commits_part(tmp, pg, commits)
        pg_version = pg.version
    stored = [(r["judgments"], r["llm_requests"]) for r in runs]
    equal = len(set(stored)) == 1
    if not equal:
        raise SystemExit(f"the backends stored different counts: {[(r['backend'], r['judgments']) for r in runs]}")
    summary = summarize(runs)
    reads["lake_over_file_first_query"] = round(reads["lake"]["first_query_s"] / reads["file"]["first_query_s"], 2)
    two = commit["lake_2_writers"]
    return {
        "versions": versions(*LAKE_PACKAGES) | {"postgresql": pg_version},
        "code": state,
        "workload": {
            "collection": COLLECTION,
            "personalities": PERSONALITIES,
            "cot": "without",
            "confidence_method": "verbalized",
            "topics": "all (--all-topics)",
            "limit_pairs": limit_pairs,
            "judgments": stored[0][0],
            "llm_requests": stored[0][1],
            "server": "support.fake_openai (instant), own process",
            "rounds": rounds,
        },
        "runs": runs,
        "summary": summary,
        "counts_equal": equal,
        "metrics_summary_after_run": reads,
        "commit_latency": commit,
        "headline": [
            headline("lake: judge dl19 x 11, judgments/s", summary["lake"]["judgments_per_s"]["median"],
                     "judg/s", "report", True),
            headline("lake / file: judge wall time", summary["lake_over_file"]["wall_s"], "x", "report", True),
            headline("lake / file: peak RSS", summary["lake_over_file"]["peak_rss_mb"], "x", "report", True),
            headline("lake: shard commit p95, 2 writers", two["p95_ms"], "ms", "report", True),
            headline("lake / file: metrics_summary first query", reads["lake_over_file_first_query"], "x",
                     "report", True),
            headline("lake and file counts equal", 1.0, "", "equal", equal),
        ],
    }  # fmt: skip


def main() -> None:
    """Run the benchmark (or, with --commit-worker, one writer of the commit test) and write the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="interleaved file/lake rounds (default 2)")
    parser.add_argument("--limit-pairs", type=int, default=None, help="DL19 pairs (default all 9,260)")
    parser.add_argument("--commits", type=int, default=50, help="commits per writer in the latency test")
    parser.add_argument("--commit-worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.commit_worker:
        print(json.dumps(commit_worker(json.loads(args.commit_worker))))
        return
    started = machine()
    result = run(args.rounds, args.limit_pairs, args.commits)
    finish("lake", result, started)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
