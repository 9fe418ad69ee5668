"""Issue 53 item 3: a judge run handed in as a TREC AutoJudge submission (leaderboard, qrels, ir-metadata.yml),
checked with the track's own reader and verifier (autojudge-base), and read back by `peras evaluate --autojudge`.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import types

import ir_measures
import pytest
import yaml

from tasks.evaluate.autojudge import read_leaderboard
from tests.test_evaluate import QRELS, cli, judged, write_runs  # noqa: F401 - the fixture

TOPICS = ["s1", "s2", "s3", "s4", "s5"]


@pytest.fixture
def track():
    """autojudge-base's own leaderboard and qrels modules, unmodified. Its package __init__ imports its text chunker,
    which downloads NLTK's stop words at import (no network here: a LookupError); the two modules need neither, so
    the package is entered without running that __init__, and left as it was afterwards."""
    before = set(sys.modules)
    spec = importlib.util.find_spec("autojudge_base")
    package = types.ModuleType("autojudge_base")
    package.__path__ = list(spec.submodule_search_locations)
    sys.modules["autojudge_base"] = package
    yield importlib.import_module("autojudge_base.leaderboard"), importlib.import_module("autojudge_base.qrels.qrels")
    for name in set(sys.modules) - before:
        if name.startswith("autojudge_base"):
            del sys.modules[name]


@pytest.fixture
def handed_in(judged, tmp_path, capsys):  # noqa: F811 - the fixture imported above
    """The scripted run's HA labels (3 - the human grade) handed in over three systems."""
    runs = write_runs(tmp_path / "three.run")
    out = tmp_path / "aj"
    args = ["export-autojudge", str(runs), "--run", "scripted", "--personality", "HA", "--measure", "nDCG@10"]
    result = cli(capsys, judged, *args, "--measure", "P@5", "--output-dir", str(out))
    assert result.exit_code == 0, result.err
    assert result.out == f"{out}: 3 systems, 40 judged pairs\n"
    return judged, runs, out


@pytest.mark.integration
def test_the_submission_reads_and_verifies_with_the_tracks_own_code(handed_in, track):
    _, runs, out = handed_in
    leaderboard, qrels_module = track
    assert sorted(p.name for p in out.iterdir()) == ["ir-metadata.yml", "qrels.txt", "trec-leaderboard.txt"]
    board = leaderboard.Leaderboard.load(out / "trec-leaderboard.txt", format="ir_measures")
    board.verify(on_missing="error", expected_topic_ids=TOPICS)  # raises LeaderboardVerificationError if not
    assert (set(board.measures), {e.run_id for e in board.entries}) == (
        {"nDCG@10", "P@5"}, {"perfect", "reversed", "middling"}
    )  # fmt: skip
    assert len(board.entries) == 3 * (5 + 1)  # 5 topics and the `all` row per system
    # the verifier is not a rubber stamp: a leaderboard without one system's topic s3 fails it
    cut = out / "cut.txt"
    lines = (out / "trec-leaderboard.txt").read_text().splitlines(keepends=True)
    cut.write_text("".join(line for line in lines if not line.startswith("perfect\ts3")))
    with pytest.raises(leaderboard.LeaderboardVerificationError, match="perfect: Missing leaderboard entries"):
        leaderboard.Leaderboard.load(cut, format="ir_measures").verify(on_missing="error", expected_topic_ids=TOPICS)
    cut.unlink()
    qrels = qrels_module.read_qrel_file(out / "qrels.txt")
    qrels.verify(expected_topic_ids=TOPICS)
    assert {(r.topic_id, r.doc_id, r.grade) for r in qrels.rows} == {(q, d, 3 - g) for (q, d), g in QRELS.items()}
    # the leaderboard's values are ir_measures' under the HA labels, exactly
    ha = [ir_measures.Qrel(q, d, 3 - g) for (q, d), g in QRELS.items()]
    run = list(ir_measures.read_trec_run(str(runs)))
    values = {(e.run_id, e.topic_id): float(e.values["nDCG@10"]) for e in board.entries}
    for system in ("perfect", "reversed", "middling"):
        scored = [r for r, line in zip(run, runs.read_text().splitlines(), strict=True) if line.endswith(system)]
        mean = ir_measures.calc_aggregate([ir_measures.nDCG @ 10], ha, scored)[ir_measures.nDCG @ 10]
        assert values[(system, "all")] == mean
    assert values[("reversed", "all")] == 1.0  # HA's labels reverse the grades: the reversed system is perfect
    metadata = yaml.safe_load((out / "ir-metadata.yml").read_text())
    assert (metadata["method"]["name"], metadata["actor"]["team"]) == ("scripted", "PERAS")
    assert metadata["data"] == {"test collection": {"name": "sample"}}
    assert metadata["method"]["description"] == (
        "PERAS LLM relevance judge: the HA labels of judge run scripted "
        "(judge-model, without CoT, verbalized confidence)"
    )
    assert metadata["method"]["judge"]["prompt files"].keys() == {"label_nocot.toml", "confidence.toml"}
    assert metadata["platform"]["software"]["libraries"]["python"][0].startswith("peras==")
    assert metadata["implementation"]["source"]["commit"]


@pytest.mark.integration
def test_evaluate_reads_the_leaderboard_back(handed_in, capsys):
    settings, runs, out = handed_in
    args = ["evaluate", str(runs), "--collection", "sample", "--format", "json"]
    result = cli(capsys, settings, *args, "--autojudge", str(out / "trec-leaderboard.txt"))
    assert result.exit_code == 0, result.err
    summary = json.loads(result.out)
    agreement = {r["qrels_name"]: r["kendall_tau"] for r in summary["agreement"]}
    # the humans rank perfect > middling > reversed; HA's leaderboard the other way round
    assert agreement == {"autojudge:trec-leaderboard.txt": -1.0}
    scores = {(r["qrels_name"], r["system"]): r["value"] for r in summary["scores"]}
    assert scores[("autojudge:trec-leaderboard.txt", "reversed")] == 1.0
    assert scores[("human", "perfect")] == 1.0


def test_a_leaderboard_line_of_the_wrong_shape_names_its_line(tmp_path):
    path = tmp_path / "board.txt"
    path.write_text("runA\ts1\tnDCG@10\t0.5\nrunA\tall\tnDCG@10\n")
    with pytest.raises(Exception, match=r"board.txt:2: expected 4 fields `run_id topic_id measure value`, found 3"):
        read_leaderboard(path)
