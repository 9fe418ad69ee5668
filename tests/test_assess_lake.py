"""`peras assess` on a DuckLake warehouse (a real PostgreSQL catalog): a plan made and extended, labels imported and
replaced, the assessor page's label, skip and undo, hybrid qrels; as on a DuckDB file (DuckLake has no keys, so
no write may be `insert or replace`)."""

from __future__ import annotations

import pytest

from tests.test_lake import REASON, lake, pg, query  # noqa: F401  (the fixtures)

if REASON is not None:
    pytest.skip(REASON, allow_module_level=True)

from flows.ingest import ingest  # noqa: E402
from tasks.assess.desk import Desk  # noqa: E402
from tasks.assess.tasks import read_plan  # noqa: E402
from tests.helpers import run_cli  # noqa: E402
from tests.test_assess_plan import import_sample_run  # noqa: E402

pytestmark = pytest.mark.integration
LABELS = "select query_id, doc_id, assessor, relevance, origin from assess_labels order by all"


def test_a_plan_its_imports_and_the_page_s_labels_work_on_a_lake(lake, capsys, tmp_path):  # noqa: F811
    ingest(preset="sample", settings=lake)
    import_sample_run(capsys, lake.warehouse, tmp_path)
    plan = ["assess", "plan", "sample", "--run", "elsewhere", "--strategy", "low-confidence", "--name", "unsure"]
    assert (
        run_cli(capsys, *plan, "--budget", "2").out
        == "plan unsure (low-confidence): 2 pairs added, 2 of a pool of 40\n"
    )
    assert (
        run_cli(capsys, *plan, "--budget", "3").out
        == "plan unsure (low-confidence): 1 pairs added, 3 of a pool of 40\n"
    )
    assert query(lake, "select query_id, doc_id, pick_order from assess_pairs order by 3") == [
        ("s1", "e3", 1), ("s2", "a1", 2), ("s3", "c5", 3)
    ]  # fmt: skip
    path = tmp_path / "ana.qrels"
    for text in ("s1 0 e3 1\ns2 0 a1 2\n", "s1 0 e3 0\n"):  # the second import replaces ana's label of e3
        path.write_text(text)
        result = run_cli(capsys, "assess", "import", str(path), "--plan", "unsure", "--assessor", "ana")
        assert result.exit_code == 0, result.err
    assert query(lake, LABELS) == [("s1", "e3", "ana", 0, "import"), ("s2", "a1", "ana", 2, "import")]
    desk = Desk(lake.warehouse, read_plan(lake.warehouse, "unsure").row["plan_id"], overlap=2)  # ana holds two
    assert desk.next("bo")["pair"]["doc_id"] == "e3"
    desk.skip("bo", "s1", "e3")
    assert desk.next("bo")["pair"]["doc_id"] == "a1"
    desk.label("bo", "s2", "a1", 3, 2.5)
    desk.label("bo", "s2", "a1", 1, 4.0)  # bo changes their mind: one label, the latest
    assert desk.next("bo")["pair"]["doc_id"] == "c5"
    desk.label("bo", "s3", "c5", 2, 1.0)
    desk.undo("bo")  # c5's label goes, and c5 comes back
    assert desk.next("bo")["pair"]["doc_id"] == "c5"
    assert query(lake, LABELS) == [
        ("s1", "e3", "ana", 0, "import"), ("s2", "a1", "ana", 2, "import"), ("s2", "a1", "bo", 1, "page")
    ]  # fmt: skip
    claims = "select doc_id, assessor, is_skipped from assess_claims order by all"
    assert query(lake, claims) == [("a1", "bo", False), ("c5", "bo", False), ("e3", "bo", True)]
    out = tmp_path / "hybrid.qrels"
    result = run_cli(capsys, "export-qrels", "--hybrid", "unsure", "--output", str(out))
    assert result.out == f"{out}: 40 pairs (2 human labels, 38 LLM); provenance in {out}.provenance.tsv\n"
    assert [line for line in out.read_text().splitlines() if line.split()[2] in ("e3", "a1")] == [
        "s1 0 e3 0", "s2 0 a1 1"
    ]  # fmt: skip
