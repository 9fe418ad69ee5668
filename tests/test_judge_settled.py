"""Issue 35: `peras judge` with nothing to ask and nothing to change answers from the warehouse, before Prefect;
whatever the flow would change (a call left running, a judgment missing) still goes through the flow."""

from __future__ import annotations

from typing import Any

import pytest

import cli.commands.judge as judge_command
from support.fake_openai import FakeOpenAI, instant
from tests.helpers import snapshot
from tests.test_integrity import execute, judge_cli, rows, sample  # noqa: F401 - the fixture

pytestmark = pytest.mark.integration
ONE = ("--personality", "default", "--cot", "without", "--run-name", "again")
LINE = "again: 40 judgments ({}), 0 parse failures; model fake-model via openai-compatible\n"


@pytest.fixture
def flow_runs(monkeypatch) -> list[str]:
    """The flows the judge command starts (by name), still run."""
    started: list[str] = []
    run_flow = judge_command.run_flow

    def counted(flow: Any, **parameters: Any) -> Any:
        started.append(flow.name)
        return run_flow(flow, **parameters)

    monkeypatch.setattr(judge_command, "run_flow", counted)
    return started


def test_a_finished_run_called_again_is_answered_without_a_flow_run_and_changes_nothing(sample, capsys, flow_runs):  # noqa: F811
    with FakeOpenAI(instant) as server:
        first = judge_cli(capsys, sample.warehouse, server, *ONE)
        assert (first.exit_code, first.out) == (0, LINE.format("40 new; 80 requests sent, 0 reused")), first.err
        before, asked = snapshot(sample.warehouse), len(server.chat_requests)
        again = judge_cli(capsys, sample.warehouse, server, *ONE)
        assert (again.exit_code, again.out, again.err) == (0, LINE.format("0 new; 0 requests sent, 0 reused"), "")
        assert len(server.chat_requests) == asked
    # the server is gone: a call with nothing to ask does not need it (not even to check that it answers)
    gone = judge_cli(capsys, sample.warehouse, server, *ONE)
    assert (gone.exit_code, gone.out, gone.err) == (0, LINE.format("0 new; 0 requests sent, 0 reused"), "")
    more = judge_cli(capsys, sample.warehouse, server, *ONE[:-2])  # another run: it must ask, and says it cannot
    assert (more.exit_code, more.out) == (1, "")
    assert more.err.startswith(f"error: cannot reach {server.base_url}: ConnectionRefusedError"), more.err
    assert flow_runs == ["judge"]  # the first call's only: the server is checked before any flow run
    assert snapshot(sample.warehouse) == before


def test_a_run_a_killed_call_left_running_goes_through_the_flow_and_is_published_again(sample, capsys, flow_runs):  # noqa: F811
    with FakeOpenAI(instant) as server:
        assert judge_cli(capsys, sample.warehouse, server, *ONE).exit_code == 0
        execute(sample.warehouse, "update judge_runs set status = 'running', finished_at = null")
        again = judge_cli(capsys, sample.warehouse, server, *ONE)
    assert (again.exit_code, again.out) == (0, LINE.format("0 new; 0 requests sent, 0 reused"))
    assert flow_runs == ["judge", "judge"]
    assert rows(sample.warehouse, "select status from judge_runs") == [("published",)]


def test_a_missing_judgment_goes_through_the_flow_and_is_made_again_from_the_stored_answer(sample, capsys, flow_runs):  # noqa: F811
    with FakeOpenAI(instant) as server:
        assert judge_cli(capsys, sample.warehouse, server, *ONE).exit_code == 0
        execute(sample.warehouse, "delete from judgments where doc_id = (select min(doc_id) from judgments)")
        asked = len(server.chat_requests)
        again = judge_cli(capsys, sample.warehouse, server, *ONE)
        assert len(server.chat_requests) == asked
    assert (again.exit_code, again.out) == (0, LINE.format("1 new; 0 requests sent, 2 reused"))
    assert flow_runs == ["judge", "judge"]


def test_retry_failed_or_a_format_the_run_was_not_made_in_goes_through_the_flow(sample, capsys, flow_runs):  # noqa: F811
    with FakeOpenAI(instant) as server:
        assert judge_cli(capsys, sample.warehouse, server, *ONE).exit_code == 0  # made free: nothing enforced
        retried = judge_cli(capsys, sample.warehouse, server, *ONE, "--retry-failed")
        free = judge_cli(capsys, sample.warehouse, server, *ONE, "--answer-format", "free")  # as it was made
        constrained = judge_cli(capsys, sample.warehouse, server, *ONE, "--answer-format", "constrained")
    assert (retried.exit_code, free.exit_code, constrained.exit_code) == (0, 0, 2)
    assert flow_runs == ["judge", "judge", "judge"]  # the first, --retry-failed, and the refused format
