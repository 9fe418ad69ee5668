"""The report's interactive charts (issue 53, section 2) and its probes table (issue 52, item 3): the charts' data equal
the views' numbers, and in a real browser (the system Chromium) the page opens with every request off the file
refused, draws every chart without a console error, names the point under the mouse, switches CoT and zooms."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest
from sklearn.metrics import cohen_kappa_score

from peras.warehouse import open_migrated
from tasks.report.data import read_report_data
from tasks.report.evaluate import SystemsRanked
from tasks.report.figures import draw_figures
from tasks.report.interactive import vega_bundle
from tasks.report.tasks import render_report
from tests.browser import needs_chromium
from tests.metrics_fixtures import load_judgments
from tests.test_probes import tiny_run
from tests.test_report import LABELS, check_self_contained, constructed_judgments

FILTERS = {"runs": None, "collection": None}
CALIBRATION = "Reliability diagrams · name-r1 · verbalized · CoT and no CoT"
KAPPA = "Cohen's kappa between personalities · name-r1 · no CoT · verbalized"
BARS = "Mean confidence of all judgments, by human relevance · name-r1 · no CoT · verbalized"
# name-r1's filled confidence bins (constructed_judgments): HA says 90 and is always right, LA says 100 and is right
# on the two pairs of level 3, default says 50 on its eight labelled pairs and is right on five
CALIBRATION_POINTS = [
    {"personality": "HA", "cot": "no CoT", "bin": "90-100", "mean_confidence": 90.0, "accuracy": 1.0,
     "n_judgments": 9, "ece": "0.100"},
    {"personality": "LA", "cot": "no CoT", "bin": "90-100", "mean_confidence": 100.0, "accuracy": 2 / 9,
     "n_judgments": 9, "ece": "0.778"},
    {"personality": "default", "cot": "no CoT", "bin": "50-60", "mean_confidence": 50.0, "accuracy": 0.625,
     "n_judgments": 8, "ece": "0.125"},
]  # fmt: skip


def write_report(settings, out: Path, **extra) -> Path:
    """The report of the warehouse as `peras report` writes it, without a flow run (nothing of Prefect started);
    `extra`: ReportData fields replaced."""
    data = replace(read_report_data.fn(settings, None, None), **extra)
    figures = draw_figures.fn(data, out / "figures", None)
    path = out / "report.html"
    path.write_text(render_report.fn(data, figures, [], FILTERS), encoding="utf-8")
    return path


def specs(html: str) -> dict[str, dict]:
    """The page's chart specs by their title."""
    found = re.findall(
        r'<script type="application/json" class="vega-spec" data-target="chart-\d+">(.*?)</script>', html
    )
    return {spec["title"]: spec for spec in map(json.loads, found)}


@pytest.fixture
def constructed(settings):
    with open_migrated(settings.warehouse) as con:
        load_judgments(con, constructed_judgments())
    return settings


@pytest.mark.core
def test_the_charts_carry_the_views_numbers(constructed, tmp_path):
    html = write_report(constructed, tmp_path).read_text(encoding="utf-8")
    check_self_contained(html)
    charts = specs(html)
    # name-r1: the kappa heatmap, the bars of all judgments (none of HN, LC: no Figure 3), the reliability diagrams;
    # name-r2 (no confidences): its kappa heatmap
    assert sorted(charts) == sorted([KAPPA, BARS, CALIBRATION, KAPPA.replace("r1", "r2").replace("verbalized", "none")])
    assert html.count(vega_bundle()) == 1  # the JavaScript once, however many charts
    assert charts[CALIBRATION]["data"]["values"] == CALIBRATION_POINTS

    cells = {(v["a"], v["b"]): (v["kappa"], v["n_pairs"], v["text"]) for v in charts[KAPPA]["data"]["values"]}
    labelled = [i for i, label in enumerate(LABELS["default"]) if label is not None]
    kappa = cohen_kappa_score([LABELS["default"][i] for i in labelled], [LABELS["HA"][i] for i in labelled])
    assert cells["default", "HA"] == (pytest.approx(kappa), 8, f"{kappa:.3f}")
    assert cells["HA", "LA"] == (0.0, 9, "0.000")
    assert cells["LA", "LA"] == (None, 9, "–")  # one label on both sides: undefined, no colour
    assert len(cells) == 9

    fields = ("personality", "relevance", "mean_confidence", "n_judgments")
    bars = sorted(tuple(v[f] for f in fields) for v in charts[BARS]["data"]["values"])
    # default labelled 2 pairs per level (its 9th failed to parse); HA and LA all 9; confidences 50, 90, 100
    expected = [(p, level, confidence, 3 if level == 0 and p != "default" else 2)
                for p, confidence in (("default", 50.0), ("HA", 90.0), ("LA", 100.0))
                for level in range(4)]  # fmt: skip
    assert bars == sorted(expected)
    tooltip = [t["field"] for t in charts[BARS]["encoding"]["tooltip"]]
    assert tooltip == list(fields)


PROBE_TITLES = [
    "Run", "Kind", "Role", "Personality", "CoT", "Method", "Copies", "Attackable", "Raised to 2+", "Attack success",
    "Label shift 0/1", "Label shift 2/3", "Confidence shift", "AUROC low confidence", "AUROC persona disagreement",
]  # fmt: skip


@pytest.mark.core
def test_the_probes_table_is_the_hand_computation(tmp_path):
    from peras.settings import load_settings

    settings = load_settings(warehouse=tmp_path / "w.duckdb", reports_dir=tmp_path / "reports")
    tiny_run(settings.warehouse)
    data = read_report_data.fn(settings, None, None)
    page = check_self_contained(render_report.fn(data, [], [], FILTERS))
    rows = next(t["rows"] for t in page.tables if t["class"] == "probes")
    assert [c["text"] for c in rows[0]] == PROBE_TITLES
    # tests/test_probes.py's hand computation of run r (the failed run `broken` counts for nothing): attacks first
    assert [[c["text"] for c in row] for row in rows[1:]] == [
        ["r", "query-stuffing", "attack", "A", "no CoT", "verbalized", "3", "2", "1", "0.500", "1.000", "0.000",
         "-13.333", "0.722", "0.222"],
        ["r", "query-stuffing", "attack", "B", "no CoT", "verbalized", "3", "1", "0", "0.000", "0.500", "1.000",
         "-5.000", "0.556", "0.222"],
        ["r", "paraphrase", "control", "A", "no CoT", "verbalized", "3", "2", "1", "0.500", "0.500", "0.000",
         "-10.000", "0.556", "0.667"],
        ["r", "paraphrase", "control", "B", "no CoT", "verbalized", "3", "1", "0", "0.000", "0.000", "0.000",
         "0.000", "0.500", "0.667"],
    ]  # fmt: skip


@pytest.mark.core
def test_a_report_without_probe_runs_says_so_in_one_line(constructed):
    html = render_report.fn(read_report_data.fn(constructed, None, None), [], [], FILTERS)
    part = html[html.index('<section id="probes">') : html.index("</section>", html.index('<section id="probes">'))]
    assert "<table" not in part
    assert re.findall(r"<p[^>]*>(.*?)</p>", part) == [
        "no probe runs among these runs: <code>peras probes build COLLECTION</code> and a judge run of its probe "
        "collection write them"
    ]


# ----------------------------------------------------------------------------------------------------- browser

# one evaluation with LLM qrels: two systems scored under the human qrels and under the LLM's (its scatter)
SYSTEMS = SystemsRanked(
    "e1",
    "sample: llm qrels from r1",
    pl.DataFrame({"measure": ["ndcg_cut_10"], "tau_rank": [1], "qrels_name": ["default"], "n_systems": [2],
                  "kendall_tau": [1.0], "spearman_rho": [1.0], "tau_ap": [1.0], "mean_topic_tau": [1.0]}),
    pl.DataFrame({"evaluation_id": ["e1", "e1"], "qrels_name": ["default", "default"],
                  "measure": ["ndcg_cut_10", "ndcg_cut_10"], "system": ["bm25", "splade"],
                  "human_value": [0.41, 0.62], "value": [0.38, 0.66]}),
)  # fmt: skip


def tooltip_at(page, mark) -> dict[str, str]:
    """Hover one mark; the tooltip's rows (name -> value) once it shows."""
    page.mouse.move(0, 0)
    page.wait_for_function("!document.querySelector('#vg-tooltip-element.visible')", timeout=30_000)
    mark.hover(force=True)
    page.wait_for_function("document.querySelector('#vg-tooltip-element.visible')", timeout=30_000)
    rows = page.evaluate(
        "Array.from(document.querySelectorAll('#vg-tooltip-element tr')).map(r => [r.cells[0].innerText, "
        "r.cells[1].innerText])"
    )
    return {key.strip(): value.strip() for key, value in rows}


@pytest.mark.core
@needs_chromium
def test_the_page_opens_offline_names_the_point_under_the_mouse_switches_cot_and_zooms(constructed, tmp_path, browser):
    path = write_report(constructed, tmp_path, systems_ranked=[SYSTEMS])
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    refused, problems = [], []
    page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.route(
        "**/*", lambda r: r.continue_() if r.request.url.startswith("file://") else refused.append(r) or r.abort()
    )
    page.goto(path.as_uri())
    n_charts = page.evaluate("document.querySelectorAll('script.vega-spec').length")
    page.wait_for_function(f"Object.keys(window.perasViews || {{}}).length === {n_charts}", timeout=120_000)
    assert n_charts == 5
    assert page.locator("div.vega svg").count() == 5

    figure = page.locator("figure.chart", has_text=CALIBRATION)
    figure.scroll_into_view_if_needed()
    dots = figure.locator("g.mark-symbol.role-mark path")
    shown = sorted(sorted(tooltip_at(page, dots.nth(i)).items()) for i in range(dots.count()))
    assert shown == sorted(
        sorted({"personality": p["personality"], "CoT": "no CoT", "confidence bin": p["bin"],
                "mean confidence": f"{p['mean_confidence']:.1f}", "accuracy": f"{p['accuracy']:.3f}",
                "judgments": str(p["n_judgments"]), "ECE": p["ece"]}.items())
        for p in CALIBRATION_POINTS
    )  # fmt: skip
    for choice, n_dots in (("CoT", 0), ("no CoT", 3), ("both", 3)):  # name-r1 was judged without CoT only
        figure.locator(f"input[type=radio][value='{choice}']").check()
        page.wait_for_function(f"(n) => document.querySelectorAll('#{figure.locator('div.vega').get_attribute('id')} "
                               "g.mark-symbol.role-mark path').length === n", arg=n_dots, timeout=30_000)  # fmt: skip
    chart = figure.locator("div.vega").get_attribute("id")
    zoomed = f"(window.perasViews['{chart}'].signal('zoom') || {{}}).mean_confidence"
    assert page.evaluate(zoomed) is None  # the whole 0-100 range
    box = dots.first.bounding_box()
    page.mouse.move(box["x"] - 30, box["y"] + 30)
    page.mouse.wheel(0, -400)  # zoom in around the mouse
    page.wait_for_function(zoomed, timeout=30_000)
    low, high = page.evaluate(zoomed)
    assert 0 < low < high < 100

    heatmap = page.locator("figure.chart", has_text=KAPPA)
    heatmap.scroll_into_view_if_needed()
    cells = heatmap.locator("g.mark-rect.role-mark path")
    named = {(t["personality"], t["other personality"]): t for t in (tooltip_at(page, cells.nth(i)) for i in range(9))}
    assert named["HA", "LA"] == {"personality": "HA", "other personality": "LA", "Cohen's kappa": "0.000",
                                 "pairs both labelled": "9"}  # fmt: skip
    assert len(named) == 9

    scatter = page.locator("figure.chart", has_text="sample: llm qrels from r1 · ndcg_cut_10")
    scatter.scroll_into_view_if_needed()
    points = scatter.locator("g.mark-symbol.role-mark path")
    assert sorted(tooltip_at(page, points.nth(i))["system"] for i in range(points.count())) == ["bm25", "splade"]
    assert tooltip_at(page, points.first)["ndcg_cut_10, human"] in ("0.4100", "0.6200")
    assert (refused, problems) == ([], [])
