"""`peras runs`: list, show, rename and delete judge runs through the real CLI, on a tmp warehouse."""

from __future__ import annotations

import io
import re
from pathlib import Path

import duckdb
import pytest

from support.fake_openai import FakeOpenAI, instant
from tests.helpers import run_cli

pytestmark = pytest.mark.integration

JUDGED = "sample-fake-model"  # the default name of a judge run of the sample by model fake-model


@pytest.fixture
def warehouse(tmp_path: Path, capsys) -> Path:
    """A warehouse holding the sample and an imported run `mine` (every label one level off)."""
    path = tmp_path / "peras.duckdb"
    assert run_cli(capsys, "ingest", "sample", "--warehouse", str(path)).exit_code == 0
    qrels = (Path(__file__).resolve().parents[1] / "peras" / "data" / "sample" / "qrels.txt").read_text().splitlines()
    run_file = tmp_path / "run.txt"
    run_file.write_text("".join(f"{q} 0 {d} {(int(r) + 1) % 4}\n" for q, _, d, r in (line.split() for line in qrels)))
    imported = run_cli(
        capsys, "import-judgments", str(run_file), "--name", "mine", "--collection", "sample", "--warehouse", str(path)
    )
    assert imported.exit_code == 0, imported.err
    return path


def judge(capsys, server: FakeOpenAI, warehouse: Path, *extra: str):
    """`peras judge sample` on 2 pairs, default personality, without CoT, against the fake server."""
    result = run_cli(
        capsys,
        "judge",
        "sample",
        "--base-url",
        server.base_url,
        "--model",
        "fake-model",
        "--limit-pairs",
        "2",
        "--personality",
        "default",
        "--cot",
        "without",
        "--warehouse",
        str(warehouse),
        *extra,
    )
    assert result.exit_code == 0, result.err
    return result


def runs(capsys, warehouse: Path, *args: str):
    return run_cli(capsys, "runs", *args, "--warehouse", str(warehouse))


def count(warehouse: Path, sql: str) -> int:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


def without_times(text: str) -> str:
    return re.sub(r"\d{4}-\d\d-\d\d \d\d:\d\d(:\d\d)?", "TIME", text)


def test_list_shows_judged_and_imported_runs_oldest_first(capsys, warehouse):
    with FakeOpenAI(instant) as server:
        judge(capsys, server, warehouse)
    result = runs(capsys, warehouse, "list")
    assert result.exit_code == 0, result.err
    assert without_times(result.out) == (
        "run                collection  subset  model       source  status     judgments  failures  created\n"
        "mine               sample      -       unknown     import  published         40         0  TIME\n"
        "sample-fake-model  sample      -       fake-model  llm     published          2         0  TIME\n"
    )
    assert runs(capsys, warehouse, "list", "--collection", "dl19").out == (
        "no judge runs on collection 'dl19' yet: `peras judge sample` or `peras import-judgments` makes one\n"
    )


def test_show_prints_the_run_and_its_judgments_per_setting(capsys, warehouse):
    result = runs(capsys, warehouse, "show", "mine")
    assert result.exit_code == 0, result.err
    lines = without_times(result.out).splitlines()
    assert lines[0] == "run_name:      mine"
    assert lines[1].startswith("run_id:        import-")
    assert lines[2:10] == [
        "source:        import",
        "collection_id: sample",
        "subset_name:   -",
        "model:         unknown",
        "backend:       import",
        "status:        published",
        "created_at:    TIME",
        "finished_at:   -",
    ]
    assert lines[10].startswith('params:        {"confidence_column": null, "file": ')
    assert lines[11:] == [
        "40 judgments, 0 failures",
        "personality  CoT      method  judgments  ok  failures",
        "default      without  none           40  40         0",
    ]


def test_a_run_that_does_not_exist_is_refused_with_the_names_there_are(capsys, warehouse):
    for args in (["show", "nope"], ["rename", "nope", "other"], ["delete", "nope", "--yes"]):
        result = runs(capsys, warehouse, *args)
        assert (result.exit_code, result.err) == (2, "error: no run named 'nope' (runs: mine)\n"), args


def test_rename_keeps_the_judgments_and_a_judge_run_resumes_under_the_new_name(capsys, warehouse):
    with FakeOpenAI(instant) as server:
        judge(capsys, server, warehouse)
        result = runs(capsys, warehouse, "rename", JUDGED, "baseline")
        assert (result.exit_code, result.out) == (0, f"renamed {JUDGED} -> baseline\n")
        # analysts see the new name at once (the snapshot `peras sql` reads is refreshed)
        names = run_cli(
            capsys,
            "sql",
            "select run_name from judge_runs order by 1",
            "--format",
            "csv",
            "--warehouse",
            str(warehouse),
        )
        assert names.out == "run_name\nbaseline\nmine\n"
        server.reset()
        again = judge(capsys, server, warehouse, "--run-name", "baseline")
        assert server.chat_requests == []  # resumed: both pairs were already judged under this run
        assert again.out.startswith("baseline: 2 judgments (0 new; 0 requests sent")
    assert count(warehouse, "select count(*) from judge_runs") == 2
    assert (
        count(
            warehouse, "select count(*) from judgments j join judge_runs r using (run_id) where r.run_name = 'baseline'"
        )
        == 2
    )


def test_rename_refuses_a_name_in_use_and_frees_an_imports_old_name(capsys, warehouse, tmp_path):
    taken = runs(capsys, warehouse, "rename", "mine", "mine")
    assert (taken.exit_code, taken.err) == (2, "error: a run named 'mine' already exists: delete or rename it first\n")
    assert runs(capsys, warehouse, "rename", "mine", "theirs").exit_code == 0
    # the same file imported again under the old name is a new run next to the renamed one
    again = run_cli(
        capsys,
        "import-judgments",
        str(tmp_path / "run.txt"),
        "--name",
        "mine",
        "--collection",
        "sample",
        "--warehouse",
        str(warehouse),
    )
    assert again.exit_code == 0, again.err
    assert count(warehouse, "select count(distinct run_id) from judgments") == 2
    assert count(warehouse, "select count(*) from import_reports where run_name in ('mine', 'theirs')") == 2


def test_delete_asks_first_and_keeps_the_request_cache(capsys, warehouse, monkeypatch):
    with FakeOpenAI(instant) as server:
        judge(capsys, server, warehouse)
        n_requests = count(warehouse, "select count(*) from llm_requests")
        assert n_requests == 4  # 2 pairs x (label, confidence)

        monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
        declined = runs(capsys, warehouse, "delete", JUDGED)
        assert (declined.exit_code, declined.err) == (
            1,
            f"delete run {JUDGED} (llm, sample, 2 judgments)? [y/N]: nothing deleted\n",
        )
        assert count(warehouse, "select count(*) from judgments") == 42

        monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
        deleted = runs(capsys, warehouse, "delete", JUDGED)
        assert deleted.exit_code == 0, deleted.err
        assert deleted.out == f"deleted run {JUDGED} (llm, sample, 2 judgments); its LLM answers stay cached\n"
        assert count(warehouse, "select count(*) from judgments") == 40  # the import's
        assert count(warehouse, f"select count(*) from judge_runs where run_name = '{JUDGED}'") == 0
        assert count(warehouse, "select count(*) from llm_requests") == n_requests

        server.reset()
        again = judge(capsys, server, warehouse)
        assert server.chat_requests == []  # judged again from the cache
        assert again.out.startswith(f"{JUDGED}: 2 judgments (2 new; 0 requests sent, 4 reused)")


def test_delete_with_yes_does_not_ask(capsys, warehouse):
    result = runs(capsys, warehouse, "delete", "mine", "--yes")
    assert (result.exit_code, result.err) == (0, "")
    assert result.out == "deleted run mine (import, sample, 40 judgments); its LLM answers stay cached\n"
    assert count(warehouse, "select count(*) from import_reports") == 0
    assert runs(capsys, warehouse, "list").out.startswith("no judge runs yet")
