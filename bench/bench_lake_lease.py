"""Issue 48 item 1 on a loaded machine: two `peras judge` with one new run name started in the same second against one
DuckLake warehouse, beside two busy loops, several rounds in a row.

The rounds, the busy loops (one per core), the load sampled every few seconds and the pass/fail per test are
bench_loaded_hosts.py's; only the test differs: tests/test_lake_lease.py's two processes started at once (one asks
and publishes each judgment once, the other is refused naming it; never both). Its own pytest process per round
starts its own PostgreSQL.

    .venv/bin/python bench/bench_lake_lease.py [--rounds 3]   # writes bench/results/lake-lease-<date>[-N].json
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import bench_loaded_hosts as loaded  # noqa: E402
from bench.common import machine, print_headlines, write_result  # noqa: E402

TESTS = ("tests/test_lake_lease.py::test_two_judge_processes_started_in_the_same_second_never_ask_one_run_twice",)


def main(argv: list[str] | None = None) -> None:
    """Run the rounds (each writes the result file again: a run stopped early keeps the rounds it finished)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    loaded.TESTS = TESTS  # bench_loaded_hosts's rounds, with this test
    started, clock = machine(), time.monotonic()
    rounds: list[dict[str, Any]] = []
    out: Path | None = None
    result: dict[str, Any] = {}
    for index in range(1, args.rounds + 1):
        rounds.append(loaded.run_round(index))
        result = loaded.summarise(rounds, clock) | {"rounds_planned": args.rounds}
        out = write_result("lake-lease", result, started, out)
    print_headlines(result["headline"])
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
