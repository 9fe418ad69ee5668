"""Run the seven benchmarks side by side, print one short table, write each result and bench/results/all-<date>.json
(the summary of every benchmark result of the day).

1. ceiling vs pipeline on the embedded llama.cpp server   (bench_ceiling.py; ~10 min on 2 cores)
2. pipeline overhead against an instant server           (bench_overhead.py; ~5 min with the py-spy run)
3. prefix reuse: ordered vs shuffled requests            (bench_prefix.py; reuses 1's ordered run; ~5 min)
4. metric views over 1,000,000 judgments                 (bench_metrics.py; ~1 min)
5. the 50-trial classifier protocol on 4,304 pairs        (bench_classify.py; ~1 min)
6. DuckLake vs DuckDB-file warehouse (judge, commits, reads) (bench_lake.py; ~25 min; needs PostgreSQL)
7. a judge run spread over 1, 2, 4 Prefect workers      (bench_fan_out.py; ~25 min; needs PostgreSQL)

Needs `scripts/setup_local_model.sh` (1-3), ../shared/data (2) and py-spy for the profile (`pip install -e .[bench]`).

    .venv/bin/python bench/run_all.py                   # everything
    .venv/bin/python bench/run_all.py --only overhead metrics
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import (  # noqa: E402
    bench_ceiling,
    bench_classify,
    bench_fan_out,
    bench_lake,
    bench_metrics,
    bench_overhead,
    bench_prefix,
)
from bench.common import RESULTS, machine, print_headlines, write_result  # noqa: E402

NAMES = ("ceiling", "overhead", "prefix", "metrics", "classify", "lake", "fan-out")


def main() -> None:
    """Run the chosen benchmarks in order, writing each result as it finishes."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=NAMES, default=list(NAMES), help="benchmarks to run")
    parser.add_argument("--pairs", type=int, default=40, help="sample pairs for ceiling and prefix (default 40)")
    args = parser.parse_args()
    overall = machine()
    results: dict[str, dict[str, Any]] = {}
    for name in NAMES:
        if name not in args.only:
            continue
        print(f"== {name}", flush=True)
        started = machine()
        if name == "ceiling":
            results[name] = bench_ceiling.run(args.pairs)
        elif name == "overhead":
            results[name] = bench_overhead.run()
        elif name == "prefix":
            ordered = results["ceiling"]["ceiling"] if "ceiling" in results else None
            results[name] = bench_prefix.run(args.pairs, ordered)
        elif name == "metrics":
            results[name] = bench_metrics.run()
        elif name == "classify":
            results[name] = bench_classify.run()
        elif name == "lake":
            results[name] = bench_lake.run()
        else:
            results[name] = bench_fan_out.run(bench_fan_out.parse_options([]))
        print(f"   wrote {write_result(name, results[name], started)}", flush=True)
    # The summary covers every benchmark with a result from today, run now or by an earlier `--only` call.
    today = date.today().isoformat()
    files = [RESULTS / f"{name}-{today}.json" for name in NAMES if (RESULTS / f"{name}-{today}.json").is_file()]
    rows = [row for f in files for row in json.loads(f.read_text(encoding="utf-8")).get("headline", [])]
    print()
    print_headlines(rows)
    out = write_result("all", {"headline": rows, "files": [f.name for f in files]}, overall)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
