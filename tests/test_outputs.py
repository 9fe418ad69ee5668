"""Issue 36: every command that writes a file refuses the warehouse's own files, and writes all its files or none."""

from __future__ import annotations

from pathlib import Path

import pytest

from peras.warehouse import publish_snapshot, snapshot_path
from tests.helpers import run_cli, snapshot
from tests.test_evaluate import judged  # noqa: F401 - a fixture

pytestmark = pytest.mark.integration

FIRST_RUN = "bm25-lucene-k0.9-b0.4-stem.run"  # the first of the eleven systems build-runs writes


def link(path: Path, target: Path) -> Path:
    """A link at `path` (its folder created) to `target`: writing through it would write the target."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.symlink_to(target)
    return path


# (command and flags; the link each case plants, relative to tmp_path, or None; the message) with {wh}: the warehouse,
# {snap}: its analysts' snapshot, {tmp}: the test's directory
OVERWRITES = [
    # the qrels file over the warehouse itself
    (
        ["export-qrels", "--run", "scripted", "--output", "{wh}"],
        None,
        "--output {wh} is the warehouse's file {wh}: choose another file name",
    ),
    # over the analysts' snapshot
    (
        ["export-qrels", "--run", "scripted", "--output", "{snap}"],
        None,
        "--output {snap} is the warehouse's file {snap}: choose another file name",
    ),
    # its side file, OUTPUT.confidence.tsv, is a link to the warehouse
    (
        ["export-qrels", "--run", "scripted", "--output", "{tmp}/out.qrels"],
        "out.qrels.confidence.tsv",
        "--output {tmp}/out.qrels would write {tmp}/out.qrels.confidence.tsv, which is the warehouse's file {wh}: "
        "choose another --output",
    ),
    # one of the eleven run files build-runs writes is a link to the warehouse
    (
        ["build-runs", "--collection", "sample", "--output-dir", "{tmp}/runs"],
        f"runs/{FIRST_RUN}",
        f"--output-dir {{tmp}}/runs would write {{tmp}}/runs/{FIRST_RUN}, which is the warehouse's file {{wh}}: "
        "choose another --output-dir",
    ),
    # the report's HTML file is a link to the warehouse
    (
        ["report", "--output", "{tmp}/out"],
        "out/report.html",
        "--output {tmp}/out would write {tmp}/out/report.html, which is the warehouse's file {wh}: "
        "choose another --output",
    ),
    # metrics as JSON over the warehouse
    (
        ["metrics", "--format", "json", "--output", "{wh}"],
        None,
        "--output {wh} is the warehouse's file {wh}: choose another file name",
    ),
]


@pytest.mark.parametrize(("args", "planted", "message"), OVERWRITES)
def test_no_command_writes_over_the_warehouse_files(judged, tmp_path, capsys, args, planted, message):  # noqa: F811
    names = {"wh": judged.warehouse, "snap": snapshot_path(judged.warehouse), "tmp": tmp_path}
    if planted is not None:
        link(tmp_path / planted, judged.warehouse)
    publish_snapshot(judged)  # current: a stage's own refresh changes none of its rows
    before = snapshot(judged.warehouse), snapshot(snapshot_path(judged.warehouse))
    result = run_cli(capsys, *[arg.format(**names) for arg in args], "--warehouse", str(judged.warehouse))
    assert (result.exit_code, result.err) == (2, f"error: {message.format(**names)}\n")
    # the rows of the warehouse and of its snapshot are as they were (a stage may checkpoint or refresh them)
    assert (snapshot(judged.warehouse), snapshot(snapshot_path(judged.warehouse))) == before
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file() or p.is_symlink())
    assert [p for p in written if not p.startswith(("peras.", "slots/"))] == ([planted] if planted else [])


# (command and flags; what is in the way, relative to tmp_path: a directory ("dir/") or a file; the message)
IN_THE_WAY = [
    # the qrels' side file is taken by a directory: neither file is written
    (
        ["export-qrels", "--run", "scripted", "--output", "{tmp}/out.qrels"],
        "out.qrels.confidence.tsv/",
        "--output {tmp}/out.qrels: {tmp}/out.qrels.confidence.tsv is a directory: choose another --output",
    ),
    # one of the eleven run files is taken by a directory: none of them is written
    (
        ["build-runs", "--collection", "sample", "--output-dir", "{tmp}/runs"],
        f"runs/{FIRST_RUN}/",
        f"--output-dir {{tmp}}/runs: {{tmp}}/runs/{FIRST_RUN} is a directory: choose another --output-dir",
    ),
    # the output directory is a file
    (
        ["build-runs", "--collection", "sample", "--output-dir", "{tmp}/runs"],
        "runs",
        "--output-dir {tmp}/runs: {tmp}/runs is a file, not a directory: choose another --output-dir",
    ),
]


@pytest.mark.parametrize(("args", "taken", "message"), IN_THE_WAY)
def test_a_file_output_in_the_way_writes_nothing_and_says_which(judged, tmp_path, capsys, args, taken, message):  # noqa: F811
    blocker = tmp_path / taken.rstrip("/")
    if taken.endswith("/"):
        blocker.mkdir(parents=True)
    else:
        blocker.write_text("mine\n")
    result = run_cli(capsys, *[arg.format(tmp=tmp_path) for arg in args], "--warehouse", str(judged.warehouse))
    assert (result.exit_code, result.out, result.err) == (2, "", f"error: {message.format(tmp=tmp_path)}\n")
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert [p for p in written if not p.startswith(("peras.", "slots/"))] == ([] if taken.endswith("/") else [taken])
