"""Issue 51 item 2: the assessor page in a real browser (the system Chromium driven by Playwright), served by a real
`peras assess serve` process and offline, on the shipped sample with an imported judge run; the server's checks."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

from support.prefect_server import free_port
from tasks.assess.server import exposure_warning
from tests.browser import needs_chromium
from tests.helpers import run_cli
from tests.test_assess_plan import import_sample_run

PERAS_BIN = Path(sys.executable).parent / "peras"


def labels(warehouse: Path) -> list[tuple]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        sql = "select assessor, query_id, doc_id, relevance, origin from assess_labels order by labelled_at"
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.fixture
def plan8(settings, tmp_path, capsys, ingested):
    """The sample, an imported judge run and a random plan 'people' of 8 pairs."""
    ingested("sample", settings)
    import_sample_run(capsys, settings.warehouse, tmp_path)
    args = [
        "assess",
        "plan",
        "sample",
        "--run",
        "elsewhere",
        "--budget",
        "8",
        "--strategy",
        "random",
        "--name",
        "people",
    ]
    result = run_cli(capsys, *args, "--warehouse", str(settings.warehouse))
    assert result.exit_code == 0, result.err
    return settings


def serve(settings, port: int, *extra: str) -> subprocess.Popen:
    args = [str(PERAS_BIN), "assess", "serve", "people", "--port", str(port), "--warehouse", str(settings.warehouse)]
    return subprocess.Popen([*args, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_port(port: int, process: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server stopped: {process.stderr.read() if process.stderr else ''}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError("the server never listened")


def shown(page) -> str:
    """The pair on screen, `query_id/doc_id` (empty when none is left)."""
    return page.evaluate("document.body.dataset.pair || ''")


def press(page, key: str) -> str:
    """Press a key on the pair shown and wait until the page shows the next one; the pair that was labelled."""
    before = shown(page)
    page.keyboard.press(key)
    page.wait_for_function("(before) => (document.body.dataset.pair || '') !== before", arg=before, timeout=60_000)
    return before


def start(page, url: str, name: str) -> None:
    page.goto(url)
    page.fill("#name", name)
    page.press("#name", "Enter")
    page.wait_for_function("document.body.dataset.pair", timeout=60_000)


@pytest.mark.integration
@needs_chromium
def test_two_assessors_label_undo_reload_and_a_killed_server_loses_nothing(plan8, browser, capsys):
    port = free_port()
    server = serve(plan8, port)
    try:
        wait_for_port(port, server)
        ana = browser.new_context().new_page()
        start(ana, f"http://127.0.0.1:{port}/", "ana")
        assert "[3] Perfectly relevant: The passage is fully focused on the query" in ana.inner_text("#rubric")
        assert not ana.is_visible("#llm")  # the judge's label is hidden by default
        given = [press(ana, key) for key in "32103"]
        undone = given[-1]
        ana.keyboard.press("u")
        ana.wait_for_function("(p) => document.body.dataset.pair === p", arg=undone, timeout=60_000)
        ana.reload()  # the name is remembered; the undone pair comes back
        ana.wait_for_function("(p) => document.body.dataset.pair === p", arg=undone, timeout=60_000)
        assert press(ana, "1") == undone
        assert "ana: 5 labelled of 8 pairs" in ana.inner_text("#progress")
        bo = browser.new_context().new_page()
        start(bo, f"http://127.0.0.1:{port}/", "bo")
        bo_pair = press(bo, "0")
        second = serve(plan8, free_port())
        assert second.wait(timeout=120) == 2
        assert second.stderr.read() == (
            f"error: plan 'people' is served already (process {server.pid}): share that page, or stop it first\n"
        )
    finally:
        os.kill(server.pid, signal.SIGKILL)
        server.wait()
    ana_pairs = [(*p.split("/"),) for p in given]
    assert bo_pair not in given + [shown(ana)]
    expected = [("ana", q, d, int(k), "page") for (q, d), k in zip(ana_pairs, "32101", strict=True)]
    assert sorted(labels(plan8.warehouse)) == sorted([*expected, ("bo", *bo_pair.split("/"), 0, "page")])


@pytest.mark.integration
@needs_chromium
def test_the_offline_page_keeps_its_labels_and_its_download_imports(plan8, browser, capsys, tmp_path):
    html = tmp_path / "people.html"
    result = run_cli(capsys, "assess", "export", "people", "--format", "html", "--output", str(html),
                     "--warehouse", str(plan8.warehouse))  # fmt: skip
    assert result.out == f"{html}: 8 pairs of plan people (html)\n"
    page = browser.new_context(accept_downloads=True).new_page()
    start(page, html.as_uri(), "cy")
    given = [press(page, key) for key in "21"]
    page.reload()
    page.wait_for_function("document.body.dataset.pair", timeout=60_000)
    given.append(press(page, "3"))
    page.keyboard.press("u")
    page.wait_for_function("(p) => document.body.dataset.pair === p", arg=given[-1], timeout=60_000)
    given[-1] = press(page, "0")
    with page.expect_download() as download:
        page.click("#download")
    saved = tmp_path / "cy.qrels"
    download.value.save_as(saved)
    keys = dict(zip(given, "210", strict=True))
    # One line per pair labelled, with its last label (the undone one replaced).
    lines = saved.read_text().splitlines()
    assert sorted(lines) == sorted(f"{p.replace('/', ' 0 ')} {keys[p]}" for p in given)
    result = run_cli(capsys, "assess", "import", str(saved), "--plan", "people", "--assessor", "cy",
                     "--warehouse", str(plan8.warehouse))  # fmt: skip
    assert result.exit_code == 0, result.err
    assert sorted(labels(plan8.warehouse)) == sorted(("cy", *p.split("/"), int(keys[p]), "import") for p in given)


@pytest.mark.integration
def test_the_server_checks_the_token_and_the_pair_on_every_write(plan8):
    from fastapi.testclient import TestClient

    from tasks.assess.desk import Desk
    from tasks.assess.server import app
    from tasks.assess.tasks import read_plan

    plan = read_plan(plan8.warehouse, "people")
    client = TestClient(app(Desk(plan8.warehouse, plan.row["plan_id"]), "people", "s3cret"))
    refused = client.post("/api/next", json={"assessor": "ana", "token": "guess"})
    assert (refused.status_code, refused.json()) == (
        403, {"detail": "wrong or missing token: open the page with the URL you were given"}
    )  # fmt: skip
    got = client.post("/api/next", json={"assessor": "ana", "token": "s3cret"}).json()
    pair = {"query_id": got["pair"]["query_id"], "doc_id": got["pair"]["doc_id"]}
    assert set(got["pair"]) == {"query_id", "doc_id", "query_text", "passage_text"}  # no llm_label
    outside = client.post("/api/label", json={"assessor": "ana", "token": "s3cret", "query_id": "s9",
                                              "doc_id": "zz", "relevance": 2})  # fmt: skip
    assert (outside.status_code, outside.json()) == (
        400, {"detail": "pair (s9, zz) is not in this plan: label only its pairs"}
    )  # fmt: skip
    wrong = client.post("/api/label", json={"assessor": "ana", "token": "s3cret", **pair, "relevance": 4})
    assert (wrong.status_code, wrong.json()) == (400, {"detail": "label 4 is not one of 0, 1, 2, 3"})
    unsigned = client.post("/api/label", json={"assessor": "ana", **pair, "relevance": 2})
    assert unsigned.status_code == 403
    assert labels(plan8.warehouse) == []
    assert client.post("/api/label", json={"assessor": "ana", "token": "s3cret", **pair, "relevance": 2}).json() == {
        "ok": True
    }
    assert labels(plan8.warehouse) == [("ana", pair["query_id"], pair["doc_id"], 2, "page")]


@pytest.mark.core
@pytest.mark.parametrize(
    ("host", "token", "warning"),
    [
        ("127.0.0.1", None, None),  # loopback: nobody else reaches it
        ("0.0.0.0", None, "warning: serving on 0.0.0.0:8751: anyone who can reach this port can label (give --token T "
         "and share the URL with ?token=T)"),
        ("10.0.0.5", "t", "warning: serving on 10.0.0.5:8751: anyone who can reach this port can label (a label "
         "needs the token in the URL)"),
    ],
)  # fmt: skip
def test_a_page_shared_beyond_this_machine_says_who_can_label(host, token, warning):
    assert exposure_warning(host, 8751, token) == warning


@pytest.mark.integration
def test_a_pair_goes_to_one_assessor_unless_overlap_and_a_skipped_pair_to_another(plan8):
    from tasks.assess.desk import Desk
    from tasks.assess.tasks import read_plan

    plan = read_plan(plan8.warehouse, "people")
    order = [f"{q}/{d}" for q, d in plan.pairs.select("query_id", "doc_id").iter_rows()]
    one = Desk(plan8.warehouse, plan.row["plan_id"], overlap=1)

    def given(desk: Desk, name: str) -> str:
        pair = desk.next(name)["pair"]
        return f"{pair['query_id']}/{pair['doc_id']}"

    assert [given(one, "ana"), given(one, "bo")] == order[:2]
    assert given(one, "ana") == order[0]  # not answered yet: the same pair again
    one.skip("ana", *order[0].split("/"))
    assert given(one, "ana") == order[2]
    assert given(one, "cy") == order[0]  # ana skipped it: free for another
    two = Desk(plan8.warehouse, plan.row["plan_id"], overlap=2)
    assert given(two, "dan") == order[0]  # held by cy alone (ana skipped it): with overlap 2, one more may have it
    assert given(two, "ed") == order[1]  # the first is held by two now; the second by bo alone
