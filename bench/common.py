"""What every benchmark shares: where it ran, with what, and how its result is written and summarised.

A result file is JSON with `benchmark`, `date`, `machine` (CPU, cores, load average before and after: the machines
are shared, so the load is part of the result), `versions`, the benchmark's own numbers and `headline`: rows of
(measure, value, unit, target, met) that `bench/run_all.py` prints as one table.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from datetime import date
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from peras.settings import load_settings
from support.prefect_server import server_env

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results"
CORE_PACKAGES = ("peras", "prefect", "duckdb", "polars", "numpy", "openai", "httpx")


def cpu_name() -> str:
    """The CPU model from /proc/cpuinfo (platform.processor() is empty on Linux)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict[str, Any]:
    """Where the numbers are taken; call again at the end and merge `load_average_at_end`."""
    return {
        "cpu": cpu_name(),
        "nproc": os.cpu_count(),
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
    }


def versions(*packages: str) -> dict[str, str]:
    """Installed versions of the core packages plus `packages` ("absent" when not installed)."""
    found: dict[str, str] = {}
    for name in (*CORE_PACKAGES, *packages):
        try:
            found[name] = version(name)
        except PackageNotFoundError:
            found[name] = "absent"
    return found


def headline(measure: str, value: float, unit: str, target: str, met: bool) -> dict[str, Any]:
    """One row of the summary table."""
    return {"measure": measure, "value": value, "unit": unit, "target": target, "met": bool(met)}


def write_result(name: str, result: dict[str, Any], started: dict[str, Any], out: Path | None = None) -> Path:
    """Write bench/results/<name>-<date>.json with the machine (load average before and after) and date.

    `out`: rewrite that file (a benchmark writing its result after each round passes the path it got first)."""
    today = date.today().isoformat()
    machine_info = started | {"load_average_at_end": [round(x, 2) for x in os.getloadavg()]}
    payload = {"benchmark": name, "date": today, "machine": machine_info, **result}
    RESULTS.mkdir(parents=True, exist_ok=True)
    if out is None:
        out = RESULTS / f"{name}-{today}.json"
        serial = 1
        while out.exists():  # a later run the same day never overwrites an earlier result
            serial += 1
            out = RESULTS / f"{name}-{today}-{serial}.json"
    out.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    return out


def print_headlines(rows: list[dict[str, Any]]) -> None:
    """The short table: measure, value, target, met."""
    width = max(len(r["measure"]) for r in rows)
    print(f"{'measure':{width}s}  {'value':>14s}  {'target':>18s}  met")
    for r in rows:
        value = f"{r['value']:,.2f} {r['unit']}"
        print(f"{r['measure']:{width}s}  {value:>14s}  {r['target']:>18s}  {'yes' if r['met'] else 'NO'}")


def finish(name: str, result: dict[str, Any], started: dict[str, Any]) -> None:
    """Every benchmark's last lines: the headline table, then where the JSON result went."""
    print_headlines(result["headline"])
    print(f"wrote {write_result(name, result, started)}")


def sample_pairs_argument(description: str) -> int:
    """The --pairs option of the benchmarks that judge the shipped sample with the embedded model."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--pairs", type=int, default=40, help="sample pairs (1-40; default all 40)")
    return int(parser.parse_args().pairs)


def peras_env(home: Path, api_url: str, warehouse: Path) -> dict[str, str]:
    """Environment of the peras subprocesses: a private warehouse, the real data, the bench's Prefect server."""
    return {
        **os.environ,
        **server_env(home),
        "PREFECT_API_URL": api_url,
        "PERAS_WAREHOUSE": str(warehouse),
        "PERAS_DATA_DIR": str(load_settings().data_dir),  # ../shared/data unless PERAS_DATA_DIR says otherwise
    }


def peras_command(*args: str) -> list[str]:
    """`peras ARGS` with this interpreter's entry point."""
    return [str(Path(sys.executable).with_name("peras")), *args]


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Run a command; (wall s, CPU s of the command and its children, output). Fails loudly on a non-zero exit."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[1:3])} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout
