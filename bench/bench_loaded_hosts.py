"""The project's two multi-host tests on a loaded machine (issue 36: they must pass with two CPU hogs running).

Each round starts two busy-loop processes (CPU hogs, one per core on the 2-core machines this runs on), runs
- tests/test_fan_out.py::test_a_run_spread_over_two_hosts_survives_one_killed_mid_run (a run spread over two
  worker "hosts", one killed mid-run: the supervisor must not take live parts for lost), then
- tests/test_lake.py::test_two_judge_processes_at_once_on_one_lake_both_commit_everything (two judge processes
  at once on one DuckLake warehouse),
each in its own pytest process (they start their own PostgreSQL and Prefect servers), and kills the hogs. Per round
it records pass/fail per test, durations, the load averages sampled every few seconds during the round, and the
pytest tail of a failure.

    .venv/bin/python bench/bench_loaded_hosts.py [--rounds 3]   # writes bench/results/loaded-hosts-<date>[-N].json

`--tests` runs other tests the same way, `--name` names the result file: batch mode's failing providers (issue 48,
items 2-3) are checked with
    .venv/bin/python bench/bench_loaded_hosts.py --name loaded-batch --tests \
        tests/test_batch_failures.py::test_failed_lines_are_submitted_again_with_retry_failed_and_the_run_finishes \
        tests/test_batch_failures.py::test_a_provider_failing_every_batch_stops_the_run_after_its_retries_with_the_providers_error
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import headline, machine, print_headlines, versions, write_result  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TESTS = (
    "tests/test_fan_out.py::test_a_run_spread_over_two_hosts_survives_one_killed_mid_run",
    "tests/test_lake.py::test_two_judge_processes_at_once_on_one_lake_both_commit_everything",
)
HOGS = 2
# A busy loop that ends when the benchmark that started it dies (a killed benchmark left its loops spinning).
HOG = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"
SAMPLE_S = 5.0
TEST_TIMEOUT_S = 1200.0  # a test still running after this is reported as hung and killed
TAIL_CHARS = 4000


@contextmanager
def cpu_hogs(n: int) -> Iterator[list[int]]:
    """n busy-loop processes for the duration of the block; killed (by pid) after."""
    procs = [subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(n)]
    try:
        yield [p.pid for p in procs]
    finally:
        for proc in procs:
            with suppress(ProcessLookupError):
                proc.send_signal(signal.SIGKILL)
            proc.wait()


class LoadSampler(threading.Thread):
    """The 1-minute load average (and the 5- and 15-minute ones) every SAMPLE_S seconds until stopped."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.samples: list[tuple[float, float, float, float]] = []
        self.stop = threading.Event()
        self.started_at = time.monotonic()

    def run(self) -> None:
        while True:
            one, five, fifteen = os.getloadavg()
            self.samples.append((round(time.monotonic() - self.started_at, 1), one, five, fifteen))
            if self.stop.wait(SAMPLE_S):
                return

    def summary(self) -> dict[str, Any]:
        ones = [s[1] for s in self.samples]
        return {
            "n_samples": len(ones),
            "load1_min": round(min(ones), 2),
            "load1_mean": round(sum(ones) / len(ones), 2),
            "load1_max": round(max(ones), 2),
            "samples_s_load1_load5_load15": [
                [s[0], round(s[1], 2), round(s[2], 2), round(s[3], 2)] for s in self.samples
            ],
        }


def run_test(test: str) -> dict[str, Any]:
    """One test in its own pytest process: passed or not, seconds, and the output's tail when it failed."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    started = time.monotonic()
    try:
        done = subprocess.run(
            command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TEST_TIMEOUT_S, check=False
        )
        code, output, hung = done.returncode, done.stdout + done.stderr, False
    except subprocess.TimeoutExpired as exc:
        code, hung = None, True
        output = (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
    seconds = round(time.monotonic() - started, 1)
    last = (output.strip().splitlines() or [""])[-1]
    passed = code == 0 and " passed" in last and "skipped" not in last
    return {
        "test": test.split("::")[1],
        "passed": passed,
        "exit": code,
        "hung": hung,
        "seconds": seconds,
        "pytest_last_line": last,
        "tail": None if passed else output[-TAIL_CHARS:],
    }


def run_round(index: int, tests: tuple[str, ...] = TESTS) -> dict[str, Any]:
    """The tests, one after the other, with the hogs running and the load sampled."""
    sampler = LoadSampler()
    started = time.monotonic()
    with cpu_hogs(HOGS) as pids:
        sampler.start()
        results = []
        for test in tests:
            results.append(run_test(test))
            print(
                f"round {index}: {results[-1]['test'][:60]}: {'passed' if results[-1]['passed'] else 'FAILED'} "
                f"in {results[-1]['seconds']:.0f} s (load now {os.getloadavg()[0]:.1f})",
                flush=True,
            )
        sampler.stop.set()
        sampler.join()
    return {
        "round": index,
        "hogs": {"n": HOGS, "pids": pids},
        "seconds": round(time.monotonic() - started, 1),
        "tests": results,
        "load": sampler.summary(),
    }


def main(argv: list[str] | None = None) -> None:
    """Run the rounds, write the result, print the summary."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tests", nargs="+", default=list(TESTS), help="pytest ids (default: the multi-host two)")
    parser.add_argument("--name", default="loaded-hosts", help="the result file's name")
    args = parser.parse_args(argv)
    tests = tuple(args.tests)
    started, clock = machine(), time.monotonic()
    rounds: list[dict[str, Any]] = []
    out: Path | None = None
    for index in range(1, args.rounds + 1):
        rounds.append(run_round(index, tests))
        # the result file after every round (a run stopped early keeps the rounds it finished)
        result = summarise(rounds, clock, tests) | {"rounds_planned": args.rounds}
        out = write_result(args.name, result, started, out)
    print(f"{'round':>5}  {'test':60}  {'result':6}  {'s':>6}  load1 min/mean/max during the round")
    for r in rounds:
        load = r["load"]
        for t in r["tests"]:
            print(
                f"{r['round']:>5}  {t['test'][:60]:60}  {'pass' if t['passed'] else 'FAIL':6}  {t['seconds']:>6.0f}  "
                f"{load['load1_min']:.1f}/{load['load1_mean']:.1f}/{load['load1_max']:.1f}"
            )
    print_headlines(result["headline"])
    print(f"wrote {out}")


def summarise(rounds: list[dict[str, Any]], clock: float, tests: tuple[str, ...] = TESTS) -> dict[str, Any]:
    """The result file's content for the rounds run so far."""
    per_test = {
        test.split("::")[1]: [t["passed"] for r in rounds for t in r["tests"] if t["test"] == test.split("::")[1]]
        for test in tests
    }
    means = [r["load"]["load1_mean"] for r in rounds]
    rows = [
        headline(f"{name[:40]} passed", sum(passes), f"of {len(passes)}", "all", all(passes))
        for name, passes in per_test.items()
    ] + [
        headline("1-min load average during rounds (mean)", sum(means) / len(means), "", ">= 2 (hogs)", min(means) >= 2)
    ]
    return {
        "versions": versions(),
        "tests": list(tests),
        "hogs_per_round": HOGS,
        "minutes": round((time.monotonic() - clock) / 60, 1),
        "passed": per_test,
        "headline": rows,
        "rounds": rounds,
    }


if __name__ == "__main__":
    main()
