"""Run files in: the TREC run reader, and `peras judge-run` judging exactly the unlabelled top-K pairs."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

from flows.judge_run import judge_run
from peras.errors import InputError
from peras.paths import SAMPLE_DIR
from support.fake_openai import FakeOpenAI, instant
from tasks.shared.readers import read_qrels
from tasks.shared.run_files import read_run_lines, read_runs
from tests.helpers import run_cli, snapshot
from tests.test_judge import rows, use

TWO_SYSTEMS = "q1 Q0 d1 1 2.5 bm25\nq1 Q0 d2 2 1.5 bm25\n\nq2 0 d3 1 3 bm25\nq1 Q0 d1 1 9e-1 dense\n"


@pytest.mark.core
def test_reader_keeps_every_line_with_its_system(tmp_path):
    run = tmp_path / "run.txt.gz"
    run.write_bytes(gzip.compress(TWO_SYSTEMS.encode()))
    frame = read_runs([run])
    assert frame.columns == ["system", "query_id", "doc_id", "rank", "score"]
    assert frame.rows() == [
        ("bm25", "q1", "d1", 1, 2.5),
        ("bm25", "q1", "d2", 2, 1.5),
        ("bm25", "q2", "d3", 1, 3.0),
        ("dense", "q1", "d1", 1, 0.9),
    ]
    lines = read_run_lines([run])
    assert lines["line"].to_list() == [1, 2, 4, 5]  # the blank line 3 is skipped, not renumbered


@pytest.mark.core
def test_reader_reads_several_files(tmp_path):
    first, second = tmp_path / "a.run", tmp_path / "b.run"
    first.write_text("q1 Q0 d1 1 1.0 a\n")
    second.write_text("q1 Q0 d1 1 1.0 b\nq1 Q0 d2 2 0.5 b\n")
    frame = read_run_lines([first, second])
    assert frame.select("system", "doc_id", "file", "line").rows() == [
        ("a", "d1", str(first), 1),
        ("b", "d1", str(second), 1),
        ("b", "d2", str(second), 2),
    ]


@pytest.mark.core
@pytest.mark.parametrize(
    ("content", "message"),
    [
        # five columns: the tag is missing
        (
            "q1 Q0 d1 1 2.0 s\nq1 Q0 d2 2 1.0\n",
            "run.txt:2: expected 6 columns `query_id Q0 doc_id rank score tag`, found 5",
        ),
        # a qrels file given as a run
        ("q1 0 d1 3\n", "run.txt:1: expected 6 columns `query_id Q0 doc_id rank score tag`, found 4"),
        ("q1 X d1 1 2.0 s\n", "run.txt:1: second column must be Q0 or 0, found 'X'"),
        ("q1 Q0 d1 1 2.0 s\nq1 Q0 d2 two 1.0 s\n", "run.txt:2: rank 'two' is not an integer"),
        ("q1 Q0 d1 1 high s\n", "run.txt:1: score 'high' is not a number"),
        ("q1 Q0 d1 1 nan s\n", "run.txt:1: score nan is not a finite number"),
        # the same passage twice for one system and query: trec_eval refuses it
        (
            "q1 Q0 d1 1 2.0 s\nq1 Q0 d2 2 1.0 s\nq1 Q0 d1 3 0.5 s\n",
            "run.txt:3: system s lists passage d1 for query q1 twice",
        ),
        ("\n\n", "run.txt: no run lines found (only blank lines)"),
        ("", "run.txt: file is empty"),
    ],
)
def test_malformed_run_files_name_the_line(tmp_path, content, message):
    run = tmp_path / "run.txt"
    run.write_text(content)
    with pytest.raises(InputError) as error:
        read_runs([run])
    assert str(error.value).removeprefix(str(tmp_path) + "/").startswith(message)


@pytest.mark.core
def test_non_utf8_run_names_line_and_column(tmp_path):
    run = tmp_path / "run.txt"
    run.write_bytes(b"q1 Q0 d1 1 2.0 s\nq1 Q0 d\xff 2 1.0 s\n")
    with pytest.raises(InputError, match=r"run.txt:2: not UTF-8: byte 0xff at column 8"):
        read_runs([run])


def write_real_run(shared_data: Path, path: Path) -> pl.DataFrame:
    """A run over the real DL19 judged pairs: each topic's passages in qrels file order, as system `qrels-order`."""
    qrels = read_qrels(shared_data / "dl19" / "2019qrels-pass.txt").qrels
    rank: dict[str, int] = {}
    lines = []
    for qrel in qrels:
        rank[qrel.query_id] = rank.get(qrel.query_id, 0) + 1
        lines.append(f"{qrel.query_id} Q0 {qrel.doc_id} {rank[qrel.query_id]} {-rank[qrel.query_id]} qrels-order\n")
    path.write_bytes(gzip.compress("".join(lines).encode()))
    return pl.DataFrame([(q.query_id, q.doc_id) for q in qrels], schema=["query_id", "doc_id"], orient="row")


@pytest.mark.core
def test_reader_on_a_run_over_the_real_dl19_pairs(shared_data, tmp_path):
    expected = write_real_run(shared_data, tmp_path / "dl19.run.gz")
    frame = read_runs([tmp_path / "dl19.run.gz"])
    assert frame.height == 9260
    assert frame["query_id"].n_unique() == 43
    assert frame.select("query_id", "doc_id").equals(expected)
    # first and last lines of 2019qrels-pass.txt, as `head`/`tail` show them
    assert frame.row(0) == ("qrels-order", "19335", "1017759", 1, -1.0)
    assert frame.row(-1)[:3] == ("qrels-order", "1133167", "977421")


# --- judge-run against the scripted server, on the shipped sample and its two-system run file -------------------
# peras/data/sample/two-systems.run, top 3 per system and query: s1 {e1, x1, e7} lexical + {x1, e2, x4} neural,
# s2 {a1, x3, a2} lexical + {x3, x5, a5} neural: 10 distinct pairs, 6 of them in the qrels, 4 unlabelled; the
# corpus file has x1, x3, x4 (x5 on purpose not), so 3 are judged and x5 (line 12) is reported.
RUN = SAMPLE_DIR / "two-systems.run"
CORPUS = SAMPLE_DIR / "unjudged-passages.tsv"


@pytest.fixture
def sample(settings, ingested):
    ingested("sample", settings)
    return settings


def judge(settings, server: FakeOpenAI, run: Path = RUN, depth: int = 3, corpus: Path | None = CORPUS, **kw):
    """judge-run against the scripted server, one personality without CoT (collection sample unless given)."""
    return judge_run(
        collection=kw.pop("collection", "sample"),
        run_files=[str(run)],
        depth=depth,
        corpus=str(corpus) if corpus else None,
        settings=use(settings, server),
        personalities=["default"],
        cot=[False],
    )


@pytest.mark.integration
def test_judges_exactly_the_unlabelled_top_k_pairs_and_a_rerun_sends_nothing(sample):
    with FakeOpenAI(instant) as server:
        first = judge(sample, server)
        sent = len(server.chat_requests)
        second = judge(sample, server)
        assert len(server.chat_requests) == sent == 6  # 3 pairs x (label + verbalized confidence)
    counts = ("n_lines", "n_systems", "n_top_pairs", "n_labelled", "n_pooled", "n_without_text", "n_unknown_query")
    assert [first[key] for key in counts] == [13, 2, 10, 6, 3, 1, 0]
    assert first["examples"] == [f"{RUN}:12: query s2 passage x5: no passage text"]
    assert (first["run_name"], first["n_planned"], first["n_judged_now"]) == ("sample-runs-fake-model", 3, 3)
    assert (second["pool_id"], second["n_planned"], second["n_judged_now"], second["n_sent"]) == (
        first["pool_id"],
        3,
        0,
        0,
    )
    assert rows(sample, "select query_id, doc_id, personality, cot from judgments order by all") == [
        ("s1", "x1", "default", False),
        ("s1", "x4", "default", False),
        ("s2", "x3", "default", False),
    ]
    assert rows(sample, "select run_name, status, subset_name from judge_runs") == [
        ("sample-runs-fake-model", "published", None)
    ]
    # no human label: every metric leaves them out
    assert rows(sample, "select count(*) from stg_judgment_facts") == [(0,)]
    assert rows(sample, "select doc_id, source_path from pool_passages order by 1") == [
        ("x1", str(CORPUS)),
        ("x3", str(CORPUS)),
        ("x4", str(CORPUS)),
    ]


@pytest.mark.integration
def test_a_deeper_pool_in_the_same_run_asks_only_the_new_pair(sample):
    with FakeOpenAI(instant) as server:
        judge(sample, server)
        sent = len(server.chat_requests)
        deeper = judge(sample, server, depth=4)
        # lexical's 4th passage for s1 is x2: the one new pair
        assert len(server.chat_requests) - sent == 2
    assert (deeper["n_top_pairs"], deeper["n_pooled"], deeper["n_planned"], deeper["n_judged_now"]) == (11, 4, 4, 1)
    assert rows(sample, "select count(*), count(distinct doc_id) from judgments") == [(4, 4)]


@pytest.mark.integration
def test_passages_without_text_are_reported_by_line_and_not_judged(sample, tmp_path):
    corpus = tmp_path / "x2-only.tsv"  # the one unlabelled passage given a text: the others have none
    corpus.write_text(next(line for line in CORPUS.read_text().splitlines(keepends=True) if line.startswith("x2\t")))
    with FakeOpenAI(instant) as server:
        result = judge(sample, server, depth=4, corpus=corpus)  # x2 is lexical's 4th
        asked = {str(r.body["messages"]) for r in server.chat_requests}
    assert (result["n_pooled"], result["n_without_text"], result["n_planned"]) == (1, 4, 1)
    assert result["examples"] == [
        f"{RUN}:2: query s1 passage x1: no passage text",
        f"{RUN}:6: query s2 passage x3: no passage text",
        f"{RUN}:10: query s1 passage x4: no passage text",
        f"{RUN}:12: query s2 passage x5: no passage text",
    ]
    assert rows(sample, "select query_id, doc_id from judgments") == [("s1", "x2")]
    assert asked and all("Hard-boiled eggs keep for a week" in body for body in asked)


@pytest.mark.integration
def test_a_query_the_collection_lacks_is_reported(sample, tmp_path):
    run = tmp_path / "run.txt"
    run.write_text("s1 Q0 e1 1 2.0 sys\nzz Q0 e1 1 2.0 sys\ns1 Q0 a1 2 1.0 sys\n")  # a1: s2's passage
    with FakeOpenAI(instant) as server:
        result = judge(sample, server, run, depth=10, corpus=None)
    assert (result["n_labelled"], result["n_unknown_query"], result["n_pooled"]) == (1, 1, 1)
    assert result["examples"] == [f"{run}:2: query zz passage e1: the collection has no such query"]


def test_runs_with_nothing_to_judge_say_why_and_make_no_run(sample, tmp_path, capsys):
    """Issue 36 item 17: only unknown queries (or labelled pairs) published an empty judge run, on which `holes`
    then said 'pick one of:' with nothing listed. Now one line says why there is nothing to judge; no run, no pool."""
    run = tmp_path / "run.txt"
    run.write_text("s1 Q0 e1 1 2.0 sys\nzz Q0 e1 1 2.0 sys\n")
    with FakeOpenAI(instant) as server:
        result = run_cli(
            capsys, "judge-run", str(run), "--collection", "sample", "--depth", "10", "--warehouse",
            str(sample.warehouse), "--base-url", server.base_url, "--model", "fake-model", "--personality", "default",
            "--cot", "without",
        )  # fmt: skip
        assert server.chat_requests == []
    assert (result.exit_code, result.out) == (2, "")
    assert result.err == (
        "error: nothing to judge: of the runs' 2 top-K pairs, 1 have human labels, 1 name a query the collection lacks"
        f" (first: {run}:2: query zz passage e1: the collection has no such query); no run was made\n"
    )
    assert rows(sample, "select count(*) from judge_runs") == [(0,)]
    assert rows(sample, "select count(*) from pool_pairs") == [(0,)]


@pytest.mark.integration
def test_corpus_jsonl_is_streamed_keeping_only_the_needed_passages(sample, tmp_path):
    # Pyserini's id/contents, gzipped, with passages nobody needs (e1 is the collection's: its text stays)
    records = [("e1", "another text of e1"), ("x1", "one"), ("zz", "unused"), ("x3", "three"), ("x4", "four")]
    corpus = tmp_path / "corpus.jsonl.gz"
    corpus.write_bytes(gzip.compress("".join(json.dumps({"id": i, "contents": t}) + "\n" for i, t in records).encode()))
    with FakeOpenAI(instant) as server:
        result = judge(sample, server, depth=4, corpus=corpus)  # x2 is lexical's 4th
    assert (result["n_pooled"], result["n_from_corpus"]) == (3, 3)
    assert rows(sample, "select doc_id, text from pool_passages order by 1") == [
        ("x1", "one"),
        ("x3", "three"),
        ("x4", "four"),
    ]
    assert rows(sample, "select count(*) from passages where doc_id = 'e1' and text = 'another text of e1'") == [(0,)]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            "s1 Q0 e1 1 2.0 sys\ns1 Q0 x1 2 1.0\n",
            "run.txt:2: expected 6 columns `query_id Q0 doc_id rank score tag`, found 5",
        ),
        ("s1 Q0 e1 1 2.0 sys\ns1 Q0 x1 2 1,5 sys\n", "run.txt:2: score '1,5' is not a number"),
    ],
)
def test_a_bad_run_file_is_one_line_and_writes_nothing(sample, tmp_path, capsys, content, message):
    run = tmp_path / "run.txt"
    run.write_text(content)
    before = snapshot(sample.warehouse)
    result = run_cli(capsys, "judge-run", str(run), "--collection", "sample", "--warehouse", str(sample.warehouse))
    assert result.exit_code == 1
    assert result.err == f"error: {tmp_path}/{message}\n"
    assert snapshot(sample.warehouse) == before


@pytest.mark.integration
def test_cli_prints_the_pool_and_the_judge_line(sample, capsys):
    with FakeOpenAI(instant) as server:
        args = ["--base-url", server.base_url, "--model", "fake-model", "--warehouse", str(sample.warehouse)]
        result = run_cli(
            capsys,
            "judge-run",
            str(RUN),
            "--collection",
            "sample",
            "--depth",
            "3",
            "--corpus",
            str(CORPUS),
            "--personality",
            "default",
            "--cot",
            "without",
            *args,
        )
    assert result.exit_code == 0, result.err
    assert result.out == (
        "13 run lines from 2 system(s): 10 top-K pairs, 6 judged by humans, 3 to judge (3 passage texts from the "
        "corpus file)\n"
        "not judged: 1 pair(s) without a passage text, 0 of queries the collection does not hold; first ones:\n"
        f"  {RUN}:12: query s2 passage x5: no passage text\n"
        "sample-runs-fake-model: 3 judgments (3 new; 6 requests sent, 0 reused), 0 parse failures; "
        "model fake-model via openai-compatible\n"
    )


@pytest.mark.integration
def test_unknown_collection_is_a_usage_error(settings, capsys):
    result = run_cli(capsys, "judge-run", str(RUN), "--collection", "nope", "--warehouse", str(settings.warehouse))
    assert (result.exit_code, result.err) == (
        2,
        "error: collection 'nope' is not in the warehouse: run `peras ingest nope`\n",
    )


@pytest.mark.integration
def test_real_dl19_run_judges_exactly_its_unlabelled_top_k(settings, shared_data, tmp_path, ingested):
    # Two systems over the 43 real DL19 topics: `own` ranks each topic's first three judged passages (all labelled),
    # `shifted` ranks the next topic's (mostly unjudged for this topic); a third, `ghost`, lists a passage id that
    # is in no file. Top 2: the unlabelled pairs are counted here from the qrels, independently of peras.
    ingested("dl19", settings)
    qrels = read_qrels(shared_data / "dl19" / "2019qrels-pass.txt").qrels
    judged: dict[str, list[str]] = {}
    for qrel in qrels:
        judged.setdefault(qrel.query_id, []).append(qrel.doc_id)
    labelled = {(q.query_id, q.doc_id) for q in qrels}
    topics = sorted(judged)
    lines = []
    for i, topic in enumerate(topics):
        for system, docs in (("own", judged[topic][:3]), ("shifted", judged[topics[(i + 1) % len(topics)]][:3])):
            lines += [f"{topic} Q0 {doc} {rank} {3 - rank} {system}\n" for rank, doc in enumerate(docs, start=1)]
    lines.append(f"{topics[0]} Q0 no-such-passage 1 1.0 ghost\n")
    run = tmp_path / "dl19-two-systems.run"
    run.write_text("".join(lines))
    top2 = {(t, d) for i, t in enumerate(topics) for d in judged[t][:2] + judged[topics[(i + 1) % len(topics)]][:2]}
    expected = sorted(top2 - labelled)
    with FakeOpenAI(instant) as server:
        result = judge(settings, server, run, depth=2, corpus=None, collection="dl19")
        assert len(server.chat_requests) == 2 * len(expected)
    assert (result["n_systems"], result["n_top_pairs"], result["n_pooled"]) == (3, len(top2) + 1, len(expected))
    assert len(expected) == 86
    assert (result["n_without_text"], result["examples"]) == (
        1,
        [f"{run}:{len(lines)}: query {topics[0]} passage no-such-passage: no passage text"],
    )
    assert rows(settings, "select query_id, doc_id from judgments order by all") == expected


@pytest.mark.integration
def test_an_unknown_personality_is_refused_before_the_pool_is_written(sample, capsys):
    before = snapshot(sample.warehouse)
    result = run_cli(capsys, "judge-run", str(RUN), "--collection", "sample", "--corpus", str(CORPUS),
                     "--personality", "NOPE", "--base-url", "http://127.0.0.1:9/v1", "--model", "m",
                     "--warehouse", str(sample.warehouse))  # fmt: skip
    assert (result.exit_code, result.out, result.err) == (
        2,
        "",
        "error: unknown personality NOPE; known: default, HA, LA, HC, LC, HE, LE, HN, LN, HO, LO\n",
    )
    assert snapshot(sample.warehouse) == before  # no pool_pairs, no pool_passages


@pytest.mark.integration
def test_a_corpus_with_an_empty_passage_text_names_its_line_and_writes_nothing(sample, tmp_path, capsys):
    corpus = tmp_path / "corpus.tsv"
    lines = CORPUS.read_text().splitlines()
    doc_id = lines[1].split("\t")[0]
    corpus.write_text("\n".join([lines[0], f"{doc_id}\t ", *lines[2:]]) + "\n")
    before = snapshot(sample.warehouse)
    with FakeOpenAI(instant, models=["m"]) as server:  # reachable: the pre-flight check of the server passes
        result = run_cli(capsys, "judge-run", str(RUN), "--collection", "sample", "--corpus", str(corpus),
                         "--base-url", server.base_url, "--model", "m",
                         "--warehouse", str(sample.warehouse))  # fmt: skip
        assert server.chat_requests == []
    assert (result.exit_code, result.out, result.err) == (
        1,
        "",
        f"error: {corpus}:2: passage {doc_id} has an empty text: give every passage its text\n",
    )
    assert snapshot(sample.warehouse) == before
