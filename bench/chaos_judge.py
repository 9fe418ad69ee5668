"""Chaos run of the judge flow: kill -9, concurrency and fault injection, then the warehouse's guarantees in SQL.

Each round (planned from the seed) ingests the shipped sample (`peras ingest sample`) into two fresh warehouses,
a and b, in ONE directory, and starts at once three `peras judge` processes of one model:
- run "chaos" on a, and run "chaos-twin" on a with the same plan (they share a's answer cache and race on it);
- run "chaos" on b: the same run name in the other warehouse, other personalities and pairs (a leak would show),
against a fake OpenAI-compatible server in its own process (support/fake_openai.py, `Chaos`) that injects
faults: HTTP 500, 429 with a short
Retry-After, 400 (the request is refused), dropped connections, unreadable answers, slow answers (past the request
timeout in some rounds). In some rounds it answers a random label and confidence per call, so the concurrent runs
really race: two runs sending one request get different answers. Each run is killed with SIGKILL 0-2 times
(after a random delay, or once its journal holds N judgments) and started again, then re-run until it ends:
exit 0, or its gate verdict (given twice). Then, on every warehouse:
- every judgment is derivable from the llm_requests rows it references (judgment_check), and every label and
  verbalized confidence reads so in its request (checked again without judgment_check);
- no run is left unfinished, and a published run holds exactly its planned items (none missing, none extra);
- every run holds only its own warehouse's items: no judgment outside its plan, no row of another run;
- llm_requests holds one row per request_id, judgments one row per item;
- no shard file is left behind; the metric views hold only published runs;
- a gate refuses a run only for its share of parse failures (every run asks one way, nothing is left missing).

With --batch, the runs ask in batch mode (`--mode batch --wait`) against the scripted Batch API in its own process
(support/fake_batch.py): the same chat faults become failed lines (500, 429, 400), unreadable answers, and
batch faults are drawn per batch and line (`BatchChaos`: whole batches `failed`, batches `expired` half answered,
lines cut short in the output file); a batch stays live a few looks, so a kill lands between a submit, the
provider's completion and the collect. The twins share batches (one model, one Batch API).

With --lake, a and b are DuckLake warehouses: their catalogs are two databases of one throwaway PostgreSQL
(support/postgres.py), each with its own data path, their shards in the round's one shards directory
(PERAS_SHARDS_DIR); every check is the same, read through peras.warehouse.connect.

    .venv/bin/python bench/chaos_judge.py [--rounds 30] [--seed 14] [--lake] [--batch]  # bench/results/chaos-<date>...
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext, suppress
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import headline, machine, print_headlines, versions, write_result  # noqa: E402
from peras.sql import run_sql  # noqa: E402
from peras.warehouse import connect  # noqa: E402
from support.fake_batch import BatchChaos  # noqa: E402
from support.fake_openai import Chaos, fake_openai_process  # noqa: E402
from support.postgres import Postgres, create_database, postgres_server  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# `python -m cli.main` run in ROOT: the code of this checkout, never the one an editable install points at (the
# `peras` script imports whatever checkout was installed, which may be changing while the benchmark runs).
PERAS = [sys.executable, "-m", "cli.main"]
MODEL = "chaos-model"
PERSONALITIES = ("default", "HO", "LO", "HC", "LC", "HE", "LE", "HA", "LA", "HN", "LN")
ATTEMPT_TIMEOUT_S = 75.0  # an attempt still running after this is a hang: its stacks dumped, killed, reported
GATE_PROBLEM = re.compile(r"\[([a-z][a-z ,'-]+)\]")  # the gate's message names each kind of problem in brackets
MAX_FINAL_ATTEMPTS = 4  # re-runs after the kills, until exit 0 or the same gate verdict twice


@contextmanager
def chaos_server(chaos: Chaos, seed: int, stats_file: Path, batch: BatchChaos | None = None) -> Iterator[str]:
    """The fault-injecting server in its own process (the Batch API's with `batch`); yields its base URL; its counts
    are in stats_file after."""
    flags = [*chaos.flags(), "--seed", str(seed), "--stats-file", str(stats_file)]
    flags += batch.flags() if batch is not None else []
    module = "support.fake_batch" if batch is not None else "support.fake_openai"
    with fake_openai_process(0, MODEL, *flags, module=module) as base_url:
        yield base_url


# What a round does.


@dataclass(frozen=True)
class Kill:
    """SIGKILL an attempt after `after_s`, or once it has journaled `after_lines` judgments (whichever first)."""

    after_s: float
    after_lines: int | None = None


@dataclass(frozen=True)
class RunSpec:
    """One judge run of a round, its plan and when it is killed."""

    key: str  # 'a:chaos'
    warehouse: str  # 'a' or 'b'
    run_name: str
    personalities: tuple[str, ...]
    cot: str  # both, with, without
    methods: tuple[str, ...]
    limit_pairs: int
    n_samples: int
    chunk_size: int
    kills: tuple[Kill, ...]
    batch: bool = False  # asked in batch mode (--mode batch --wait)

    def command(self, base_url: str) -> list[str]:
        """`peras judge sample ...` for this run."""
        args = ["judge", "sample", "--base-url", base_url, "--model", MODEL, "--run-name", self.run_name]
        args += ["--mode", "batch", "--wait"] if self.batch else []
        args += ["--cot", self.cot, "--limit-pairs", str(self.limit_pairs), "--chunk-size", str(self.chunk_size)]
        args += ["--n-samples", str(self.n_samples)]
        for personality in self.personalities:
            args += ["--personality", personality]
        for method in self.methods:
            args += ["--confidence-method", method]
        return [*PERAS, *args]

    def cot_values(self) -> list[bool]:
        """The CoT settings the run plans."""
        return {"both": [False, True], "with": [True], "without": [False]}[self.cot]


@dataclass(frozen=True)
class RoundPlan:
    """Everything a round does, drawn from its seed."""

    index: int
    seed: int
    faults: Chaos
    env: dict[str, str]
    runs: tuple[RunSpec, ...] = field(default_factory=tuple)
    batch: BatchChaos | None = None  # batch mode: the Batch API's faults


def plan_batch_round(index: int, seed: int, max_kills: int = 2) -> RoundPlan:
    """A round in batch mode: plan_round's runs and chat faults (their lines fail, 429/500 asked again, 400 refused),
    the Batch API's faults drawn, and kills that land between submit, completion and collect."""
    plan = plan_round(index, seed, max_kills)
    draw = random.Random(seed * 1000 + index + 500)
    calm = draw.random() < 0.1
    batch = BatchChaos(
        fail_batch=0.0 if calm else draw.choice([0.0, 0.1, 0.25]),
        expire_batch=0.0 if calm else draw.choice([0.0, 0.1, 0.25]),
        garbled=0.0 if calm else draw.choice([0.0, 0.01, 0.05]),
        looks=draw.choice([1, 2, 3]),
    )
    faults = Chaos(**(asdict(plan.faults) | {"drop": 0.0, "slow": 0.0}))  # no connection in a batch line
    env = plan.env | {"PERAS_BATCH_POLL_S": str(draw.choice([0.1, 0.3]))}
    runs = tuple(replace(spec, batch=True) for spec in plan.runs)
    return RoundPlan(index, seed, faults, env, runs, batch)


def plan_round(index: int, seed: int, max_kills: int = 2) -> RoundPlan:
    """Draw a round: the server's faults, the settings, three runs and their kills."""
    draw = random.Random(seed * 1000 + index)
    calm = draw.random() < 0.1  # now and then a round without faults, as a baseline
    faults = Chaos(
        random_answers=draw.random() < 0.6,
        fail_500=0.0 if calm else round(draw.uniform(0, 0.08), 3),
        fail_429=0.0 if calm else round(draw.uniform(0, 0.08), 3),
        retry_after_s=round(draw.uniform(0.05, 0.5), 2),
        fail_400=0.0 if calm else draw.choice([0.0, 0.005, 0.01, 0.03]),
        drop=0.0 if calm else draw.choice([0.0, 0.01]),
        garbage=0.0 if calm else draw.choice([0.0, 0.05, 0.2, 0.5]),
        slow=0.0 if calm else draw.choice([0.0, 0.01, 0.03]),
        slow_s=round(draw.uniform(0.2, 1.5), 2),
    )
    env = {
        "PERAS_CONCURRENCY": str(draw.choice([2, 4, 8])),
        "PERAS_REQUEST_TIMEOUT_S": str(draw.choice([1.0, 30.0])),  # 1 s: the slowest answers time out
        "PERAS_MAX_PARSE_FAILURE_SHARE": str(draw.choice([0.05, 0.5])),  # 0.05 lets some gates fail
    }
    methods = draw.choice([("verbalized",), ("verbalized",), ("verbalized", "logprob"), ("sampling",)])
    mine = tuple(draw.sample(PERSONALITIES, draw.randint(1, 3)))
    theirs = tuple(draw.sample([p for p in PERSONALITIES if p not in mine], draw.randint(1, 3)))
    cot = draw.choice(["both", "without", "with"])
    chunk = draw.choice([8, 32, 128, 8192])

    def kills() -> tuple[Kill, ...]:
        n = draw.choice(list(range(max_kills + 1)) + [1])
        # half after a delay (start-up, planning, asking, loading or the gate), half once N judgments are journaled
        return tuple(
            Kill(round(draw.uniform(2.0, 16.0), 2)) if draw.random() < 0.5 else Kill(40.0, draw.randint(1, 150))
            for _ in range(n)
        )

    limit_a, limit_b = draw.randint(10, 40), draw.randint(5, 40)
    n_samples = 3
    runs = (
        RunSpec("a:chaos", "a", "chaos", mine, cot, methods, limit_a, n_samples, chunk, kills()),
        RunSpec("a:chaos-twin", "a", "chaos-twin", mine, cot, methods, limit_a, n_samples, chunk, kills()),
        RunSpec(
            "b:chaos",
            "b",
            "chaos",
            theirs,
            draw.choice(["both", "without"]),
            methods,
            limit_b,
            n_samples,
            draw.choice([8, 32, 8192]),
            kills(),
        ),
    )
    return RoundPlan(index, seed, faults, env, runs)


# Running a round.


def peras_env(base_env: dict[str, str], warehouse: Warehouse, plan: RoundPlan, slots: Path) -> dict[str, str]:
    """The environment of a peras process of the round: its warehouse, the round's settings, private slots."""
    return {**base_env, **plan.env, **warehouse.env, "PERAS_ENDPOINT_SLOTS_DIR": str(slots)}


@dataclass(frozen=True)
class Warehouse:
    """One warehouse of a round: the PERAS_WAREHOUSE setting (a file, or a DuckLake catalog), and its environment."""

    target: Path
    env: dict[str, str]


def file_warehouses(directory: Path) -> dict[str, Warehouse]:
    """a and b: two DuckDB files in the round's directory; their shards next to them (directory/shards)."""
    return {
        name: Warehouse(directory / f"{name}.duckdb", {"PERAS_WAREHOUSE": str(directory / f"{name}.duckdb")})
        for name in ("a", "b")
    }


def lake_warehouses(directory: Path, pg: Postgres) -> dict[str, Warehouse]:
    """a and b: two DuckLake warehouses, their catalogs two new databases of one PostgreSQL, each its own data path;
    their shards in the round's one shards directory (as two files in one directory share theirs)."""
    found = {}
    for name in ("a", "b"):
        database = f"chaos_{directory.name.replace('-', '_')}_{name}"  # chaos_round_01_a
        target = f"ducklake:postgres:{create_database(pg, database)}"
        env = {
            "PERAS_WAREHOUSE": target,
            "PERAS_LAKE_DATA_PATH": str(directory / f"lake-{name}"),
            "PERAS_SHARDS_DIR": str(directory / "shards"),
            "PERAS_ANALYST_SNAPSHOT": "false",
        }
        found[name] = Warehouse(Path(target), env)
    return found


class Journal:
    """How many judgments one process has journaled so far (its shard files carry its pid; loaded ones vanish)."""

    def __init__(self, shards: Path, pid: int) -> None:
        self.pattern, self.shards = f"*/judge/*/{pid}-*.outcomes.jsonl", shards
        self.seen: dict[Path, int] = {}

    def lines(self) -> int:
        """Judgments journaled by the process, counting shards already loaded and deleted."""
        for path in self.shards.glob(self.pattern):
            with suppress(OSError):
                self.seen[path] = max(self.seen.get(path, 0), path.read_bytes().count(b"\n"))
        return sum(self.seen.values())


def attempt(
    command: list[str], env: dict[str, str], logs: Path, shards: Path, kill: Kill | None, hang_s: float
) -> dict[str, Any]:
    """One `peras judge` process: run it to its end, or SIGKILL it at the kill point (or once it hangs)."""
    logs.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    first_line_s, killed_at, hung = None, None, False
    with logs.with_suffix(".out").open("w") as out, logs.with_suffix(".err").open("w") as err:
        proc = subprocess.Popen(command, env=env, stdout=out, stderr=err, cwd=ROOT, start_new_session=True)
        journal = Journal(shards, proc.pid)
        while proc.poll() is None:
            elapsed, lines = time.monotonic() - started, journal.lines()
            first_line_s = first_line_s or (round(elapsed, 2) if lines else None)
            if kill is not None and (elapsed >= kill.after_s or (kill.after_lines and lines >= kill.after_lines)):
                killed_at = round(elapsed, 2)
            hung = elapsed > hang_s
            if hung:  # where it hangs, for the report
                stacks(proc.pid, logs.with_suffix(".hang.txt"))
            if killed_at is not None or hung:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                break
            time.sleep(0.02)
    stdout = logs.with_suffix(".out").read_text()
    stderr = logs.with_suffix(".err").read_text()
    return {
        "kill": asdict(kill) if kill else None,
        "killed_at_s": killed_at,
        "first_judgment_at_s": first_line_s,
        "journaled": journal.lines(),
        "hung": hung,
        "exit": proc.returncode,
        "seconds": round(time.monotonic() - started, 2),
        "verdict": verdict(proc.returncode, stdout, stderr, killed_at is not None),
        "gate_problems": sorted(set(GATE_PROBLEM.findall(stderr))),
    }


def stacks(pid: int, out: Path) -> None:
    """Every thread's Python stack of a process (py-spy, when installed: `pip install -e .[bench]`)."""
    spy = Path(sys.executable).with_name("py-spy")
    if spy.exists():
        done = subprocess.run([str(spy), "dump", "--pid", str(pid)], capture_output=True, text=True, check=False)
        out.write_text(done.stdout + done.stderr)


def verdict(code: int, stdout: str, stderr: str, killed: bool) -> str:
    """The attempt's outcome in one line: killed, its summary line, the gate's first problem, or its error."""
    if killed:
        return "killed"
    if code == 0:
        return (stdout.strip().splitlines() or [""])[-1][:200]
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    if "judge gate failed" in stderr:
        return "gate: " + ", ".join(sorted(set(GATE_PROBLEM.findall(stderr))))
    return "error: " + (lines[-1] if lines else f"exit {code}")[:300]


def drive(
    spec: RunSpec, base_url: str, env: dict[str, str], directory: Path, hang_s: float, final_attempts: int
) -> dict[str, Any]:
    """A run through its kills, then re-run until it ends: exit 0, or the same gate verdict twice."""
    command, logs, shards = spec.command(base_url), directory / "logs", directory / "shards"
    name = spec.key.replace(":", "-")
    attempts = [attempt(command, env, logs / f"{name}-{i}", shards, kill, hang_s) for i, kill in enumerate(spec.kills)]
    for i in range(final_attempts):
        done = attempt(command, env, logs / f"{name}-final{i}", shards, None, hang_s)
        attempts.append(done)
        if done["exit"] == 0:  # a hang is reported, then re-run like a kill
            break
        gates = [a["verdict"] for a in attempts if a["verdict"].startswith("gate:")]
        if len(gates) >= 2 and gates[-1].split("]")[0] == gates[-2].split("]")[0]:
            break
    return {"key": spec.key, "command": " ".join(command[1:]), "attempts": attempts}


def ingest(env: dict[str, str]) -> None:
    """`peras ingest sample` into the env's warehouse."""
    command = [*PERAS, "ingest", "sample"]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"peras ingest sample failed ({done.returncode}): {done.stderr[-2000:]}")


def run_round(
    plan: RoundPlan,
    workdir: Path,
    base_env: dict[str, str],
    hang_s: float = ATTEMPT_TIMEOUT_S,
    final_attempts: int = MAX_FINAL_ATTEMPTS,
    pg: Postgres | None = None,
) -> dict[str, Any]:
    """Ingest two warehouses (files, or lakes on `pg`), run the three judge processes with their kills against the
    chaos server, check."""
    directory = workdir / f"round-{plan.index:02d}"
    directory.mkdir(parents=True)
    warehouses = lake_warehouses(directory, pg) if pg is not None else file_warehouses(directory)
    shards = directory / "shards"
    envs = {name: peras_env(base_env, warehouse, plan, directory / "slots") for name, warehouse in warehouses.items()}
    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=3) as pool:
        list(pool.map(ingest, envs.values()))
        stats_file = directory / "server-counts.json"
        with chaos_server(plan.faults, plan.seed * 1000 + plan.index, stats_file, plan.batch) as base_url:
            futures = [
                pool.submit(drive, spec, base_url, envs[spec.warehouse], directory, hang_s, final_attempts)
                for spec in plan.runs
            ]
            runs = [future.result() for future in futures]
    server = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    checks, facts = {}, {}
    for name, warehouse in warehouses.items():
        checks[name], facts[name] = check_warehouse(
            warehouse.target, shards, [s for s in plan.runs if s.warehouse == name]
        )
    checks["a+b"] = check_pair({name: w.target for name, w in warehouses.items()}, shards)
    return {
        "round": plan.index,
        "backend": "ducklake" if pg is not None else "duckdb file",
        "seed": plan.seed,
        "faults": asdict(plan.faults),
        "batch_faults": asdict(plan.batch) if plan.batch is not None else None,
        "env": plan.env,
        "plans": [asdict(spec) for spec in plan.runs],
        "directory": str(directory),
        "server": server,
        "runs": runs,
        "checks": checks,
        "facts": facts,
        "ok": all(c["ok"] for group in checks.values() for c in group),
        "seconds": round(time.monotonic() - started, 1),
    }


# The checks.


def check(name: str, problems: list[Any], **facts: Any) -> dict[str, Any]:
    """One invariant: ok when nothing is wrong; the first problems as evidence."""
    return {"check": name, "ok": not problems, "n_problems": len(problems), "problems": problems[:5], **facts}


def planned_items(con: Any, spec: RunSpec) -> pl.DataFrame:
    """The run's planned items: the first limit pairs (as the judge flow orders them) x settings."""
    params = {"collection_id": "sample", "subset_name": None, "limit_pairs": None}
    pairs = run_sql(con, "judge/select_pairs", params).fetchall()
    return pl.DataFrame(
        [
            {"query_id": q, "doc_id": d, "personality": p, "cot": c, "confidence_method": m}
            for q, d, *_ in pairs[: spec.limit_pairs]
            for p in spec.personalities
            for c in spec.cot_values()
            for m in spec.methods
        ]
    )


def rows(con: Any, sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    """A query's rows."""
    return con.execute(sql, params or {}).fetchall()


def records(con: Any, sql: str) -> list[dict[str, Any]]:
    """A query's rows as dicts (evidence reads better with its column names)."""
    cursor = con.execute(sql)
    names = [column[0] for column in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def causes(evidence: list[dict[str, Any]]) -> Counter[str]:
    """Why each judgment that is not derivable is not, counted."""
    by_judgment: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for record in evidence:
        by_judgment.setdefault(tuple(record[k] for k in JUDGMENT_KEY), []).append(record)
    return Counter(cause(found) for found in by_judgment.values())


def cause(evidence: list[dict[str, Any]]) -> str:
    """Why a judgment is not derivable, from the history of the requests it references."""
    for record in evidence:
        if any(h["why"] == "failure re-asked" and h["same_run"] for h in record["replaced"] or []):
            if record["now_stored_by_same_run"]:
                return "its own run asked a failed request again in the same process and replaced the failure"
            return "another run asked a failed request of this run again and replaced the failure"
    return "other (see evidence)"


# For each judgment that is not derivable: the request it references, what it reads now and which run stored that,
# and the answers it replaced (which run, why): who changed the request under the judgment.
# The same guarantee for labels and verbalized confidences, without judgment_check (which builds its problem with
# format(), NULL when the request's value is NULL: a judgment whose request does not read passed as derivable).
UNREADABLE_SOURCES = """
select j.run_id, j.query_id, j.doc_id, j.personality, j.cot, j.confidence_method, j.status, j.label, j.confidence,
       lr.parse_status as label_request, lr.parsed_value as label_reads,
       cr.parse_status as confidence_request, cr.parsed_value as confidence_reads
from judgments as j
left join llm_requests as lr on lr.request_id = j.label_request_id
left join llm_requests as cr on cr.request_id = j.confidence_request_id
where (j.label is not null and j.confidence_method <> 'sampling'
       and (lr.parse_status is distinct from 'ok' or lr.parsed_value is distinct from j.label))
   or (j.status = 'ok' and j.confidence_method = 'verbalized'
       and (cr.parse_status is distinct from 'ok' or cr.parsed_value is distinct from j.confidence))
order by all
"""
JUDGMENT_KEY = ("judgment_run", "query_id", "doc_id", "personality", "cot", "confidence_method")
UNDERIVABLE_EVIDENCE = """
with bad as (
    select j.* from judgment_check('judgments') as c
    join judgments as j using (run_id, query_id, doc_id, personality, cot, confidence_method)
    where not c.is_derivable
),
referenced as (
    select *, unnest([label_request_id, confidence_request_id]) as request_id,
           unnest(['label', 'confidence']) as role
    from bad
    union all by name
    select *, unnest(sample_request_ids) as request_id, 'vote' as role
    from bad
    where sample_request_ids is not null
)
select r.run_id as judgment_run, r.query_id, r.doc_id, r.personality, r.cot, r.confidence_method, r.status,
       r.label, r.confidence,
       r.role, left(r.request_id, 12) as request, q.parse_status as now_status, q.raw_text as now_text,
       q.run_id = r.run_id as now_stored_by_same_run,
       list({'why': h.why, 'status': h.parse_status, 'text': h.raw_text, 'same_run': h.run_id = r.run_id}
            order by h.replaced_at) filter (where h.request_id is not null) as replaced
from referenced as r
left join llm_requests as q using (request_id)
left join llm_request_history as h using (request_id)
where r.request_id is not null
group by all
order by all
"""


def check_warehouse(path: Path, shards: Path, specs: list[RunSpec]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every invariant of one warehouse (a file or a lake) after its runs ended, its shards in `shards`; and what it
    holds (statuses, counts, history)."""
    item = "query_id, doc_id, personality, cot, confidence_method"
    with connect(path, read_only=True) as con:
        warehouse_id = rows(con, "select warehouse_id from warehouse_identity")[0][0]
        runs = {
            name: (run_id, status)
            for run_id, name, status in rows(con, "select run_id, run_name, status from judge_runs")
        }
        out = [
            check(
                "every judgment derivable",
                rows(
                    con,
                    "select run_id, query_id, doc_id, personality, cot, confidence_method, problem "
                    "from judgment_check('judgments') where not is_derivable order by all",
                ),
                evidence=(evidence := records(con, UNDERIVABLE_EVIDENCE))[:10],
                causes=causes(evidence),
            ),
            check("every label and confidence reads so in its request", records(con, UNREADABLE_SOURCES)),
            check(
                "every run finished",
                [(name, status) for name, (_, status) in runs.items() if status not in ("published", "failed_check")]
                + [(s.run_name, "missing") for s in specs if s.run_name not in runs],
            ),
        ]
        exact, own = [], []
        for spec in specs:
            if spec.run_name not in runs:
                continue
            run_id, status = runs[spec.run_name]
            con.register("planned", planned_items(con, spec).to_arrow())
            extra = rows(
                con, f"select {item} from judgments where run_id = $r except select {item} from planned", {"r": run_id}
            )
            missing = rows(
                con, f"select {item} from planned except select {item} from judgments where run_id = $r", {"r": run_id}
            )
            con.unregister("planned")
            own += [(spec.run_name, "outside its plan", *row) for row in extra]
            if status == "published":
                exact += [(spec.run_name, "missing", *row) for row in missing]
                exact += [(spec.run_name, "extra", *row) for row in extra]
        out.append(check("published runs hold exactly their plan", exact))
        own += rows(
            con,
            "select 'judgment of an unknown run', run_id, count(*) from judgments "
            "where run_id not in (select run_id from judge_runs) group by all",
        )
        own += rows(
            con,
            "select 'request of an unknown run', run_id, count(*) from llm_requests "
            "where run_id is not null and run_id not in (select run_id from judge_runs) group by all",
        )
        out.append(check("runs hold only their own warehouse's items", own))
        out.append(
            check(
                "one row per request_id and per item",
                rows(
                    con,
                    "select 'llm_requests', request_id, count(*) from llm_requests group by all having count(*) > 1",
                )
                + rows(
                    con, f"select 'judgments', run_id, {item}, count(*) from judgments group by all having count(*) > 1"
                ),
            )
        )
        out.append(
            check(
                "metric views hold published runs only",
                rows(
                    con,
                    "select distinct f.run_id, r.status from stg_judgment_facts f join judge_runs r using (run_id) "
                    "where r.status <> 'published'",
                ),
            )
        )
        # Every run here asks one way, of pairs of its collection, and is re-run until nothing is missing: the only
        # true reason for its gate to refuse it is its share of unreadable or refused answers.
        out.append(
            check(
                "a gate refuses a run only for its parse failures",
                [
                    (name, kind)
                    for name, reason in rows(
                        con, "select run_name, status_reason from judge_runs where status_reason is not null"
                    )
                    for kind in sorted(set(GATE_PROBLEM.findall(reason)) - {"parse failures above threshold"})
                ],
            )
        )
        facts = {
            "statuses": {name: status for name, (_, status) in runs.items()},
            "status_reasons": dict(
                rows(con, "select run_name, status_reason from judge_runs where status_reason is not null")
            ),
            "judgments": dict(
                rows(
                    con,
                    "select r.run_name, count(*) from judgments j join judge_runs r "
                    "using (run_id) group by all order by all",
                )
            ),
            "llm_requests": rows(con, "select count(*) from llm_requests")[0][0],
            "request_history": dict(rows(con, "select why, count(*) from llm_request_history group by all")),
        }
    leftover = [str(p) for p in (shards / warehouse_id).rglob("*.jsonl") if p.stat().st_size > 0]
    out.append(check("no shard file left behind", leftover))
    return out, facts


def check_pair(warehouses: dict[str, Path], shards: Path) -> list[dict[str, Any]]:
    """Across the two warehouses of one round: distinct identities and run ids, no stray shard directory."""
    ids, run_ids = {}, {}
    for name, path in warehouses.items():
        with connect(path, read_only=True) as con:
            ids[name] = rows(con, "select warehouse_id from warehouse_identity")[0][0]
            run_ids[name] = {r for (r,) in rows(con, "select run_id from judge_runs")}
    stray = [p.name for p in shards.iterdir() if p.name not in ids.values()] if shards.is_dir() else []
    shared = sorted(run_ids["a"] & run_ids["b"])
    return [
        check("two warehouses, two identities", [] if ids["a"] != ids["b"] else [ids["a"]]),
        check("no run id in both warehouses", shared),
        check("no shard directory of an unknown warehouse", stray),
    ]


# The whole run, its result file and its table.


def summary_table(rounds: list[dict[str, Any]]) -> list[str]:
    """One line per round: faults, kills, re-runs, verdicts, checks."""
    lines = [
        f"{'round':>5}  {'answers':7}  {'faults (500/429/400/drop/garbage/slow)':>38}  {'kills':>5}  "
        f"{'reruns':>6}  {'published':>9}  {'gate failed':>11}  {'dup answers':>11}  {'s':>5}  checks"
    ]
    for r in rounds:
        s = r["server"]
        faults = "/".join(str(s.get(k, 0)) for k in ("http_500", "http_429", "http_400", "dropped", "garbage", "slow"))
        attempts = [a for run in r["runs"] for a in run["attempts"]]
        kills = sum(a["killed_at_s"] is not None for a in attempts)
        reruns = len(attempts) - len(r["runs"])
        statuses = Counter(st for f in r["facts"].values() for st in f["statuses"].values())
        dups = sum(n for f in r["facts"].values() for why, n in f["request_history"].items() if why.startswith("dup"))
        failed = [c["check"] for group in r["checks"].values() for c in group if not c["ok"]]
        lines.append(
            f"{r['round']:>5}  {'random' if r['faults']['random_answers'] else 'stable':7}  {faults:>38}  {kills:>5}  "
            f"{reruns:>6}  {statuses['published']:>9}  {statuses['failed_check']:>11}  {dups:>11}  "
            f"{r['seconds']:>5.0f}  {'ok' if not failed else 'FAILED: ' + '; '.join(failed)}"
        )
    return lines


def findings(rounds: list[dict[str, Any]]) -> Counter[str]:
    """What went wrong, counted: hangs, each run's final verdict, why judgments are not derivable, failed checks."""
    found: Counter[str] = Counter()
    for r in rounds:
        for run in r["runs"]:
            found.update("attempt hung (its stacks: logs/*.hang.txt)" for a in run["attempts"] if a["hung"])
            last = run["attempts"][-1]
            found.update(f"run ended with gate problem [{kind}]" for kind in last["gate_problems"])
            if last["exit"] not in (0, 1) or (last["exit"] == 1 and not last["gate_problems"]):
                found[f"run ended without a verdict: {last['verdict'][:80]}"] += 1
        for group in r["checks"].values():
            for c in group:
                if not c["ok"]:
                    found[f"check failed: {c['check']}"] += 1
                for why, n in c.get("causes", {}).items():
                    found[f"judgment not derivable: {why}"] += n
    return found


def git_state() -> dict[str, Any]:
    """The commit the code under test is at, and the files changed since (the tree is shared while this runs)."""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()

    return {"commit": git("rev-parse", "HEAD"), "modified": git("status", "--porcelain", "--untracked-files=no")}


def compact(round_result: dict[str, Any]) -> dict[str, Any]:
    """A round as written to the result file: a passed check is just 'ok', a failed one keeps its evidence."""
    checks = {
        where: {
            c["check"]: "ok" if c["ok"] else {k: v for k, v in c.items() if k not in ("check", "ok")} for c in group
        }
        for where, group in round_result["checks"].items()
    }
    return round_result | {"checks": checks}


def main(argv: list[str] | None = None) -> None:
    """Run the rounds against a private Prefect server, write the result, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--round", type=int, action="append", help="run only this round of the seed (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the rounds' warehouses and logs")
    parser.add_argument(
        "--lake", action="store_true", help="DuckLake warehouses, their catalogs on a throwaway PostgreSQL"
    )
    parser.add_argument("--batch", action="store_true", help="the runs ask in batch mode against a scripted Batch API")
    parser.add_argument(
        "--hang-s",
        type=float,
        default=ATTEMPT_TIMEOUT_S,
        help=f"an attempt running longer is a hang (default {ATTEMPT_TIMEOUT_S:.0f}; more on a heavily loaded machine)",
    )
    args = parser.parse_args(argv)

    from support.prefect_server import prefect_server, server_env

    started, clock, tree = machine(), time.monotonic(), git_state()
    workdir = Path(tempfile.mkdtemp(prefix="peras-chaos-"))
    home = workdir / "prefect"
    rounds: list[dict[str, Any]] = []
    out: Path | None = None
    backend = ("ducklake on PostgreSQL" if args.lake else "duckdb file") + (", batch mode" if args.batch else "")
    planner = plan_batch_round if args.batch else plan_round
    with prefect_server(home) as api_url, postgres_server() if args.lake else nullcontext() as pg:
        base_env = {**os.environ, **server_env(home), "PREFECT_API_URL": api_url}
        for index in args.round or range(1, args.rounds + 1):
            result = run_round(planner(index, args.seed), workdir, base_env, hang_s=args.hang_s, pg=pg)
            rounds.append(result)
            print(summary_table([result])[-1], flush=True)
            # the result file after every round (a run stopped early keeps the rounds it finished)
            total = summarise(
                rounds, tree, args.seed, args.hang_s, backend, pg.version if pg is not None else None, clock
            )
            planned = {"rounds_planned": len(args.round or range(args.rounds))}
            out = write_result("chaos-batch" if args.batch else "chaos", total | planned, started, out)
    print("\n".join(summary_table(rounds)))
    for what, n in Counter(total["findings"]).most_common():
        print(f"{n:>6}  {what}")
    print_headlines(total["headline"])
    print(f"wrote {out}; rounds' files " + (f"kept in {workdir}" if args.keep else "removed"))
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)


NOT_FAULTS = ("requests", "answered", "batches_created", "lines_submitted")  # the server's counts that are no fault


def summarise(
    rounds: list[dict[str, Any]],
    tree: dict[str, Any],
    seed: int,
    hang_s: float,
    backend: str,
    postgres: str | None,
    clock: float,
) -> dict[str, Any]:
    """The result file's content for the rounds run so far."""
    found = findings(rounds)
    attempts = [a for r in rounds for run in r["runs"] for a in run["attempts"]]
    faults: Counter[str] = Counter()
    for r in rounds:
        faults.update({k: v for k, v in r["server"].items() if k not in NOT_FAULTS})
    failed = [(r["round"], c["check"]) for r in rounds for g in r["checks"].values() for c in g if not c["ok"]]
    rows_ = [
        headline("rounds", len(rounds), "", "20-40", 20 <= len(rounds) <= 40),
        headline("kill -9 of peras judge", sum(a["killed_at_s"] is not None for a in attempts), "", ">0", True),
        headline("faults injected", sum(faults.values()), "", ">0", sum(faults.values()) > 0),
        headline("attempts that hung", sum(a["hung"] for a in attempts), "", "0", not any(a["hung"] for a in attempts)),
        headline("invariant checks failed", len(failed), "", "0", not failed),
    ]
    return {
        "versions": versions(),
        "code": {"at_start": tree, "at_end": git_state()},
        "seed": seed,
        "hang_s": hang_s,
        "backend": backend,
        "postgres": postgres,
        "minutes": round((time.monotonic() - clock) / 60, 1),
        "faults_injected": dict(faults),
        "failed_checks": failed,
        "findings": dict(found.most_common()),
        "headline": rows_,
        "rounds": [compact(r) for r in rounds],
    }


if __name__ == "__main__":
    main()
