"""Issue 29: a stage is a declaration. A throwaway stage (tests/toy_stage.py: a declaration, a stage object, a
recipe and a flow) runs end to end against the scripted server on the engine's bookkeeping alone; the declared
stages' claim rule, gate and `peras runs` work the same for every kind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import pytest

from peras.errors import CheckFailed, UsageError
from peras.paths import PROJECT_ROOT
from peras.settings import load_settings
from peras.sql import run_statements
from peras.warehouse import open_migrated
from support.fake_openai import FakeOpenAI, Reply
from tasks.engine.run_status import set_run_status
from tasks.engine.runs import RunClaim, claim_run
from tasks.engine.stage import declaration, declarations
from tests.helpers import run_cli
from tests.toy_stage import PROMPT, TOY, toy

pytestmark = pytest.mark.integration

WORDS = ["ant", "bee", "cat", "dingo", "eel", "fox"]
WORD = re.compile(r"the word (\w+)\?")


def word_of(request: dict[str, Any]) -> str:
    return WORD.search(request["messages"][-1]["content"]).group(1)


def truthful(request: dict[str, Any]) -> str:
    return str(len(word_of(request)))


def rows(warehouse: Path, sql: str, params: list[Any] | None = None) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


@pytest.fixture
def toy_settings(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    return lambda server: load_settings(
        warehouse=tmp_path / "peras.duckdb", base_urls=[server.base_url], model="fake-model", concurrency=2
    )


def test_a_declared_stage_runs_end_to_end_and_a_rerun_sends_nothing(toy_settings, tmp_path):
    with FakeOpenAI(truthful) as server:
        settings = toy_settings(server)
        result = toy(WORDS, settings=settings)
        assert (result["n_failures"], result["n_items"], len(server.chat_requests)) == (0, 6, 6)
        assert server.chat_requests[0].body["messages"] == [{"role": "user", "content": PROMPT.format(word="ant")}]
        warehouse = settings.warehouse
        assert rows(warehouse, "select word, n_letters, status from toy_answers order by word") == [
            (w, len(w), "ok") for w in WORDS
        ]
        assert rows(warehouse, "select run_name, model, backend, status, seed from toy_runs") == [
            ("toy", "fake-model", "openai-compatible", "published", 0)
        ]
        server.reset()
        again = toy(WORDS, settings=settings)
        assert (again["n_items"], server.chat_requests) == (0, [])
    assert rows(warehouse, "select count(*) from toy_answers") == [(6,)]


def test_a_failure_fails_the_gate_then_is_replaced_and_kept_in_history(toy_settings):
    with FakeOpenAI(lambda r: "many" if word_of(r) == "dingo" else truthful(r)) as server:
        settings = toy_settings(server)
        with pytest.raises(CheckFailed, match=r"toy: 1 of 6 answers failed"):
            toy(WORDS, settings=settings)
        # the unreadable answer was asked again 4 times (regenerations), then recorded as a failure
        assert sum(word_of(r.body) == "dingo" for r in server.chat_requests) == 5
        warehouse = settings.warehouse
        assert rows(warehouse, "select status, status_reason like '%toy: 1 of 6%' from toy_runs") == [
            ("failed_check", True)
        ]
        # a narrower call (the other words only) cannot publish the run: the gate judges everything it holds
        with pytest.raises(CheckFailed, match=r"toy: 1 of 6 answers failed"):
            toy([w for w in WORDS if w != "dingo"], settings=settings)
    with FakeOpenAI(truthful) as server:
        result = toy(WORDS, retry_failed=True, settings=toy_settings(server))
        assert [word_of(r.body) for r in server.chat_requests] == ["dingo"]
    assert result["n_failures"] == 0
    assert rows(warehouse, "select n_letters, status from toy_answers where word = 'dingo'") == [(5, "ok")]
    assert rows(warehouse, "select word, n_letters, status, why from toy_answer_history") == [
        ("dingo", None, "parse_failure", "failure asked again")
    ]
    assert rows(warehouse, "select status, status_reason from toy_runs") == [("published", None)]


def test_an_item_stored_twice_is_refused_by_the_gate(toy_settings):
    with FakeOpenAI(truthful) as server:
        settings = toy_settings(server)
        toy(WORDS, settings=settings)
        con = duckdb.connect(str(settings.warehouse))
        con.execute("insert into toy_answers select * from toy_answers where word = 'cat'")
        con.close()
        with pytest.raises(CheckFailed, match=r"\[copies\] 1 answers stored more than once, e.g. cat"):
            toy(WORDS, settings=settings)


def test_a_killed_toy_run_resumes_and_completes_each_item_once(toy_settings, tmp_path):
    words = [f"w{'x' * i}" for i in range(40)]
    with FakeOpenAI(lambda r: Reply(truthful(r), delay_s=0.05)) as server:
        settings = toy_settings(server)
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
        child = subprocess.Popen(
            [sys.executable, "-m", "tests.toy_stage", str(settings.warehouse), server.base_url, *words],
            env=env,
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 180
        while len(server.chat_requests) < 10 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.05)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        asked_before = {word_of(r.body) for r in server.chat_requests}
        assert len(asked_before) >= 10
        server.reset()
        result = toy(words, settings=settings)
        asked_after = [word_of(r.body) for r in server.chat_requests]
    # what the killed process had journaled was loaded, not asked again; the rest was asked once
    assert len(asked_after) == len(set(asked_after)) and result["n_failures"] == 0
    assert len(asked_before & set(asked_after)) <= 2  # at most the requests in flight at the kill (concurrency 2)
    assert rows(settings.warehouse, "select count(*), count(distinct word) from toy_answers") == [(40, 40)]
    assert rows(settings.warehouse, "select status from toy_runs") == [("published",)]


def test_a_run_called_again_with_another_seed_is_refused_with_the_difference_named(toy_settings):
    with FakeOpenAI(truthful) as server:
        settings = toy_settings(server)
        toy(WORDS[:2], settings=settings)
        with pytest.raises(UsageError) as refused:
            toy(WORDS[:2], seed=7, settings=settings)
    assert str(refused.value) == (
        "seed differs (stored 0, asked 7): toy run 'toy' already exists with another model, seed or prompt; "
        "choose another --run-name"
    )


def claim(settings, kind: str, name: str, backend: str):
    """Claim a run of a declared stage with made-up fixed values (the same each time)."""
    stage = declaration(kind)
    values = {c.name: dummy(c.type) for c in (*stage.fixed, *stage.run_columns, *stage.created)}
    return claim_run(settings, "w", RunClaim(stage, name, values, {"p": 1}), "m", backend)


CHECKED = {"condition": "HT", "prompt": "certainty", "position": "AB", "choice": "A"}  # columns with CHECKs


def dummy(column_type: str) -> Any:
    """A value of a column type."""
    return {
        "varchar": "x",
        "integer": 1,
        "bigint": 1,
        "double": 1.0,
        "boolean": True,
        "varchar[]": ["x"],
        "integer[]": [1],
        "json": {},
    }[column_type]


@pytest.mark.parametrize("kind", ["priming", "pairwise", "fuse", "personas", "judge"])
def test_a_resumed_run_clears_the_old_failure_and_records_the_backend_asking_now(settings, kind):
    """Drift found in issue 29: priming's resume kept the old status_reason, pairwise's and fuse's kept the old
    backend (and judge's, which kept its own claim). Every stage now resumes through the one template
    (sql/engine/stage/start_run.sql)."""
    stage = declaration(kind)
    run = claim(settings, kind, "r", "vllm")
    set_run_status(settings.warehouse, run, "failed", "RuntimeError: boom")
    again = claim(settings, kind, "r", "llama.cpp")
    assert again.run_id == run.run_id
    query = f"select backend, status, status_reason from {stage.runs_table} where run_name = 'r'"
    assert rows(settings.warehouse, query) == [("llama.cpp", "running", None)]


def test_a_judge_run_is_claimed_by_the_one_rule_keeping_the_subset_it_was_made_for(settings):
    """Judge claims its runs as every stage does: fixed by collection, model and request parameters; the subset it
    was made for is recorded once (a later call may narrow or extend what it judges), another collection refused."""
    stage = declaration("judge")
    values = {"collection_id": "sample", "subset_name": "tiny", "source": "llm", "task_type": "pointwise"}
    run = claim_run(settings, "w", RunClaim(stage, "j", values, {"p": 1}), "m", "vllm")
    again = claim_run(settings, "w", RunClaim(stage, "j", values | {"subset_name": None}, {"p": 1}), "m", "vllm")
    assert again.run_id == run.run_id
    query = "select collection_id, subset_name, source, task_type, model, status from judge_runs where run_name = 'j'"
    assert rows(settings.warehouse, query) == [("sample", "tiny", "llm", "pointwise", "m", "running")]
    with pytest.raises(UsageError) as refused:
        claim_run(settings, "w", RunClaim(stage, "j", values | {"collection_id": "dl19"}, {"p": 1}), "m", "vllm")
    assert str(refused.value) == (
        "collection_id differs (stored 'sample', asked 'dl19'): judge run 'j' already exists with another collection,"
        " model, confidence methods, prompt or request parameters; choose another --run-name"
    )


@pytest.mark.parametrize("kind", ["priming", "pairwise", "fuse", "personas", "toy", "recognize", "recognize_traits"])
def test_runs_delete_removes_a_run_of_every_kind_and_leaves_no_orphans(capsys, settings, kind):
    stage = declaration(kind)
    run = claim(settings, kind, "doomed", "vllm")
    keep = claim(settings, kind, "kept", "vllm")
    names = [c.name for c in (*stage.keys, *stage.values)]
    with open_migrated(settings.warehouse) as con:
        for run_id in (run.run_id, keep.run_id):
            values = [run_id, *(CHECKED.get(c.name, dummy(c.type)) for c in (*stage.keys, *stage.values))]
            marks = ", ".join("?" * (len(values) + 2))
            columns = f"{stage.run_id}, {', '.join(names)}, status, {stage.time_column}"
            con.execute(
                f"insert into {stage.answers_table} ({columns}) values ({marks})", [*values, "ok", "2026-01-01"]
            )
            con.execute(
                f"insert into {stage.history_table} ({columns}, replaced_at, why) values ({marks}, ?, ?)",
                [*values, "parse_failure", "2026-01-01", "2026-01-02", "failure asked again"],
            )
    listed = run_cli(capsys, "runs", "list", "--kind", kind, "--warehouse", str(settings.warehouse))
    assert listed.exit_code == 0, listed.err
    assert [line.split()[:2] for line in listed.out.splitlines()[1:]] == [[kind, "doomed"], [kind, "kept"]]
    deleted = run_cli(
        capsys, "runs", "delete", "doomed", "--kind", kind, "--yes", "--warehouse", str(settings.warehouse)
    )
    assert deleted.exit_code == 0, deleted.err
    assert deleted.out == f"deleted {kind} run doomed (running, 1 items); its LLM answers stay cached\n"
    for table in (stage.runs_table, stage.answers_table, stage.history_table, *stage.owned_tables):
        query = f"select count(*) filter (where {stage.run_id} = ?), count(*) from {table}"
        counts = rows(settings.warehouse, query, [run.run_id])[0]
        assert counts[0] == 0, table
        if table != stage.runs_table and table in (stage.answers_table, stage.history_table):
            assert counts[1] == 1, table  # the other run's row stays


def test_every_stage_that_asks_an_llm_is_declared():
    kinds = {stage.kind for stage in declarations()}
    assert {"judge", "pairwise", "priming", "personas", "fuse"} <= kinds
    assert TOY.kind in kinds
    [statement] = declaration("pairwise").sql("select_done")
    assert statement.splitlines()[2:] == [
        "select query_id, doc_1, doc_2, personality, prompt, position, status",
        "from pairwise_answers",
        "where pairwise_run_id = $run_id",
    ]


def test_a_declaration_file_is_checked_when_it_is_read(tmp_path):
    from tasks.engine.stage import load_declaration

    folder = tmp_path / "pairwise"
    folder.mkdir()
    text = (PROJECT_ROOT / "tasks" / "pairwise" / "stage.toml").read_text()
    (folder / "stage.toml").write_text(text)
    assert load_declaration(folder / "stage.toml") == declaration("pairwise")
    (folder / "stage.toml").write_text("colour = 'blue'\n" + text)
    with pytest.raises(ValueError, match=r"stage.toml: unknown fields \['colour'\]"):
        load_declaration(folder / "stage.toml")
    (folder / "stage.toml").write_text(text.replace('item_columns = ["query_id"', 'item_columns = ["query"'))
    with pytest.raises(ValueError, match=r"failure_group/item_name name unknown columns \['query'\]"):
        load_declaration(folder / "stage.toml")
    (folder / "stage.toml").write_text(text.replace('runs_table = "pairwise_runs"', 'runs_table = "x; drop"'))
    with pytest.raises(ValueError, match="not a plain SQL identifier"):
        load_declaration(folder / "stage.toml")


def test_a_template_refuses_a_name_that_is_not_a_plain_identifier():
    from tasks.engine.stage import Column, StageDeclaration

    with pytest.raises(ValueError, match="not a plain SQL identifier"):
        Column("x; drop table judgments")
    with pytest.raises(ValueError, match="not a plain SQL identifier"):
        StageDeclaration(
            kind="bad kind", label="x", runs_table="r", run_id="i", fixed=(), answers_table="a", history_table="h",
            keys=(Column("k"),), values=(),
        )  # fmt: skip


def test_run_statements_binds_only_what_each_statement_names(settings):
    with open_migrated(settings.warehouse) as con:
        rows_ = run_statements(con, ["select $a::int as a", "select $b::int + 1 as b"], {"a": 1, "b": 2}).fetchall()
    assert rows_ == [(3,)]


@pytest.mark.parametrize(
    ("kind", "parts", "name"),
    [
        (
            "pairwise",
            {"collection": "dl19", "subset": "balanced", "model": "org/m-1"},
            "dl19-balanced-pairwise-org_m-1",
        ),
        ("pairwise", {"collection": "dl19", "subset": None, "model": "m"}, "dl19-pairwise-m"),
        ("priming", {"collection": "dl19", "model": "m"}, "dl19-priming-m"),
        ("fuse", {"collection": "dl19", "judges": "0123abcd", "model": "none"}, "dl19-fuse-0123abcd-none"),
        ("personas", {"set": "builtin", "model": "fake-model"}, "personas-builtin-fake-model"),
        ("judge", {"collection": "sample", "subset": None, "model": "fake-model"}, "sample-fake-model"),
        ("judge", {"collection": "dl19", "subset": "runs", "model": "m"}, "dl19-runs-m"),
        ("toy", {"model": "m"}, "toy-m"),
    ],
)
def test_one_run_name_rule_names_every_stage_as_before(kind, parts, name):
    """The names each stage gave its runs before issue 29 (five functions, four formats), from one rule."""
    assert declaration(kind).default_run_name(**parts) == name


def test_a_personality_set_build_is_a_run_listed_shown_and_deleted(capsys, settings):
    with open_migrated(settings.warehouse) as con:
        for set_id, version in (("s1", 1), ("s2", 2)):
            con.execute(
                "insert into persona_sets (set_id, set_name, version, model, backend, params, status, created_at) "
                "values (?, 'bset', ?, 'm', 'vllm', '{}', 'published', '2026-01-01')",
                [set_id, version],
            )
            for condition in ("HO", "LO"):
                con.execute(
                    "insert into persona_set_builds (set_id, condition, round, personality, status, built_at) "
                    "values (?, ?, 1, ?, 'ok', '2026-01-01')",
                    [set_id, condition, f"bset-v{version}-{condition}"],
                )

    def runs(*args: str):
        return run_cli(capsys, "runs", *args, "--warehouse", str(settings.warehouse))

    listed = runs("list", "--kind", "persona_sets")
    assert [line.split()[:2] + line.split()[4:7] for line in listed.out.splitlines()[1:]] == [
        ["persona_sets", "bset@1", "published", "2", "0"],
        ["persona_sets", "bset@2", "published", "2", "0"],
    ]
    shown = runs("show", "bset@2")
    assert shown.out.splitlines()[:2] == ["kind:          persona_sets", "run_name:      bset@2"]
    refused = runs("rename", "bset@2", "other")
    assert refused.exit_code == 2 and "build a new set with `peras personas build NEW_NAME`" in refused.err
    deleted = runs("delete", "bset@1", "--yes")
    assert deleted.out == "deleted persona_sets run bset@1 (published, 2 items); its LLM answers stay cached\n"
    assert rows(settings.warehouse, "select set_id, count(*) from persona_set_builds group by all") == [("s2", 2)]
    assert rows(settings.warehouse, "select set_id from persona_sets") == [("s2",)]


def test_a_run_asked_by_a_live_process_is_refused_to_a_second_one(toy_settings):
    """Issue 36 items 3 and 4: two processes with one run name at once asked it twice (copies on a lake, shards
    deleted under the other on a file). The second is now refused with the holder named; the first completes it."""
    words = [f"w{'x' * i}" for i in range(30)]
    refused = threading.Event()  # the first process's answers wait until the second has been refused

    def slow(request: dict[str, Any]) -> Reply:
        if not WORD.search(str(request["messages"][-1]["content"])):
            return Reply("ok")  # the endpoint check
        return Reply(truthful(request), delay_s=0.0 if refused.is_set() else 3.0, until=refused)

    with FakeOpenAI(slow) as server:
        settings = toy_settings(server)
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
        command = [sys.executable, "-m", "tests.toy_stage", str(settings.warehouse), server.base_url, *words]
        first = subprocess.Popen(command, env=env, cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 180
        while len(server.chat_requests) < 1 and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.05)
        second = subprocess.run(command, env=env, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
        refused.set()
        assert second.returncode != 0
        assert f"toy run 'toy' is being asked by another process (pid {first.pid} on " in second.stderr
        _, err = first.communicate(timeout=300)
        assert first.returncode == 0, err
        asked = [word_of(r.body) for r in server.chat_requests]
    assert sorted(asked) == sorted(words)  # each word asked once, by the first process only
    assert rows(settings.warehouse, "select count(*), count(distinct word) from toy_answers") == [(30, 30)]
    assert rows(settings.warehouse, "select status from toy_runs") == [("published",)]
    assert rows(settings.warehouse, "select count(*) from run_leases") == [(0,)]  # dropped when it ended


def test_a_warehouse_made_before_declarations_keeps_its_runs(capsys, tmp_path, monkeypatch, settings):
    """A warehouse of main before issue 29 (migrations up to V520, runs written by the per-stage SQL files that the
    declarations replaced) opens, migrates in place (V530 adds the run leases) and keeps every run: listed, resumed."""
    from peras import warehouse_migrations

    every = warehouse_migrations.migrations()
    monkeypatch.setattr(warehouse_migrations, "migrations", lambda: [m for m in every if m[0] <= 520])
    with open_migrated(settings.warehouse) as con:
        con.execute(
            "insert into pairwise_runs values ('p1', 'old-pairwise', 'sample', null, 'm', 'vllm', 42, "
            "'{\"p\": 1}', '{}', 'published', null, '2026-11-01', '2026-11-01')"
        )
        con.execute(
            "insert into pairwise_answers values ('p1', 'q', 'a', 'b', 3, 0, 'default', 'certainty', 'AB', 'A', 90, "
            "'ok', null, 'r1', '2026-11-01')"
        )
        con.execute(
            "insert into priming_runs (priming_run_id, run_name, collection_id, model, backend, seed, params, scope, "
            "status, status_reason, created_at) values ('r1', 'old-priming', 'sample', 'm', 'vllm', 42, '{}', '{}', "
            "'failed', 'RuntimeError: boom', '2026-11-02')"
        )
        tables = {row[0] for row in con.execute("select table_name from duckdb_tables()").fetchall()}
    assert "run_leases" not in tables
    monkeypatch.setattr(warehouse_migrations, "migrations", lambda: every)
    listed = run_cli(capsys, "runs", "list", "--warehouse", str(settings.warehouse))
    assert listed.exit_code == 0, listed.err
    assert [line.split()[:5] for line in listed.out.splitlines()[2:]] == [
        ["kind", "run", "model", "backend", "status"],
        ["pairwise", "old-pairwise", "m", "vllm", "published"],
        ["priming", "old-priming", "m", "vllm", "failed"],
    ]
    stage = declaration("pairwise")
    values = {"collection_id": "sample", "subset_name": None, "seed": 42, "scope": {}}
    resumed = claim_run(settings, "w", RunClaim(stage, "old-pairwise", values, {"p": 1}), "m", "vllm")
    assert resumed.run_id == "p1"
    assert rows(settings.warehouse, "select count(*) from pairwise_answers where pairwise_run_id = 'p1'") == [(1,)]


def test_a_judge_run_whose_other_personality_failed_is_not_published_by_a_narrower_call(capsys, settings, tmp_path):
    """Issue 36 item 2, judge: HA's answers all unreadable, the run fails its gate; calling it again with
    `--personality default` alone used to publish it (HA listed with 0 scored). The gate judges the whole run."""
    from flows.ingest import ingest

    ingest(preset="sample", settings=settings)

    def judge(server: FakeOpenAI, *personalities: str):
        chosen = [arg for code in personalities for arg in ("--personality", code)]
        return run_cli(
            capsys, "judge", "sample", "--base-url", server.base_url, "--model", "fake-model", "--limit-pairs", "4",
            "--cot", "without", "--confidence-method", "verbalized", "--run-name", "narrow",
            "--warehouse", str(settings.warehouse), *chosen,
        )  # fmt: skip

    def answer(request: dict[str, Any]) -> str:
        if "please give a confidence score" in str(request["messages"][-1]["content"]):
            return "80"
        return "I cannot say." if "very high Agreeableness" in str(request["messages"]) else "2"

    with FakeOpenAI(answer) as server:
        failed = judge(server, "default", "HA")
        assert failed.exit_code != 0 and "parse failures above threshold" in failed.err
        narrower = judge(server, "default")
    assert narrower.exit_code != 0 and "HA cot=false verbalized: 4 of 4 failed" in narrower.err
    assert rows(settings.warehouse, "select status from judge_runs where run_name = 'narrow'") == [("failed_check",)]


def test_deleting_a_judge_run_deletes_what_was_built_on_it_and_says_so(capsys, settings):
    """Issue 36 item 13: deleting a judge run left its evaluations, hole-filling experiments and fuse runs behind
    (still in rank_agreement_summary and the report). They now go with it, listed in the question and the answer."""
    with open_migrated(settings.warehouse) as con:
        con.execute(
            "insert into judge_runs (run_id, run_name, source, task_type, collection_id, model, backend, params, "
            "created_at, status) values ('j1', 'judged', 'llm', 'pointwise', 'sample', 'm', 'vllm', '{}', "
            "'2026-11-01', 'published')"
        )
        con.execute(
            "insert into evaluations values ('e1', 'sample', 'llm', 'j1', null, '[]', '{}', '2026-11-01'), "
            "('e2', 'sample', 'filled', 'j1', 'h1', '[]', '{}', '2026-11-01'), "
            "('e3', 'sample', 'human', null, null, '[]', '{}', '2026-11-01')"
        )
        con.execute("insert into system_scores values ('e1', 'human', 's', 'nDCG@10', 'all', 0.5)")
        con.execute("insert into rank_agreement values ('e2', 'filled', 'nDCG@10', 'all', 3, 1, 1, 1)")
        con.execute("insert into holes_experiments values ('h1', 'sample', 'j1', 'default', 1, 10, 0, '2026-11-01')")
        con.execute("insert into holes_results values ('h1', 0.3, 'nDCG@10', 'e2', 3, 1.0, 3, 1, 1, 1, 1)")
    fuse = declaration("fuse")
    values = {"collection_id": "sample", "feature_set_id": "f", "seed": 1, "scope": {}}
    fused = claim_run(settings, "w", RunClaim(fuse, "fused", values, {}), "none", "none", lease=False)
    with open_migrated(settings.warehouse) as con:
        con.execute(
            "insert into fuse_judges values (?, 'default', 1, 'judged', 'default', false, 'verbalized')", [fused.run_id]
        )
    deleted = run_cli(capsys, "runs", "delete", "judged", "--yes", "--warehouse", str(settings.warehouse))
    assert deleted.exit_code == 0, deleted.err
    assert deleted.out == (
        "deleted run judged (llm, sample, 0 judgments) with what was built on it: evaluation e1, fuse run fused, "
        "holes experiment h1; its LLM answers stay cached\n"
    )
    for table, left in [
        ("evaluations", [("e3",)]),
        ("system_scores", []),
        ("rank_agreement", []),
        ("holes_experiments", []),
        ("holes_results", []),
        ("fuse_runs", []),
        ("fuse_judges", []),
    ]:
        assert (
            rows(settings.warehouse, f"select {'evaluation_id' if table == 'evaluations' else 1} from {table}") == left
        )


def test_pairwise_asks_under_a_stored_personality_set_as_judge_does(capsys, settings):
    """Issue 29: three ways to choose personalities (only judge read a stored set) are one
    (tasks/shared/personalities.py); pairwise and priming take --personality-set too."""
    from flows.ingest import ingest

    ingest(preset="sample", settings=settings)
    with open_migrated(settings.warehouse) as con:
        con.execute(
            "insert into persona_sets (set_id, set_name, version, model, backend, params, status, created_at) "
            "values ('s1', 'bset', 1, 'm', 'vllm', '{}', 'published', '2026-01-01')"
        )
        con.execute(
            "insert into persona_set_builds (set_id, condition, round, personality, keywords, instruction, status, "
            "built_at) values ('s1', 'HO', 1, 'bset-v1-HO', 'curious', 'You are the built HO persona.', 'ok', "
            "'2026-01-01')"
        )
    with FakeOpenAI() as server:
        result = run_cli(
            capsys, "pairwise", "sample", "--warehouse", str(settings.warehouse), "--base-url", server.base_url,
            "--model", "fake-model", "--pairs-per-topic", "1", "--personality-set", "bset",
            "--personality", "bset-v1-HO",
        )  # fmt: skip
        contents = [str(r.body["messages"]) for r in server.chat_requests if "Passage" in str(r.body["messages"])]
    assert contents and all("You are the built HO persona." in content for content in contents), result.err
    assert rows(settings.warehouse, "select distinct personality from pairwise_answers") == [("bset-v1-HO",)]
    unknown = run_cli(
        capsys, "pairwise", "sample", "--warehouse", str(settings.warehouse), "--base-url", server.base_url,
        "--model", "fake-model", "--personality-set", "bset", "--personality", "HO",
    )  # fmt: skip
    assert unknown.exit_code == 2 and "set bset has no personality HO; it has default, bset-v1-HO" in unknown.err


def test_a_build_whose_instructions_are_unreadable_says_why_and_resumes_with_retry_failed(capsys, settings):
    """Issue 36 item 12: a build whose Step 2 answers were all unreadable ended `no personality set 'bset1@1' in
    the warehouse`, and a rerun said the same. It now says what failed, and --retry-failed resumes it."""
    from tests.test_persona_build import STEP_2, scripted

    good = scripted(None)

    def unreadable(request: dict[str, Any]) -> str | list[str]:
        return "I would rather not." if STEP_2.match(request["messages"][-1]["content"]) else good(request)

    def build(server: FakeOpenAI, *extra: str):
        return run_cli(
            capsys, "personas", "build", "bset1", "--condition", "HO", "--max-rounds", "1", "--check-samples", "2",
            "--items-per-domain", "1", "--base-url", server.base_url, "--model", "fake-model",
            "--warehouse", str(settings.warehouse), *extra,
        )  # fmt: skip

    with FakeOpenAI(unreadable) as server:
        failed = build(server)
    assert failed.exit_code != 0
    assert "no personality set" not in failed.err
    assert "set bset1@1 not published: no readable instruction for HO in 1 round(s) (HO round 1: parse_failure" in (
        failed.err
    )
    assert "run the same build again with --retry-failed" in failed.err
    with FakeOpenAI(good) as server:
        resumed = build(server, "--retry-failed")
    assert resumed.exit_code == 0, resumed.err
    assert rows(settings.warehouse, "select set_name, version, status from persona_sets") == [("bset1", 1, "published")]


def peras(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`peras ARGS` in a process of its own, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args],
        cwd=PROJECT_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_stage_without_a_command_of_its_own_is_run_listed_and_deleted_by_peras_ask(toy_settings, tmp_path):
    """The toy has no command and no flow: `peras ask` makes its command from its Parameters and runs it on the `ask`
    flow; PERAS_STAGE_MODULES names it once, so that every process (`peras runs`) knows its kind."""
    with FakeOpenAI(truthful) as server:
        settings = toy_settings(server)
        env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT), "PERAS_ENDPOINT_SLOTS_DIR": str(tmp_path / "slots")}
        where = ["--warehouse", str(settings.warehouse)]
        endpoint = ["--base-url", server.base_url, "--model", "fake-model"]
        asked = peras(
            "ask", "tests.toy_stage", "--word", "cat", "--word", "horse", "--seed", "3", *endpoint, *where, env=env
        )
        assert asked.returncode == 0, asked.stderr
        assert "n_failures: 0" in asked.stdout.splitlines()
        assert sorted(word_of(r.body) for r in server.chat_requests) == ["cat", "horse"]
        assert {r.body["seed"] for r in server.chat_requests} == {3}
    assert rows(settings.warehouse, "select word, n_letters, status from toy_answers order by word") == [
        ("cat", 3, "ok"),
        ("horse", 5, "ok"),
    ]
    # without the setting another process does not know the kind `toy`; with it, `peras ask toy` and `peras runs` do
    unknown = peras("ask", "toy", "--word", "cat", *where, env=env)
    assert (unknown.returncode, unknown.stderr.strip().splitlines()[-1]) == (
        2,
        "error: no stage 'toy' to ask: give a kind (none) or the dotted name of a stage module of your own "
        "(docs/architecture.md, 'Adding an LLM stage')",
    )
    env["PERAS_STAGE_MODULES"] = "tests.toy_stage"
    helped = peras("ask", "toy", "--help", env=env)
    assert helped.returncode == 0 and "--word TEXT" in helped.stdout and "--retry-failed" in helped.stdout
    missing = peras("ask", "toy", *where, env=env)
    assert missing.returncode == 2 and "Missing option '--word'" in missing.stderr
    listed = peras("runs", "list", "--kind", "toy", *where, env=env)
    assert listed.returncode == 0, listed.stderr
    (line,) = listed.stdout.splitlines()[1:]
    assert line.split()[:3] == ["toy", "toy", "fake-model"] and " published " in line
    deleted = peras("runs", "delete", "toy", "--kind", "toy", "--yes", *where, env=env)
    assert deleted.returncode == 0, deleted.stderr
    assert rows(settings.warehouse, "select (select count(*) from toy_runs), (select count(*) from toy_answers)") == [
        (0, 0)
    ]
