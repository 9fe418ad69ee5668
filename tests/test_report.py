"""`peras report`: one self-contained HTML page whose tables, highlights and figures follow the metric views."""

from __future__ import annotations

import math
import re
import shutil
import subprocess
import tempfile
from dataclasses import replace
from html.parser import HTMLParser

import duckdb
import polars as pl
import pytest
from sklearn.metrics import cohen_kappa_score, f1_score

from flows.report import report
from peras.prompting import CANONICAL_ORDER
from peras.sql import query_frame, run_sql
from peras.warehouse import open_migrated
from tasks.report.interactive import vega_bundle
from tasks.report.tables import MAX_SETTING_COLUMNS, MetricTable, RunRowsTable, fmt, metric_tables
from tasks.report.tasks import read_report_data, render_report
from tests.conftest import SHARED_DATA
from tests.helpers import run_cli
from tests.metrics_fixtures import Judgment, import_llmjudge, load_judgments

VOID = {"meta", "img", "br", "hr", "link", "input", "source", "col", "wbr"}
CLASSIFIER_TITLES = [
    "Random Forest",
    "XGBoost",
    "LightGBM",
    "Ordinal LR",
    "RF w/o conf.",
    "Oracle (best single)",
    "Majority vote",
    "Conf.-weighted vote",
    "Sqrt-conf.-weighted vote",
    "Entropy-weighted vote",
]


class Page(HTMLParser):
    """The parts of the page the tests read: balanced tags, tables (cell text and class), img sources, links."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.tables: list[dict] = []
        self.images: list[str] = []
        self.links: list[str] = []
        self._cell: list[str] | None = None
        self._open: list[dict] = []
        self.feed(text)
        self.close()
        if self.stack:
            self.errors.append(f"unclosed: {self.stack}")

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag not in VOID:
            self.stack.append(tag)
        if tag == "img":
            self.images.append(attributes.get("src", ""))
        if "href" in attributes:
            self.links.append(attributes["href"])
        if tag == "table":
            self._open.append({"class": attributes.get("class", ""), "attrs": attributes, "rows": []})
        elif tag == "tr" and self._open:
            self._open[-1]["rows"].append([])
        elif tag in ("td", "th") and self._open:
            self._cell = []
            self._open[-1]["rows"][-1].append({"tag": tag, "class": attributes.get("class", ""), "text": ""})

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()
        if tag in ("td", "th") and self._cell is not None and self._open:
            self._open[-1]["rows"][-1][-1]["text"] = " ".join("".join(self._cell).split())
            self._cell = None
        elif tag == "table" and self._open:
            self.tables.append(self._open.pop())

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def table_by_id(self, table_id: str) -> list[list[dict]]:
        """Every row of the table with that id, header included."""
        return next(t for t in self.tables if t["attrs"].get("id") == table_id)["rows"]

    def table(self, css_class: str, index: int = 0) -> list[list[dict]]:
        """The rows of the index-th table whose class contains css_class, body rows only (cells are td)."""
        found = [t for t in self.tables if css_class in t["class"].split()]
        return [row for row in found[index]["rows"] if row and all(c["tag"] == "td" for c in row)]


def check_self_contained(html: str) -> Page:
    """Balanced tags, every image inlined as a PNG data URI, only in-page links, nothing fetched. The only scripts:
    the vendored Vega bundle (once, on a page with charts; its own texts name web addresses it never fetches
    offline, tests/test_report_interactive.py opens the page with the network refused), the charts' JSON specs and
    the call that draws them."""
    assert html.startswith("<!DOCTYPE html>")
    page = Page(html)
    assert page.errors == []
    assert all(src.startswith("data:image/png;base64,") for src in page.images)
    assert all(link.startswith("#") for link in page.links)
    has_charts = 'class="vega-spec"' in html
    assert html.count(vega_bundle()) == int(has_charts)
    own = html.replace(vega_bundle(), "")
    scripts = {re.sub(r' data-target="chart-\d+"', "", tag) for tag in re.findall(r"<script[^>]*>", own)}
    assert scripts == ({"<script>", '<script type="application/json" class="vega-spec">'} if has_charts else set())
    assert "<script src" not in own and " src=" not in re.sub(r'<img src="data:image/png;base64,', "", own)
    for scheme in ("http://", "https://", "file://", "<link", "@import"):
        assert scheme not in own
    return page


def cells(rows: list[list[dict]]) -> dict[str, list[dict]]:
    """Metric table rows keyed by personality (first column)."""
    return {row[0]["text"]: row[1:] for row in rows}


# ------------------------------------------------------------------------ the sample, judged by the fake server


@pytest.fixture(scope="module")
def judged_sample(tmp_path_factory):
    """The sample judged by the scripted fake server (11 personalities x CoT on/off) and classified once."""
    from flows.classify import classify
    from flows.ingest import ingest
    from flows.judge import judge
    from peras.settings import load_settings
    from support.fake_openai import FakeOpenAI, instant

    root = tmp_path_factory.mktemp("judged")
    settings = load_settings(warehouse=root / "peras.duckdb", data_dir=SHARED_DATA, reports_dir=root / "reports")
    ingest(preset="sample", settings=settings)
    with FakeOpenAI(instant) as server:
        settings.base_urls = [server.base_url]
        settings.model = "fake-model"
        judge(collection="sample", settings=settings)
    classify(
        collection="sample",
        run="sample-fake-model",
        cot=False,
        confidence_method="verbalized",
        trials=3,
        settings=settings,
    )
    return settings


@pytest.mark.integration
def test_report_of_the_judged_sample(judged_sample, tmp_path):
    summary = report(output=str(tmp_path / "out"), settings=judged_sample)
    html = summary.path.read_text(encoding="utf-8")
    page = check_self_contained(html)

    assert summary.path == tmp_path / "out" / "report.html"
    assert (summary.n_runs, summary.n_settings, summary.n_figures) == (1, 2, 12)
    # per setting: two radars, the kappa heatmap, the two confidence figures, reliability diagrams
    assert len(page.images) == html.count("<img ") == 12
    pngs = sorted((tmp_path / "out" / "figures").glob("*.png"))
    assert len(pngs) == 12
    assert all(p.stat().st_size > 1000 and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    assert summary.n_bytes == summary.path.stat().st_size > sum(p.stat().st_size for p in pngs)

    runs = page.table_by_id("runs")
    assert [c["text"] for c in runs[1]] == [
        "sample-fake-model",
        "llm",
        "sample",
        "all",
        "fake-model",
        "openai-compatible",
        runs[1][6]["text"],
        "11",
        "no CoT, CoT",
        "verbalized",
        "880",
        "0",
        "0",
    ]

    agreement, reliability = page.table("agreement"), page.table("reliability")
    assert [row[0]["text"] for row in agreement] == list(CANONICAL_ORDER)
    assert [row[0]["text"] for row in reliability] == list(CANONICAL_ORDER)
    assert {len(row) for row in agreement + reliability} == {1 + 2 * 3}

    # highlighted cells are exactly the view's is_better rows: column = setting (no CoT, CoT) x metric
    shown = set()
    for rows, metrics in ((agreement, ["cohen_kappa", "qwk", "macro_f1"]), (reliability, ["ro", "ru", "hmr"])):
        for row in rows:
            for j, cell in enumerate(row[1:]):
                if "better" in cell["class"].split():
                    shown.add((row[0]["text"], j >= 3, metrics[j % 3]))
    con = duckdb.connect(str(judged_sample.warehouse), read_only=True)
    try:
        better = con.execute(
            "select personality, cot, metric from metrics_vs_default where is_better "
            "and metric in ('cohen_kappa', 'qwk', 'macro_f1', 'ro', 'ru', 'hmr')"
        ).fetchall()
        default_kappa = con.execute(
            "select cohen_kappa from metrics_agreement where personality = 'default' and not cot"
        ).fetchone()[0]
    finally:
        con.close()
    assert shown == set(better) and len(shown) > 0
    assert cells(agreement)["default"][0]["text"] == fmt(default_kappa)

    classifier = page.table("classifier")
    assert [row[0]["text"] for row in classifier] == CLASSIFIER_TITLES
    assert all(re.fullmatch(r"-?\d\.\d{3} \(\d\.\d{3}\)( \[\w+\])?", c["text"]) for row in classifier for c in row[1:])
    assert re.search(r"\[(default|[HL][ACENO])\]", classifier[5][1]["text"])
    assert all(any("best" in row[k]["class"] for row in classifier) for k in (1, 2, 3))
    assert "no priming runs yet" in html


@pytest.mark.integration
def test_cli_writes_the_report(judged_sample, tmp_path, capsys):
    out = tmp_path / "cli"
    result = run_cli(
        capsys,
        "report",
        "--warehouse",
        str(judged_sample.warehouse),
        "--output",
        str(out),
        "--run",
        "sample-fake-model",
        "--personality",
        "default",
        "--personality",
        "HN",
    )
    assert result.exit_code == 0, result.err
    size = (out / "report.html").stat().st_size
    assert result.out == (
        f"wrote {out / 'report.html'} ({size:,} bytes): 1 run(s), 2 setting(s), 12 figures "
        f"(PNGs in {out / 'figures'})\n"
    )


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "message"),
    [
        # a run that does not exist: the runs that do are named
        (["--run", "nope"], "error: no judgments for run 'nope': runs with judgments are sample-fake-model"),
        # a collection without runs
        (
            ["--collection", "dl19"],
            "error: no judgments on collection 'dl19': runs with judgments are sample-fake-model",
        ),
    ],
)
def test_nothing_to_report_is_a_usage_error(judged_sample, tmp_path, capsys, args, message):
    result = run_cli(capsys, "report", "--warehouse", str(judged_sample.warehouse), "--output", str(tmp_path), *args)
    assert (result.exit_code, result.err.strip()) == (2, message)
    assert not (tmp_path / "report.html").exists()


# --------------------------------------------------------------------------------- a constructed warehouse

RELEVANCE = [0, 1, 2, 3, 0, 1, 2, 3, 0]
LABELS = {
    "default": [0, 1, 2, 3, 1, 1, 1, 1, None],  # 5 of 8 right; the 9th pair failed to parse
    "HA": RELEVANCE,  # perfect: better than default on every metric
    "LA": [3] * 9,  # constant: kappa and QWK 0, every confidence wasted on wrong labels
}
CONFIDENCE = {"default": 50.0, "HA": 90.0, "LA": 100.0}


def constructed_judgments() -> list[Judgment]:
    """r1: three personalities, verbalized confidences. r2: an import-like run, no confidences, one class only."""
    rows = [
        Judgment(
            "r1",
            p,
            False,
            "verbalized",
            f"q{i % 2}",
            f"d{i}",
            rel,
            labels[i],
            None if labels[i] is None else CONFIDENCE[p],
        )
        for p, labels in LABELS.items()
        for i, rel in enumerate(RELEVANCE)
    ]
    rows += [Judgment("r2", p, False, "none", "q9", f"e{i}", 2, 2, None) for p in LABELS for i in range(4)]
    return rows


def reference(truth: list[int], labels: list[int]) -> list[str]:
    """scikit-learn's kappa, QWK and macro-F1, formatted as the report formats them."""
    return [
        fmt(cohen_kappa_score(truth, labels)),
        fmt(cohen_kappa_score(truth, labels, weights="quadratic", labels=[0, 1, 2, 3])),
        fmt(f1_score(truth, labels, labels=[0, 1, 2, 3], average="macro", zero_division=0)),
    ]


@pytest.fixture
def constructed(settings):
    with open_migrated(settings.warehouse) as con:
        load_judgments(con, constructed_judgments())
    return settings


@pytest.mark.integration
def test_highlights_dashes_and_figures_of_a_constructed_case(constructed, tmp_path):
    summary = report(output=str(tmp_path), settings=constructed)
    html = summary.path.read_text(encoding="utf-8")
    page = check_self_contained(html)
    # r1: two radars, heatmap, confidence bars, reliability diagrams; r2 (no confidences): a radar and a heatmap
    assert (summary.n_settings, summary.n_figures, len(page.images)) == (2, 7, 7)

    agreement, reliability = cells(page.table("agreement")), cells(page.table("reliability"))
    assert list(agreement) == ["default", "HA", "LA"]
    better = {p: [c["text"] for c in row if "better" in c["class"].split()] for p, row in agreement.items()}
    assert better == {"default": [], "HA": ["1.000", "1.000", "1.000"], "LA": []}
    # r2 (columns 3-5): one class on both sides, kappa and QWK undefined; macro-F1 over the four levels 0.25
    # everywhere (F1 1 for level 2, 0 for the three levels nobody used), a tie, not better
    assert [c["text"] for c in agreement["default"]] == [
        *reference(RELEVANCE[:8], LABELS["default"][:8]),
        "–",
        "–",
        "0.250",
    ]
    assert [c["text"] for c in agreement["LA"]] == [*reference(RELEVANCE, LABELS["LA"]), "–", "–", "0.250"]
    assert [c["text"] for c in agreement["LA"]][:2] == ["0.000", "0.000"]  # a constant judge

    # RO, RU, HMR: default p = 0.5 gives 0.5 each; HA never wrong (RO 1), RU 0.9; LA never right (RU 1), RO 0
    assert [c["text"] for c in reliability["default"]] == ["0.500", "0.500", "0.500", "–", "–", "–"]
    assert [c["text"] for c in reliability["HA"]] == ["1.000", "0.900", fmt(2 * 0.9 / 1.9), "–", "–", "–"]
    assert [c["text"] for c in reliability["LA"]] == ["0.000", "1.000", "0.000", "–", "–", "–"]
    assert [c["text"] for c in reliability["HA"] if "better" in c["class"]] == ["1.000", "0.900", fmt(2 * 0.9 / 1.9)]
    assert [c["text"] for c in reliability["LA"] if "better" in c["class"]] == ["1.000"]

    runs = {row[0]["text"]: [c["text"] for c in row] for row in page.table_by_id("runs")[1:]}
    # r1: one label failure; r2 asks for no confidence, so none is missing
    assert runs["name-r1"][-3:] == ["27", "1", "0"]
    assert runs["name-r2"][-3:] == ["12", "0", "–"]
    assert "no classifier runs for these runs yet" in html
    assert "no priming runs yet" in html


@pytest.mark.integration
def test_single_run_with_one_setting_and_priming_plots(constructed, tmp_path):
    first = report(output=str(tmp_path), settings=constructed)
    assert first.n_figures == 7
    (tmp_path / "figures" / "mine.png").write_bytes(b"not the report's")
    priming = constructed.reports_dir / "priming"
    priming.mkdir(parents=True)
    shutil.copy(tmp_path / "figures" / "radar-agreement-name-r1-nocot-verbalized.png", priming / "priming-index.png")

    summary = report(runs=["name-r1"], output=str(tmp_path), settings=constructed)
    html = summary.path.read_text(encoding="utf-8")
    page = check_self_contained(html)
    assert (summary.n_runs, summary.n_settings, summary.n_figures) == (1, 1, 5)
    assert len(page.images) == 6  # the five figures and the priming plot
    assert "priming-index.png" in html and "no priming runs yet" not in html
    assert re.findall(r'<th class="group"[^>]*>([^<]+)<', html) == ["name-r1", "name-r1"]
    # the earlier report's figures of name-r2 are gone; a file the report did not write stays
    assert sorted(p.name for p in (tmp_path / "figures").glob("*.png")) == [
        "confidence-by-label-name-r1-nocot-verbalized.png",
        "kappa-personalities-name-r1-nocot-verbalized.png",
        "mine.png",
        "radar-agreement-name-r1-nocot-verbalized.png",
        "radar-reliability-name-r1-nocot-verbalized.png",
        "reliability-name-r1-nocot-verbalized.png",
    ]


@pytest.mark.core
def test_priming_views_show_as_tables(constructed):
    data = read_report_data.fn(constructed, None, None)
    index = pl.DataFrame(
        {
            "run_name": ["p1", "p1"],
            "personality": ["default", "HA"],
            "priming_index": [0.25, None],
            "p_value": [2.1e-5, 0.5],
        }
    )
    html = render_report.fn(
        replace(data, priming_views={"priming_index": (index, 101)}), [], [], {"runs": None, "collection": None}
    )
    page = check_self_contained(html)
    rows = [[c["text"] for c in row] for row in page.table("priming")]
    assert rows == [["p1", "default", "0.250", "2.1e-05"], ["p1", "HA", "–", "0.500"]]
    assert "<code>priming_index</code> (first 2 rows)" in html
    assert "no priming runs yet" not in html


@pytest.mark.integration
def test_empty_warehouse_is_a_usage_error(settings, tmp_path, capsys):
    result = run_cli(capsys, "report", "--warehouse", str(settings.warehouse), "--output", str(tmp_path))
    assert (result.exit_code, result.err.strip()) == (
        2,
        "error: no judgments in the warehouse yet: run `peras judge` or `peras import-judgments` first",
    )


@pytest.mark.core
def test_personality_kappa_is_cohens_kappa_of_the_two_label_lists(constructed):
    with open_migrated(constructed.warehouse) as con:
        run_sql(con, "metrics/snapshot_cells", {"run_names": None, "collection_id": None, "cot": None})
        frame = query_frame(con, "report/select_personality_kappa")
    kappa = {
        (r["run_name"], r["personality_a"], r["personality_b"]): (r["n_pairs"], r["cohen_kappa"])
        for r in frame.iter_rows(named=True)
    }
    assert frame.height == 2 * 9  # two runs, 3 x 3 personalities each
    pairs = [i for i, label in enumerate(LABELS["default"]) if label is not None]
    default = [LABELS["default"][i] for i in pairs]
    assert kappa["name-r1", "default", "HA"][0] == 8
    assert math.isclose(
        kappa["name-r1", "default", "HA"][1], cohen_kappa_score(default, [LABELS["HA"][i] for i in pairs])
    )
    assert kappa["name-r1", "HA", "default"] == kappa["name-r1", "default", "HA"]
    assert kappa["name-r1", "HA", "HA"] == (9, 1.0)
    assert kappa["name-r1", "HA", "LA"] == (9, 0.0)  # a constant labeller agrees with nobody beyond chance
    assert kappa["name-r1", "LA", "LA"] == (9, None)  # one label on both sides: undefined
    assert kappa["name-r2", "default", "HA"] == (4, None)


# ----------------------------------------------------------- Figure 3: confidence of the judgments labelled 0

# (relevance, label, confidence) per personality of run f3 (no CoT, verbalized)
FIGURE3 = {
    # labelled 0 at every level: means 85 (90, 80), 70, 60, 40; the 1 and the 2 are not labelled 0
    "HN": [(0, 0, 90.0), (0, 0, 80.0), (1, 0, 70.0), (2, 0, 60.0), (3, 0, 40.0), (3, 1, 99.0), (2, 2, 95.0)],
    # labelled 0 at levels 0 and 1 only (2 and 3: no bar); a label failure and a missing confidence do not count
    "LC": [(0, 0, 100.0), (1, 0, 100.0), (1, 0, 90.0), (3, 3, 50.0), (2, 1, 30.0), (0, None, None), (0, 0, None)],
    # right at every level: one label-0 judgment
    "default": [(0, 0, 50.0), (1, 1, 50.0), (2, 2, 50.0), (3, 3, 50.0)],
}
# (personality, relevance, n_judgments, mean_confidence) of the judgments labelled 0
PREDICTED_ZERO = [
    ("HN", 0, 2, 85.0),
    ("HN", 1, 1, 70.0),
    ("HN", 2, 1, 60.0),
    ("HN", 3, 1, 40.0),
    ("LC", 0, 1, 100.0),
    ("LC", 1, 2, 95.0),
    ("default", 0, 1, 50.0),
]
# the same over all judgments with a label and a confidence, whatever the label
ALL_LABELS = [
    ("HN", 0, 2, 85.0),
    ("HN", 1, 1, 70.0),
    ("HN", 2, 2, 77.5),
    ("HN", 3, 2, 69.5),
    ("LC", 0, 1, 100.0),
    ("LC", 1, 2, 95.0),
    ("LC", 2, 1, 30.0),
    ("LC", 3, 1, 50.0),
    ("default", 0, 1, 50.0),
    ("default", 1, 1, 50.0),
    ("default", 2, 1, 50.0),
    ("default", 3, 1, 50.0),
]


@pytest.fixture
def figure3(settings):
    rows = [
        Judgment("f3", p, False, "verbalized", "q1", f"d{p}{i}", relevance, label, confidence)
        for p, cells in FIGURE3.items()
        for i, (relevance, label, confidence) in enumerate(cells)
    ]
    with open_migrated(settings.warehouse) as con:
        load_judgments(con, rows)
    return settings


def bars(frame: pl.DataFrame) -> list[tuple]:
    return sorted(frame.select("personality", "relevance", "n_judgments", "mean_confidence").iter_rows())


@pytest.mark.core
def test_figure_3_reads_the_confidence_of_the_judgments_labelled_0(figure3):
    data = read_report_data.fn(figure3, None, None)
    assert bars(data.confidence_of_predicted_zero) == sorted(PREDICTED_ZERO)
    assert bars(data.confidence_by_relevance) == sorted(ALL_LABELS)
    assert set(data.confidence_of_predicted_zero["run_name"]) == {"name-f3"}


@pytest.mark.integration
@pytest.mark.parametrize(
    ("personalities", "figure_3", "all_judgments"),
    [
        # the defaults: HN and LC in Figure 3 as in the study; of default, HA, LA, HN, LN those that judged
        (None, ["HN", "LC"], ["default", "HN"]),
        # --personality picks the bars of both
        (["LC", "default"], ["LC", "default"], ["LC", "default"]),
    ],
)
def test_figure_3_draws_hn_and_lc_and_the_other_figure_says_what_it_is(
    figure3, tmp_path, monkeypatch, personalities, figure_3, all_judgments
):
    from tasks.report import charts

    drawn: dict[str, tuple] = {}
    original = charts.draw_confidence_bars

    def spy(frame, shown, xlabel, title, path):
        drawn[path.name] = (bars(frame), list(shown), xlabel, title)
        return original(frame, shown, xlabel, title, path)

    monkeypatch.setattr(charts, "draw_confidence_bars", spy)
    summary = report(output=str(tmp_path), personalities=personalities, settings=figure3)
    html = summary.path.read_text(encoding="utf-8")
    check_self_contained(html)
    zero, every = (
        drawn["confidence-predicted-0-name-f3-nocot-verbalized.png"],
        drawn["confidence-by-label-name-f3-nocot-verbalized.png"],
    )
    assert zero == (
        sorted(PREDICTED_ZERO),
        figure_3,
        "human relevance label of the pairs the judge labelled 0",
        "Mean confidence of the judgments labelled 0, by human relevance · name-f3 · no CoT · verbalized",
    )
    assert every == (
        sorted(ALL_LABELS),
        all_judgments,
        "human relevance label (any judged label)",
        "Mean confidence of all judgments, by human relevance · name-f3 · no CoT · verbalized",
    )
    # two radars, the kappa heatmap, the two confidence figures, the reliability diagrams
    assert summary.n_figures == 6
    assert "<h2>Mean confidence of the judgments labelled 0, by human relevance (Figure 3)</h2>" in html
    assert "<h2>Mean confidence of all judgments, by human relevance</h2>" in html
    assert f"<figcaption>{zero[3]} · <code>confidence-predicted-0-name-f3-nocot-verbalized.png</code>" in html


# ------------------------------------------------------------------------- the 33 LLMJudge submissions


@pytest.fixture(scope="module")
def llmjudge(tmp_path_factory, ingested):
    """LLMJudge with its 33 submissions imported (one setting each: default, no CoT, no confidences)."""
    settings, _ = import_llmjudge(tmp_path_factory.mktemp("llmjudge"), ingested)
    return settings


@pytest.mark.integration
def test_report_of_33_runs_has_runs_as_rows_and_the_kappa_heatmap(llmjudge, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    state = report(output=str(tmp_path), settings=llmjudge, return_state=True)
    summary = state.result()
    html = summary.path.read_text(encoding="utf-8")
    page = check_self_contained(html)
    # no per-setting figure (one personality, no confidences): only the heatmap between the runs
    assert (summary.n_runs, summary.n_settings, summary.n_figures, len(page.images)) == (33, 33, 1, 1)
    assert [p.name for p in (tmp_path / "figures").glob("*.png")] == ["kappa-runs-llmjudge.png"]
    assert "Cohen&#39;s kappa between runs · llmjudge · 33 runs · <code>kappa-runs-llmjudge.png</code>" in html

    agreement = [[c["text"] for c in row] for row in page.table("runs-as-rows")]
    assert len(agreement) == 33
    assert agreement[0] == ["NISTRetrieval-instruct0", "unknown", "no CoT · none", "default", "0.188", "0.383", "0.329"]
    assert agreement[-1] == ["willia-umbrela3", "unknown", "no CoT · none", "default", "0.274", "0.475", "0.434"]
    assert next(row for row in agreement if row[0] == "willia-umbrela1")[4] == "0.286"  # the best kappa, 0.2863
    headers = [[c["text"] for c in t["rows"][0]] for t in page.tables if "runs-as-rows" in t["class"].split()]
    assert headers == [["Run", "Model", "Setting", "Personality", "Kappa", "QWK", "Macro-F1"]]
    assert max(len(t["rows"][0]) for t in page.tables) == 13  # the header's run table; no table 99 columns wide
    # Table 8 has nothing to show for imports without confidences: no rows, a note
    assert "33 run × setting × personality groups\n    without values (no confidences) not listed." in html
    assert "<title>PERAS report · 33 runs</title>" in html

    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(
            artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(any_=[state.state_details.flow_run_id]))
        )
    assert [(a.key, a.data) for a in artifacts] == [
        ("report", f"[PERAS report: 33 runs, 33 settings, 1 figures]({summary.path.resolve().as_uri()})")
    ]


# ------------------------------------------------------------------------------------------------- units


def table_values(n_settings: int, personalities: list[str], metrics: list[str]) -> pl.DataFrame:
    """select_table_metrics rows: run r<i> (one setting each), value i/10 + personality index/100, kappa null for
    personality LA (and every metric null for run r0's LA: a group without values)."""
    rows = [
        {
            "run_name": f"r{i}",
            "collection_id": "coll",
            "model": "m",
            "cot": False,
            "confidence_method": "none",
            "personality": p,
            "metric": m,
            "value": None if p == "LA" and (m == "cohen_kappa" or i == 0) else i / 10 + k / 100,
            "is_better": p == "HA",
        }
        for i in range(n_settings)
        for k, p in enumerate(personalities)
        for m in metrics
    ]
    return pl.DataFrame(rows)


@pytest.mark.core
def test_a_few_settings_are_column_groups():
    tables = metric_tables(
        table_values(MAX_SETTING_COLUMNS, ["default"], ["cohen_kappa", "qwk"]), ["cohen_kappa", "qwk"]
    )
    assert [type(t) for t in tables] == [MetricTable]
    assert [g.title for g in tables[0].groups] == ["r0", "r1", "r2", "r3"]
    assert [[c.text for c in cells] for _, cells in tables[0].rows] == [
        ["0.000", "0.000", "0.100", "0.100", "0.200", "0.200", "0.300", "0.300"]
    ]


@pytest.mark.core
def test_many_settings_are_rows():
    values = table_values(MAX_SETTING_COLUMNS + 1, ["HA", "LA", "default"], ["cohen_kappa", "macro_f1"])
    (table,) = metric_tables(values, ["cohen_kappa", "macro_f1"])
    assert isinstance(table, RunRowsTable) and table.metric_titles == ["Kappa", "Macro-F1"]
    rows = [(labels, [(c.text, c.is_better) for c in cells]) for labels, cells in table.rows]
    # default first, then the study's order; r0's LA has no value at all: left out and counted
    assert rows[:3] == [
        (["r0", "m", "no CoT · none", "default"], [("0.020", False), ("0.020", False)]),
        (["r0", "m", "no CoT · none", "HA"], [("0.000", True), ("0.000", True)]),
        (["r1", "m", "no CoT · none", "default"], [("0.120", False), ("0.120", False)]),
    ]
    assert rows[4] == (["r1", "m", "no CoT · none", "LA"], [("–", False), ("0.110", False)])
    assert (len(rows), table.n_without_values) == (3 * 5 - 1, 1)


@pytest.mark.core
@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, "–"),  # SQL null: a degenerate metric
        (float("nan"), "–"),  # NaN never prints as 'nan'
        (0.12345, "0.123"),
        (-0.0004, "-4.0e-04"),  # tiny values (p-values) keep their magnitude
        (0.0, "0.000"),
        (12, "12"),
        ("HA", "HA"),
    ],
)
def test_fmt(value, text):
    assert fmt(value) == text


# ----------------------------------------------------------------------------------------------- browser


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("chromium") is None, reason="chromium is not installed (apt-get install chromium)")
def test_report_renders_in_a_browser(constructed, tmp_path):
    from PIL import Image

    summary = report(output=str(tmp_path), settings=constructed)
    shot = tmp_path / "screenshot.png"
    subprocess.run(
        [
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            f"--user-data-dir={tempfile.mkdtemp(dir=tmp_path)}",
            f"--screenshot={shot}",
            "--window-size=1400,4000",
            summary.path.as_uri(),
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )
    image = Image.open(shot).convert("RGB")
    assert image.size == (1400, 4000)
    colors = {color for _, color in image.getcolors(maxcolors=1 << 20)}
    pixels = pl.Series(list(image.convert("L").getdata()))
    assert (pixels < 128).mean() > 0.005  # text and lines, not a blank page
    assert len(colors) > 200  # the figures' antialiased lines and colour maps
    assert (213, 240, 217) in colors  # the highlight of cells better than default (CSS applied)
    assert (31, 119, 180) in colors  # the radar's kappa line (the images decoded and drawn)


# ---------------------------------------------------------------------------- confidence methods compared

METHOD_PAIRS = [(i % 4, f"c{i}") for i in range(12)]  # (relevance, doc_id)


def method_judgments() -> list[Judgment]:
    """m1 without CoT: five methods with confidences and one without ('none'), personalities default and HN;
    m1 with CoT and m2: one method each (nothing to compare, left out of the section)."""
    rows = []
    for k, method in enumerate(["verbalized", "logprob", "sampling", "self", "certainty", "none"]):
        for personality in ("default", "HN"):
            for i, (relevance, doc_id) in enumerate(METHOD_PAIRS):
                label = relevance if (i + k) % 3 else (relevance + 1) % 4
                confidence = None if method == "none" else float(50 + 10 * ((i * (k + 1)) % 6))
                rows.append(Judgment("m1", personality, False, method, "q1", doc_id, relevance, label, confidence))
    rows += [Judgment("m1", "default", True, "verbalized", "q1", d, r, r, 90.0) for r, d in METHOD_PAIRS]
    rows += [Judgment("m2", "default", False, "logprob", "q1", d, r, r, 70.0) for r, d in METHOD_PAIRS]
    return rows


@pytest.fixture
def methods(settings):
    """method_judgments, the verbalized ones of m1 with a label and a confidence request each (tokens 100 + 7)."""
    with open_migrated(settings.warehouse) as con:
        load_judgments(con, method_judgments())
        con.execute(
            "update judgments set label_request_id = 'lab-' || personality || doc_id, "
            "confidence_request_id = 'conf-' || personality || doc_id "
            "where run_id = 'm1' and not cot and confidence_method = 'verbalized'"
        )
        con.execute(
            "insert into llm_requests (request_id, model, backend, prompt_hash, purpose, params, messages, "
            "attempts, attempt_texts, parse_status, prompt_tokens, completion_tokens, created_at) "
            "select unnest([label_request_id, confidence_request_id]), 'm', 'test', 'h', 'label', '{}', '[]', 1, "
            "'[]', 'ok', 100, 7, judged_at from judgments where label_request_id is not null"
        )
    return settings


def section(html: str, section_id: str) -> str:
    """The HTML of one <section> of the page."""
    start = html.index(f'<section id="{section_id}">')
    return html[start : html.index("</section>", start)]


@pytest.mark.integration
@pytest.mark.parametrize(
    ("personalities", "panels"),
    [
        (None, ["default"]),  # default unless chosen
        (["HN", "default"], ["HN", "default"]),  # --personality: a panel and a table row each
    ],
)
def test_methods_compared_has_a_diagram_per_method_with_confidences(
    methods, tmp_path, monkeypatch, personalities, panels
):
    from tasks.report import charts

    drawn: dict[str, list[str]] = {}
    original = charts.draw_reliability_diagrams

    def spy(bins, ece, shown, title, path):
        drawn[path.name] = list(shown)
        return original(bins, ece, shown, title, path)

    monkeypatch.setattr(charts, "draw_reliability_diagrams", spy)
    summary = report(output=str(tmp_path), personalities=personalities, settings=methods)
    html = summary.path.read_text(encoding="utf-8")
    page = check_self_contained(html)
    part = section(html, "methods")
    # m1 without CoT only: one diagram per method with confidences ('none' has a row, no diagram)
    diagrams = sorted(name for name in drawn if name.startswith("method-reliability-"))
    assert diagrams == [
        f"method-reliability-name-m1-nocot-{m}.png" for m in ["certainty", "logprob", "sampling", "self", "verbalized"]
    ]
    assert part.count("<img ") == 5
    assert all(drawn[name] == panels for name in diagrams)

    rows = [[c["text"] for c in row] for row in page.table("methods")]
    methods_shown = ["certainty", "logprob", "none", "sampling", "self", "verbalized"]
    assert [row[3:5] for row in rows] == [[p, m] for p in panels for m in methods_shown]
    con = duckdb.connect(str(methods.warehouse), read_only=True)
    try:
        want = con.execute(
            "select personality, confidence_method, cohen_kappa, ece, hmr from metrics_method_comparison "
            "where run_id = 'm1' and not cot"
        ).fetchall()
    finally:
        con.close()
    titles = [c["text"] for c in page.tables[[t["class"] for t in page.tables].index("methods")]["rows"][0]]
    kappa, ece, hmr = (titles.index(t) for t in ("Kappa", "ECE", "HMR"))
    shown = {(row[3], row[4]): (row[kappa], row[ece], row[hmr]) for row in rows}
    for personality, method, *values in want:
        if personality in panels:
            assert shown[personality, method] == tuple(fmt(v) for v in values)
    # bold: the best method of a column; ECE is lower-better
    best_ece = min(v[1] for v in shown.values() if v[1] != "–")
    assert all(
        ("best" in row_cells[ece]["class"]) == (row_cells[ece]["text"] == best_ece)
        for row_cells in page.table("methods")
        if row_cells[3]["text"] == panels[0]
    )

    costs = {(row[3], row[4]): row[5:] for row in ([c["text"] for c in r] for r in page.table("method-costs"))}
    # verbalized: 2 requests per judgment, 100 + 7 tokens each; the others reference none
    assert costs["default", "verbalized"] == ["12", "24", "2.00", "200.00", "14.00", "0"]
    assert costs["default", "logprob"] == ["12", "0", "0.00", "0.00", "0.00", "0"]


@pytest.mark.integration
def test_methods_compared_says_when_there_is_nothing_to_compare(constructed, tmp_path):
    summary = report(output=str(tmp_path), settings=constructed)
    part = section(summary.path.read_text(encoding="utf-8"), "methods")
    assert "nothing to compare" in part and "<img " not in part and "<table" not in part
