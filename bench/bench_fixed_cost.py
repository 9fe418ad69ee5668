"""Benchmark: the fixed cost of a command (issue 35, goal 1): `peras judge` with nothing left to ask.

The shipped sample is ingested into a private warehouse and judged once (default personality, no CoT: 40
judgments) against the scripted server (`support.fake_openai`, its own process); then, in interleaved rounds (the
order rotating), three commands against the same running Prefect server:
- settled: the same `peras judge` again, as a user runs it: every judgment is stored and nothing changed, so it is
  answered from the warehouse before Prefect is imported (tasks/judge/settled.py);
- flow: the same with --retry-failed (no failures: nothing is asked), which always goes through the Prefect flow
  (imports, the flow and task runs, opening the warehouse, planning, the gate, the analysts' snapshot);
- empty: an empty @flow run as `peras` runs one (bench/empty_flow.py): Prefect's own cost, irreducible here.
Median wall and CPU time of each; one more flow round under cProfile (cumulative time in the flow engine, the
task bodies, opening the warehouse, DuckDB, the snapshot) and one round of each peras kind under `-X importtime`
(import time by package: Prefect, pydantic, pandas, which DuckDB imports to bind any query parameter, PERAS, ...).

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


def command_of(kind: str, base_url: str) -> list[str]:
    """The command of one kind of round: settled (as a user runs it), flow (forced through the flow), empty."""
    if kind == "empty":
        return [sys.executable, str(Path(__file__).with_name("empty_flow.py"))]
    return peras_command(*judge_args(base_url), *(["--retry-failed"] if kind == "flow" else []))


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
            kinds = ("settled", "flow", "empty")
            walls: dict[str, list[float]] = {kind: [] for kind in kinds}
            cpus: dict[str, list[float]] = {kind: [] for kind in kinds}
            empty_split: list[str] = []
            for index in range(rounds):  # interleaved, the order rotating: the machine is shared
                for kind in kinds[index % 3 :] + kinds[: index % 3]:
                    wall, cpu, said_now = timed(command_of(kind, base_url), env)
                    if kind == "empty":
                        empty_split.append(said_now.strip())
                    else:
                        assert "(0 new; 0 requests sent" in said_now, said_now
                    walls[kind].append(wall)
                    cpus[kind].append(cpu)
            command = [sys.executable, "-m", "cProfile", "-o", str(profile), *command_of("flow", base_url)]
            profiled, _, _ = timed(command, env)
            functions = by_function(profile)
            imports = {}
            for kind in ("settled", "flow"):
                command = [sys.executable, "-X", "importtime", *command_of(kind, base_url)]
                imported = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stderr
                imports[kind] = by_package(imported)
                if options.keep:
                    options.keep.mkdir(parents=True, exist_ok=True)
                    (options.keep / f"importtime-{kind}.txt").write_text(imported, encoding="utf-8")
            if options.keep:
                (options.keep / "judge-flow.prof").write_bytes(profile.read_bytes())
    median = {kind: statistics.median(values) for kind, values in walls.items()}
    result: dict[str, Any] = {
        "what": "peras judge sample (40 judgments stored) run again: nothing to ask. settled: as a user runs it "
        "(answered before Prefect); flow: the same with --retry-failed (no failures: nothing asked), which goes "
        "through the Prefect flow; empty: an empty @flow run the same way (bench/empty_flow.py), Prefect's own cost",
        "first_run_s": round(first, 3),
        "first_run_said": said.strip().splitlines()[-1],
        "rounds": rounds,
        "wall_s": {kind: [round(w, 3) for w in values] for kind, values in walls.items()},
        "cpu_s": {kind: [round(c, 3) for c in values] for kind, values in cpus.items()},
        "median_wall_s": {kind: round(value, 3) for kind, value in median.items()},
        "median_cpu_s": {kind: round(statistics.median(values), 3) for kind, values in cpus.items()},
        "empty_flow_import_and_flow_s": empty_split,
        "flow_over_empty_flow_s": round(median["flow"] - median["empty"], 3),
        "profiled_wall_s (flow)": round(profiled, 3),
        "profiled_cumulative_s (flow)": functions,
        "import_s_by_package": imports,
        "import_s_total": {kind: round(sum(values.values()), 3) for kind, values in imports.items()},
        "versions": versions("prefect", "duckdb", "polars", "openai", "pandas"),
        "headline": [
            headline(
                "no-op judge command, median wall",
                median["settled"],
                "s",
                f"< {TARGET_S} s",
                median["settled"] < TARGET_S,
            ),
            headline(
                "no-op judge through the flow minus an empty flow, median wall",
                median["flow"] - median["empty"],
                "s",
                "small",
                True,
            ),
        ],
    }
    finish("fixed-cost", result, started)


if __name__ == "__main__":
    main()
