"""Issue 33: the recognize measures on a small hand-computed case (no server, no Prefect): shares, verdicts, shift
from default, off-target, pole accuracy, the default control, agreement with the BFI-2 check, and the check set's
accuracy and evidence-id F1."""

from __future__ import annotations

import pytest

from peras.sql import run_sql, run_statements
from peras.warehouse import open_migrated
from peras.warehouse_views import create_views
from tasks.engine.stage import declaration
from tasks.recognize.check_set import expected_frame

pytestmark = pytest.mark.core

N, A = "neuroticism", "agreeableness"
# personality, dimension, status, level, ids (each row one answer's reading; query_id numbers them)
READINGS = [
    # default: neuroticism 3 uncertain + 1 high (lean 1/4), agreeableness 2 uncertain (lean 0)
    *[("default", N, "ok", "uncertain", [])] * 3, ("default", N, "ok", "high", [2]),
    *[("default", A, "ok", "uncertain", [])] * 2,
    # HN: neuroticism 3 high + 1 low (lean 1/2: shift +1/4, recognised); agreeableness 2 low (lean -1: shift -1)
    *[("HN", N, "ok", "high", [1])] * 3, ("HN", N, "ok", "low", [3]),
    *[("HN", A, "ok", "low", [2])] * 2,
    # LN: one high, one low, one uncertain, one failure (lean 0 over 3 read: uncertain, not recognised; shift -1/4)
    ("LN", N, "ok", "high", [1]), ("LN", N, "ok", "low", [2]), ("LN", N, "ok", "uncertain", []),
    ("LN", N, "parse_failure", None, None),
    # the check set (neuroticism's three texts): high read high citing 1 of its [1, 2]; low read low citing [2, 4]
    # against [2, 3]; neutral-1 read high (wrong)
    ("check-set", N, "ok", "high", [1]), ("check-set", N, "ok", "low", [2, 4]), ("check-set", N, "ok", "high", [1]),
]  # fmt: skip
CHECK_IDS = ["neuroticism-high", "neuroticism-low", "neutral-1"]


@pytest.fixture
def con(tmp_path):
    with open_migrated(tmp_path / "w.duckdb") as con:
        for kind in ("recognize", "recognize_traits"):
            run_statements(con, declaration(kind).sql("create_tables"))
        con.execute(
            "insert into judge_runs (run_id, run_name, source, task_type, collection_id, model, backend, params,"
            " created_at) values ('J1', 'J', 'llm', 'pointwise', 'c', 'm', 'x', '{}', now())"
        )
        con.execute(
            "insert into recognize_runs (recognize_run_id, run_name, judge_run, sample_size, seed, model, backend,"
            " params, status, created_at) values ('R1', 'r', 'J', 4, 42, 'rec', 'x', '{}', 'published', now())"
        )
        for code, trait, pole in (
            ("default", "none", "none"),
            ("HN", "Neuroticism", "high"),
            ("LN", "Neuroticism", "low"),
        ):
            con.execute("insert into personalities values (?, ?, ?, ?, '', 'builtin') on conflict do nothing",
                        [code, code, trait, pole])  # fmt: skip
        checks = iter(CHECK_IDS)
        for i, (personality, dimension, status, level, ids) in enumerate(READINGS):
            query_id = next(checks) if personality == "check-set" else f"q{i}"
            con.execute(
                "insert into recognize_states (recognize_run_id, personality, query_id, doc_id, dimension, level,"
                " utterance_ids, evidence, analysis, n_sentences, status, recognized_at)"
                " values ('R1', ?, ?, 'd', ?, ?, ?, ?, 'why', 4, ?, now())",
                [personality, query_id, dimension, level, ids, None if ids is None else [f"s{j}" for j in ids], status],
            )
        # the BFI-2 check of model m: HN passes its comparison, LN fails its own
        con.execute(
            "create temp table persona_fidelity as select * from (values"
            " ('c1', 'm', 'Neuroticism', 'high_vs_default', true), ('c1', 'm', 'Neuroticism', 'default_vs_low', false))"
            " t(run_name, model, trait, comparison, is_pass)"
        )
        con.execute("create temp table persona_check_runs as select 'c1' as run_name, now() as created_at")
        create_views(con, "recognize", temporary=True)
        yield con


def query(con, sql: str) -> list[tuple]:
    return con.execute(sql).fetchall()


def test_shares_and_verdicts(con):
    assert query(
        con,
        "select personality, dimension, n_read, n_failures, share_high, share_low, share_uncertain, "
        "lean, verdict from recognize_shares order by personality, dimension",
    ) == [  # fmt: skip
        ("HN", A, 2, 0, 0.0, 1.0, 0.0, -1.0, "low"),
        ("HN", N, 4, 0, 0.75, 0.25, 0.0, 0.5, "high"),
        ("LN", N, 3, 1, 1 / 3, 1 / 3, 1 / 3, 0.0, "uncertain"),
        ("default", A, 2, 0, 0.0, 0.0, 1.0, 0.0, "uncertain"),
        ("default", N, 4, 0, 0.25, 0.0, 0.75, 0.25, "high"),
    ]


def test_shift_accuracy_control_and_bfi2_agreement(con):
    assert query(
        con,
        "select personality, dimension, is_own_dimension, intended_pole, shift, is_recognised "
        "from recognize_shift order by all",
    ) == [  # fmt: skip
        ("HN", A, False, None, -1.0, None),
        ("HN", N, True, "high", 0.25, True),
        ("LN", N, True, "low", -0.25, False),
    ]
    # accuracy 1 of 2; both own shifts move a quarter toward the pole; default reads uncertain in 5 of its 6
    assert query(con, "select n_personas, n_recognised, accuracy, mean_shift, mean_off_target_shift, "
                      "round(default_share_uncertain, 4), is_default_mostly_uncertain from recognize_accuracy") == [
        (2, 1, 0.5, 0.25, 1.0, 0.8333, True)
    ]  # fmt: skip
    assert query(
        con,
        "select personality, check_run, is_recognised, is_bfi2_pass, agrees "
        "from recognize_bfi2_agreement order by personality",
    ) == [  # fmt: skip
        ("HN", "c1", True, True, True),
        ("LN", "c1", False, False, True),
    ]
    assert query(
        con,
        "select personality, dimension, level, is_intended_pole, evidence from recognize_evidence "
        "where personality != 'HN' order by all",
    ) == [  # fmt: skip
        ("LN", N, "high", False, ["s1"]),
        ("LN", N, "low", True, ["s2"]),
        ("default", N, "high", False, ["s2"]),
    ]


def test_check_set_accuracy_and_evidence_id_f1(con):
    con.register("staged_check_texts", expected_frame([N]).to_arrow())
    run_sql(con, "recognize/replace_check_texts", {"run_id": "R1"})
    # levels: 2 of 3 right; ids over the two texts with evidence: cited [1] + [2, 4], expected [1, 2] + [2, 3]:
    # true 2 of 3 cited and of 4 expected, F1 = 2 * 2 / (3 + 4)
    [row] = run_sql(con, "recognize/select_check_scores", {"run_name": "r"}).fetchall()
    assert row == (3, 2, 2 / 3, 2, 2 / 3, 0.5, 4 / 7)


def test_the_report_reads_each_published_run_with_its_verdicts_and_evidence(con):
    from tasks.report.recognize import read_recognitions

    [run] = read_recognitions(con)
    assert {k: run.summary[k] for k in ("run_name", "judge_run", "n_personas", "n_recognised", "accuracy")} == {
        "run_name": "r", "judge_run": "J", "n_personas": 2, "n_recognised": 1, "accuracy": 0.5,
    }  # fmt: skip
    assert run.summary["n_texts"] is None  # no check texts stored with this run
    assert [(v["personality"], v["verdict"], v["shift"], v["agrees"]) for v in run.verdicts] == [
        ("HN", "high", 0.25, True),
        ("LN", "uncertain", -0.25, True),
    ]
    # up to two examples per persona at its own pole, with the quoted sentences
    assert [(e["personality"], e["query_id"], e["evidence"]) for e in run.evidence] == [
        ("HN", "q6", ["s1"]),
        ("HN", "q7", ["s1"]),
        ("LN", "q13", ["s2"]),
    ]


def test_the_command_says_when_default_does_not_read_mostly_uncertain(capsys):
    from cli.commands.personas import print_recognized as print_summary

    accuracy = {"n_recognised": 7, "n_personas": 10, "accuracy": 0.7, "default_share_uncertain": 0.25,
                "is_default_mostly_uncertain": False}  # fmt: skip
    check = {"n_correct": 9, "n_texts": 13, "accuracy": 9 / 13, "id_f1": 0.5, "n_id_texts": 10}
    summary = {
        "check_scores": [check], "shares": [], "verdicts": [], "accuracy": [accuracy], "run_name": "r",
        "n_states": 10, "n_judged_now": 10, "n_sent": 10, "n_cached": 0, "n_failures": 0, "n_traits": 5,
        "traits_run_name": "t", "n_trait_failures": 0, "model": "m", "backend": "b",
    }  # fmt: skip
    print_summary(summary)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == (
        "Recognizer on the check set (written for PERAS): 9 of 13 levels right (accuracy 0.69), evidence-id F1 0.50 "
        "over 10 texts with evidence."
    )
    assert lines[-3:-1] == [
        "Pole recognised for 7 of 10 personas (accuracy 0.70).",
        "Control: default's answers read uncertain in only 25% of readings (expected mostly uncertain): the "
        "recognizer reads personality where none was asked for.",
    ]


def test_a_run_that_failed_its_gate_is_in_no_measure_view(con):
    """Issue 48: the views read published runs only, as every other measure view does: a recognize run (and a traits
    run) that failed its gate, with readings that would change every figure, is counted nowhere."""
    con.execute(
        "insert into recognize_runs (recognize_run_id, run_name, judge_run, sample_size, seed, model, backend,"
        " params, status, created_at) values ('R2', 'r-failed', 'J', 4, 42, 'rec', 'x', '{}', 'failed_check', now())"
    )
    for personality, level in (("default", "high"), ("HN", "low"), ("LN", "high"), ("check-set", "low")):
        con.execute(
            "insert into recognize_states (recognize_run_id, personality, query_id, doc_id, dimension, level,"
            " utterance_ids, evidence, analysis, n_sentences, status, recognized_at)"
            " values ('R2', ?, 'neuroticism-high', 'd', ?, ?, [1], ['s1'], 'why', 4, 'ok', now())",
            [personality, N, level],
        )
    con.execute("insert into recognize_check_texts values ('R2', 'neuroticism-high', 'neuroticism', 'high', [1])")
    for run_id, status in (("T1", "published"), ("T2", "failed")):
        con.execute(
            "insert into recognize_trait_runs (recognize_trait_run_id, run_name, judge_run, sample_size, seed, model,"
            " backend, params, status, created_at) values (?, ?, 'J', 4, 42, 'rec', 'x', '{}', ?, now())",
            [run_id, f"t-{status}", status],
        )
        con.execute(
            "insert into recognize_traits (recognize_trait_run_id, personality, dimension, level, status,"
            " recognized_at) values (?, 'HN', ?, 'high', 'ok', now())",
            [run_id, N],
        )
    runs = {
        view: query(con, f"select distinct run_name from {view} order by all")
        for view in ("recognize_shares", "recognize_accuracy", "recognize_shift", "recognize_bfi2_agreement",
                     "recognize_evidence", "recognize_check_scores", "recognize_trait_levels")
    }  # fmt: skip
    assert runs == {
        "recognize_shares": [("r",)],
        "recognize_accuracy": [("r",)],
        "recognize_shift": [("r",)],
        "recognize_bfi2_agreement": [("r",)],
        "recognize_evidence": [("r",)],
        "recognize_check_scores": [],  # run r stores no check texts here (the other tests' figures are r's alone)
        "recognize_trait_levels": [("t-published",)],
    }
    # r's own figures are as before
    assert query(con, "select n_personas, n_recognised, accuracy from recognize_accuracy") == [(2, 1, 0.5)]
