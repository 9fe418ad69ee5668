"""Gaming probes end to end, as a user types them, against the scripted OpenAI server on the shipped sample: build,
judge (a normal judge run of the probe collection), summary, check; a rebuild that changes nothing, a sample larger
than the collection refused, and the original pairs' answers reused when the original collection is judged."""

from __future__ import annotations

import duckdb
import pytest

from support.fake_openai import FakeOpenAI
from tests.helpers import run_cli, snapshot

pytestmark = pytest.mark.integration


@pytest.fixture
def sample(settings, tmp_path, monkeypatch, ingested):
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    ingested("sample", settings)
    return settings


def gullible(request: dict) -> str:
    """A judge fooled by one injected wording ("... perfectly relevant (3)."); with the HA personality by any
    sentence calling the passage perfectly relevant. Everything else: label 1, confidence 90 (40 when injected)."""
    content = request["messages"][-1]["content"]
    passage = content.split("Passage: ", 1)[1]
    if "Your given relevance score is" in content:
        return "40" if "Ignore all previous instructions" in passage else "90"
    fooled = "perfectly relevant (3)" in passage
    fooled |= "very high Agreeableness" in content and "perfectly relevant" in passage
    return "3" if fooled else "1"


def rows(warehouse, sql: str) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_build_judge_summary_check_on_the_sample(sample, capsys):
    warehouse = ["--warehouse", str(sample.warehouse)]
    built = run_cli(capsys, "probes", "build", "sample", "--sample", "4", *warehouse)
    assert built.exit_code == 0, built.err
    assert built.out == (
        "sample-probes: 84 passages from 4 pairs of sample (2 labelled 0/1): clean 8, instruction-injection 36, "
        "irrelevant-with-keywords 8, paraphrase 12, query-appended 8, query-stuffing 12; judge it with "
        "`peras judge sample-probes`\n"
    )
    again = run_cli(capsys, "probes", "build", "sample", "--sample", "4", *warehouse)
    assert again.out == "sample-probes: unchanged (same pairs, seed and kinds already built)\n"
    assert rows(sample.warehouse, "select count(*), count(distinct query_id) from qrels where collection_id = "
                "'sample-probes'") == [(84, 4)]  # fmt: skip
    with FakeOpenAI(gullible) as server:
        endpoint = ["--base-url", server.base_url, "--model", "fake-model", *warehouse]
        judged = run_cli(capsys, "judge", "sample-probes", "--personality", "default", "--personality", "HA",
                         "--cot", "without", "--run-name", "probed", *endpoint)  # fmt: skip
        assert judged.exit_code == 0, judged.err
        original = run_cli(capsys, "judge", "sample", "--all-topics", "--personality", "default", "--cot", "without",
                           "--run-name", "original", *endpoint)  # fmt: skip
        assert original.exit_code == 0, original.err
    # the original pairs' four clean copies were asked already, label and confidence: reused, not sent again
    assert "(40 new; 72 requests sent, 8 reused)" in original.out
    summary = run_cli(capsys, "probes", "summary", "probed", *warehouse)
    assert summary.exit_code == 0, summary.err
    table = {tuple(line.split()[:3]): line.split()[3:] for line in summary.out.splitlines()[2:]}
    # default: the "ignore" wording (3 of 9 variants) raises both 0/1 pairs' copies; HA: "perfect" too (6 of 9).
    # Low confidence flags the "ignore" copies only (40 against 90): 3/9 + 6/9 / 2 = 0.667 for both personalities;
    # the personalities disagree (3 against 1) on the "perfect" copies only: 0.667 too.
    assert table[("instruction-injection", "attack", "default")] == [
        "no", "verbalized", "36", "18", "6", "0.333", "0.667", "0.667", "0.333", "-16.667", "0.667", "0.667"
    ]  # fmt: skip
    assert table[("instruction-injection", "attack", "HA")][3:9] == ["18", "12", "0.667", "1.333", "1.333", "0.667"]
    for kind in ("query-stuffing", "query-appended", "irrelevant-with-keywords"):
        assert table[(kind, "attack", "HA")][4:6] == ["0", "0.000"], kind
    assert table[("paraphrase", "control", "default")][4:9] == ["0", "0.000", "0.000", "0.000", "0.000"]
    assert len(table) == 10
    failed = run_cli(capsys, "probes", "check", "probed", "--max-success", "0.05", *warehouse)
    assert (failed.exit_code, failed.err) == (
        1,
        "error: run 'probed' is too easy to fool: instruction-injection on personality HA, without CoT, verbalized "
        "confidence: 12 of 18 non-relevant pairs raised to 2+ (0.667 > 0.05)\n",
    )
    assert run_cli(capsys, "probes", "check", "probed", "--max-success", "0.7", *warehouse).exit_code == 0


BUILD_REFUSALS = [
    # more pairs than the collection has passages
    (("--sample", "41"), "error: --sample 41 is more than collection 'sample' has: 40 judged pairs with distinct "
     "passages (40 pairs); give --sample 40 or fewer"),
    # and than the topic subset it is drawn from has (the sample's balanced subset is its 40 pairs)
    (("--subset", "balanced", "--sample", "41"), "error: --sample 41 is more than collection 'sample' (subset "
     "'balanced') has: 40 judged pairs with distinct passages (40 pairs); give --sample 40 or fewer"),
    # a subset the collection does not have
    (("--subset", "nope"), "error: collection 'sample' has no subset 'nope' (see `peras subsets sample`)"),
    # the collection a probe collection would replace is an ordinary one
    (("--name", "sample"), "error: collection 'sample' exists and is not a probe collection: give another --name"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "message"), BUILD_REFUSALS)
def test_a_bad_build_is_one_line_exit_2_and_stores_nothing(sample, capsys, args, message):
    before = snapshot(sample.warehouse)
    result = run_cli(capsys, "probes", "build", "sample", *args, "--warehouse", str(sample.warehouse))
    assert (result.exit_code, result.out, result.err) == (2, "", message + "\n")
    assert snapshot(sample.warehouse) == before


def test_a_subset_s_pairs_only(sample, capsys):
    warehouse = ["--warehouse", str(sample.warehouse)]
    built = run_cli(capsys, "probes", "build", "sample", "--subset", "balanced", "--sample", "2",
                    "--kind", "paraphrase", "--name", "balanced-probes", *warehouse)  # fmt: skip
    assert built.exit_code == 0, built.err
    assert rows(sample.warehouse, "select source_collection_id, subset_name, n_pairs, kinds from probe_sets") == [
        ("sample", "balanced", 2, '["paraphrase"]')
    ]
    assert rows(sample.warehouse, "select description from collections where collection_id = 'balanced-probes'") == [
        ("probes of sample/balanced: 2 pairs, seed 0, paraphrase",)
    ]


def test_a_run_of_an_earlier_build_is_refused_and_a_new_run_measures_the_new_one(sample, capsys):
    warehouse = ["--warehouse", str(sample.warehouse)]
    draw = ["--sample", "1", "--kind", "paraphrase", *warehouse]
    with FakeOpenAI(gullible) as server:
        endpoint = ["--base-url", server.base_url, "--model", "fake-model", *warehouse]
        judge = ["judge", "sample-probes", "--personality", "default", "--cot", "without", *endpoint]
        assert run_cli(capsys, "probes", "build", "sample", *draw).exit_code == 0
        assert run_cli(capsys, *judge, "--run-name", "p").exit_code == 0
        assert run_cli(capsys, "probes", "build", "sample", "--seed", "1", *draw).exit_code == 0  # another draw
        # as the line below says: a new run (the old one, resumed, would hold judgments of pairs no longer there)
        assert run_cli(capsys, *judge, "--run-name", "p2").exit_code == 0
    (built_at,) = rows(sample.warehouse, "select strftime(built_at, '%Y-%m-%d %H:%M') from probe_sets")[0]
    refused = run_cli(capsys, "probes", "summary", "p", *warehouse)
    assert (refused.exit_code, refused.out, refused.err) == (
        2,
        "",
        f"error: run 'p' judged an earlier build of 'sample-probes' (built again at {built_at}): judge the new build "
        "as a new run (`peras judge sample-probes --run-name NEW`)\n",
    )
    summary = run_cli(capsys, "probes", "summary", "p2", *warehouse)
    assert summary.exit_code == 0, summary.err
    # the new draw's one pair (human 0/1): its three paraphrases, none raised (the scripted judge says 1 to them all)
    assert [line.split()[:9] for line in summary.out.splitlines()[2:]] == [
        ["paraphrase", "control", "default", "no", "verbalized", "3", "3", "0", "0.000"]
    ]
