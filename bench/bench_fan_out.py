"""A judge run spread over hosts (`peras judge --parts`): how it scales with the number of Prefect workers.

The same run each time: `peras judge dl19 --model fake-model --parts 4 --cot without` (the balanced subset,
11 personalities, no CoT, verbalized confidence; --limit-pairs N to size it), the parent as its own process,
its 4 parts (split by personality) started through `run_deployment` on the `judge-part/hosts` deployment of one
pool. 1, 2 and 4 workers ("hosts"), each a `prefect worker start --pool P --limit L` in its own directory with its
own scripted server (support.fake_openai in its own process, answering after --delay-s; 0 = instant), its
own PERAS_BASE_URLS, PERAS_SHARDS_DIR and PERAS_ENDPOINT_SLOTS_DIR, as tests/test_fan_out.py sets them up.
--worker-limit 1 (the default) makes a worker run one part at a time, as a GPU host whose server one part keeps
busy: 1 worker runs the 4 parts one after the other, 4 workers run them all at once.

Every configuration judges on a fresh DuckLake (a new catalog database in one real PostgreSQL,
support/postgres.py; data in a temporary directory), ingested untimed, with fresh workers and servers on one
Prefect server (support/prefect_server.py). Figures per run: wall time of the parent from its start to
`published`, judgments/s, time until the first child flow run started (Prefect scheduling and the workers' poll,
PREFECT_WORKER_QUERY_SECONDS), when the last part ended and the parent's gate and publish after it, each part's
flow-run time and worker, CPU seconds by component (parent, workers and their flow runs, LLM servers, PostgreSQL,
Prefect server) and the final counts, which must equal the plan exactly (or the benchmark fails). Configurations
interleave over rounds (the order rotates each round); median and spread. Load average before and after.

    .venv/bin/python bench/bench_fan_out.py [--rounds 2] [--workers 1 2 4] [--limit-pairs 100] [--delay-s 0]
    # writes bench/results/fan-out-<date>.json
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import ROOT, finish, headline, machine, peras_command, peras_env, versions  # noqa: E402
from peras.warehouse import connect  # noqa: E402
from support.fake_openai import DEFAULT_MODEL, fake_openai_process  # noqa: E402
from support.postgres import Postgres, create_database, missing_reason, postgres_server  # noqa: E402
from support.prefect_server import prefect_server  # noqa: E402

COLLECTION, SUBSET, PERSONALITIES, DEPLOYMENT = "dl19", "balanced", 11, "judge-part/hosts"
LAKE_PACKAGES = ("duckdb-extension-ducklake", "duckdb-extension-postgres-scanner")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def spread(values: list[float], digits: int = 2) -> dict[str, Any]:
    """Median, min, max and every value (the rounds' spread)."""
    return {
        "median": round(statistics.median(values), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "values": [round(v, digits) for v in values],
    }


def run_checked(command: list[str], env: dict[str, str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    """Run a command; fail loudly, with its output, on a non-zero exit."""
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done


# --- CPU time by component: every live descendant of this process plus what this process reaped -------------


def process_table() -> dict[int, tuple[int, str, float]]:
    """pid -> (parent pid, command line, CPU s of itself and its reaped children)."""
    table: dict[int, tuple[int, str, float]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        cpu = sum(int(fields[i]) for i in (11, 12, 13, 14)) / CLOCK_TICKS  # utime stime cutime cstime
        table[int(entry.name)] = (int(fields[1]), cmdline, cpu)
    return table


def component(cmdline: str) -> str:
    """Which part of the setup a direct child of this process is."""
    if "prefect worker" in cmdline:
        return "workers_and_parts"
    if "fake_openai" in cmdline:
        return "llm_servers"
    if "postgres" in cmdline:
        return "postgresql"
    if "prefect server" in cmdline:
        return "prefect_server"
    if "judge" in cmdline:
        return "parent"
    return "other"


def cpu_by_component(pg_port: int) -> dict[str, float]:
    """CPU s so far of each component's live process tree (a tree's reaped processes are in its root's cutime);
    PostgreSQL's postmaster (daemonized by pg_ctl) is found by its port."""
    table = process_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    roots = [(component(table[root][1]), root) for root in children.get(os.getpid(), [])]
    roots += [("postgresql", pid) for pid, (_, cmd, _) in table.items() if f"-p {pg_port} " in cmd and "-D " in cmd]
    totals: dict[str, float] = {}
    for name, root in roots:
        todo, cpu = [root], 0.0
        while todo:
            pid = todo.pop()
            cpu += table[pid][2]
            todo += children.get(pid, [])
        totals[name] = totals.get(name, 0.0) + cpu
    return totals


def reaped_cpu() -> float:
    """CPU s of the children this process has waited for (workers, parents, servers once stopped)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


# --- one configuration --------------------------------------------------------------------------------------


@contextlib.contextmanager
def hosts(n: int, base: dict[str, str], pool: str, here: Path, delay_s: float, limit: int) -> Iterator[list[Path]]:
    """`n` workers on `pool`, each in its own directory with its own LLM server; yields their directories."""
    flags = ["--delay", str(delay_s)] if delay_s else []
    with contextlib.ExitStack() as stack:
        workers: list[tuple[subprocess.Popen[bytes], Path]] = []
        for index in range(n):
            directory = here / f"host-{index + 1}"
            directory.mkdir(parents=True)
            base_url = stack.enter_context(fake_openai_process(0, DEFAULT_MODEL, *flags))
            env = base | {
                "PERAS_BASE_URLS": base_url,
                "PERAS_SHARDS_DIR": str(directory / "shards"),
                "PERAS_ENDPOINT_SLOTS_DIR": str(directory / "slots"),
                "PREFECT_LOGGING_LEVEL": "INFO",  # the worker's log names the flow runs it submits
            }
            command = [sys.executable, "-m", "prefect", "worker", "start", "--pool", pool]
            command += ["--name", f"{here.name}-host-{index + 1}", "--limit", str(limit)]
            with (directory / "worker.log").open("wb") as log:
                worker = subprocess.Popen(command, cwd=directory, env=env, stdout=log, stderr=subprocess.STDOUT)
            workers.append((worker, directory))
        try:
            wait_started([d for _, d in workers])
            yield [d for _, d in workers]
        finally:
            for worker, _ in workers:
                worker.terminate()
            for worker, _ in workers:
                try:
                    worker.wait(timeout=15)  # a worker can sit >60 s after SIGTERM; its parts are done
                except subprocess.TimeoutExpired:
                    worker.kill()
                    worker.wait()


def wait_started(directories: list[Path], timeout_s: float = 180.0) -> None:
    """Until every worker's log says it started (it polls its pool from then on)."""
    deadline = time.monotonic() + timeout_s
    for directory in directories:
        log = directory / "worker.log"
        while "started!" not in log.read_text(errors="replace"):
            if time.monotonic() > deadline:
                raise SystemExit(f"worker in {directory} did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.5)


def child_runs(run_name: str, started_at: float, directories: list[Path], api_url: str) -> list[dict[str, Any]]:
    """The run's judge-part flow runs (the deployment's runs with this run_name): part, state, start and end
    (s after the parent's start), run time, the worker whose log names it."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterName
    from prefect.settings import PREFECT_API_URL, temporary_settings

    with temporary_settings(updates={PREFECT_API_URL: api_url}), get_client(sync_client=True) as client:
        runs = client.read_flow_runs(
            deployment_filter=DeploymentFilter(name=DeploymentFilterName(any_=[DEPLOYMENT.split("/")[1]]))
        )
    logs = {d.name: (d / "worker.log").read_text(errors="replace") for d in directories}
    found = []
    for flow_run in runs:
        if flow_run.parameters.get("run_name") != run_name or flow_run.start_time is None:
            continue
        ended = flow_run.end_time.timestamp() - started_at if flow_run.end_time is not None else None
        found.append(
            {
                "part": flow_run.parameters.get("part"),
                "name": flow_run.name,
                "state": flow_run.state_name,
                "started_s": round(flow_run.start_time.timestamp() - started_at, 2),
                "ended_s": None if ended is None else round(ended, 2),
                "run_s": round(flow_run.total_run_time.total_seconds(), 2),
                "worker": next(
                    (name for name, log in logs.items() if f"submitting flow run '{flow_run.id}'" in log), None
                ),
            }
        )
    if not found:
        raise SystemExit(f"no judge-part flow runs found for {run_name} among {len(runs)} runs of {DEPLOYMENT}")
    return sorted(found, key=lambda r: r["started_s"])


def stored(warehouse: str, run_name: str) -> dict[str, Any]:
    """Judgments (all and distinct), llm_requests and the run's status in the lake."""
    with connect(Path(warehouse), read_only=True) as con:
        judgments, distinct = con.execute(
            "select count(*), count(distinct (query_id, doc_id, personality, cot, confidence_method)) from judgments"
        ).fetchone()  # type: ignore[misc]
        requests = con.execute("select count(*) from llm_requests").fetchone()[0]  # type: ignore[index]
        status = con.execute("select status from judge_runs where run_name = $name", {"name": run_name}).fetchall()
    return {"judgments": judgments, "distinct_judgments": distinct, "llm_requests": requests, "status": status}


def judge_spread(
    workers: int, index: int, pg: Postgres, base: dict[str, str], pool: str, tmp: Path, options: argparse.Namespace
) -> dict[str, Any]:
    """One configuration on a fresh lake: ingest (untimed), start the hosts, time the parent, check the counts."""
    here = tmp / f"w{workers}-r{index}"
    env = base | {
        "PERAS_WAREHOUSE": "ducklake:postgres:" + create_database(pg, f"fan_w{workers}_r{index}"),
        "PERAS_LAKE_DATA_PATH": str(here / "lake-data"),
        "PERAS_SHARDS_DIR": str(here / "parent-shards"),
        "PERAS_ANALYST_SNAPSHOT": "false",
    }
    started = time.perf_counter()
    run_checked(peras_command("ingest", COLLECTION), env)
    ingest_s = time.perf_counter() - started
    print(f"  {workers} worker(s), round {index}: ingested {COLLECTION} in {ingest_s:.1f} s", flush=True)
    run_name = f"fan-w{workers}-r{index}-{uuid.uuid4().hex[:6]}"
    command = peras_command(
        "judge", COLLECTION, "--subset", SUBSET, "--cot", "without", "--model", DEFAULT_MODEL,
        "--parts", str(options.parts), "--deployment", DEPLOYMENT, "--run-name", run_name,
    )  # fmt: skip
    if options.limit_pairs:
        command += ["--limit-pairs", str(options.limit_pairs)]
    with hosts(workers, env, pool, here, options.delay_s, options.worker_limit) as directories:
        load_before = os.getloadavg()
        cpu_before, reaped_before = cpu_by_component(pg.port), reaped_cpu()  # the workers and servers have started
        started_at = time.time()
        started = time.perf_counter()
        done = run_checked(command, env)
        wall = time.perf_counter() - started
        parent_cpu = reaped_cpu() - reaped_before  # the parent only: nothing else has been waited for meanwhile
        cpu_after = cpu_by_component(pg.port)
        load_after = os.getloadavg()
        parts = child_runs(run_name, started_at, directories, env["PREFECT_API_URL"])
    live = {
        name: round(cpu_after.get(name, 0.0) - cpu_before.get(name, 0.0), 1)
        for name in ("workers_and_parts", "llm_servers", "postgresql", "prefect_server")
    }
    counts = stored(env["PERAS_WAREHOUSE"], run_name)
    n_planned = int(done.stdout.strip().splitlines()[-1].split(": ", 1)[1].split(" judgments", 1)[0].replace(",", ""))
    expected = options.limit_pairs * PERSONALITIES if options.limit_pairs else n_planned
    exact = (counts["judgments"], counts["distinct_judgments"], counts["status"]) == (
        expected, expected, [("published",)],
    )  # fmt: skip
    if not exact or n_planned != expected:
        raise SystemExit(f"{run_name}: stored {counts}, planned {n_planned}, expected {expected}:\n{done.stdout}")
    last_end = max(p["ended_s"] or wall for p in parts)
    result = {
        "workers": workers,
        "round": index,
        "run_name": run_name,
        "ingest_s": round(ingest_s, 1),
        "wall_s": round(wall, 2),
        "judgments_per_s": round(counts["judgments"] / wall, 1),
        "first_child_started_s": min(p["started_s"] for p in parts),
        "last_part_ended_s": last_end,
        "gate_and_publish_s": round(wall - last_end, 2),
        "parts": parts,
        "parts_by_worker": {d.name: sum(p["worker"] == d.name for p in parts) for d in directories},
        "restarted_parts": len(parts) - options.parts,
        "cpu_s": {"parent": round(parent_cpu, 1), **live},
        "load_average_during": {
            "before": [round(x, 2) for x in load_before],
            "after": [round(x, 2) for x in load_after],
        },
        **counts,
        "status": counts["status"][0][0],
        "cli_output_tail": done.stdout.strip().splitlines()[-1:],
    }
    result["cpu_s"]["total"] = round(sum(result["cpu_s"].values()), 1)
    result["cpu_cores_busy"] = round(result["cpu_s"]["total"] / wall, 2)
    print(
        f"  {workers} worker(s), round {index}: {result['judgments']:,} judgments in {result['wall_s']} s "
        f"({result['judgments_per_s']:,}/s), first child at {result['first_child_started_s']} s, "
        f"gate+publish {result['gate_and_publish_s']} s, {result['cpu_cores_busy']} cores busy, "
        f"parts by worker {result['parts_by_worker']}",
        flush=True,
    )
    return result


def summarize(runs: list[dict[str, Any]], worker_counts: list[int]) -> dict[str, Any]:
    """Median and spread of each figure by number of workers; speed-up of the median wall time over the fewest."""
    figures = ("wall_s", "judgments_per_s", "first_child_started_s", "gate_and_publish_s", "cpu_cores_busy")
    by: dict[str, Any] = {}
    for n in worker_counts:
        mine = [r for r in runs if r["workers"] == n]
        by[f"{n}_workers"] = {figure: spread([float(r[figure]) for r in mine]) for figure in figures}
        by[f"{n}_workers"]["cpu_s_total"] = spread([float(r["cpu_s"]["total"]) for r in mine], 1)
    first = by[f"{min(worker_counts)}_workers"]["wall_s"]["median"]  # the fewest workers, whatever the order
    by["speedup_over_first"] = {
        f"{n}_workers": round(first / by[f"{n}_workers"]["wall_s"]["median"], 2) for n in worker_counts
    }
    return by


def git_state() -> dict[str, Any]:
    """The commit measured and the files other work had changed in the tree at the time."""
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--short"], cwd=ROOT, capture_output=True, text=True).stdout
    return {"commit": head, "uncommitted": dirty.splitlines()}


def run(options: argparse.Namespace) -> dict[str, Any]:
    """Every configuration, rounds interleaved, on one PostgreSQL and one Prefect server; the result."""
    reason = missing_reason()
    if reason:
        raise SystemExit(f"cannot run the fan-out benchmark here: {reason}")
    state = git_state()
    runs: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="peras-bench-fan-out-") as tmp_name,
        postgres_server() as pg,
        prefect_server(Path(tmp_name) / "prefect") as api_url,
    ):
        tmp = Path(tmp_name)
        base = peras_env(tmp / "prefect", api_url, tmp / "unused") | {
            "PREFECT_WORKER_QUERY_SECONDS": str(options.worker_poll_s),
        }
        pool = f"peras-hosts-{uuid.uuid4().hex[:8]}"
        deploy_env = base | {"PERAS_WAREHOUSE": str(tmp / "deploy.duckdb")}
        run_checked(peras_command("deploy", "--name", DEPLOYMENT, "--pool", pool), deploy_env)
        order = list(options.workers)
        for index in range(1, options.rounds + 1):
            print(f"round {index}/{options.rounds}: {' then '.join(f'{n} worker(s)' for n in order)}", flush=True)
            for n in order:
                runs.append(judge_spread(n, index, pg, base, pool, tmp, options))
            order = order[1:] + order[:1]  # each configuration goes first in some round
        pg_version = pg.version
    return result_of(runs, options, state, pg_version)


def result_of(
    runs: list[dict[str, Any]], options: argparse.Namespace, state: dict[str, Any], pg: str
) -> dict[str, Any]:
    """The result file's body: workload, runs, summary and headline."""
    summary = summarize(runs, list(options.workers))
    many, one = max(options.workers), min(options.workers)
    speedup = summary["speedup_over_first"][f"{many}_workers"]
    return {
        "versions": versions(*LAKE_PACKAGES) | {"postgresql": pg},
        "code": state,
        "workload": {
            "collection": COLLECTION,
            "subset": SUBSET,
            "personalities": PERSONALITIES,
            "cot": "without",
            "confidence_method": "verbalized",
            "limit_pairs": options.limit_pairs,
            "judgments": runs[0]["judgments"],
            "llm_requests": runs[0]["llm_requests"],
            "parts": options.parts,
            "split_by": "personality",
            "worker_limit": options.worker_limit,
            "worker_poll_s": options.worker_poll_s,
            "server": f"support.fake_openai, one process per worker, answering after {options.delay_s} s",
            "warehouse": "DuckLake, catalog in PostgreSQL, a fresh database per configuration",
            "rounds": options.rounds,
            "workers": list(options.workers),
        },
        "command": (
            f".venv/bin/python bench/bench_fan_out.py --rounds {options.rounds} "
            f"--workers {' '.join(map(str, options.workers))} --parts {options.parts} "
            f"--limit-pairs {options.limit_pairs} --delay-s {options.delay_s:g} --worker-limit {options.worker_limit} "
            f"--worker-poll-s {options.worker_poll_s:g}"
        ),
        "runs": runs,
        "summary": summary,
        "headline": [
            headline(
                f"fan-out: judgments/s, {n} worker(s)",
                summary[f"{n}_workers"]["judgments_per_s"]["median"],
                "/s",
                "recorded",
                True,
            )
            for n in options.workers
        ]
        + [
            headline(f"fan-out: speed-up {many} over {one} worker(s)", speedup, "x", "> 1", speedup > 1),
            headline(
                "fan-out: first child started",
                statistics.median(r["first_child_started_s"] for r in runs),
                "s",
                f"<= {2 * options.worker_poll_s:g} s",
                statistics.median(r["first_child_started_s"] for r in runs) <= 2 * options.worker_poll_s,
            ),
        ],
    }


def parse_options(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (run_all.py passes [] for the defaults)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds over every configuration (default 2)")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4], help="worker counts (default 1 2 4)")
    parser.add_argument("--parts", type=int, default=4, help="parts of the run (default 4)")
    parser.add_argument("--limit-pairs", type=int, default=100, help="pairs of the balanced subset (default 100)")
    parser.add_argument("--delay-s", type=float, default=0.0, help="each server's answer delay (default 0: instant)")
    parser.add_argument("--worker-limit", type=int, default=1, help="flow runs at once per worker (default 1)")
    parser.add_argument("--worker-poll-s", type=float, default=10.0, help="PREFECT_WORKER_QUERY_SECONDS (default 10)")
    return parser.parse_args(argv)


def main() -> None:
    """Run every configuration and write bench/results/fan-out-<date>.json."""
    started = machine()
    finish("fan-out", run(parse_options()), started)


if __name__ == "__main__":
    main()
