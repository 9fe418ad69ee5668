"""Issue 50 item 4: `peras trust` through the real CLI on DL21: the 66 real run files ranked under the human qrels
and an imported judge run made at test time from the human qrels (a seeded perturbation, with confidences); the
study stored, a rerun reading it back without reading a run file; bad input refused in one line, nothing stored."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

import tasks.evaluate.tasks as evaluate_tasks
from peras.errors import UsageError
from peras.warehouse import open_migrated
from tasks.evaluate.trust import human_sample, sample_size
from tests.helpers import run_cli, snapshot
from tests.test_judge import rows as stored


@pytest.mark.core
@pytest.mark.parametrize(
    ("text", "n_pool", "expected"),
    [
        ("5%", 400, 20),
        ("0.05", 400, 20),
        ("2.5%", 10_828, 271),  # 270.7 rounded
        ("500", 10_828, 500),  # a number of pairs
        ("100%", 400, 400),
    ],
)
def test_sample_sizes(text, n_pool, expected):
    assert sample_size(text, n_pool) == expected


@pytest.mark.core
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("500", "--human-sample 500: 500 pairs is more than the 400 pairs of the judged pool"),
        ("120%", "--human-sample 120%: a share above 100% is more than the judged pool"),
        ("0%", "--human-sample 0%: that draws no pair of the 400 of the judged pool"),
        ("five", "--human-sample 'five': give a share (5% or 0.05) or a number of pairs (500)"),
    ],
)
def test_bad_sample_sizes(text, message):
    with pytest.raises(UsageError) as error:
        sample_size(text, 400)
    assert str(error.value) == message


def noisy_judgments(shared_data: Path, path: Path) -> Path:
    """The DL21 human qrels with 30% of the grades moved one step (seeded) and a confidence of 90 or 50."""
    rng = np.random.default_rng(5)
    lines = []
    for line in (shared_data / "dl21" / "2021.qrels.pass.final.txt").read_text().splitlines():
        query_id, _, doc_id, grade = line.split()
        label = int(grade)
        if rng.random() < 0.3:
            label = min(3, max(0, label + (1 if rng.random() < 0.5 else -1)))
        lines.append(f"{query_id} 0 {doc_id} {label} {90 if rng.random() < 0.6 else 50}\n")
    path.write_text("".join(lines))
    return path


@pytest.mark.integration
def test_trust_on_dl21_with_an_imported_judge_then_a_rerun_that_computes_nothing(
    settings, ingested, shared_data, tmp_path, capsys, monkeypatch
):
    ingested("dl21", settings)
    where = ["--warehouse", str(settings.warehouse)]
    judged = noisy_judgments(shared_data, tmp_path / "noisy.txt")
    result = run_cli(capsys, "import-judgments", str(judged), "--name", "noisy", "--collection", "dl21",
                     "--confidence-column", "5", *where)  # fmt: skip
    assert result.exit_code == 0, result.err
    paths = [str(p) for p in sorted((shared_data / "dl21" / "runs").glob("*.run.gz"))]
    command = ["trust", "dl21", *paths, "--run", "noisy", "--dedupe", "--bootstrap", "100", *where]
    result = run_cli(capsys, *command)
    assert result.exit_code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith(
        "dl21: 63 systems ranked by nDCG@10 over 53 topics under the human qrels and judge run noisy (default); study "
    )
    assert lines[0].endswith(" (stored)")
    assert lines[2].startswith("Kendall's tau: 0.")
    assert "(90% bootstrap interval over topics, 100 of 100 replicates, seed 0)" in lines[2]
    flips = next(line for line in lines if line.startswith("Pairs whose order flips: "))
    assert flips.endswith(" of 1,953 (human_gap = a - b > 0 > llm_gap)")
    sample = "90% intervals for each system's human nDCG@10 from a 5% human sample (543 of 10,828 pool pairs)"
    assert sample in result.out
    # the best system first, with its full human score (trec_eval's 0.749) and three intervals
    best = next(line for line in lines if line.startswith("pash_f1 "))
    assert best.split()[:5] == ["pash_f1", "0.749", best.split()[2], "1", best.split()[4]]
    counts = (
        "select (select count(*) from trust_studies), (select count(*) from trust_scores), "
        "(select count(*) from trust_agreement), (select count(*) from trust_intervals)"
    )
    assert stored(settings, counts) == [(1, 2 * 63 * 54, 3, 63 * 3)]
    summary = stored(settings, "select n_systems, n_topics, n_sample, n_pool from trust_summary")
    assert summary == [(63, 53, 543, 10_828)]

    # the same inputs again: read back, no run file read, nothing written
    before = snapshot(settings.warehouse)

    def refuse(*args, **kwargs):
        raise AssertionError("a rerun read the run files")

    monkeypatch.setattr(evaluate_tasks, "read_run_lines", refuse)
    again = run_cli(capsys, *command)
    assert again.exit_code == 0, again.err
    assert again.out.splitlines()[0] == lines[0].replace("(stored)", "(stored earlier, nothing recomputed)")
    assert again.out.splitlines()[1:] == lines[1:]
    assert snapshot(settings.warehouse) == before


@pytest.mark.integration
def test_bad_trust_input_is_one_line_and_stores_nothing(settings, ingested, shared_data, tmp_path, capsys):
    ingested("dl21", settings)
    where = ["--warehouse", str(settings.warehouse)]
    judged = noisy_judgments(shared_data, tmp_path / "noisy.txt")
    noisy = ["--name", "noisy", "--collection", "dl21", "--confidence-column", "5", *where]
    imported = run_cli(capsys, "import-judgments", str(judged), *noisy)
    assert imported.exit_code == 0, imported.err
    sample_qrels = Path(__file__).parents[1] / "peras" / "data" / "sample" / "qrels.txt"
    assert run_cli(capsys, "ingest", "sample", *where).exit_code == 0
    other = run_cli(capsys, "import-judgments", str(sample_qrels), "--name", "other", "--collection", "sample", *where)
    assert other.exit_code == 0, other.err
    with open_migrated(settings.warehouse):
        pass
    before = snapshot(settings.warehouse)
    dl21 = [str(p) for p in sorted((shared_data / "dl21" / "runs").glob("p_*.run.gz"))]
    dl19 = str(shared_data / "dl19" / "runs" / "ICT-BERT2.run.gz")
    one_topic = tmp_path / "one-topic.qrels"  # a sample the user supplies, of topic 2082's first two pairs
    qrels = (shared_data / "dl21" / "2021.qrels.pass.final.txt").read_text().splitlines()
    one_topic.write_text("".join([f"{line}\n" for line in qrels if line.startswith("2082 ")][:2]))
    cases = [
        (["--run", "other"], dl21, "judge run 'other' judged collection 'sample', not 'dl21'"),
        (["--run", "noisy"], [*dl21, dl19], f"no query of run file {dl19} (1005165, 100983, 101169, 1012021, "
         "1014126 ...) is judged in collection 'dl21': give the --collection the runs answer"),
        (["--run", "noisy", "--human-sample", "0%"], dl21,
         "--human-sample 0%: that draws no pair of the 10828 of the judged pool"),
        (["--run", "noisy", "--human-sample", str(one_topic)], dl21, "the human sample covers one topic"),
        (["--run", "noisy", "--human-sample", "20000"], dl21,
         "--human-sample 20000: 20000 pairs is more than the 10828 pairs of the judged pool"),
    ]  # fmt: skip
    for options, files, message in cases:
        result = run_cli(capsys, "trust", "dl21", *files, *options, *where)
        assert (result.exit_code, result.out) == (2, ""), options
        last = result.err.splitlines()[-1]
        assert last.startswith(f"error: {message}"), (options, result.err)
    assert snapshot(settings.warehouse) == before


@pytest.mark.core
def test_a_sample_is_drawn_from_the_judged_pool_or_read_from_a_file(tmp_path):
    human = pl.DataFrame(
        {"query_id": ["q1", "q1", "q2", "q2"], "doc_id": ["a", "b", "c", "d"], "relevance": [3, 0, 1, 2]}
    )
    pool = human.filter(pl.col("doc_id") != "d").with_columns(relevance=pl.lit(1), confidence=pl.lit(None))
    # 2 of the 3 pool pairs (d is not in the pool), seeded
    drawn = human_sample(human, pool, "2", seed=1)
    assert drawn.height == 2 and set(drawn["doc_id"]) <= {"a", "b", "c"}
    assert drawn.equals(human_sample(human, pool, "2", seed=1))
    supplied = tmp_path / "sample.qrels"
    supplied.write_text("q1 0 a 3\nq2 0 c 1\n")
    assert human_sample(human, pool, str(supplied), seed=1).rows() == [("q1", "a", 3), ("q2", "c", 1)]
