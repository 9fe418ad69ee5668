"""The CPU each request costs: `peras judge` against a raw asyncio keep-alive loop (issue 35, goals 2 and 4).

Workload: all 9,260 DL19 pairs under the default personality, no CoT, the 'self' confidence method (the label and
a 0-100 confidence in one answer: one request per judgment), against the instant scripted server
(`support.fake_openai`, its own process, as in bench_engine.py).

- Ceiling: a raw asyncio HTTP/1.1 loop over `asyncio.open_connection` on asyncio's own event loop, N keep-alive
  connections (N = the concurrency), each sending the next body and reading its answer (status line, Content-Length,
  body, the JSON's first choice). No retries, no cache, no journal, no slots. The bodies are exactly those PERAS sent
  (read back from its llm_requests rows: model, messages, parameters, in the order sent), so both ask the same thing.
  Unlike bench_ceiling.py's and bench_engine.py's bare loops it does not use PERAS's transport, so PERAS's
  transport is part of what is measured.
- PERAS: `peras judge` on a fresh copy of the ingested warehouse at `--concurrency N`. Throughput over the asking
  span, read from its llm_requests rows (first request sent to last answer), so Prefect's start-up is left out.

Rounds alternate raw and PERAS at each concurrency (the machine is shared: the ratio per round and the load
averages are the result, not the absolute rates). 11 by default: on these shared cores the raw loop alone moves a
fifth either way between rounds, and medians of 5 rounds did not tell a 3% change from that (docs/scaling.md).
`--profile` runs one more PERAS round per concurrency under cProfile and keeps the top functions (own time) and their
share of the asking engine's time. `--layers` measures,
per concurrency, the CPU per request of each layer of PERAS's asking path in this process against the same server
and requests (the raw loop, the transport alone, the client, its machine-wide slots, the progress counts), and the
server's own CPU per request while each runs (read from /proc; Linux): where PERAS's CPU goes beyond the raw loop's.

    .venv/bin/python bench/bench_per_request.py [--rounds 11] [--concurrency 8 64] [--profile] [--before ../main]
    .venv/bin/python bench/bench_per_request.py --rounds 3 --layers   # the CPU per request, layer by layer
    .venv/bin/python bench/bench_per_request.py --latency 50 450 --concurrency 512 --rounds 3   # goal 2's second half
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import duckdb  # noqa: E402
import orjson  # noqa: E402

from bench.common import finish, headline, machine, peras_command, peras_env, versions  # noqa: E402
from peras.llm import aio  # noqa: E402
from peras.llm.client import LLMClient, chat_body  # noqa: E402
from peras.llm.transport import FastHTTPTransport  # noqa: E402
from peras.progress import Counts  # noqa: E402
from support.fake_openai import fake_openai_process  # noqa: E402
from support.prefect_server import prefect_server  # noqa: E402

MODEL = "bench-model"
TARGET = 0.8
PAIRS = 9260
ROOT = Path(__file__).resolve().parents[1]


def judge_command(url: str, concurrency: int, run_name: str) -> list[str]:
    """`peras judge` of every DL19 pair, default personality, no CoT, one request per judgment."""
    return peras_command(
        "judge", "dl19", "--all-topics", "--personality", "default", "--cot", "without",
        "--confidence-method", "self", "--limit-pairs", str(PAIRS), "--base-url", url, "--model", MODEL,
        "--concurrency", str(concurrency), "--run-name", run_name,
    )  # fmt: skip


def peras_round(
    env: dict[str, str], base: Path, url: str, concurrency: int, tag: str, profile: Path | None = None
) -> dict[str, Any]:
    """One `peras judge` on a fresh warehouse copy; judgments/s over its asking span (its request rows)."""
    warehouse = base.with_name(f"{tag}.duckdb")
    shutil.copy(base, warehouse)
    command = judge_command(url, concurrency, tag)
    if profile is not None:
        command = [sys.executable, "-m", "cProfile", "-o", str(profile), *command]
    run_env = env | {"PERAS_WAREHOUSE": str(warehouse), "PERAS_SHARDS_DIR": str(base.parent / f"shards-{tag}")}
    started = time.perf_counter()
    done = subprocess.run(command, env=run_env, capture_output=True, text=True, check=False)
    command_s = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"peras judge failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        span, n = con.execute(
            "select epoch(max(created_at) - min(created_at - to_milliseconds(latency_ms))), count(*) from llm_requests"
        ).fetchone()
    finally:
        con.close()
    return {"judgments": int(n), "span_s": float(span), "command_s": command_s, "warehouse": warehouse}


def sent_requests(warehouse: Path) -> list[tuple[list[dict[str, str]], dict[str, Any]]]:
    """The messages and parameters of the requests PERAS sent, in the order sent."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = con.execute(
            "select messages, params from llm_requests order by created_at - to_milliseconds(latency_ms)"
        ).fetchall()
    finally:
        con.close()
    return [(json.loads(messages), json.loads(params)) for messages, params in rows]


def sent_bodies(warehouse: Path) -> list[bytes]:
    """The chat bodies PERAS sent, in the order sent, encoded as its transport encodes them."""
    bodies = []
    for messages, params in sent_requests(warehouse):
        body = {"model": MODEL, "messages": messages, **params}
        body.update(body.pop("extra_body", None) or {})
        bodies.append(orjson.dumps(body))
    return bodies


def server_cpu_s() -> float:
    """CPU seconds the scripted server (a child process of this one) has used so far (Linux /proc)."""
    total = 0.0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid() and b"support.fake_openai" in (stat.parent / "cmdline").read_bytes():
                total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            continue  # a process that ended meanwhile
    return total


async def layer_run(
    url: str, layer: str, requests: list[tuple[list[dict[str, str]], dict[str, Any]]], concurrency: int, tmp: Path
) -> int:
    """Every request once through one layer of PERAS's asking path, `concurrency` at a time; the requests done."""
    client = LLMClient([url], MODEL, concurrency=concurrency, slots_dir=tmp / "slots" if "slots" in layer else None)
    transport = FastHTTPTransport(url, None, 120.0)
    if "counts" in layer:
        client.counts = Counts(layer, len(requests))
    chat: Any = client.chat
    queue = list(range(len(requests)))[::-1]

    async def worker() -> None:
        while queue:
            messages, params = requests[queue.pop()]
            if layer == "transport":
                await transport.chat(chat_body(MODEL, messages, params))
            else:
                await chat(messages, params)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    await client.aclose()
    await transport.aclose()
    return len(requests)


LAYERS = ("transport", "client", "client+slots", "client+slots+counts")


def layer_rounds(
    url: str, requests: list[tuple[list[dict[str, str]], dict[str, Any]]], concurrency: int, rounds: int, tmp: Path
) -> dict[str, Any]:
    """CPU microseconds per request of this process (each layer, and the raw loop) and of the server meanwhile."""
    bodies = sent_bodies_of(requests)
    own: dict[str, list[float]] = {}
    server: dict[str, list[float]] = {}
    for _ in range(rounds):
        for loop in ("asyncio", "uvloop"):  # asyncio's own loop, and the one PERAS asks on (peras/llm/aio.py)
            for layer in ("raw loop", *LAYERS):
                name = f"{layer} ({loop})"
                cpu, served = time.process_time(), server_cpu_s()
                if layer == "raw loop":
                    n = aio.run(raw_loop(url, bodies, concurrency), loop)["judgments"]
                else:
                    n = aio.run(layer_run(url, layer, requests, concurrency, tmp), loop)
                own.setdefault(name, []).append((time.process_time() - cpu) / n * 1e6)
                server.setdefault(name, []).append((server_cpu_s() - served) / n * 1e6)
    return {
        "cpu_us_per_request": {layer: round(statistics.median(v), 1) for layer, v in own.items()},
        "server_cpu_us_per_request": {layer: round(statistics.median(v), 1) for layer, v in server.items()},
    }


def sent_bodies_of(requests: list[tuple[list[dict[str, str]], dict[str, Any]]]) -> list[bytes]:
    """The bodies of `requests` as PERAS's transport encodes them."""
    return [orjson.dumps(chat_body(MODEL, messages, params)) for messages, params in requests]


async def raw_loop(url: str, bodies: list[bytes], connections: int) -> dict[str, float]:
    """The ceiling: N keep-alive connections, each sending the next body and reading its answer."""
    host, _, rest = url.removeprefix("http://").partition(":")
    port, _, path = rest.partition("/")
    target = f"/{path}/chat/completions".replace("//", "/")
    head = f"POST {target} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\nContent-Length: "
    queue = list(reversed(bodies))
    answers = 0

    async def connection() -> None:
        nonlocal answers
        reader, writer = await asyncio.open_connection(host, int(port), limit=1 << 20)
        while queue:
            body = queue.pop()
            writer.write(f"{head}{len(body)}\r\n\r\n".encode("latin-1") + body)
            lines = (await reader.readuntil(b"\r\n\r\n")).split(b"\r\n")
            assert lines[0].split(b" ")[1] == b"200", lines[0]
            length = next(int(line.split(b":", 1)[1]) for line in lines if line.lower().startswith(b"content-length"))
            answer = orjson.loads(await reader.readexactly(length))
            assert answer["choices"][0]["message"]["content"]
            answers += 1
        writer.close()

    started = time.perf_counter()
    await asyncio.gather(*(connection() for _ in range(connections)))
    return {"judgments": answers, "span_s": time.perf_counter() - started}


def top_functions(profile: Path, n: int = 25) -> dict[str, Any]:
    """The profile's functions by own time, with their share of the engine's cumulative time (ask_all)."""
    stats = pstats.Stats(str(profile))
    entries = stats.stats  # type: ignore[attr-defined]
    engine = max(
        (ct for (file, _, name), (_, _, _, ct, _) in entries.items() if name == "ask_all" and "tasks/engine" in file),
        default=0.0,
    )
    total = sum(tt for (_, _, _, tt, _) in entries.values())
    rows = sorted(entries.items(), key=lambda kv: kv[1][2], reverse=True)[:n]
    here = str(Path(__file__).resolve().parents[1]) + "/"
    ours = sorted((kv for kv in entries.items() if kv[0][0].startswith(here)), key=lambda kv: kv[1][3], reverse=True)[
        :n
    ]
    return {
        "ask_all_cumulative_s": round(engine, 2),
        "profile_total_s": round(total, 2),
        "top_cumulative_peras": [
            f"{file.replace(here, '')}:{line}({name}) {ct:.3f} s ({ct / engine:.1%})" if engine else name
            for (file, line, name), (_, _, _, ct, _) in ours
        ],
        "top_own_time": [
            {
                "function": f"{file.replace(here, '').split('site-packages/')[-1]}:{line}({name})",
                "calls": nc,
                "own_s": round(tt, 3),
                "share_of_engine": round(tt / engine, 3) if engine else None,
            }
            for (file, line, name), (_, nc, tt, _, _) in rows
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 64])
    parser.add_argument("--profile", action="store_true", help="one more PERAS round per concurrency under cProfile")
    parser.add_argument(
        "--before", type=Path, help="another checkout (e.g. main's) judged in every round too: before / after"
    )
    parser.add_argument("--profile-dir", type=Path, help="keep the cProfile files here (default: discarded)")
    parser.add_argument(
        "--layers", action="store_true", help="also the CPU per request of each layer of the asking path (Linux)"
    )
    parser.add_argument(
        "--latency",
        type=float,
        nargs=2,
        metavar=("MIN_MS", "MAX_MS"),
        help="the server answers after a latency drawn uniformly in [MIN_MS, MAX_MS] (a busy GPU server; goal 2's "
        "second half: --latency 50 450 --concurrency 512, target 0.95); default: instant",
    )
    args = parser.parse_args()
    target = 0.95 if args.latency else TARGET
    server = "instant server" if not args.latency else f"{args.latency[0]:.0f}-{args.latency[1]:.0f} ms server"
    flags = ("--latency", *(str(x) for x in args.latency)) if args.latency else ()
    started = machine()
    result: dict[str, Any] = {
        "versions": versions(),
        "pairs": PAIRS,
        "method": "self (one request per judgment)",
        "server": server,
    }
    with (
        tempfile.TemporaryDirectory(prefix="peras-bench-per-request-") as tmp,
        prefect_server(Path(tmp) / "prefect") as api,
        fake_openai_process(0, MODEL, *flags) as url,
    ):
        base = Path(tmp) / "base.duckdb"
        # This checkout's code, whichever checkout the venv's editable install points at.
        env = peras_env(Path(tmp) / "prefect", api, base) | {"PYTHONPATH": str(ROOT)}
        subprocess.run(peras_command("ingest", "dl19"), env=env, check=True, capture_output=True, text=True)
        bodies: list[bytes] = []
        requests: list[tuple[list[dict[str, str]], dict[str, Any]]] = []
        rows = []
        for concurrency in args.concurrency:
            raw, ours, loads, before, commands = [], [], [], [], []
            for index in range(args.rounds):
                if args.before is not None:
                    earlier_env = env | {"PYTHONPATH": str(args.before)}
                    run = peras_round(earlier_env, base, url, concurrency, f"before-c{concurrency}-{index}")
                    before.append(run["judgments"] / run["span_s"])
                    run["warehouse"].unlink()
                run = peras_round(env, base, url, concurrency, f"c{concurrency}-{index}")
                ours.append(run["judgments"] / run["span_s"])
                commands.append(run["command_s"])
                if not bodies:
                    bodies = sent_bodies(run["warehouse"])
                    requests = sent_requests(run["warehouse"])
                run["warehouse"].unlink()
                loop = asyncio.run(raw_loop(url, bodies, concurrency))
                raw.append(loop["judgments"] / loop["span_s"])
                loads.append(round(os.getloadavg()[0], 2))
                earlier = f", before {before[-1]:.0f}/s" if before else ""
                print(
                    f"  concurrency {concurrency} round {index + 1}: raw {raw[-1]:.0f}/s,"
                    f" peras {ours[-1]:.0f}/s{earlier}, ratio {ours[-1] / raw[-1]:.2f}, load {loads[-1]}",
                    flush=True,
                )
            entry: dict[str, Any] = {"concurrency": concurrency}
            if raw:
                entry |= {
                    "raw_per_s": [round(x, 1) for x in raw],
                    "peras_per_s": [round(x, 1) for x in ours],
                    "ratio_per_round": [round(p / r, 3) for p, r in zip(ours, raw, strict=True)],
                    "ratio": round(statistics.median(ours) / statistics.median(raw), 3),
                    # the whole `peras judge` (Prefect's start, the plan, the asking, the last load, the gate, exit)
                    "peras_command_s": [round(x, 2) for x in commands],
                    "load_average_1min_per_round": loads,
                }
            if before:
                entry |= {
                    "before": str(args.before),
                    "before_per_s": [round(x, 1) for x in before],
                    "before_ratio_per_round": [round(p / r, 3) for p, r in zip(before, raw, strict=True)],
                    "before_ratio": round(statistics.median(before) / statistics.median(raw), 3),
                }
            if args.layers and requests and not args.latency:
                entry["layers"] = layer_rounds(url, requests, concurrency, args.rounds, Path(tmp))
                print(f"  concurrency {concurrency} layers: {entry['layers']}", flush=True)
            if args.profile:
                profile = (args.profile_dir or Path(tmp)) / f"c{concurrency}.prof"
                peras_round(env, base, url, concurrency, f"profile-c{concurrency}", profile)["warehouse"].unlink()
                entry["profile"] = top_functions(profile)
            rows.append(entry)
        result["rounds"] = rows
    result["headline"] = [
        headline(
            f"peras judge / raw asyncio loop, {server}, {PAIRS:,} judgments, concurrency {r['concurrency']}",
            r["ratio"],
            "x",
            f">= {target}",
            r["ratio"] >= target,
        )
        for r in rows
        if "ratio" in r
    ]
    if result["headline"]:
        finish("per-request", result, started)
    else:
        print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
