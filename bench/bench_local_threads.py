"""The embedded model's speed under llama.cpp's thread settings, on free cores and beside busy loops (issue 54).

llama-server with `--threads 2` on 2 cores and llama.cpp's default `--poll 50` spins its threads at every barrier:
one thread descheduled by another job stalls both. This benchmark starts the embedded llama-server once per setting
and load, sends the demo's own requests (the sample's pairs, the study's label prompts with and without CoT and the
confidence prompt, under the eleven personalities, the embedded caps) one at a time as the demo's one slot takes
them, for at most `--seconds` per setting, and records requests a minute, items a minute (an item is a label and its
confidence: two requests) and llama.cpp's own prompt and generation tokens a second (its `timings`). Settings run
interleaved in every round, so the machine's other work falls on all of them alike; each round runs them with no
busy loop and with `--hogs` busy loops (one per core: load ~4 on 2 cores with the server's own threads).

    .venv/bin/python bench/bench_local_threads.py [--rounds 3] [--seconds 60] [--hogs 2]
    # writes bench/results/local-threads-<date>[-N].json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_loaded_hosts import cpu_hogs  # noqa: E402
from bench.common import headline, machine, print_headlines, versions, write_result  # noqa: E402
from peras.local_model.server import thread_flags  # noqa: E402
from peras.local_model.weights import DEFAULT_MODEL  # noqa: E402
from peras.settings import load_settings  # noqa: E402

# The settings compared: the thread flags peras passes (see peras/local_model/server.py: thread_flags).
SETTINGS: dict[str, list[str]] = {
    "t2-poll50 (before)": ["--threads", "2", "--threads-batch", "2"],
    "t2-poll0": ["--threads", "2", "--threads-batch", "2", "--poll", "0"],
    "t1-poll0": ["--threads", "1", "--threads-batch", "1", "--poll", "0"],
    "t1-tb2-poll0": ["--threads", "1", "--threads-batch", "2", "--poll", "0"],
    "chosen (free)": thread_flags(cores_free=2.0),
    "chosen (busy)": thread_flags(cores_free=0.0),
}


def demo_requests(limit: int) -> Iterator[dict[str, Any]]:
    """The demo's requests in the order a judge run sends them: per pair and personality, label then confidence."""
    from peras.paths import SAMPLE_DIR
    from peras.prompting import load_personalities, sampling_params
    from tasks.judge.prompt import build_confidence_messages, build_label_messages
    from tasks.judge.runs import EMBEDDED_MAX_TOKENS

    queries = dict(line.split("\t", 1) for line in (SAMPLE_DIR / "queries.tsv").read_text().splitlines() if line)
    passages = {}
    for line in (SAMPLE_DIR / "passages.jsonl").read_text().splitlines():
        row = json.loads(line)
        passages[row["docid"]] = row["doc"]
    pairs = [line.split()[::2] for line in (SAMPLE_DIR / "qrels.txt").read_text().splitlines() if line]
    n = 0
    for personality in load_personalities():
        for cot in (False, True):
            for query_id, doc_id in pairs:
                query, doc = queries[query_id].strip(), passages[doc_id]
                params = sampling_params("label_cot" if cot else "label_nocot")
                params["max_tokens"] = EMBEDDED_MAX_TOKENS["cot" if cot else "label"]
                yield {"messages": build_label_messages(personality, query, doc, cot), **params}
                confidence = sampling_params("confidence")
                confidence["max_tokens"] = EMBEDDED_MAX_TOKENS["confidence"]
                yield {"messages": build_confidence_messages(personality, query, doc, 2), **confidence}
                n += 2
                if n >= limit:
                    return


@contextmanager
def server(flags: list[str]) -> Iterator[str]:
    """The embedded llama-server started with these thread flags instead of peras's own."""
    from peras.local_model import server as local

    original = local.thread_flags
    local.thread_flags = lambda *_, **__: list(flags)  # type: ignore[assignment]
    try:
        with local.local_server(load_settings()) as running:
            yield running.base_url
    finally:
        local.thread_flags = original  # type: ignore[assignment]


def ask(base_url: str, body: dict[str, Any]) -> dict[str, Any]:
    """One chat completion; returns llama.cpp's timings block."""
    data = json.dumps({"model": DEFAULT_MODEL.name, **body}).encode()
    request = urllib.request.Request(
        f"{base_url}/chat/completions", data=data, headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=600) as response:
        return dict(json.loads(response.read()).get("timings") or {})


def measure(flags: list[str], seconds: float, limit: int) -> dict[str, Any]:
    """Requests answered in `seconds` (after two warm-up requests) and the server's own token rates."""
    bodies = list(demo_requests(limit))
    with server(flags) as base_url:
        for body in bodies[:2]:
            ask(base_url, body)
        started = time.monotonic()
        timings = []
        for body in bodies[2:]:
            timings.append(ask(base_url, body))
            if time.monotonic() - started >= seconds:
                break
        elapsed = time.monotonic() - started
    prompt_ms = sum(t.get("prompt_ms", 0.0) for t in timings)
    predicted_ms = sum(t.get("predicted_ms", 0.0) for t in timings)
    return {
        "requests": len(timings),
        "seconds": round(elapsed, 2),
        "requests_per_min": round(60 * len(timings) / elapsed, 2),
        "items_per_min": round(30 * len(timings) / elapsed, 2),
        "prompt_tokens_per_s": round(1000 * sum(t.get("prompt_n", 0) for t in timings) / prompt_ms, 1)
        if prompt_ms
        else None,
        "predicted_tokens_per_s": round(1000 * sum(t.get("predicted_n", 0) for t in timings) / predicted_ms, 1)
        if predicted_ms
        else None,
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=60.0, help="per setting and load")
    parser.add_argument("--hogs", type=int, default=2, help="busy loops beside the server in the loaded runs")
    parser.add_argument("--limit", type=int, default=400, help="requests prepared per measurement")
    parser.add_argument("--only", action="append", help="a setting's name (repeatable); default all")
    parser.add_argument("--loads", default="0,2", help="busy loops per run, comma-separated (default 0 and --hogs)")
    args = parser.parse_args()
    started = machine()
    chosen = {name: flags for name, flags in SETTINGS.items() if not args.only or name in args.only}
    loads = [int(x) for x in args.loads.replace("2", str(args.hogs)).split(",")]
    runs: list[dict[str, Any]] = []
    for round_no in range(args.rounds):
        for hogs in loads:
            with cpu_hogs(hogs):
                time.sleep(2 if hogs else 0)
                for name, flags in chosen.items():
                    row = {"round": round_no, "hogs": hogs, "setting": name, "flags": flags}
                    row.update(measure(flags, args.seconds, args.limit))
                    runs.append(row)
                    print(json.dumps(row), flush=True)
    summary = summarise(runs)
    result = {"benchmark": "local-threads", "versions": versions(), "args": vars(args), "runs": runs, **summary}
    path = write_result("local-threads", result, started)
    print(f"wrote {path}")
    print_headlines(result["headline"])


def summarise(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median items a minute per setting and load, and each setting's loaded rate as a share of its free rate."""
    table: dict[str, dict[str, float]] = {}
    for row in runs:
        table.setdefault(row["setting"], {}).setdefault(str(row["hogs"]), [])  # type: ignore[arg-type]
        table[row["setting"]][str(row["hogs"])].append(row["items_per_min"])  # type: ignore[union-attr]
    medians = {s: {h: statistics.median(v) for h, v in by.items()} for s, by in table.items()}  # type: ignore[arg-type]
    rows = []
    free_before = medians.get("t2-poll50 (before)", {}).get("0")
    for name, by in medians.items():
        loaded = [v for h, v in by.items() if h != "0"]
        if "0" in by and loaded and by["0"]:
            share = loaded[0] / by["0"]
            rows.append(
                headline(f"{name}: loaded / free items a minute", round(share, 3), "x", ">= 0.33", share >= 1 / 3)
            )
        if free_before and "0" in by and name.startswith("chosen"):
            ratio = by["0"] / free_before
            rows.append(headline(f"{name}: free rate vs before", round(ratio, 3), "x", ">= 0.9", ratio >= 0.9))
    rows.extend(adaptive_share(runs))
    return {"medians_items_per_min": medians, "headline": rows}


def adaptive_share(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What peras does: the free-core flags on free cores, the busy flags beside the busy loops (one headline)."""
    free = [r["items_per_min"] for r in runs if r["hogs"] == 0 and r["flags"] == thread_flags(cores_free=2.0)]
    busy = [r["items_per_min"] for r in runs if r["hogs"] != 0 and r["flags"] == thread_flags(cores_free=0.0)]
    if not free or not busy or not statistics.median(free):
        return []
    share = statistics.median(busy) / statistics.median(free)
    name = "adaptive (free-core flags free, busy flags loaded): loaded / free items a minute"
    return [headline(name, round(share, 3), "x", ">= 0.33", share >= 1 / 3)]


if __name__ == "__main__":
    main()
