"""The priming flow on the real DL19 over real HTTP against a scripted OpenAI-compatible server."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pytest
from scipy import stats

from flows.priming import priming
from peras.errors import CheckFailed, UsageError
from support.fake_openai import FakeOpenAI
from tasks.priming.draws import choose_topics, draw_trial, load_pools
from tests.conftest import SHARED_DATA
from tests.helpers import run_cli

pytestmark = pytest.mark.integration

TEN_TOPICS = ["1112341", "1114819", "1117099", "168216", "183378", "264014", "443396", "451602", "833860", "915593"]
HA_START = "You are a person with very high Agreeableness."
PASSAGE_LINE = re.compile(r"^\[(\S+)\] ", re.M)
# The prompt's worked example, as a model that repeats it before answering would (the parser passes over it).
EXAMPLE_ECHO = 'As in the example, {"example-1": 2, "example-2": 0, "example-3": 3, "example-4": 1}; here:\n'


def batch_ids(content: str) -> list[str]:
    """The ids of the batch's passages: the passage lines after the last 'Passages:' (the first lists the example's)."""
    return PASSAGE_LINE.findall(content.rsplit("\nPassages:\n", 1)[1])


@pytest.fixture(scope="module")
def dl19_file(tmp_path_factory, ingested) -> Path:
    """DL19 as the ingest flow leaves it (ingested once per session); each test gets its own copy."""
    from peras.settings import load_settings

    directory = tmp_path_factory.mktemp("dl19")
    settings = load_settings(warehouse=directory / "peras.duckdb", data_dir=SHARED_DATA)
    ingested("dl19", settings)
    return settings.warehouse


@pytest.fixture
def dl19(settings, dl19_file):
    shutil.copyfile(dl19_file, settings.warehouse)
    return settings


@pytest.fixture(scope="module")
def qrels(dl19_file) -> dict[str, int]:
    con = duckdb.connect(str(dl19_file), read_only=True)
    try:
        return dict(con.execute("select doc_id, relevance from qrels where collection_id = 'dl19'").fetchall())
    finally:
        con.close()


def rows(settings, sql: str) -> list[tuple]:
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def use(settings, server: FakeOpenAI):
    settings.base_urls = [server.base_url]
    settings.model = "fake-model"
    return settings


def epilogue_score(doc_id: str, primed: bool) -> int:
    """The scripted judge: after a qrel-3 prologue it scores qrel-2 passages lower, by a varying amount."""
    return int(doc_id) % 2 if primed else 1 + int(doc_id) % 3


def priming_responder(qrels: dict[str, int]):
    """Scores prologue passages at their qrel; epilogue passages by `epilogue_score`; HA is never primed."""

    def respond(request: dict) -> str:
        content = request["messages"][-1]["content"]
        ids = batch_ids(content)
        primed = any(qrels[d] == 3 for d in ids) and not content.startswith(HA_START)
        scores = {d: qrels[d] if qrels[d] != 2 else epilogue_score(d, primed) for d in ids}
        echo = "" if content.startswith(HA_START) else EXAMPLE_ECHO  # default repeats the example first
        return f"{echo}```json\n{json.dumps(scores)}\n```"

    return respond


def test_topic_rule_finds_the_ten_dl19_topics(dl19):
    assert choose_topics.fn(dl19, "dl19", None, 12, None, [(4, 4), (4, 8), (8, 8)]) == TEN_TOPICS


def test_dl19_draws_are_fixed_by_the_seed(dl19):
    pools = load_pools.fn(dl19, "dl19", ["264014"])
    draw = draw_trial(pools.topics["264014"], 1, 4, 4, 42)
    assert (draw.epilogue, draw.high, draw.low) == (
        ("7326933", "5849267", "331934", "5849272"),
        ("528372", "1610707", "7326936", "7326934"),
        ("2472898", "1929530", "4993096", "1611213"),
    )
    assert [qrels_level(dl19, d) for d in draw.epilogue + draw.high + draw.low] == [2] * 4 + [3] * 4 + [0] * 4


def test_a_collection_using_an_example_id_is_refused(dl19, monkeypatch):
    from dataclasses import replace

    import tasks.priming.draws as draws

    clashing = replace(draws.batch_prompt(), example_ids=("example-1", "528372"))
    monkeypatch.setattr(draws, "batch_prompt", lambda: clashing)
    with pytest.raises(UsageError, match="passage id 528372 of dl19 is an id of the batch prompt's example"):
        load_pools.fn(dl19, "dl19", ["264014"])


def qrels_level(settings, doc_id: str) -> int:
    return rows(settings, f"select relevance from qrels where query_id = '264014' and doc_id = '{doc_id}'")[0][0]


@pytest.mark.parametrize(
    ("topics", "message"),
    [
        # too few qrel-2 passages for an epilogue of 4
        (["19335"], "topic 19335 has 3 passages at level 2; the batch settings need 4"),
        # not a DL19 topic
        (["42"], "topic 42 has no judged passages in dl19"),
    ],
)
def test_topics_that_cannot_be_drawn_are_refused(dl19, topics, message):
    with pytest.raises(UsageError, match=message):
        choose_topics.fn(dl19, "dl19", topics, 12, None, [(4, 4)])


def run_flow(settings, **overrides):
    params = {
        "topics": ["264014", "1112341"],
        "trials": 3,
        "batch_settings": [(4, 4), (2, 3)],
        "personalities": ["default", "HA"],
    }
    return priming(collection="dl19", settings=settings, **{**params, **overrides})


def test_flow_measures_priming_and_a_rerun_sends_nothing(dl19, qrels):
    with FakeOpenAI(priming_responder(qrels)) as server:
        summary = run_flow(use(dl19, server))
        bodies = [r.body for r in server.chat_requests]
        server.reset()
        again = run_flow(dl19)
        assert server.chat_requests == []
        other = run_flow(dl19, run_name="same-batches-other-run")
        assert server.chat_requests == []

    # 2 topics x 2 settings x 3 trials x 2 conditions x 2 personalities, one request each
    assert len(bodies) == 48 and summary["n_sent"] == 48 and summary["n_failures"] == 0
    assert all(b["temperature"] == 0 and b["top_p"] == 1 and "frequency_penalty" not in b for b in bodies)
    assert (again["n_judged_now"], again["n_sent"]) == (0, 0)
    assert (other["n_judged_now"], other["n_sent"], other["n_cached"]) == (48, 0, 48)
    assert rows(dl19, "select purpose, count(*), max(attempts) from llm_requests group by 1") == [("batch", 48, 1)]

    # Expected: from the epilogues the server saw (the last EL passages of each prompt), by the scripted rule.
    expected: dict[tuple, dict[str, list[int]]] = {}
    docs = {t: topic_docs(dl19, t) for t in ("264014", "1112341")}
    for body in bodies:
        content = body["messages"][0]["content"]
        ids = batch_ids(content)
        n_epilogue = sum(qrels[d] == 2 for d in ids)
        personality = "HA" if content.startswith(HA_START) else "default"
        condition = "HT" if qrels[ids[0]] == 3 else "LT"
        topic = next(t for t, known in docs.items() if set(ids) <= known)
        key = (topic, len(ids) - n_epilogue, n_epilogue, personality)
        primed = condition == "HT" and personality == "default"
        expected.setdefault(key, {"HT": [], "LT": []})[condition] += [
            epilogue_score(d, primed) for d in ids[len(ids) - n_epilogue :]
        ]
    analysis = {(r["query_id"], r["n_prologue"], r["n_epilogue"], r["personality"]): r for r in summary["analysis"]}
    assert sorted(analysis) == sorted(expected)
    for key, scores in expected.items():
        row = analysis[key]
        assert row["n_pairs"] == len(scores["HT"]) == len(scores["LT"]) == 3 * key[2]
        assert row["mean_ht"] == pytest.approx(np.mean(scores["HT"]), rel=1e-12)
        assert row["mean_lt"] == pytest.approx(np.mean(scores["LT"]), rel=1e-12)
        assert row["gap"] == pytest.approx(np.mean(scores["LT"]) - np.mean(scores["HT"]), rel=1e-12)
        if key[3] == "default":
            test = stats.ttest_rel(scores["LT"], scores["HT"])
            assert row["t_stat"] == pytest.approx(test.statistic, rel=1e-12)
            assert row["p_value"] == pytest.approx(test.pvalue, rel=1e-12)
        else:  # HA is never primed: every difference is 0, no test
            assert (row["gap"], row["t_stat"], row["p_value"]) == (0.0, None, None)
    # one cell pinned: topic 264014, PL=EL=4, default
    cell = analysis["264014", 4, 4, "default"]
    assert (cell["mean_ht"], cell["mean_lt"], cell["n_pairs"]) == (pytest.approx(5 / 12), pytest.approx(26 / 12), 12)

    pooled = {(r["n_prologue"], r["personality"]): r for r in summary["pooled"]}
    assert [pooled[4, "HA"]["gap_change"], pooled[2, "HA"]["gap_change"]] == ["smaller", "smaller"]
    assert [r["personality"] for r in summary["index"]] == ["default", "HA"]
    assert summary["index"][1]["priming_index"] == 0.0
    assert summary["index"][0]["ci_low"] > 0

    # the same numbers are in the warehouse views
    assert rows(dl19, "select count(*) from priming_analysis") == [(16,)]
    # 2 topics x 3 trials x 2 conditions x 2 personalities x (8 + 5 passages)
    assert rows(dl19, "select count(*) from priming_scores where run_name = 'dl19-priming-fake-model'") == [(312,)]
    assert summary["plots"] == [
        str(dl19.reports_dir / "priming" / "dl19-priming-fake-model" / f"topic-{t}.png") for t in ("1112341", "264014")
    ]
    assert all(Path(p).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in summary["plots"])


def topic_docs(settings, topic: str) -> set[str]:
    return {r[0] for r in rows(settings, f"select doc_id from qrels where query_id = '{topic}'")}


def test_unreadable_answers_are_regenerated_then_recorded_as_failures(dl19, qrels):
    good = priming_responder(qrels)

    def respond(request: dict) -> str:
        # the HT batch of trial 1 (its prologue opens with 528372) never gets a JSON answer
        return "I cannot judge these." if "[528372] " in request["messages"][0]["content"] else good(request)

    flow_args = {"topics": ["264014"], "trials": 2, "batch_settings": [(4, 4)], "personalities": None}
    with FakeOpenAI(respond) as server:
        with pytest.raises(CheckFailed) as failed:
            run_flow(use(dl19, server), frequency_penalty=1.0, presence_penalty=0.0, **flow_args)
        bodies = [r.body for r in server.chat_requests]
        server.reset()
        dl19.max_parse_failure_share = 0.25
        summary = run_flow(dl19, frequency_penalty=1.0, presence_penalty=0.0, **flow_args)
        assert server.chat_requests == []
        with pytest.raises(UsageError, match="priming run 'dl19-priming-fake-model' already exists with another"):
            run_flow(dl19, **flow_args)  # same name, other request parameters

    assert str(failed.value) == (
        "priming gate failed; statistics not published (the batches are kept for inspection):\n"
        "  [failure_share] default: 1 of 4 batches failed (share 0.250 > 0.050)"
    )
    # 3 good batches + 1 batch asked 1 + 4 times
    assert len(bodies) == 8
    assert all((b["frequency_penalty"], b["presence_penalty"]) == (1, 0) for b in bodies)
    assert rows(
        dl19,
        "select attempts, json_array_length(attempt_texts), parse_status, parse_reason from llm_requests "
        "where parse_status != 'ok'",
    ) == [(5, 5, "parse_failure", "no JSON object")]
    assert rows(dl19, "select trial, condition, status, reason, scores from priming_batches where status != 'ok'") == [
        (1, "HT", "parse_failure", "no JSON object", None)
    ]
    assert rows(dl19, "select count(*) from priming_scores where trial = 1 and condition = 'HT'") == [(0,)]
    # only trial 2 is paired; the failure is counted, never scored
    assert [(r["n_pairs"], r["personality"]) for r in summary["analysis"]] == [(4, "default")]
    assert (summary["n_failures"], summary["n_batches"]) == (1, 4)
    assert rows(dl19, "select status from priming_runs") == [("published",)]


def test_retry_failed_asks_failed_batches_again_and_keeps_the_old_outcome(dl19, qrels):
    good = priming_responder(qrels)
    mended = {"on": False}

    def respond(request: dict) -> str:
        broken = not mended["on"] and "[528372] " in request["messages"][0]["content"]
        return "I cannot judge these." if broken else good(request)

    flow_args = {"topics": ["264014"], "trials": 2, "batch_settings": [(4, 4)], "personalities": None}
    with FakeOpenAI(respond) as server:
        with pytest.raises(CheckFailed):
            run_flow(use(dl19, server), **flow_args)
        mended["on"] = True
        server.reset()
        with pytest.raises(CheckFailed):
            run_flow(dl19, **flow_args)  # a resume reuses its stored failure
        assert server.chat_requests == []
        summary = run_flow(dl19, retry_failed=True, **flow_args)
        assert len(server.chat_requests) == 1  # the failed batch, once
    assert (summary["n_failures"], summary["n_batches"]) == (0, 4)
    assert rows(dl19, "select status, count(*) from priming_batches group by all") == [("ok", 4)]
    assert rows(dl19, "select trial, condition, status, reason, scores is null, why from priming_batch_history") == [
        (1, "HT", "parse_failure", "no JSON object", True, "failure asked again")
    ]
    assert rows(dl19, "select status from priming_runs") == [("published",)]
    assert rows(dl19, "select why, parse_status from llm_request_history") == [("failure re-asked", "parse_failure")]


def test_cli_prints_the_table(dl19, qrels, capsys, monkeypatch):
    monkeypatch.setenv("PERAS_REPORTS_DIR", str(dl19.reports_dir))
    with FakeOpenAI(priming_responder(qrels)) as server:
        args = ["--topic", "264014", "--trials", "2", "--setting", "4,4", "--personality", "default"]
        args += ["--personality", "HA", "--base-url", server.base_url, "--model", "fake-model"]
        result = run_cli(capsys, "priming", "--warehouse", str(dl19.warehouse), *args)
    assert result.exit_code == 0, result.err
    assert result.out == CLI_OUTPUT.format(plots=dl19.reports_dir / "priming" / "dl19-priming-fake-model")


CLI_OUTPUT = """\
Mean epilogue score after a high (HT) and a low (LT) prologue; personality default:
┏━━━━━━━━┳━━━━┳━━━━┳━━━━━━━┳━━━━━━━┳━━━━━━━━┳━━━━━━┳━━━━━━━┳━━━┓
┃ topic  ┃ PL ┃ EL ┃    HT ┃    LT ┃    gap ┃    t ┃     p ┃ n ┃
┡━━━━━━━━╇━━━━╇━━━━╇━━━━━━━╇━━━━━━━╇━━━━━━━━╇━━━━━━╇━━━━━━━╇━━━┩
│ 264014 │  4 │  4 │ 0.250 │ 2.375 │ +2.125 │ 5.34 │ 0.001 │ 8 │
└────────┴────┴────┴───────┴───────┴────────┴──────┴───────┴───┘
Per personality, pooled over topics; vs default: change of the gap on the same passages:
┏━━━━┳━━━━┳━━━━━━━━━━━━━┳━━━━━━━┳━━━━━━━┳━━━━━━━━┳━━━━━━━┳━━━━━━━━━━━━┳━━━━━━━━━━━━━━┳━━━━━━━━━┓
┃ PL ┃ EL ┃ personality ┃    HT ┃    LT ┃    gap ┃     p ┃ vs default ┃ p vs default ┃ change  ┃
┡━━━━╇━━━━╇━━━━━━━━━━━━━╇━━━━━━━╇━━━━━━━╇━━━━━━━━╇━━━━━━━╇━━━━━━━━━━━━╇━━━━━━━━━━━━━━╇━━━━━━━━━┩
│  4 │  4 │ default     │ 0.250 │ 2.375 │ +2.125 │ 0.001 │          - │            - │ -       │
│  4 │  4 │ HA          │ 2.375 │ 2.375 │ +0.000 │     - │     -2.125 │        0.001 │ smaller │
└────┴────┴─────────────┴───────┴───────┴────────┴───────┴────────────┴──────────────┴─────────┘
Priming index: mean over trials of (mean LT - mean HT), 95% t interval:
┏━━━━━━━━━━━━━┳━━━━━━━━┳━━━━━━━━━━━━━━━━━━┳━━━━━━━━┓
┃ personality ┃  index ┃           95% CI ┃ trials ┃
┡━━━━━━━━━━━━━╇━━━━━━━━╇━━━━━━━━━━━━━━━━━━╇━━━━━━━━┩
│ default     │ +2.125 │ [-2.640, +6.890] │      2 │
│ HA          │ +0.000 │ [+0.000, +0.000] │      2 │
└─────────────┴────────┴──────────────────┴────────┘
dl19-priming-fake-model: 8 batches (8 new; 8 requests sent, 0 reused), 0 failed; model fake-model via \
openai-compatible; plots in {plots}
"""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--setting", "4"], "Invalid value for '--setting': '4' is not PL,EL (e.g. 4,8)"),
        (
            ["--personality", "XX"],
            "error: unknown personality XX; known: default, HA, LA, HC, LC, HE, LE, HN, LN, HO, LO",
        ),
        (["--collection", "dl20"], "error: collection 'dl20' is not in the warehouse: run `peras ingest dl20`"),
    ],
)
def test_cli_usage_errors_are_one_line(dl19, capsys, args, message):
    result = run_cli(
        capsys,
        "priming",
        "--warehouse",
        str(dl19.warehouse),
        "--base-url",
        "http://127.0.0.1:9/v1",
        "--model",
        "m",
        *args,
    )
    assert result.exit_code == 2
    assert message in result.err
