"""Issue 50 item 1: real runs in, as they are. The 66 DL21 run files (63 official submissions, 3 RankLLM lists; 477
topics x 100 each, gzipped) read and scored exactly as trec_eval scores them (pytrec_eval, trec_eval's own code, on
the same files), near-duplicate systems found, and `peras evaluate` on all of them through the real CLI."""

from __future__ import annotations

import gzip
from pathlib import Path

import polars as pl
import pytest
import pytrec_eval

from peras.errors import InputError
from peras.warehouse import open_migrated
from tasks.evaluate.duplicates import drop_duplicates, duplicate_groups
from tasks.evaluate.ranking import score_systems, trec_order
from tasks.shared.readers import read_qrels
from tasks.shared.run_files import read_run_lines, read_runs
from tests.helpers import run_cli, snapshot

MEASURES = {"AP": "map", "RR": "recip_rank", "P@10": "P_10", "nDCG@10": "ndcg_cut_10"}


def dl21_qrels(shared_data: Path) -> pl.DataFrame:
    qrels = read_qrels(shared_data / "dl21" / "2021.qrels.pass.final.txt").qrels
    rows = [(q.query_id, q.doc_id, q.relevance) for q in qrels]
    return pl.DataFrame(rows, ["query_id", "doc_id", "relevance"], orient="row")


def pytrec_scores(qrels: pl.DataFrame, run: pl.DataFrame) -> dict[str, dict[str, float]]:
    """trec_eval's values per topic, from the scores as written (pytrec_eval sorts them itself)."""
    judged: dict[str, dict[str, int]] = {}
    for query_id, doc_id, relevance in qrels.iter_rows():
        judged.setdefault(query_id, {})[doc_id] = relevance
    ranked: dict[str, dict[str, float]] = {}
    for query_id, doc_id, score in run.select("query_id", "doc_id", "score").iter_rows():
        ranked.setdefault(query_id, {})[doc_id] = score
    return pytrec_eval.RelevanceEvaluator(judged, set(MEASURES.values())).evaluate(ranked)


@pytest.mark.core
def test_every_dl21_run_scores_as_trec_eval_on_ap_rr_p10_ndcg10(shared_data):
    qrels = dl21_qrels(shared_data)
    judged = qrels["query_id"].unique().implode()
    paths = sorted((shared_data / "dl21" / "runs").glob("*.run.gz"))
    runs = read_run_lines(paths, lambda _, lines: lines.filter(pl.col("query_id").is_in(judged)))
    assert (len(paths), runs["system"].n_unique(), runs.height) == (66, 66, 349_650)
    # RankLLM writes the tag `rank` in two files: each is named after its file; `run_id` is the third's own tag
    assert {"rankllm-BM25", "rankllm-BM25_RM3", "run_id"} <= set(runs["system"])
    scores = score_systems(runs.drop("file", "line"), qrels, list(MEASURES))
    worst, n_compared = 0.0, 0
    for (system,), run in runs.partition_by("system", as_dict=True).items():
        expected = pytrec_scores(qrels, run)
        mine = {(m, q): v for _, m, q, v in scores.filter(pl.col("system") == system).iter_rows()}
        for measure, name in MEASURES.items():
            per_topic = [(mine[(measure, q)], values[name]) for q, values in expected.items()]
            mean = sum(values[name] for values in expected.values()) / len(expected)  # trec_eval's `all`
            for got, want in [*per_topic, (mine[(measure, "all")], mean)]:
                worst, n_compared = max(worst, abs(got - want)), n_compared + 1
    assert n_compared == 4 * (66 * 53 + 66)  # every run answers every judged topic
    # the means are summed in another order than trec_eval's: the last bit or two of a double may differ
    assert worst < 1e-12


@pytest.mark.core
def test_scores_that_differ_past_a_c_float_tie_as_trec_eval_ties_them():
    # 68.63186492919922 and 68.63186473846436 (Fast_ForwardP_2, topic 646091) are one C float: trec_eval ranks the
    # two passages by doc id descending, so 'b' (not relevant) comes first and RR is 1/2, not 1.
    qrels = pl.DataFrame({"query_id": ["q"], "doc_id": ["a"], "relevance": [1]})
    run = pl.DataFrame(
        {"system": ["s", "s"], "query_id": ["q", "q"], "doc_id": ["a", "b"], "rank": [1, 2],
         "score": [68.63186492919922, 68.63186473846436]}
    )  # fmt: skip
    scores = score_systems(run, qrels, ["RR"])
    assert scores.filter(query_id="q")["value"].to_list() == [0.5]
    assert pytrec_scores(qrels, run)["q"]["recip_rank"] == 0.5
    assert trec_order(run)["doc_id"].to_list() == ["b", "a"]


@pytest.mark.core
def test_a_tag_two_files_share_is_named_after_each_file(tmp_path):
    for name, doc in (("rankllm-BM25.run.gz", "d1"), ("rankllm-RM3.run", "d2"), ("both.txt", "d3")):
        text = f"q1 Q0 {doc} 1 2.0 rank\n" + ("q1 Q0 d9 1 2.0 other\n" if name == "both.txt" else "")
        (tmp_path / name).write_bytes(gzip.compress(text.encode()) if name.endswith(".gz") else text.encode())
    runs = read_runs([tmp_path / "rankllm-BM25.run.gz", tmp_path / "rankllm-RM3.run", tmp_path / "both.txt"])
    # a file of one tag: its name; a file of several: file:tag for the shared tag, the other tag as it is
    assert runs["system"].to_list() == ["rankllm-BM25", "rankllm-RM3", "both:rank", "other"]


@pytest.mark.core
def test_a_gzipped_run_reads_as_its_plain_text(shared_data, tmp_path):
    packed = shared_data / "dl21" / "runs" / "uogTrPC.run.gz"
    plain = tmp_path / "uogTrPC.run"
    plain.write_bytes(gzip.decompress(packed.read_bytes()))
    frame = read_runs([packed])
    assert frame.equals(read_runs([plain]))
    # fewer than 100 passages on some topics: 47,026 lines; first and last as zcat shows them
    assert frame.height == 47_026
    assert frame.row(0) == ("uogTrPC", "2082", "msmarco_passage_30_709623997", 3, 26.88562202453613)


@pytest.mark.core
def test_a_passage_listed_twice_in_a_large_file_names_both_lines(tmp_path):
    lines = [f"q{i // 100} Q0 d{i % 100} {i % 100 + 1} {100 - i % 100} sys" for i in range(5000)]
    lines.insert(4321, "q7 Q0 d5 99 0.5 sys")
    (tmp_path / "run.txt").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as error:
        read_runs([tmp_path / "run.txt"])
    assert (
        str(error.value)
        == f"{tmp_path}/run.txt:4322: system sys lists passage d5 for query q7 twice (first at {tmp_path}/run.txt:706)"
    )


@pytest.mark.core
def test_near_duplicates_of_dl21_are_the_ones_its_readme_lists(shared_data):
    judged = dl21_qrels(shared_data)["query_id"].unique().implode()
    paths = sorted((shared_data / "dl21" / "runs").glob("*.run.gz"))
    runs = read_run_lines(paths, lambda _, lines: lines.filter(pl.col("query_id").is_in(judged)))
    groups = duplicate_groups(runs)
    assert groups == [["p_bm25", "rankllm-BM25"], ["pash_f1", "pash_f2", "pash_f3"]]
    assert drop_duplicates(runs, groups)["system"].n_unique() == 63


@pytest.mark.core
@pytest.mark.parametrize(
    ("tops", "expected"),
    [
        # the same two passages on top in the same order: duplicates at depth 2; c puts z second
        ({"a": "x y z", "b": "x y w", "c": "x z y"}, [["a", "b"]]),
        # the same two passages in another order: no duplicates
        ({"a": "x y z", "b": "y x z"}, []),
        # the same lists
        ({"a": "x y z", "b": "x y z"}, [["a", "b"]]),
    ],
)
def test_duplicate_groups_on_tiny_runs(tops, expected):
    rows = []
    for system, docs in tops.items():
        for rank, doc in enumerate(docs.split(), start=1):
            rows.append((system, "q1", doc, rank, float(10 - rank)))
    runs = pl.DataFrame(rows, ["system", "query_id", "doc_id", "rank", "score"], orient="row")
    assert duplicate_groups(runs, depth=2) == expected
    # a answers a topic q2 that b lacks: b is no longer a's duplicate (c neither)
    with_q2 = pl.concat([runs, pl.DataFrame([("a", "q2", "x", 1, 1.0)], runs.columns, orient="row")])
    assert duplicate_groups(with_q2, depth=2) == []


@pytest.mark.integration
def test_peras_evaluate_scores_all_66_dl21_files(settings, ingested, shared_data, capsys):
    ingested("dl21", settings)
    paths = [str(p) for p in sorted((shared_data / "dl21" / "runs").glob("*.run.gz"))]
    common = ["--collection", "dl21", "--warehouse", str(settings.warehouse)]
    # a run of another collection (DL19's topics) among them: one line, nothing stored
    with open_migrated(settings.warehouse):  # migrated first: the snapshot is of what the command writes
        pass
    before = snapshot(settings.warehouse)
    other = str(shared_data / "dl19" / "runs" / "ICT-BERT2.run.gz")
    result = run_cli(capsys, "evaluate", paths[0], other, *common)
    assert (result.exit_code, result.out) == (2, "")
    assert result.err == (
        f"error: no query of run file {other} (1005165, 100983, 101169, 1012021, 1014126 ...) is judged in "
        "collection 'dl21': give the --collection the runs answer\n"
    )
    assert snapshot(settings.warehouse) == before
    result = run_cli(capsys, "evaluate", *paths, *common, "--measure", "nDCG@10", "--dedupe")
    assert result.exit_code == 0, result.err
    lines = result.out.splitlines()
    assert len([line for line in lines if line.startswith("human ")]) == 63  # 66 files, 3 copies left out
    assert (
        "Near-duplicates (the same top 10 on every judged topic): p_bm25 = rankllm-BM25; pash_f1 = pash_f2 = pash_f3; "
        "only the first of each scored (--dedupe)."
    ) in lines
    assert [line.split() for line in lines if line.split()[1:2] in (["p_bm25"], ["yorku21_a"])] == [
        ["human", "p_bm25", "nDCG@10", "0.446"],
        ["human", "yorku21_a", "nDCG@10", "0.697"],
    ]
