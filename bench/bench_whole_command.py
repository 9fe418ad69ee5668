"""Benchmark: the whole `peras judge` command against a raw asyncio loop at 9,260 DL19 pairs (issue 54, part 2).

Same instant scripted server (`support.fake_openai`, its own process), the same 9,260 DL19 pairs, one request per
judgment, 8 requests in flight for both:
- peras: `peras judge dl19 --all-topics --limit-pairs 9260 --personality default --cot without --confidence-method
  self --concurrency 8` on a fresh copy of a warehouse with DL19 ingested, against a running Prefect server: imports,
  the preflight, the flow and its tasks, the asking, the shard loads, the gate, the snapshot and the summary;
- raw: bench/peer_loops.py --loop raw, keep-alive connections written by hand, nothing stored (the ceiling).
Rounds are interleaved (the order rotates each round). Each command's wall time, CPU time (user + system, its
children included) and peak RSS come from GNU time. With --profile, one more peras run is sampled by py-spy (the
thread holding the GIL, 100 Hz): the share of its Python time per stage says where the time goes after the asking.

    .venv/bin/python bench/bench_whole_command.py [--rounds 3] [--pairs 9260] [--profile]
    # writes bench/results/whole-command-<date>.json
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_overhead import profile_run  # noqa: E402
from bench.bench_small_run import CONCURRENCY, LOOPS, export_pairs, peras_args  # noqa: E402
from bench.common import finish, headline, machine, peras_command, peras_env, timed, versions  # noqa: E402
from support.fake_openai import DEFAULT_MODEL, fake_openai_process  # noqa: E402
from support.prefect_server import prefect_server  # noqa: E402

# Whole command / raw loop: at least half its throughput, at most 3x its CPU; and under 500 MB.
THROUGHPUT_GOAL, CPU_GOAL, RSS_GOAL_MB = 0.5, 3.0, 500


def gnu_timed(command: list[str], env: dict[str, str], scratch: Path) -> dict[str, float]:
    """Wall s, CPU s (user + system, children included) and peak RSS (MB) of a command, by GNU time."""
    out = scratch / "time.txt"
    done = subprocess.run(
        ["/usr/bin/time", "-f", "%e %U %S %M", "-o", str(out), *command],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[1:3])} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    wall, user, system, kilobytes = out.read_text().split()[-4:]
    return {"wall_s": float(wall), "cpu_s": float(user) + float(system), "peak_rss_mb": round(int(kilobytes) / 1024)}


def commands(tmp: Path, base_url: str, n_pairs: int, index: int) -> dict[str, list[str]]:
    """The two commands of round `index` (peras on a fresh copy of the ingested warehouse)."""
    warehouse = tmp / f"round{index}" / "peras.duckdb"
    warehouse.parent.mkdir()
    shutil.copy2(tmp / "base" / "peras.duckdb", warehouse)
    raw = [sys.executable, str(LOOPS), "--loop", "raw", "--pairs", str(tmp / "pairs.jsonl"), "--base-url", base_url]
    return {
        "peras": peras_command(*peras_args(base_url, n_pairs, f"whole-{index}")),
        "raw": [*raw, "--model", DEFAULT_MODEL, "--concurrency", str(CONCURRENCY)],
    }


def rounds(tmp: Path, home: Path, api_url: str, base_url: str, n_pairs: int, n_rounds: int) -> dict[str, list[Any]]:
    """Interleaved rounds; each command's figures per round."""
    runs: dict[str, list[Any]] = {"peras": [], "raw": []}
    for index in range(n_rounds):
        todo = commands(tmp, base_url, n_pairs, index)
        env = peras_env(home, api_url, tmp / f"round{index}" / "peras.duckdb")
        for name in list(todo)[index % 2 :] + list(todo)[: index % 2]:
            runs[name].append(gnu_timed(todo[name], env, tmp))
            print(f"round {index + 1} {name}: {runs[name][-1]}", flush=True)
    return runs


def medians(runs: dict[str, list[dict[str, float]]]) -> dict[str, dict[str, float]]:
    return {name: {k: round(statistics.median(r[k] for r in rs), 3) for k in rs[0]} for name, rs in runs.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=9260)
    parser.add_argument("--profile", action="store_true", help="one more peras run sampled by py-spy")
    options = parser.parse_args()
    started = machine()
    with tempfile.TemporaryDirectory(prefix="peras-whole-") as tmp_name:
        tmp, profile = Path(tmp_name), {"skipped": "no --profile"}
        home = tmp / "prefect"
        with prefect_server(home) as api_url, fake_openai_process() as base_url:
            timed(peras_command("ingest", "dl19"), peras_env(home, api_url, tmp / "base" / "peras.duckdb"))
            export_pairs(tmp / "base" / "peras.duckdb", options.pairs, tmp / "pairs.jsonl")
            runs = rounds(tmp, home, api_url, base_url, options.pairs, options.rounds)
            if options.profile:
                command = commands(tmp, base_url, options.pairs, options.rounds)["peras"]
                env = peras_env(home, api_url, tmp / f"round{options.rounds}" / "peras.duckdb")
                profile = profile_run(command, env, tmp / "stacks.txt")
    median = medians(runs)
    throughput = median["raw"]["wall_s"] / median["peras"]["wall_s"]  # same judgments: throughput is 1 / wall
    cpu = median["peras"]["cpu_s"] / median["raw"]["cpu_s"]
    rss = median["peras"]["peak_rss_mb"]
    result = {
        "what": f"{options.pairs} DL19 pairs, one request each, instant server, concurrency {CONCURRENCY}, whole "
        "commands (peras with a running Prefect server) against a raw asyncio loop; GNU time",
        "rounds": options.rounds,
        "runs": runs,
        "median": median,
        "judgments_per_s": {name: round(options.pairs / m["wall_s"], 1) for name, m in median.items()},
        "cpu_ms_per_judgment": {name: round(1000 * m["cpu_s"] / options.pairs, 3) for name, m in median.items()},
        "profile": profile,
        "versions": versions(),
        "headline": [
            headline("whole command / raw loop, throughput", throughput, "x", ">= 0.5", throughput >= THROUGHPUT_GOAL),
            headline("whole command / raw loop, CPU per judgment", cpu, "x", "<= 3", cpu <= CPU_GOAL),
            headline("whole command, peak RSS", rss, "MB", "< 500", rss < RSS_GOAL_MB),
        ],
    }
    finish("whole-command", result, started)


if __name__ == "__main__":
    main()
