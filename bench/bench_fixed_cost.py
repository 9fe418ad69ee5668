"""Benchmark: the fixed cost of a command (issue 35, goal 1): `peras judge` with nothing left to ask.

The shipped sample is ingested into a private warehouse and judged once (default personality, no CoT: 40
judgments) against the scripted server (`support.fake_openai`, its own process); then the same command is run
again `--rounds` times: every judgment is stored, so what it costs is the command itself (imports, the Prefect flow
and task runs against a running Prefect server, opening the warehouse, planning, the gate, the analysts' snapshot).
Median wall and CPU time of those rounds; one more round under cProfile (cumulative time in the flow engine, the
task bodies, opening the warehouse, DuckDB, the snapshot) and one under `-X importtime` (import time by package:
Prefect, pydantic, pandas, which DuckDB imports to bind any query parameter, PERAS, ...).

    .venv/bin/python bench/bench_fixed_cost.py [--rounds 5]   # writes bench/results/fixed-cost-<date>.json
"""

from __future__ import annotations

import argparse
import pstats
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import finish, headline, machine, peras_command, peras_env, timed, versions  # noqa: E402
from support.fake_openai import DEFAULT_MODEL, fake_openai_process  # noqa: E402
from support.prefect_server import prefect_server  # noqa: E402

TARGET_S = 3.0
# Run-time places (cumulative seconds of the profiled command in these functions; they nest, so they do not add up).
FUNCTIONS = (
    ("flow run, whole (Prefect's engine around the flow)", "prefect/flow_engine.py", "run_flow"),
    ("the flow's body (tasks and their Prefect task runs)", "flows/judge.py", "judge"),
    ("task bodies (PERAS's own work inside task runs)", "prefect/task_engine.py", "call_task_fn"),
    ("opening and migrating the warehouse", "peras/warehouse.py", "open_migrated"),
    ("DuckDB statements", "~", "<built-in method _duckdb.execute>"),
    ("the analysts' snapshot", "tasks/publish/tasks.py", "publish_analyst_snapshot"),
)
PACKAGES = {"prefect", "pydantic", "pydantic_core", "openai", "pandas", "polars", "duckdb", "pyarrow", "numpy"}
OURS = {"peras", "tasks", "flows", "cli"}


def judge_args(base_url: str) -> list[str]:
    return [
        "judge", "sample", "--base-url", base_url, "--model", DEFAULT_MODEL, "--personality", "default",
        "--cot", "without", "--run-name", "fixed-cost",
    ]  # fmt: skip


def by_function(profile: Path) -> dict[str, float]:
    """Cumulative seconds of the profiled command in each of FUNCTIONS."""
    stats = pstats.Stats(str(profile)).stats  # type: ignore[attr-defined]
    found = {}
    for label, file_part, function in FUNCTIONS:
        found[label] = round(sum(v[3] for (f, _, name), v in stats.items() if file_part in f and name == function), 3)
    return found


def by_package(importtime: str) -> dict[str, float]:
    """Import seconds (each module's own time) by top-level package, from `python -X importtime`'s report."""
    seconds: dict[str, float] = {}
    for line in importtime.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _, name = (part.strip() for part in line.removeprefix("import time:").split("|"))
        top = name.split(".")[0]
        where = top if top in PACKAGES else "PERAS" if top in OURS else "other"
        seconds[where] = seconds.get(where, 0.0) + int(own) / 1e6
    return {k: round(v, 3) for k, v in sorted(seconds.items(), key=lambda kv: -kv[1])}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="directory to keep the profile and the -X importtime report in")
    options = parser.parse_args()
    rounds = options.rounds
    started = machine()
    with tempfile.TemporaryDirectory(prefix="peras-fixed-cost-") as tmp:
        home, warehouse, profile = Path(tmp) / "prefect", Path(tmp) / "w.duckdb", Path(tmp) / "judge.prof"
        with prefect_server(home) as api_url, fake_openai_process() as base_url:
            env = peras_env(home, api_url, warehouse)
            timed(peras_command("ingest", "sample"), env)
            first, _, said = timed(peras_command(*judge_args(base_url)), env)
            walls, cpus = [], []
            for _ in range(rounds):
                wall, cpu, again = timed(peras_command(*judge_args(base_url)), env)
                assert "(0 new; 0 requests sent" in again, again
                walls.append(wall)
                cpus.append(cpu)
            command = [sys.executable, "-m", "cProfile", "-o", str(profile), *peras_command(*judge_args(base_url))]
            profiled, _, _ = timed(command, env)
            functions = by_function(profile)
            command = [sys.executable, "-X", "importtime", *peras_command(*judge_args(base_url))]
            imported = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stderr
            imports = by_package(imported)
            if options.keep:
                options.keep.mkdir(parents=True, exist_ok=True)
                (options.keep / "judge.prof").write_bytes(profile.read_bytes())
                (options.keep / "importtime.txt").write_text(imported, encoding="utf-8")
    median = statistics.median(walls)
    result: dict[str, Any] = {
        "what": "peras judge sample (40 judgments stored) run again: nothing to ask",
        "first_run_s": round(first, 3),
        "first_run_said": said.strip().splitlines()[-1],
        "rounds": rounds,
        "wall_s": [round(w, 3) for w in walls],
        "cpu_s": [round(c, 3) for c in cpus],
        "median_wall_s": round(median, 3),
        "median_cpu_s": round(statistics.median(cpus), 3),
        "profiled_wall_s": round(profiled, 3),
        "profiled_cumulative_s": functions,
        "import_s_by_package": imports,
        "import_s_total": round(sum(imports.values()), 3),
        "versions": versions("prefect", "duckdb", "polars", "openai", "pandas"),
        "headline": [headline("no-op judge command, median wall", median, "s", f"< {TARGET_S} s", median < TARGET_S)],
    }
    finish("fixed-cost", result, started)


if __name__ == "__main__":
    main()
