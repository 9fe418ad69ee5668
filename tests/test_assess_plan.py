"""Issue 51 items 1-3: an assessment plan (random, low-confidence, disagreement; extended, never re-picked), labels
imported from a file, the offline page and TSV, and hybrid qrels, on tiny inline pools and on the shipped sample."""

from __future__ import annotations

import math
from pathlib import Path

import polars as pl
import pytest

from peras.errors import UsageError
from tasks.assess.hybrid import hybrid_qrels
from tasks.assess.label_files import check_labels, read_label_file
from tasks.assess.plan import budget_size, next_pairs, rank_spread, ranked
from tasks.assess.rubric import rubric
from tests.helpers import run_cli, snapshot
from tests.test_evaluate import QRELS

# Five pairs: q1/a..q1/e with their judge's mean confidence and the entropy of their personalities' labels.
POOL = pl.DataFrame(
    {
        "query_id": ["q1"] * 5,
        "doc_id": ["a", "b", "c", "d", "e"],
        "llm_label": [3, 2, 1, 0, 2],
        "mean_confidence": [90.0, 20.0, None, 60.0, 20.0],
        "label_entropy": [0.0, 1.0, 1.5, 0.0, 0.0],
    }
)
NO_PAIRS = pl.DataFrame(schema={"query_id": pl.String, "doc_id": pl.String})


@pytest.mark.core
@pytest.mark.parametrize(
    ("strategy", "first"),
    [
        ("low-confidence", ["c", "e", "b", "d"]),  # no confidence counts as 0; e before b at 20: the seed
        ("disagreement", ["c", "b"]),  # then the three of entropy 0 in the seeded order
    ],
)
def test_a_strategy_picks_by_its_signal(strategy, first):
    order = ranked(POOL, strategy, seed=42)["doc_id"].to_list()
    assert order[: len(first)] == first
    assert sorted(order) == ["a", "b", "c", "d", "e"]


@pytest.mark.core
def test_equal_scores_follow_the_seed_and_a_plan_extended_holds_the_pairs_of_a_bigger_plan():
    assert ranked(POOL, "random", 1)["doc_id"].to_list() != ranked(POOL, "random", 2)["doc_id"].to_list()
    two = next_pairs(POOL, NO_PAIRS, "random", 7, 2)
    more = next_pairs(POOL, two, "random", 7, 4)
    assert more["pick_order"].to_list() == [3, 4]
    at_once = next_pairs(POOL, NO_PAIRS, "random", 7, 4)
    assert pl.concat([two, more]).equals(at_once)
    assert next_pairs(POOL, at_once, "random", 7, 3).is_empty()  # a smaller budget adds nothing, re-picks nothing


@pytest.mark.core
@pytest.mark.parametrize(
    ("budget", "size"),
    [("3", 3), ("10%", 4), ("12.5%", 5), ("100%", 40)],  # 10% of 40; 12.5% rounds half up; the whole pool
)
def test_a_budget_is_pairs_or_a_share_of_the_pool(budget, size):
    assert budget_size(budget, 40) == size


@pytest.mark.core
@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ("41", "--budget 41 is 41 pairs, above the pool of 40 pairs the judge run labels: give at most the pool"),
        ("0", "--budget 0 picks no pair of a pool of 40: give a larger budget"),
        ("2.5", "--budget '2.5': give a number of pairs (40) or a share of the pool (10%)"),
        ("ten", "--budget 'ten': give a number of pairs (40) or a share of the pool (10%)"),
    ],
)
def test_a_budget_outside_the_pool_is_refused(budget, message):
    with pytest.raises(UsageError) as raised:
        budget_size(budget, 40)
    assert str(raised.value) == message


@pytest.mark.core
def test_the_rubric_is_the_judges_wording():
    assert [line["grade"] for line in rubric()] == [3, 2, 1, 0]
    assert rubric()[0]["text"] == (
        "Perfectly relevant: The passage is fully focused on the query and provides a clear and complete answer."
    )


@pytest.mark.core
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q1 0 a 4\n", "{path}:1: label '4' is not one of 0, 1, 2, 3: fix the file and import it again"),
        (
            "q1 0 a 2\nq9 0 z 1\n",
            "{path}:2: pair (q9, z) is not in plan 'p' (1 such lines): label only its pairs",
        ),
        ("q1 0 a\n", "{path}:1: not a label line (`query_id 0 doc_id relevance`, or the TSV's columns)"),
        ("q1 0 a 1\nq1 0 a 2\n", "{path}:2: pair (q1, a) is labelled twice by 'import': keep one"),
    ],
)
def test_a_wrong_label_file_is_refused_at_its_line(tmp_path, text, message):
    path = tmp_path / "labels.qrels"
    path.write_text(text)
    with pytest.raises(UsageError) as raised:
        check_labels(read_label_file(path, None), POOL, "p", path)
    assert str(raised.value) == message.format(path=path)


@pytest.mark.core
def test_hybrid_qrels_take_people_s_label_where_given_and_their_majority_where_several():
    llm = POOL.select("query_id", "doc_id", relevance="llm_label")
    labels = pl.DataFrame(
        {"query_id": ["q1"] * 4, "doc_id": ["b", "c", "c", "f"], "assessor": ["ana", "ana", "bo", "bo"],
         "relevance": [0, 3, 1, 2]}
    )  # fmt: skip
    rows = hybrid_qrels(llm, labels).rows()
    assert rows == [
        ("q1", "a", 3, "llm", "", 3),
        ("q1", "b", 0, "human", "ana", 2),
        ("q1", "c", 1, "human", "ana,bo", 1),  # a tie of 3 and 1 goes to the lower label
        ("q1", "d", 0, "llm", "", 0),
        ("q1", "e", 2, "llm", "", 2),
        ("q1", "f", 2, "human", "bo", None),  # assessed, not labelled by the run
    ]


# The sample judged elsewhere: the human grade, confidence 90 but for four pairs the judge was unsure of.
UNSURE = {("s1", "e3"): 10, ("s2", "a1"): 20, ("s3", "c5"): 30, ("s4", "b2"): 40}


def import_sample_run(capsys, warehouse: Path, tmp_path: Path) -> None:
    lines = [f"{q} 0 {d} {g} {UNSURE.get((q, d), 90)}" for (q, d), g in sorted(QRELS.items())]
    path = tmp_path / "judge.txt"
    path.write_text("\n".join(lines) + "\n")
    args = ["import-judgments", str(path), "--name", "elsewhere", "--collection", "sample", "--confidence-column", "5"]
    result = run_cli(capsys, *args, "--warehouse", str(warehouse))
    assert result.exit_code == 0, result.err


def cli(capsys, settings, *args: str):
    return run_cli(capsys, *args, "--warehouse", str(settings.warehouse))


def rows(settings, sql: str) -> list[tuple]:
    import duckdb

    con = duckdb.connect(str(settings.warehouse), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.fixture
def planned(settings, tmp_path, capsys, ingested):
    """The sample with an imported judge run 'elsewhere' and a low-confidence plan of 3 of its pairs."""
    ingested("sample", settings)
    import_sample_run(capsys, settings.warehouse, tmp_path)
    result = cli(capsys, settings, "assess", "plan", "sample", "--run", "elsewhere", "--budget", "3",
                 "--strategy", "low-confidence", "--name", "unsure")  # fmt: skip
    assert (result.exit_code, result.out) == (0, "plan unsure (low-confidence): 3 pairs added, 3 of a pool of 40\n")
    return settings


@pytest.mark.integration
def test_a_plan_picks_the_least_confident_pairs_and_grows_without_re_picking(planned, capsys):
    first = [("s1", "e3", 1), ("s2", "a1", 2), ("s3", "c5", 3)]
    sql = "select query_id, doc_id, pick_order from assess_pairs order by pick_order"
    assert rows(planned, sql) == first
    again = cli(capsys, planned, "assess", "plan", "sample", "--run", "elsewhere", "--budget", "3",
                "--strategy", "low-confidence", "--name", "unsure")  # fmt: skip
    assert again.out == "plan unsure (low-confidence): 0 pairs added, 3 of a pool of 40\n"
    more = cli(capsys, planned, "assess", "plan", "sample", "--run", "elsewhere", "--budget", "10%",
               "--strategy", "low-confidence", "--name", "unsure")  # fmt: skip
    assert more.out == "plan unsure (low-confidence): 1 pairs added, 4 of a pool of 40\n"
    assert rows(planned, sql) == [*first, ("s4", "b2", 4)]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["assess", "plan", "dl19", "--run", "elsewhere", "--budget", "3", "--strategy", "low-confidence",
          "--name", "unsure"], "judge run 'elsewhere' judged collection 'sample', not 'dl19'"),
        (["assess", "plan", "sample", "--run", "elsewhere", "--budget", "3", "--name", "unsure"],
         "plan 'unsure' was made with strategy 'low-confidence', not 'combined': extend it as it was made, or give "
         "another --name"),
        (["assess", "plan", "sample", "--run", "elsewhere", "--budget", "41"],
         "--budget 41 is 41 pairs, above the pool of 40 pairs the judge run labels: give at most the pool"),
        (["assess", "plan", "sample", "--run", "elsewhere", "--budget", "4", "--strategy", "disagreement"],
         "judge run 'elsewhere' labels with one personality: --strategy disagreement has nothing to rank by; use "
         "--strategy low-confidence or random"),
        (["assess", "plan", "sample", "--run", "elsewhere", "--budget", "4", "--strategy", "ranking-impact"],
         "--strategy ranking-impact ranks by the systems' runs: give them with --run-file"),
        (["assess", "import", "nowhere.qrels", "--plan", "unsure"], "label file nowhere.qrels does not exist"),
        (["assess", "export", "nothing", "--output", "x.tsv"],
         "no assessment plan named 'nothing': make one with `peras assess plan`"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_and_changes_nothing(planned, capsys, args, message):
    before = snapshot(planned.warehouse)
    result = cli(capsys, planned, *args)
    assert (result.exit_code, result.err) == (2, f"error: {message}\n")
    assert snapshot(planned.warehouse) == before


@pytest.mark.integration
def test_labels_come_back_from_the_tsv_and_make_hybrid_qrels(planned, capsys, tmp_path):
    sheet = tmp_path / "unsure.tsv"
    assert cli(capsys, planned, "assess", "export", "unsure", "--output", str(sheet)).exit_code == 0
    header, *lines = sheet.read_text().splitlines()
    assert header == "query_id\tdoc_id\tquery\tpassage\trelevance"
    assert [line.split("\t")[:2] for line in lines] == [["s1", "e3"], ["s2", "a1"], ["s3", "c5"]]
    filled = [header, lines[0] + "0", lines[1], lines[2] + "3"]  # the second pair left unlabelled
    sheet.write_text("\n".join(filled) + "\n")
    result = cli(capsys, planned, "assess", "import", str(sheet), "--plan", "unsure", "--assessor", "ana")
    assert (result.exit_code, result.out) == (0, "plan unsure: 2 labels stored (3 pairs)\n")
    sql = "select query_id, doc_id, assessor, relevance, origin from assess_labels order by all"
    assert rows(planned, sql) == [("s1", "e3", "ana", 0, "import"), ("s3", "c5", "ana", 3, "import")]
    out = tmp_path / "hybrid.qrels"
    result = cli(capsys, planned, "export-qrels", "--hybrid", "unsure", "--output", str(out))
    assert result.out == f"{out}: 40 pairs (2 human labels, 38 LLM); provenance in {out}.provenance.tsv\n"
    written = dict(((q, d), int(r)) for q, _, d, r in (line.split() for line in out.read_text().splitlines()))
    assert written == {**QRELS, ("s1", "e3"): 0, ("s3", "c5"): 3}
    provenance = pl.read_csv(f"{out}.provenance.tsv", separator="\t", schema_overrides={"query_id": pl.String})
    assert provenance.filter(pl.col("source") == "human").select("doc_id", "assessors").rows() == [
        ("e3", "ana"), ("c5", "ana")
    ]  # fmt: skip
    assert provenance.height == 40 and math.isclose(provenance["llm_label"].mean(), sum(QRELS.values()) / 40)
    metadata = Path(f"{out}.ir_metadata").read_text()  # its ir_metadata block: the plan, the run, the same each time
    assert "--hybrid unsure --personality default" in metadata
    assert "labels of plan unsure where given, else LLM labels (per line: *.provenance.tsv)" in metadata
    again = tmp_path / "again" / "hybrid.qrels"
    assert cli(capsys, planned, "export-qrels", "--hybrid", "unsure", "--output", str(again)).exit_code == 0
    for suffix in ("", ".provenance.tsv", ".ir_metadata"):
        assert Path(f"{again}{suffix}").read_bytes() == Path(f"{out}{suffix}").read_bytes()


@pytest.mark.integration
def test_an_import_with_a_pair_outside_the_plan_stores_nothing(planned, capsys, tmp_path):
    path = tmp_path / "labels.qrels"
    path.write_text("s1 0 e3 2\nq5 0 z1 1\n")
    before = snapshot(planned.warehouse)
    result = cli(capsys, planned, "assess", "import", str(path), "--plan", "unsure")
    assert (result.exit_code, result.err) == (
        2, f"error: {path}:2: pair (q5, z1) is not in plan 'unsure' (1 such lines): label only its pairs\n"
    )  # fmt: skip
    assert snapshot(planned.warehouse) == before


@pytest.mark.core
def test_ranking_impact_weighs_a_pair_by_how_differently_the_systems_rank_it():
    # Three systems on q1: a ranks x first, b ranks it 3rd, c not in its top 10; all rank y first.
    runs = pl.DataFrame(
        {"system": ["a", "b", "c", "a", "b", "c", "c"], "query_id": ["q1"] * 7,
         "doc_id": ["x", "x", "x", "y", "y", "y", "z"], "rank": [1, 3, 11, 2, 1, 1, 2]}
    )  # fmt: skip
    spread = dict(((q, d), v) for q, d, v in rank_spread(runs, 3).iter_rows())
    w = [1.0, 1 / math.log2(4), 0.0]  # x: ranks 1, 3 and outside the top 10
    assert spread[("q1", "x")] == pytest.approx(abs(w[0] - w[1]) + abs(w[0] - w[2]) + abs(w[1] - w[2]))
    y = [1 / math.log2(3), 1.0, 1.0]
    assert spread[("q1", "y")] == pytest.approx(abs(y[0] - y[1]) + abs(y[0] - y[2]) + abs(y[1] - y[2]))
    assert spread[("q1", "z")] == pytest.approx(2 * (1 / math.log2(3)))  # one system ranks it 2nd, two do not
    pool = POOL.with_columns(rank_spread=pl.Series([0.0, 2.0, 0.5, 2.0, 1.0]))
    assert ranked(pool, "ranking-impact", 42)["doc_id"].to_list()[:4] == ["d", "b", "e", "c"]  # d, b tie: the seed


@pytest.mark.integration
def test_ranking_impact_picks_the_pairs_one_system_ranks_highest(planned, capsys):
    # The shipped two systems rank each judged pair they hold for one system only: the spread is its discount.
    run_file = Path(__file__).resolve().parents[1] / "peras" / "data" / "sample" / "two-systems.run"
    result = cli(capsys, planned, "assess", "plan", "sample", "--run", "elsewhere", "--budget", "3",
                 "--strategy", "ranking-impact", "--run-file", str(run_file))  # fmt: skip
    assert result.out == "plan elsewhere-ranking-impact (ranking-impact): 3 pairs added, 3 of a pool of 40\n"
    sql = "select doc_id, pick_score from assess_pairs join assess_plans using (plan_id) "
    picked = rows(planned, sql + "where plan_name = 'elsewhere-ranking-impact' order by pick_order")
    assert {doc for doc, _ in picked[:2]} == {"e1", "a1"}  # ranked 1st by a system: weight 1
    assert picked[2] == ("e2", pytest.approx(1 / math.log2(3)))  # ranked 2nd
