"""Benchmark: a small run, whole command (issue 35, goal 1): `peras judge` of 400 DL19 pairs against its peers.

Same instant scripted server (`support.fake_openai`, its own process), same 400 DL19 pairs (the first 400 of the
collection in PERAS's order), one request per pair for everyone, `--concurrency` requests in flight:
- peras: `peras judge dl19 --all-topics --limit-pairs 400 --personality default --cot without
  --confidence-method self` (one request per judgment: label and confidence in one answer), on a fresh copy of a
  warehouse with DL19 ingested (so nothing is reused), with a running Prefect server, as a user runs it;
- umbrela (with `--umbrela PYTHON`): UMBRELA itself, umbrela 0.0.7 from PyPI in its own virtual environment
  (bench/setup_umbrela.sh makes it: three pins make it importable), judging the same pairs with its GPT judge
  (bench/umbrela_judge.py: zero-shot, its own prompt and parser, one request at a time as UMBRELA asks);
- sdk: an UMBRELA-style loop that is faster than UMBRELA (bench/peer_loops.py --loop sdk): one OpenAI SDK client, a
  semaphore of 8, one request per pair, nothing else imported: the strictest peer a small run has;
- raw: a bare asyncio loop over keep-alive connections (bench/peer_loops.py --loop raw), the ceiling.
Rounds are interleaved (the order rotates each round); each command's wall and CPU time, medians, and the
per-round ratios peras / umbrela and peras / sdk (target <= 1).

    bash bench/setup_umbrela.sh /tmp/umbrela-venv   # once: ~2.5 min, ~7 GB
    .venv/bin/python bench/bench_small_run.py [--rounds 3] [--pairs 400] [--umbrela /tmp/umbrela-venv/bin/python]
    # writes bench/results/small-run-<date>.json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import finish, headline, machine, peras_command, peras_env, timed, versions  # noqa: E402
from peras.sql import run_sql  # noqa: E402
from peras.warehouse import connect  # noqa: E402
from support.fake_openai import DEFAULT_MODEL, fake_openai_process  # noqa: E402
from support.prefect_server import prefect_server  # noqa: E402

LOOPS = Path(__file__).with_name("peer_loops.py")
UMBRELA = Path(__file__).with_name("umbrela_judge.py")
UMBRELA_JAVA = 21  # pyserini 0.39's Anserini classes (class file version 65)
CONCURRENCY = 8  # settings.concurrency's default: what `peras judge` sends at once on one endpoint


def peras_args(base_url: str, pairs: int, run_name: str) -> list[str]:
    return [
        "judge", "dl19", "--all-topics", "--limit-pairs", str(pairs), "--personality", "default", "--cot", "without",
        "--confidence-method", "self", "--base-url", base_url, "--model", DEFAULT_MODEL, "--run-name", run_name,
        "--concurrency", str(CONCURRENCY),
    ]  # fmt: skip


def export_pairs(warehouse: Path, n_pairs: int, out: Path) -> None:
    """The first `n_pairs` DL19 pairs in PERAS's order, as the peers read them (query and passage text)."""
    with connect(warehouse, read_only=True) as con:
        params = {"collection_id": "dl19", "subset_name": None, "limit_pairs": n_pairs}
        rows = run_sql(con, "judge/select_pairs", params).fetchall()
    lines = [json.dumps({"query": q, "passage": p}) for _, _, q, p, _ in rows]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def umbrela_versions(python: Path) -> dict[str, str]:
    """The versions of UMBRELA and what it brings, in its own environment."""
    names = ["umbrela", "openai", "torch", "transformers", "pyserini"]
    code = "import importlib.metadata as m, json, sys; print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))"
    done = subprocess.run([str(python), "-c", code, *names], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def java_home(given: Path | None) -> Path:
    """A JDK that runs UMBRELA's JVM: the one given, else $JAVA_HOME, else the first under /usr/lib/jvm, if Java 21+."""
    candidates = [given] if given else [Path(os.environ["JAVA_HOME"])] if os.environ.get("JAVA_HOME") else []
    for home in candidates or sorted(Path("/usr/lib/jvm").glob("*")):
        release = home / "release"
        found = re.search(r'^JAVA_VERSION="(\d+)', release.read_text() if release.is_file() else "", re.MULTILINE)
        if found and int(found.group(1)) >= UMBRELA_JAVA:
            return home
    raise SystemExit(f"UMBRELA needs a JDK {UMBRELA_JAVA} or later: none found; give one with --java-home")


def umbrela_env(base_url: str, java: Path) -> dict[str, str]:
    """What bench/umbrela_judge.py reads (its docstring says why each)."""
    return os.environ | {"OPENAI_BASE_URL": base_url, "DEPLOYMENT_NAME": DEFAULT_MODEL, "JAVA_HOME": str(java)}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pairs", type=int, default=400)
    parser.add_argument(
        "--before", type=Path, help="a checkout of earlier code: its `peras judge` is a fourth command of each round"
    )
    parser.add_argument("--umbrela", type=Path, help="UMBRELA's interpreter (bench/setup_umbrela.sh): a peer too")
    parser.add_argument("--java-home", type=Path, help="the JDK UMBRELA's JVM runs on (default: found, 21 or later)")
    options = parser.parse_args()
    java = java_home(options.java_home) if options.umbrela else None
    started = machine()
    names = ["peras", *(["umbrela"] if options.umbrela else []), "sdk", "raw", *(["before"] if options.before else [])]
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in walls}
    said: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="peras-small-run-") as tmp:
        home, base, pairs_file = Path(tmp) / "prefect", Path(tmp) / "base.duckdb", Path(tmp) / "pairs.jsonl"
        with prefect_server(home) as api_url, fake_openai_process() as base_url:
            timed(peras_command("ingest", "dl19"), peras_env(home, api_url, base))
            export_pairs(base, options.pairs, pairs_file)
            for index in range(options.rounds):
                for name in names[index % len(names) :] + names[: index % len(names)]:
                    if name in ("peras", "before"):  # a fresh copy: nothing reused from an earlier round
                        warehouse = Path(tmp) / f"round{index}-{name}.duckdb"
                        shutil.copy2(base, warehouse)
                        command = peras_command(*peras_args(base_url, options.pairs, f"small-{index}"))
                        env = peras_env(home, api_url, warehouse)
                        if name == "before":
                            env["PYTHONPATH"] = str(options.before)
                    elif name == "umbrela":
                        assert java is not None
                        command = [str(options.umbrela), str(UMBRELA), str(pairs_file)]
                        env = umbrela_env(base_url, java)
                    else:
                        command = [sys.executable, str(LOOPS), "--loop", name, "--pairs", str(pairs_file)]
                        command += ["--base-url", base_url, "--model", DEFAULT_MODEL]
                        command += ["--concurrency", str(CONCURRENCY)]
                        env = peras_env(home, api_url, base)
                    wall, cpu, output = timed(command, env)
                    walls[name].append(wall)
                    cpus[name].append(cpu)
                    said[name] = output.strip().splitlines()[-1]
                    print(f"round {index + 1} {name}: {wall:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    ratios = [p / s for p, s in zip(walls["peras"], walls["sdk"], strict=True)]
    umbrela_ratios = [p / u for p, u in zip(walls["peras"], walls.get("umbrela", []), strict=False)]
    median = {name: statistics.median(values) for name, values in walls.items()}
    result: dict[str, Any] = {
        "what": f"{options.pairs} DL19 pairs, one request each, instant server, concurrency {CONCURRENCY}, "
        "whole commands (peras with a running Prefect server)",
        "rounds": options.rounds,
        "wall_s": {name: [round(w, 3) for w in values] for name, values in walls.items()},
        "cpu_s": {name: [round(c, 3) for c in values] for name, values in cpus.items()},
        "median_wall_s": {name: round(value, 3) for name, value in median.items()},
        "ratio_peras_over_umbrela_per_round": [round(r, 3) for r in umbrela_ratios],
        "ratio_peras_over_sdk_per_round": [round(r, 3) for r in ratios],
        "ratio_peras_over_raw_median": round(median["peras"] / median["raw"], 3),
        "ratio_before_over_sdk_per_round": [
            round(b / s, 3)
            for b, s in zip(walls.get("before", []), walls["sdk"][: len(walls.get("before", []))], strict=True)
        ],
        "before_code": str(options.before) if options.before else None,
        "said": said,
        "umbrela": None,
        "versions": versions("prefect", "openai"),
        "headline": [
            # With UMBRELA itself measured (--umbrela) it is goal 1's peer, and the SDK loop, its stand-in where
            # UMBRELA is not installed, is reported.
            headline(
                "small run: peras / UMBRELA-style SDK loop, wall (median of rounds)",
                statistics.median(ratios),
                "x",
                "report" if options.umbrela else "<= 1",
                bool(options.umbrela) or statistics.median(ratios) <= 1,
            ),
        ],
    }
    if options.umbrela:
        result["umbrela"] = {"python": str(options.umbrela), "java": str(java), **umbrela_versions(options.umbrela)}
        ratio = statistics.median(umbrela_ratios)
        what = "small run: peras / UMBRELA (umbrela 0.0.7), wall (median of rounds)"
        result["headline"].insert(0, headline(what, ratio, "x", "<= 1", ratio <= 1))
    finish("small-run", result, started)


if __name__ == "__main__":
    main()
