"""deploy/prefect.yaml and `peras deploy`: every flow deployed, scheduled, and run by a real process worker."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import duckdb
import httpx
import pytest
import yaml

from cli.deployments import PREFECT_FILE, load_specs
from peras.paths import PROJECT_ROOT
from support.prefect_server import free_port
from tests.helpers import run_cli

FLOW_FILES = sorted(p for p in (PROJECT_ROOT / "flows").glob("*.py") if p.name != "__init__.py")
LLAMA_TAGS = {
    "peras",
    "stage:judge",
    "collection:dl19",
    "subset:balanced",
    "model:llama-3.1-8b-instruct",
    "backend:vllm",
}


def raw_deployment(full_name: str) -> dict:
    """The YAML entry (anchors resolved) of `flow/name`."""
    entries = yaml.safe_load(PREFECT_FILE.read_text())["deployments"]
    spec = next(s for s in load_specs() if s.full_name == full_name)
    return next(e for e in entries if e["name"] == spec.name and e["entrypoint"] == spec.entrypoint)


@pytest.mark.core
def test_every_flow_file_has_a_deployment():
    deployed = {s.entrypoint.split(":")[0] for s in load_specs()}
    assert deployed == {f"flows/{p.name}" for p in FLOW_FILES}


@pytest.mark.core
def test_names_are_unique_and_every_run_is_tagged():
    specs = load_specs()
    assert len({s.full_name for s in specs}) == len(specs)
    for spec in specs:
        assert spec.pool == "peras-process"
        assert "peras" in spec.tags and any(t.startswith("stage:") for t in spec.tags), spec.full_name
        assert "settings" not in spec.parameters, "settings come from the worker's environment"


@pytest.mark.core
def test_every_entrypoint_imports_and_takes_its_parameters(monkeypatch):
    from prefect.flows import load_flow_from_entrypoint

    monkeypatch.chdir(PROJECT_ROOT)  # entrypoints are relative to the repository root, as for `prefect deploy`
    for spec in load_specs():
        flow = load_flow_from_entrypoint(spec.entrypoint)
        assert flow.name == spec.flow_name
        accepted = set(flow.parameters.properties)
        assert set(spec.parameters) <= accepted, (spec.full_name, set(spec.parameters) - accepted)
        assert "settings" in accepted, f"{spec.full_name}: flows take settings=None from the environment"


@pytest.mark.core
def test_only_the_judge_and_the_batch_poll_run_on_a_clock_and_metrics_then_report_follow_the_judge():
    by_name = {s.full_name: s for s in load_specs()}
    judge = by_name["judge/dl19-llama"]
    assert judge.crons == ["0 2 * * * UTC"]
    assert judge.parameters == {
        "collection": "dl19",
        "subset": "balanced",
        "run_name": "dl19-balanced-llama-3.1-8b",
        "backend": "vllm",
    }
    assert set(judge.tags) == LLAMA_TAGS
    assert {s.full_name: s.crons for s in by_name.values() if s.crons} == {
        "judge/dl19-llama": ["0 2 * * * UTC"],
        "batch-poll/every-10-minutes": ["*/10 * * * * UTC"],
    }
    assert by_name["batch-poll/every-10-minutes"].parameters == {}
    assert {s.full_name: s.after for s in by_name.values() if s.after} == {
        "metrics/nightly": ["judge/dl19-llama"],
        "report/nightly": ["metrics/nightly"],
    }
    assert (by_name["metrics/nightly"].when, by_name["report/nightly"].when) == (
        "after judge/dl19-llama completes",
        "after metrics/nightly completes",
    )


@pytest.mark.core
def test_triggers_are_valid_prefect_deployment_triggers_on_completed_runs():
    from prefect.events.schemas.deployment_triggers import DeploymentEventTrigger

    for name in ("metrics/nightly", "report/nightly"):
        (trigger,) = raw_deployment(name)["triggers"]
        parsed = DeploymentEventTrigger.model_validate(trigger)
        assert parsed.expect == {"prefect.flow-run.Completed"}
        assert parsed.enabled


@pytest.mark.core
@pytest.mark.parametrize(
    ("env", "model_tag"),
    [
        # the vLLM deployments: the model they are configured with, as a peras command would tag it
        (
            {"PERAS_BASE_URLS": "http://gpu:8000/v1", "PERAS_MODEL": "Qwen/Qwen2.5-7B-Instruct"},
            "model:qwen2.5-7b-instruct",
        ),
        # no endpoint configured: the embedded model
        ({}, "model:qwen2.5-coder-0.5b-instruct-q4_k_m"),
    ],
)
def test_model_tag_comes_from_the_configured_model(tmp_path, env, model_tag):
    data = yaml.safe_load(PREFECT_FILE.read_text())
    for entry in data["deployments"]:
        if entry["name"] == "dl19-llama" and entry["entrypoint"].startswith("flows/judge.py"):
            entry["work_pool"] = {**entry["work_pool"], "job_variables": {"env": env} if env else {}}
    changed = tmp_path / "prefect.yaml"
    changed.write_text(yaml.safe_dump(data, sort_keys=False))
    spec = next(s for s in load_specs(changed) if s.full_name == "judge/dl19-llama")
    assert [t for t in spec.tags if t.startswith("model:")] == [model_tag]
    written = [tag for e in yaml.safe_load(PREFECT_FILE.read_text())["deployments"] for tag in e.get("tags", [])]
    assert not [tag for tag in written if tag.startswith("model:")], "model tags are derived, not written"


@pytest.mark.core
def test_llm_deployments_name_the_endpoint_but_hold_no_key():
    for name in ("judge/dl19-llama", "priming/dl19-llama"):
        entry = raw_deployment(name)
        assert entry["work_pool"]["job_variables"]["env"] == {
            "PERAS_BASE_URLS": "http://127.0.0.1:8000/v1",
            "PERAS_MODEL": "meta-llama/Llama-3.1-8B-Instruct",
        }
        assert entry["pull"][1:] == [
            {"cli.deploy_steps.export_secret": {"block": "peras-llm-api-key", "env": "OPENAI_API_KEY"}},
            {"cli.deploy_steps.tag_run_model": {}},
        ]
    for entry in yaml.safe_load(PREFECT_FILE.read_text())["deployments"]:
        env = (entry.get("work_pool") or {}).get("job_variables", {}).get("env", {})
        assert not [k for k in env if any(word in k.upper() for word in ("KEY", "TOKEN", "SECRET"))]


@pytest.mark.core
@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        # a deployment the file does not have
        (["--name", "judge/nope"], 2, "error: no deployment 'judge/nope' in prefect.yaml; choose from ingest/sample,"),
        # nothing listening where PREFECT_API_URL points: the hint names both URLs, no default port
        (
            ["--name", "ingest/sample"],
            1,
            "error: no Prefect server answers at THEIRS (PREFECT_API_URL): start it, or unset PREFECT_API_URL to use "
            "the local server (LOCAL)\n",
        ),
    ],
)
def test_deploy_errors_are_one_line(capsys, monkeypatch, tmp_path, args, code, message):
    from prefect.settings import PREFECT_API_URL, temporary_settings

    api, local = f"http://127.0.0.1:{free_port()}/api", free_port()
    monkeypatch.setenv("PERAS_PREFECT_PORT", str(local))
    monkeypatch.setenv("PERAS_PREFECT_HOME", str(tmp_path / "home"))
    with temporary_settings(updates={PREFECT_API_URL: api}):
        result = run_cli(capsys, "deploy", *args)
    assert result.exit_code == code
    assert result.err.startswith(message.replace("THEIRS", api).replace("LOCAL", f"http://127.0.0.1:{local}/api"))
    assert result.err.count("\n") == 1


@pytest.mark.core
def test_the_operations_doc_lists_exactly_what_deploy_registers(capsys):
    from cli.deployments import DOC_BEGIN, DOC_END

    doc = (PROJECT_ROOT / "docs" / "operations.md").read_text()
    shown = doc.split(DOC_BEGIN + "\n", 1)[1].split(DOC_END, 1)[0]
    listed = run_cli(capsys, "deploy", "--list")
    assert (listed.exit_code, shown) == (0, listed.out)
    assert len(listed.out.splitlines()) == 2 + len(load_specs())
    assert f"\n{len(load_specs())} deployments on " in doc
    assert all(spec.description for spec in load_specs())


@pytest.mark.core
def test_deploy_names_missing_flow_files(capsys, tmp_path, monkeypatch):
    broken = tmp_path / "prefect.yaml"
    broken.write_text(PREFECT_FILE.read_text().replace("flows/report.py:report", "flows/gone.py:report"))
    monkeypatch.setattr("cli.deployments.PREFECT_FILE", broken)
    result = run_cli(capsys, "deploy")
    assert (result.exit_code, result.err) == (
        2,
        "error: flow file(s) missing: flows/gone.py (named in deploy/prefect.yaml)\n",
    )


@pytest.mark.integration
def test_server_starts_with_the_pinned_fastapi(prefect_server):
    import fastapi

    assert tuple(int(x) for x in fastapi.__version__.split(".")[:2]) < (0, 151)
    assert httpx.get(f"{prefect_server}/health", timeout=5).json() is True
    assert httpx.get(f"{prefect_server}/admin/version", timeout=5).json() == "3.8.8"
    ui = httpx.get(prefect_server.removesuffix("/api") + "/", timeout=5)  # the bundled UI, served offline
    assert ui.status_code == 200 and "<html" in ui.text.lower()


@pytest.fixture
def start_worker(tmp_path) -> Iterator:
    """Start a real process worker on a pool, outside the repository (the pull step must cd back); stop it after."""
    started: list[subprocess.Popen] = []
    log = tmp_path / "worker.log"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    def start(pool: str) -> Path:
        with log.open("w") as out:
            started.append(
                subprocess.Popen(
                    [sys.executable, "-m", "prefect", "worker", "start", "--pool", pool],
                    cwd=elsewhere,
                    env={**os.environ, "PREFECT_WORKER_QUERY_SECONDS": "1"},
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
        return log

    yield start
    for proc in started:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()


def run_deployment(name: str, *options: str) -> subprocess.CompletedProcess[str]:
    """`prefect deployment run NAME --watch`, exactly as docs/operations.md says."""
    return subprocess.run(
        [sys.executable, "-m", "prefect", "deployment", "run", name, *options, "--watch", "--watch-timeout", "240"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def flow_runs_of(name: str) -> list:
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import DeploymentFilter, DeploymentFilterId

    with get_client(sync_client=True) as client:
        deployment = client.read_deployment_by_name(name)
        return client.read_flow_runs(deployment_filter=DeploymentFilter(id=DeploymentFilterId(any_=[deployment.id])))


@pytest.mark.integration
def test_deployments_run_on_a_real_worker(capsys, tmp_path, start_worker, monkeypatch):
    from prefect.blocks.system import Secret
    from prefect.client.orchestration import get_client

    from support.fake_openai import FakeOpenAI, instant

    pool = f"peras-test-{uuid.uuid4().hex[:8]}"
    started = time.monotonic()
    result = run_cli(capsys, "deploy", "--pool", pool)  # everything, as docs/operations.md says
    assert result.exit_code == 0, result.err
    specs = load_specs()
    lines = result.out.splitlines()
    assert lines[0] == f"work pool {pool} (process): created"
    assert lines[-1] == (
        f"{len(specs)} deployments on {os.environ['PREFECT_API_URL']}; "
        f"start a worker: PREFECT_API_URL={os.environ['PREFECT_API_URL']} prefect worker start --pool {pool}"
    )
    assert [line.split()[1] for line in lines[1:-1]] == [s.full_name for s in specs]
    width = max(len(s.full_name) for s in specs)  # names are padded to the longest one
    assert f"deployed {'judge/dl19-llama':<{width}}  cron 0 2 * * * UTC" in lines
    deploy_s = time.monotonic() - started
    with get_client(sync_client=True) as client:
        judge = client.read_deployment_by_name("judge/dl19-llama")
        assert (judge.work_pool_name, judge.parameters["subset"]) == (pool, "balanced")
        assert [(s.schedule.cron, s.active) for s in judge.schedules] == [("0 2 * * *", True)]
        assert judge.pull_steps[0] == {
            "prefect.deployments.steps.set_working_directory": {"directory": str(PROJECT_ROOT)}
        }
        for spec in specs:  # no nightly run may start during the test (runs by hand still do)
            if spec.crons:
                client.pause_deployment(client.read_deployment_by_name(spec.full_name).id)
    # runs started by a trigger get no job variables: the worker's environment points them at this test's files
    monkeypatch.setenv("PERAS_WAREHOUSE", str(tmp_path / "warehouse" / "peras.duckdb"))
    monkeypatch.setenv("PERAS_REPORTS_DIR", str(tmp_path / "reports"))
    worker_log = start_worker(pool)

    # ingest: the documented command, with the warehouse given as a job variable
    warehouse = tmp_path / "warehouse" / "peras.duckdb"
    env = {"PERAS_WAREHOUSE": str(warehouse)}
    started = time.monotonic()
    ingest = run_deployment("ingest/sample", "--job-variable", f"env={json.dumps(env)}")
    ingest_s = time.monotonic() - started
    assert ingest.returncode == 0, ingest.stdout + ingest.stderr + worker_log.read_text()[-3000:]
    assert "Flow run finished successfully in 'Completed'" in ingest.stdout
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        assert con.execute("select count(*) from qrels where collection_id = 'sample'").fetchone() == (40,)
    finally:
        con.close()
    (run,) = flow_runs_of("ingest/sample")
    assert run.name == "ingest-sample" and run.state_name == "Completed"
    assert set(run.tags) == {"peras", "stage:ingest", "collection:sample"}

    # judge: the nightly deployment pointed at a fake endpoint, its API key from a Secret block
    key = f"sk-test-{uuid.uuid4().hex}"
    Secret(value=key).save("peras-llm-api-key", overwrite=True)
    try:
        with FakeOpenAI(instant) as server:
            env_judge = {**env, "PERAS_BASE_URLS": server.base_url, "PERAS_MODEL": "fake-model"}
            started = time.monotonic()
            judged = run_deployment(
                "judge/dl19-llama",
                "--job-variable",
                f"env={json.dumps(env_judge)}",
                "--param",
                "collection=sample",
                "--param",
                "run_name=deploy-test",
                "--param",
                "limit_pairs=2",
                "--param",
                'personalities=["default", "HA"]',
                "--param",
                "cot=[false]",
            )
            judge_s = time.monotonic() - started
            chats = server.chat_requests
        assert judged.returncode == 0, judged.stdout + judged.stderr + worker_log.read_text()[-3000:]
    finally:
        with get_client(sync_client=True) as client:
            client.delete_block_document(client.read_block_document_by_name("peras-llm-api-key", "secret").id)
    assert len(chats) == 2 * 2 * 2  # pairs x personalities x (label, confidence)
    assert {r.headers.get("authorization") for r in chats} == {f"Bearer {key}"}
    (run,) = flow_runs_of("judge/dl19-llama")
    # the run's model tag is the model it asked (its PERAS_MODEL job variable), not the deployment's
    assert run.name == "judge-sample" and set(run.tags) == LLAMA_TAGS - {"model:llama-3.1-8b-instruct"} | {
        "model:fake-model"
    }
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        assert con.execute("select status, model from judge_runs where run_name = 'deploy-test'").fetchall() == [
            ("published", "fake-model")
        ]
    finally:
        con.close()

    # the key went to the endpoint and nowhere else: not the deployment, the run, its logs, the worker's output
    with get_client(sync_client=True) as client:
        from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId

        stored = [client.read_deployment_by_name("judge/dl19-llama").model_dump_json(), run.model_dump_json()]
        stored += [log.message for log in client.read_logs(LogFilter(flow_run_id=LogFilterFlowRunId(any_=[run.id])))]
    stored += [judged.stdout, judged.stderr, worker_log.read_text()]
    assert not [text for text in stored if key in text]

    # the completed judge run started metrics/nightly, whose completion started report/nightly
    started = time.monotonic()
    metrics_run = wait_for_completed_run("metrics/nightly", worker_log)
    report_run = wait_for_completed_run("report/nightly", worker_log)
    chain_s = time.monotonic() - started
    assert metrics_run.start_time >= run.end_time and report_run.start_time >= metrics_run.end_time
    assert (tmp_path / "reports" / "report.html").is_file()
    print(
        f"\ntimings: deploy {deploy_s:.1f} s, ingest run {ingest_s:.1f} s, judge run {judge_s:.1f} s, "
        f"then metrics and report {chain_s:.1f} s"
    )


def wait_for_completed_run(name: str, worker_log: Path, timeout_s: float = 240.0):
    """The one run of deployment `name`, once it is Completed (a trigger starts it, the worker runs it)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        runs = flow_runs_of(name)
        if runs and runs[0].state_name in ("Failed", "Crashed"):
            pytest.fail(f"{name} {runs[0].state_name}: {worker_log.read_text()[-3000:]}")
        if runs and runs[0].state_name == "Completed":
            assert len(runs) == 1, [r.name for r in runs]
            return runs[0]
        time.sleep(1)
    pytest.fail(f"no completed run of {name} within {timeout_s:.0f} s: {worker_log.read_text()[-3000:]}")


@pytest.mark.integration
def test_export_secret_without_a_block_keeps_the_environment(monkeypatch):
    from cli.deploy_steps import export_secret

    monkeypatch.setenv("PERAS_TEST_KEY", "from-the-worker")
    assert export_secret(block=f"absent-{uuid.uuid4().hex[:8]}", env="PERAS_TEST_KEY") == {
        "secret_source": "environment"
    }
    assert os.environ["PERAS_TEST_KEY"] == "from-the-worker"
