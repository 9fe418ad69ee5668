"""The benchmarks' own arithmetic (the benchmarks themselves run on demand, not in CI)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import common
from bench.bench_overhead import summarize_profile

pytestmark = pytest.mark.core


def test_profile_stages_go_to_the_innermost_matching_frame() -> None:
    stacks = [
        # a socket write inside the client belongs to the client, not to the shard scheduler around it
        "<module> (peras:6);run_bounded (/r/tasks/engine/shards.py:80);LLMClient.chat (/r/peras/llm/client.py:150);"
        "write (asyncio/selector_events.py:1050) 6",
        "<module> (peras:6);ChunkJudge.ask (/r/tasks/judge/judging.py:234);request_hashes (/r/peras/prompting.py:200);"
        "_canonical_json (/r/peras/prompting.py:230) 3",
        "<module> (peras:6);judge (/r/flows/judge.py:90);run_task (prefect/task_engine.py:1929) 1",
        "_bootstrap (threading.py:1002) 2",
        "",
    ]
    summary = summarize_profile(stacks)
    assert summary["samples"] == 12
    assert summary["python_busy_s"] == 0.1
    assert summary["stage_share"] == {
        "HTTP client and response parsing": 0.5,
        "request ids: sha256 of canonical JSON": 0.25,
        "other (threads, event loop, GC)": 0.167,
        "Prefect (flow/task engine, API, events)": 0.083,
    }
    assert summary["top_self"][0] == {"frame": "write (selector_events.py)", "share": 0.5}


def test_result_file_records_machine_date_and_headline(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(common, "RESULTS", tmp_path)
    started = common.machine()
    row = common.headline("pipeline overhead", 1971.14, "judg/s", ">= 1,000 judg/s", True)
    out = common.write_result("overhead", {"headline": [row]}, started)
    payload = json.loads(out.read_text(encoding="utf-8"))
    assert out.name == f"overhead-{payload['date']}.json"
    assert payload["benchmark"] == "overhead"
    assert payload["machine"]["nproc"] == started["nproc"]
    assert len(payload["machine"]["load_average_at_end"]) == 3
    assert payload["headline"] == [
        {"measure": "pipeline overhead", "value": 1971.14, "unit": "judg/s", "target": ">= 1,000 judg/s", "met": True}
    ]
