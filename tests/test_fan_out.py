"""A judge run spread over hosts: two Prefect workers in their own directories (standing in for GPU hosts, each with
its own scripted LLM server) take the parts of a run from a real Prefect server and commit them concurrently into a
DuckLake warehouse whose catalog is in a real PostgreSQL; one host is killed with SIGKILL mid-run."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from support.fake_openai import FakeOpenAI, Reply, instant
from support.postgres import Postgres, create_database, missing_reason, postgres_server
from tests.helpers import run_cli

pytestmark = pytest.mark.integration
if missing_reason():
    pytest.skip(str(missing_reason()), allow_module_level=True)

MODEL = "fake-model"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pg() -> Iterator[Postgres]:
    with postgres_server() as server:
        yield server


@pytest.fixture
def lake(pg: Postgres, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new DuckLake warehouse (catalog database in PostgreSQL, data under tmp_path) with the sample ingested."""
    target = f"ducklake:postgres:{create_database(pg, f'lake_{uuid.uuid4().hex[:8]}')}"
    monkeypatch.setenv("PERAS_WAREHOUSE", target)
    monkeypatch.setenv("PERAS_LAKE_DATA_PATH", str(tmp_path / "lake-data"))
    monkeypatch.setenv("PERAS_SHARDS_DIR", str(tmp_path / "parent-shards"))
    monkeypatch.setenv("PERAS_ANALYST_SNAPSHOT", "false")
    return target


def answering_after(delay_s: float) -> Any:
    """The instant answers, after `delay_s`: a part takes long enough to be killed in the middle."""

    def respond(request: dict[str, Any]) -> Reply:
        return Reply(instant(request), delay_s=delay_s)

    return respond


@dataclass
class Host:
    name: str
    directory: Path
    worker: subprocess.Popen[bytes]
    server: FakeOpenAI

    def processes(self) -> list[int]:
        """The worker and every process below it (the flow runs it started)."""
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(ppid, []).append(int(entry.name))
        found, todo = [], [self.worker.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo += children.get(pid, [])
        return found

    def kill(self) -> None:
        """SIGKILL the worker and its flow runs at once: the host is gone."""
        for pid in self.processes():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        self.worker.wait(timeout=30)


@pytest.fixture
def hosts(lake: str, tmp_path: Path) -> Iterator[Any]:
    """start(name, pool): a worker on `pool` in its own directory, its own LLM server, shards and request slots."""
    started: list[Host] = []

    def start(name: str, pool: str, delay_s: float = 0.04, flow_start_s: float = 0.0) -> Host:
        directory = tmp_path / name
        directory.mkdir()
        server = FakeOpenAI(answering_after(delay_s), models=[MODEL]).__enter__()
        env = {**os.environ}
        if flow_start_s:  # its flow runs' processes sleep before Prefect starts in them: their runs stay Pending
            (directory / "site").mkdir()
            (directory / "site" / "sitecustomize.py").write_text(
                f"import os, time\nif os.environ.get('PREFECT__FLOW_RUN_ID'):\n    time.sleep({flow_start_s})\n"
            )
            env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(directory / "site"), env.get("PYTHONPATH")]))
        env = {
            **env,
            "PERAS_BASE_URLS": server.base_url,
            "PERAS_SHARDS_DIR": str(directory / "shards"),
            "PERAS_ENDPOINT_SLOTS_DIR": str(directory / "slots"),
            "PERAS_CONCURRENCY": "4",
            "PREFECT_WORKER_QUERY_SECONDS": "1",
        }
        with (directory / "worker.log").open("wb") as log:
            worker = subprocess.Popen(
                # at most two flow runs at once: both hosts get parts (else one fast poller may take them all)
                [sys.executable, "-m", "prefect", "worker", "start", "--pool", pool, "--name", name, "--limit", "2"],
                cwd=directory,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        host = Host(name, directory, worker, server)
        started.append(host)
        return host

    yield start
    for host in started:
        if host.worker.poll() is None:
            host.worker.terminate()
            try:
                host.worker.wait(timeout=30)
            except subprocess.TimeoutExpired:
                host.kill()
        host.server.__exit__(None, None, None)


def deploy_parts(capsys: pytest.CaptureFixture[str]) -> str:
    """`peras deploy --name judge-part/hosts --pool POOL`, as docs/scaling.md says; the pool's name."""
    pool = f"peras-hosts-{uuid.uuid4().hex[:8]}"
    result = run_cli(capsys, "deploy", "--name", "judge-part/hosts", "--pool", pool)
    assert result.exit_code == 0, result.err
    assert run_cli(capsys, "ingest", "sample").exit_code == 0
    return pool


def rows(sql: str, params: dict[str, Any] | None = None) -> list[tuple[Any, ...]]:
    from peras.settings import load_settings
    from peras.warehouse import connect

    with connect(load_settings().warehouse, read_only=True) as con:
        return con.execute(sql, params or {}).fetchall()


class Analyst(threading.Thread):
    """Counts the judgments every 0.3 s on its own read-only connection while the run goes on."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.counts: list[int] = []
        self.errors: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        from peras.settings import load_settings
        from peras.warehouse import connect

        with connect(load_settings().warehouse, read_only=True) as con:
            while not self.stop.is_set():
                try:
                    con.execute("begin transaction")
                    self.counts.append(int(con.execute("select count(*) from judgments").fetchone()[0]))
                    con.execute("commit")
                except Exception as exc:  # noqa: BLE001 - any failure is what the test reports
                    self.errors.append(str(exc))
                    con.execute("rollback")
                time.sleep(0.3)


def flow_states(flow_run_ids: list[str]) -> list[str]:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return [str(client.read_flow_run(uuid.UUID(i)).state_name) for i in flow_run_ids]


def spread_in_background(run_name: str, **options: Any) -> tuple[threading.Thread, dict[str, Any]]:
    """The sample judged in 4 parts on the hosts' pool (no CoT, a part lost after 15 s without a beat), in a thread:
    the thread, and where its summary (or error) will be."""
    from flows.judge import judge
    from peras.settings import load_settings

    outcome: dict[str, Any] = {}

    def parent() -> None:
        try:
            outcome["summary"] = judge(
                collection="sample",
                parts=4,
                cot=[False],
                run_name=run_name,
                deployment="judge-part/hosts",
                lost_after_s=15,
                settings=load_settings(model=MODEL),
                **options,
            )
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            outcome["error"] = exc

    thread = threading.Thread(target=parent)
    thread.start()
    return thread, outcome


def test_a_run_spread_over_two_hosts_survives_one_killed_mid_run(lake, hosts, capsys):
    pool = deploy_parts(capsys)
    # host-a's server is slow (its parts take ~10 s), so it is still in a part when host-b's commits show up
    doomed, survivor = hosts("host-a", pool, delay_s=0.2), hosts("host-b", pool)
    analyst = Analyst()
    analyst.start()
    # parts commit every 10 judgments: a killed part leaves some committed
    thread, outcome = spread_in_background("spread", chunk_size=10)
    # Kill host-a while it is in the middle of a part (its flow run is running) and the run has committed some.
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not (
        len(doomed.processes()) > 1 and analyst.counts and analyst.counts[-1] > 20
    ):
        time.sleep(0.2)
    assert len(doomed.processes()) > 1, (
        (doomed.directory / "worker.log").read_text()[-3000:],
        (survivor.directory / "worker.log").read_text()[-3000:],
        outcome,
        analyst.counts[-5:],
        analyst.errors[:3],
    )
    committed_at_kill = analyst.counts[-1]
    doomed.kill()
    thread.join(timeout=600)
    analyst.stop.set()
    analyst.join(timeout=30)
    assert "error" not in outcome, f"{outcome.get('error')}\n{(survivor.directory / 'worker.log').read_text()[-3000:]}"

    summary = outcome["summary"]
    assert (summary["n_planned"], summary["n_failures"]) == (40 * 11, 0)
    # exactly the planned judgments, each once, and the run published
    assert rows(
        "select count(*), count(distinct (query_id, doc_id, personality, cot, confidence_method)) from judgments"
    ) == [(440, 440)]
    assert rows("select status from judge_runs where run_name = 'spread'") == [("published",)]
    # the killed host's part was started again, on the survivor, and its first flow run is marked crashed
    retried = {part: runs for part, runs in summary["parts"].items() if len(runs) > 1}
    assert len(retried) >= 1 and all(len(runs) == 2 for runs in retried.values()), summary["parts"]
    assert {flow_states(runs)[0] for runs in retried.values()} == {"Crashed"}
    assert {flow_states(runs)[1] for runs in retried.values()} == {"Completed"}
    # what the killed host had committed was kept, not asked again: the survivor's server answered the rest only
    survivor_asked = len(survivor.server.chat_requests)
    doomed_asked = len(doomed.server.chat_requests)
    assert survivor_asked + doomed_asked >= 2 * 440  # label and confidence per judgment, some asked twice
    assert 20 < committed_at_kill < 440
    # the analyst read all along without an error, and never saw the count go back
    assert analyst.errors == []
    assert analyst.counts == sorted(analyst.counts) and analyst.counts[-1] == 440


def flow_state_types(flow_run_ids: list[str]) -> list[str]:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        return [client.read_flow_run(uuid.UUID(i)).state_type.value for i in flow_run_ids]


def flow_run_ids(host: Host) -> list[str]:
    """The flow runs whose processes run under the host's worker (from their environment)."""
    found = []
    for pid in host.processes()[1:]:
        with contextlib.suppress(OSError):
            for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                if entry.startswith(b"PREFECT__FLOW_RUN_ID="):
                    found.append(entry.split(b"=", 1)[1].decode())
    return sorted(set(found))


def test_a_host_killed_before_its_part_began_is_taken_as_lost(lake, hosts, capsys):
    """Killed while its part's flow run is Pending (taken by the worker, its process not yet in the flow): nobody
    will ever move that run on, so its part is started again once lost_after_s has passed, as for a Running one."""
    pool = deploy_parts(capsys)
    doomed, _ = hosts("host-a", pool, flow_start_s=120), hosts("host-b", pool)
    thread, outcome = spread_in_background("early")
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and not flow_run_ids(doomed):
        time.sleep(0.2)
    taken = flow_run_ids(doomed)
    assert taken, (doomed.directory / "worker.log").read_text()[-3000:]
    assert set(flow_state_types(taken)) == {"PENDING"}  # 'Submitting' or 'Pending': a worker took it
    doomed.kill()
    thread.join(timeout=600)
    assert "error" not in outcome, outcome.get("error")
    summary = outcome["summary"]
    assert (summary["n_planned"], summary["n_failures"]) == (40 * 11, 0)
    retried = {part: runs for part, runs in summary["parts"].items() if len(runs) > 1}
    assert {runs[0] for runs in retried.values()} >= set(taken)
    assert {flow_states(runs)[0] for runs in retried.values()} == {"Crashed"}
    assert {flow_states(runs)[-1] for runs in retried.values()} == {"Completed"}
    assert rows(
        "select count(*), count(distinct (query_id, doc_id, personality, cot, confidence_method)) from judgments"
    ) == [(440, 440)]
    assert rows("select status from judge_runs where run_name = 'early'") == [("published",)]


def test_two_spread_runs_at_once_split_by_topic_each_complete_exactly(lake, hosts, capsys):
    """One run in-process, one from `peras judge --parts`, on the same two hosts at the same time."""
    from flows.judge import judge
    from peras.settings import load_settings

    pool = deploy_parts(capsys)
    hosts("host-a", pool), hosts("host-b", pool)
    results: dict[str, Any] = {}

    def parent(name: str, personalities: list[str]) -> None:
        try:
            results[name] = judge(
                collection="sample",
                parts=3,
                split_by="topic",
                personalities=personalities,
                cot=[False, True],
                run_name=name,
                deployment="judge-part/hosts",
                settings=load_settings(model=MODEL),
            )
        except BaseException as exc:  # noqa: BLE001 - reported below
            results[name] = exc

    # the second run from the command line, as docs/scaling.md shows, at the same time as the first
    command = [sys.executable, "-m", "cli.main", "judge", "sample", "--model", MODEL, "--parts", "3"]
    command += ["--split-by", "topic", "--personality", "LN", "--run-name", "second"]
    cli = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    parent("first", ["default", "HO"])
    out, err = cli.communicate(timeout=600)
    assert (cli.returncode, out.splitlines()[-1:]) == (
        0,
        ["second: 80 judgments in 3 parts (0 started again), 0 parse failures; model fake-model; published"],
    ), err[-3000:]
    assert not any(isinstance(r, BaseException) for r in results.values()), results
    assert {name: (r["n_planned"], r["n_failures"], len(r["parts"])) for name, r in results.items()} == {
        "first": (40 * 2 * 2, 0, 3),
    }
    assert rows(
        "select r.run_name, r.status, count(*), count(distinct (j.query_id, j.doc_id, j.personality, j.cot)) "
        "from judgments as j join judge_runs as r using (run_id) group by all order by 1"
    ) == [("first", "published", 160, 160), ("second", "published", 80, 80)]


def test_a_judgment_stored_twice_on_a_lake_stops_the_gate(lake, capsys):
    """Without keys, two writers could both store one judgment: the gate names it instead of counting it twice."""
    from peras.settings import load_settings
    from peras.warehouse import connect

    assert run_cli(capsys, "ingest", "sample").exit_code == 0
    with FakeOpenAI(instant, models=[MODEL]) as server:
        common = ["judge", "sample", "--base-url", server.base_url, "--model", MODEL, "--limit-pairs", "2"]
        common += ["--personality", "default", "--cot", "without", "--run-name", "twice"]
        first = run_cli(capsys, *common)
        assert first.exit_code == 0, first.err
        with connect(load_settings().warehouse) as con:
            con.execute("insert into judgments select * from judgments where doc_id = 'e2'")
        again = run_cli(capsys, *common)
    assert again.exit_code != 0
    assert again.err.strip() == (
        "error: judge gate failed; run not published (its judgments are kept for inspection): "
        "[judgment stored twice] s1 e2 default cot=false verbalized (2 copies)"
    )
    assert rows("select status from judge_runs where run_name = 'twice'") == [("failed_check",)]


def test_parts_without_the_deployment_say_what_to_deploy_and_leave_no_run(lake, capsys):
    """`--parts` whose deployment is not registered: one line naming it and what to run, before the run is claimed."""
    assert run_cli(capsys, "ingest", "sample").exit_code == 0
    with FakeOpenAI(instant, models=[MODEL]) as server:
        result = run_cli(
            capsys, "judge", "sample", "--base-url", server.base_url, "--model", MODEL, "--parts", "2",
            "--deployment", "judge-part/nowhere", "--run-name", "spread",
        )  # fmt: skip
        assert server.chat_requests == []
    assert result.exit_code == 2
    assert result.err.strip().startswith("error: no deployment 'judge-part/nowhere' on the Prefect server at http")
    assert result.err.strip().endswith(
        "run `peras deploy` (it registers judge-part/hosts), start a worker of its pool on each host, then run this"
        " again"
    )
    assert rows("select count(*) from judge_runs") == [(0,)]


def test_a_superseded_attempt_commits_nothing_and_the_current_one_completes(lake, capsys, monkeypatch):
    """Issue 36 item 7: a part taken for lost while its host was alive (beats late on a loaded machine) was started
    again and both attempts committed. Each start is the part's current attempt now: an older attempt's commits are
    refused in the load's own transaction, and nothing of it lands; the current attempt completes the part."""
    from flows.judge_part import judge_part
    from peras.settings import load_settings
    from tasks.engine.shards import Superseded
    from tasks.engine.spec import RunIdentity
    from tasks.judge.fan_out import start_attempt

    assert run_cli(capsys, "ingest", "sample").exit_code == 0
    with FakeOpenAI(instant, models=[MODEL]) as server:
        # the run exists (its parent claimed it); then the parent starts part p1 a second time
        first = run_cli(
            capsys, "judge", "sample", "--base-url", server.base_url, "--model", MODEL, "--limit-pairs", "3",
            "--personality", "default", "--cot", "without", "--run-name", "spread",
        )  # fmt: skip
        assert first.exit_code == 0, first.err
        [(run_id,)] = rows("select run_id from judge_runs where run_name = 'spread'")
        run = RunIdentity("-", "judge", run_id, "spread", MODEL, "openai-compatible")
        start_attempt(load_settings(), run, "p1", 2)
        monkeypatch.setenv("PERAS_BASE_URLS", server.base_url)
        part = {"collection": "sample", "run_name": "spread", "part": "p1", "model": MODEL, "limit_pairs": 3}
        part |= {"personalities": ["HA"], "cot": [False], "confidence_methods": ["verbalized"]}
        with pytest.raises(Superseded, match="part p1 of judge run spread: attempt 1 was superseded by attempt 2"):
            judge_part(**part, attempt=1, chunk_size=2)
        asked_by_old = len(server.chat_requests)
        assert rows("select count(*) from judgments where personality = 'HA'") == [(0,)]
        summary = judge_part(**part, attempt=2, chunk_size=2)
    assert summary["part"] == "p1" and len(server.chat_requests) > asked_by_old
    assert rows(
        "select count(*), count(distinct (query_id, doc_id)) from judgments where personality = 'HA' and run_id = $r",
        {"r": run_id},
    ) == [(3, 3)]
    assert rows("select part, attempt from run_attempts where run_id = $r", {"r": run_id}) == [("p1", 2)]
