"""The metrics flow and `peras metrics`: the same numbers as the SQL views, in a table, CSV or JSON."""

from __future__ import annotations

import csv
import io
import json

import duckdb
import numpy as np
import polars as pl
import pytest

from flows.metrics import metrics
from peras.warehouse import open_migrated
from tasks.metrics.tasks import VIEWS
from tests.helpers import run_cli
from tests.metrics_fixtures import PERSONALITIES, Judgment, load_judgments


@pytest.fixture
def judged(settings):
    """Two runs on one collection: 11 personalities x CoT on/off, 60 pairs, some failures."""
    rng = np.random.default_rng(7)
    relevance = rng.integers(0, 4, 60)
    rows = []
    for run_id in ("r1", "r2"):
        for personality in PERSONALITIES:
            for cot in (False, True):
                for i, rel in enumerate(relevance):
                    label = int(rel) if rng.random() < 0.6 else int(rng.integers(0, 4))
                    rows.append(
                        Judgment(
                            run_id,
                            personality,
                            cot,
                            "verbalized",
                            f"q{i % 5}",
                            f"d{i}",
                            int(rel),
                            None if rng.random() < 0.03 else label,
                            None if rng.random() < 0.03 else float(rng.integers(40, 101)),
                        )
                    )
    with open_migrated(settings.warehouse) as con:
        load_judgments(con, rows)
    return settings


def view_frame(settings, name: str, where: str = "true") -> pl.DataFrame:
    con = duckdb.connect(str(settings.warehouse), read_only=True)
    try:
        return con.sql(f"select * from {name} where {where}").pl()
    finally:
        con.close()


def assert_same_rows(got: pl.DataFrame, want: pl.DataFrame) -> None:
    """Same rows (any order), numbers equal to 1e-12: the flow reads a snapshot, the view scans directly."""
    assert got.columns == want.columns and got.height == want.height
    keys = [c for c in got.columns if got.schema[c] != pl.Float64]
    got, want = got.sort(keys, nulls_last=True), want.sort(keys, nulls_last=True)
    assert got.select(keys).equals(want.select(keys))
    for column in set(got.columns) - set(keys):
        a, b = got[column].to_numpy(), want[column].to_numpy()
        assert np.array_equal(np.isnan(a), np.isnan(b)), column
        assert np.allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=1e-12, atol=1e-12), column


@pytest.mark.integration
def test_flow_returns_every_view_unchanged(judged):
    frames = metrics(views=list(VIEWS), settings=judged)
    assert list(frames) == list(VIEWS)
    for name, frame in frames.items():
        assert_same_rows(frame, view_frame(judged, VIEWS[name]))
    assert frames["agreement"].height == 2 * 11 * 2
    assert frames["comparison"].height == 2 * 10 * 2 * 19


@pytest.mark.integration
def test_filters_keep_whole_groups(judged):
    frames = metrics(views=["agreement", "oracle", "comparison"], run="name-r2", cot=True, settings=judged)
    assert_same_rows(frames["agreement"], view_frame(judged, "metrics_agreement", "run_name = 'name-r2' and cot"))
    assert_same_rows(frames["oracle"], view_frame(judged, "metrics_oracle", "run_name = 'name-r2' and cot"))
    assert_same_rows(frames["comparison"], view_frame(judged, "metrics_vs_default", "run_name = 'name-r2' and cot"))


@pytest.mark.integration
def test_flow_run_is_named_for_what_it_reads(judged):
    from prefect.client.orchestration import get_client

    state = metrics(views=["agreement"], run="name-r2", settings=judged, return_state=True)
    with get_client(sync_client=True) as client:
        assert client.read_flow_run(state.state_details.flow_run_id).name == "metrics-name-r2"
    state = metrics(views=["agreement"], settings=judged, return_state=True)
    with get_client(sync_client=True) as client:
        assert client.read_flow_run(state.state_details.flow_run_id).name == "metrics-all"


@pytest.mark.integration
def test_cli_csv_of_one_view(judged, capsys):
    result = run_cli(
        capsys,
        "metrics",
        "--warehouse",
        str(judged.warehouse),
        "--run",
        "name-r1",
        "--no-cot",
        "--view",
        "agreement",
        "--format",
        "csv",
    )
    assert result.exit_code == 0, result.err
    rows = list(csv.DictReader(io.StringIO(result.out)))
    assert len(rows) == 11 and rows[0]["personality"] == "default" and rows[0]["cot"] == "false"
    want = view_frame(judged, "metrics_agreement", "run_name = 'name-r1' and not cot and personality = 'LA'")
    got = next(row for row in rows if row["personality"] == "LA")
    assert float(got["cohen_kappa"]) == pytest.approx(want["cohen_kappa"][0], rel=1e-12)


@pytest.mark.integration
def test_cli_json_and_csv_directory(judged, capsys, tmp_path):
    result = run_cli(capsys, "metrics", "--warehouse", str(judged.warehouse), "--format", "json")
    assert result.exit_code == 0, result.err
    body = json.loads(result.out)
    assert list(body) == ["agreement", "reliability", "calibration", "thresholds", "comparison", "oracle"]
    assert len(body["agreement"]) == 44
    result = run_cli(
        capsys,
        "metrics",
        "--warehouse",
        str(judged.warehouse),
        "--format",
        "csv",
        "--output",
        str(tmp_path / "out"),
        "--view",
        "confusion",
        "--view",
        "threshold-curve",
    )
    assert result.exit_code == 0, result.err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["confusion.csv", "threshold_curve.csv"]
    assert len((tmp_path / "out" / "confusion.csv").read_text().splitlines()) == 1 + 44 * 16


@pytest.mark.integration
def test_cli_table_shows_every_headline_view(judged, capsys):
    result = run_cli(
        capsys, "metrics", "--warehouse", str(judged.warehouse), "--run", "name-r1", "--cot", "--view", "all"
    )
    assert result.exit_code == 0, result.err
    for title in (
        "agreement (metrics_agreement, 11 rows)",
        "calibration (metrics_calibration, 11 rows)",
        "oracle (metrics_oracle, 18 rows)",
    ):
        assert title in result.out


# docs/metrics.md's worked example: (doc, relevance, label, confidence). By hand: kappa 1 - 5 x 2 / (25 - 7) = 4/9,
# QWK 1 - 25/63, macro-F1 (2/3 + 0 + 1/2 + 1) / 4, HMR 0.50866, ECE (0.1 + 0.4 + 0.85 + 0.6 + 0.3) / 5 = 0.45
WORKED = [("a", 3, 3, 90.0), ("b", 2, 2, 60.0), ("c", 1, 2, 85.0), ("d", 0, 0, 40.0), ("e", 2, 0, 30.0)]
SUMMARY_HEADER = ["run", "personality", "CoT", "n", "Kappa", "QWK", "Macro-F1", "HMR", "ECE"]
SUMMARY_ROW = ["name-w", "default", "no", "5", "0.4444", "0.6032", "0.5417", "0.5087", "0.4500"]


@pytest.fixture
def worked(settings):
    """One group: the worked example, judged by `default` without CoT."""
    rows = [
        Judgment("w", "default", False, "verbalized", "q1", doc, relevance, label, confidence)
        for doc, relevance, label, confidence in WORKED
    ]
    with open_migrated(settings.warehouse) as con:
        load_judgments(con, rows)
    return settings


@pytest.mark.integration
def test_cli_prints_the_summary_by_default(worked, capsys):
    result = run_cli(capsys, "metrics", "--warehouse", str(worked.warehouse))
    assert result.exit_code == 0, result.err
    lines = [line.replace("┃", "│") for line in result.out.splitlines()]  # rich draws the header heavier
    cells = [[c.strip() for c in line.split("│")[1:-1]] for line in lines if "│" in line]
    assert cells == [SUMMARY_HEADER, SUMMARY_ROW]
    assert "summary (metrics_summary, 1 rows)" in result.out
    assert result.out.splitlines()[-1] == (
        "more: peras metrics --view agreement|reliability|calibration|thresholds|comparison|oracle|all"
    )


@pytest.mark.integration
def test_summary_view_is_the_metric_views_joined(judged):
    frames = metrics(views=["summary"], settings=judged)
    summary = frames["summary"]
    assert list(frames) == ["summary"] and summary.height == 44
    joined = (
        view_frame(judged, "metrics_agreement")
        .join(
            view_frame(judged, "metrics_reliability").select(
                "run_id", "personality", "cot", "confidence_method", "hmr"
            ),
            on=["run_id", "personality", "cot", "confidence_method"],
        )
        .join(
            view_frame(judged, "metrics_calibration").select(
                "run_id", "personality", "cot", "confidence_method", "ece"
            ),
            on=["run_id", "personality", "cot", "confidence_method"],
        )
    )
    assert_same_rows(summary, joined.select(summary.columns))


@pytest.mark.integration
def test_artifact_is_the_summary(worked):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    state = metrics(settings=worked, return_state=True)
    assert list(state.result()) == [
        "summary",
        "agreement",
        "reliability",
        "calibration",
        "thresholds",
        "comparison",
        "oracle",
    ]
    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[state.state_details.flow_run_id]))
        )
    assert [a.key for a in artifacts] == ["metrics"]
    assert artifacts[0].data == "\n".join(
        [
            "# PERAS metrics",
            "",
            "## summary (metrics_summary, 1 rows)",
            "",
            "| " + " | ".join(SUMMARY_HEADER) + " |",
            "|---|---|---|---|---|---|---|---|---|",
            "| " + " | ".join(SUMMARY_ROW) + " |",
            "",
            "Also read: agreement (1 rows), reliability (1 rows), calibration (1 rows), thresholds (1 rows), "
            "comparison (0 rows), oracle (18 rows): `peras metrics --view NAME`.",
        ]
    )


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        # a run that does not exist: the choices are named
        (["--run", "nope"], 2, "error: no judgments for run 'nope': runs are name-r1, name-r2; collections coll"),
        # csv on the terminal takes one view
        (["--format", "csv"], 2, "error: --format csv prints one view"),
    ],
)
def test_cli_errors_are_one_line(judged, capsys, args, code, message):
    result = run_cli(capsys, "metrics", "--warehouse", str(judged.warehouse), *args)
    assert result.exit_code == code
    assert result.err.strip().startswith(message) and len(result.err.strip().splitlines()) == 1


@pytest.mark.integration
def test_empty_warehouse_says_what_to_do(settings, capsys):
    result = run_cli(capsys, "metrics", "--warehouse", str(settings.warehouse))
    assert result.exit_code == 2
    assert "no judgments in the warehouse yet" in result.err


@pytest.mark.core
def test_help_has_an_example(capsys):
    result = run_cli(capsys, "metrics", "--help")
    assert result.exit_code == 0 and "Examples:" in result.out and "peras metrics --run" in result.out
