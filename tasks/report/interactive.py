"""The report's interactive charts: Vega-Lite specs built with Altair from the same rows as the PNGs.

Each spec carries its data inline and is drawn in the page by vega-embed, whose JavaScript (Vega, Vega-Lite and
vega-embed in one bundle, from vl-convert-python) is inlined once per page: the report opens offline. Hovering a mark
shows its name (personality, run, system) and numbers; the reliability diagrams zoom and pan (wheel, drag) and show
CoT, no CoT or both (radio buttons); a click on the legend of the bars (personalities) and of the systems' scatter
(qrels sets) switches one off and on.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from typing import Any

import altair as alt
import polars as pl

from tasks.report.tables import fmt

Spec = dict[str, Any]
COT = {False: "no CoT", True: "CoT"}
MUTED = 0.12  # the opacity of what a legend click switched off
UNDEFINED = "#d9d9d9"
PAD = 12  # pixels between a scatter's outermost points and its axes  # an undefined kappa's cell, as in the PNG


def to_spec(chart: alt.TopLevelMixin) -> Spec:
    """The chart's Vega-Lite JSON, without its $schema address (nothing on the page points off it)."""
    spec = chart.to_dict()
    spec.pop("$schema", None)
    return spec


def spec_json(spec: Spec) -> str:
    """The spec as JSON that can sit inside a <script> element (no '</' to end it early)."""
    return json.dumps(spec, ensure_ascii=False, sort_keys=True).replace("</", "<\\/")


@cache
def vega_bundle() -> str:
    """Vega, Vega-Lite (the version Altair writes) and vega-embed as one script that defines window.vegaEmbed."""
    import vl_convert

    version = "_".join(alt.SCHEMA_VERSION.split(".")[:2])  # 'v6.4.1' -> 'v6_4', as vl-convert names it
    # its stub calls the snippet required; without one the bundle sets window.vegaEmbed, vega and vegaLite
    bundle = str(vl_convert.javascript_bundle(vl_version=version))  # type: ignore[call-arg]
    # The bundle's one "<img " is inside a JavaScript template literal (the tooltip's image), where \x3c is "<": a
    # page's "<img " are then its images alone. No "</script" may end the element early.
    return bundle.replace("<img ", "\\x3cimg ").replace("</script", "<\\/script")


def kappa_heatmap(kappa: pl.DataFrame, names: Sequence[str], title: str, pair: tuple[str, str], what: str) -> Spec:
    """Cohen's kappa between every two judges (`what`: 'personality' or 'run'), names in the order given."""
    shown = set(names)
    values = [
        {"a": r[pair[0]], "b": r[pair[1]], "kappa": r["cohen_kappa"], "n_pairs": r.get("n_pairs"),
         "text": fmt(r["cohen_kappa"]).replace("-0.000", "0.000")}
        for r in kappa.iter_rows(named=True)
        if r[pair[0]] in shown and r[pair[1]] in shown
    ]  # fmt: skip
    size = max(160, 26 * len(names))
    base = alt.Chart(alt.Data(values=values)).encode(
        x=alt.X("b:N", sort=list(names), title=None, axis=alt.Axis(labelAngle=-45)),
        y=alt.Y("a:N", sort=list(names), title=None),
        tooltip=[  # on the cell and on its number, which covers the cell's middle
            alt.Tooltip("a:N", title=what),
            alt.Tooltip("b:N", title=f"other {what}"),
            alt.Tooltip("text:N", title="Cohen's kappa"),
            alt.Tooltip("n_pairs:Q", title="pairs both labelled", format=","),
        ],
    )
    scale = alt.Scale(scheme="redyellowgreen", domain=[-1, 1])
    colour = alt.when("isValid(datum.kappa)").then(alt.Color("kappa:Q", scale=scale, title="Cohen's kappa"))
    cells = base.mark_rect(invalid="show").encode(color=colour.otherwise(alt.value(UNDEFINED)))  # undefined: grey
    text = base.mark_text(fontSize=8 if len(names) > 12 else 9).encode(text="text:N")
    return to_spec((cells + text).properties(title=title, width=size, height=size))


def confidence_bars(confidence: pl.DataFrame, personalities: Sequence[str], xlabel: str, title: str) -> Spec:
    """Mean confidence per human relevance level, a bar per personality; hover: the personality, level, mean, n."""
    values = [
        {"personality": r["personality"], "relevance": r["relevance"], "mean_confidence": r["mean_confidence"],
         "n_judgments": r["n_judgments"]}
        for r in confidence.filter(pl.col("personality").is_in(list(personalities))).iter_rows(named=True)
    ]  # fmt: skip
    pick = alt.selection_point(fields=["personality"], bind="legend", name="personality_shown")
    chart = (
        alt.Chart(alt.Data(values=values))
        .mark_bar()
        .encode(
            x=alt.X("relevance:O", title=xlabel, scale=alt.Scale(domain=[0, 1, 2, 3]), axis=alt.Axis(labelAngle=0)),
            xOffset=alt.XOffset("personality:N", sort=list(personalities)),
            y=alt.Y("mean_confidence:Q", title="mean confidence (0-100)", scale=alt.Scale(domain=[0, 100])),
            color=alt.Color("personality:N", sort=list(personalities), title="personality (click to hide)"),
            opacity=alt.condition(pick, alt.value(1.0), alt.value(MUTED)),
            tooltip=[
                alt.Tooltip("personality:N"),
                alt.Tooltip("relevance:O", title="human relevance"),
                alt.Tooltip("mean_confidence:Q", title="mean confidence", format=".1f"),
                alt.Tooltip("n_judgments:Q", title="judgments", format=","),
            ],
        )
        .add_params(pick)
        .properties(title=title, width=360, height=220)
    )
    return to_spec(chart)


def calibration_points(bins: pl.DataFrame, ece: dict[tuple[bool, str], float | None]) -> list[dict[str, Any]]:
    """The filled bins of one run x method, both CoT settings: accuracy at the bin's mean confidence (0-100)."""
    return [
        {"personality": r["personality"], "cot": COT[bool(r["cot"])],
         "bin": f"{r['confidence_lower']}-{r['confidence_upper']}",
         "mean_confidence": round(r["mean_p"] * 100, 6), "accuracy": r["accuracy"], "n_judgments": r["n_judgments"],
         "ece": fmt(ece.get((bool(r["cot"]), r["personality"])))}
        for r in bins.filter(pl.col("n_judgments") > 0).sort("cot", "personality", "bin").iter_rows(named=True)
    ]  # fmt: skip


def reliability_diagrams(points: list[dict[str, Any]], personalities: Sequence[str], title: str) -> Spec:
    """A panel per personality: accuracy per confidence bin against the diagonal, a line per CoT setting. Zoom and
    pan with the wheel and a drag; the radio buttons below show both CoT settings, or one; hover: the bin."""
    shown = alt.param(
        name="cot_shown", value="both", bind=alt.binding_radio(options=["both", *COT.values()], name="CoT ")
    )
    zoom = alt.selection_interval(bind="scales", name="zoom")
    cot = alt.Color("cot:N", title="CoT", scale=alt.Scale(domain=list(COT.values())))
    x = alt.X("mean_confidence:Q", title="confidence", scale=alt.Scale(domain=[0, 100]))
    y = alt.Y("accuracy:Q", title="accuracy", scale=alt.Scale(domain=[0, 1]))
    diagonal = (
        alt.Chart()
        .transform_aggregate(n="count()")  # one rule per panel, not one per bin
        .mark_rule(strokeDash=[4, 3], color="#888888")
        .encode(x=alt.datum(0), y=alt.datum(0), x2=alt.datum(100), y2=alt.datum(1))
    )
    chosen = "cot_shown == 'both' || datum.cot == cot_shown"
    line = alt.Chart().transform_filter(chosen).mark_line(clip=True).encode(x=x, y=y, color=cot)
    dots = (
        alt.Chart()
        .transform_filter(chosen)
        .mark_point(filled=True, size=50, clip=True)
        .encode(
            x=x,
            y=y,
            color=cot,
            tooltip=[
                alt.Tooltip("personality:N"),
                alt.Tooltip("cot:N", title="CoT"),
                alt.Tooltip("bin:N", title="confidence bin"),
                alt.Tooltip("mean_confidence:Q", title="mean confidence", format=".1f"),
                alt.Tooltip("accuracy:Q", format=".3f"),
                alt.Tooltip("n_judgments:Q", title="judgments", format=","),
                alt.Tooltip("ece:N", title="ECE"),
            ],
        )
        .add_params(zoom)
    )
    chart = (
        alt.layer(diagonal, line, dots, data=alt.Data(values=points))
        .properties(width=200, height=180)
        .facet(facet=alt.Facet("personality:N", sort=list(personalities), title=None), columns=4)
        .add_params(shown)
        .properties(title=title)
    )
    return to_spec(chart)


def systems_scatter(points: pl.DataFrame, measure: str, title: str) -> Spec:
    """One point per system and qrels set, its score under the human qrels against the LLM's; hover: the system."""
    chosen = points.filter(pl.col("measure") == measure)
    values = [
        {"system": r["system"], "qrels": r["qrels_name"], "human": r["human_value"], "llm": r["value"]}
        for r in chosen.iter_rows(named=True)
    ]
    pick = alt.selection_point(fields=["qrels"], bind="legend", name="qrels_shown")
    chart = (
        alt.Chart(alt.Data(values=values))
        .mark_point(filled=True, size=60, clip=True)
        .encode(
            x=alt.X("human:Q", title=f"{measure}, human qrels", scale=alt.Scale(zero=False, padding=PAD)),
            y=alt.Y("llm:Q", title=f"{measure}, LLM qrels", scale=alt.Scale(zero=False, padding=PAD)),
            color=alt.Color("qrels:N", title="qrels (click to hide)"),
            opacity=alt.condition(pick, alt.value(1.0), alt.value(MUTED)),
            tooltip=[
                alt.Tooltip("system:N"),
                alt.Tooltip("qrels:N"),
                alt.Tooltip("human:Q", title=f"{measure}, human", format=".4f"),
                alt.Tooltip("llm:Q", title=f"{measure}, LLM", format=".4f"),
            ],
        )
        .add_params(pick, alt.selection_interval(bind="scales", name="zoom"))
        .properties(title=title, width=380, height=300)
    )
    return to_spec(chart)


def trust_ranks(systems: pl.DataFrame, measure: str, title: str) -> Spec:
    """Left: each system's LLM rank against its human rank; right: its PPI++ interval against its full human score.
    Hover: the system."""
    values = [
        {"system": r["system"], "human_rank": r["human_rank"], "llm_rank": r["llm_rank"],
         "human_score": r["human_score"], "estimate": r["estimate"], "lower": r["lower"], "upper": r["upper"],
         "covers": "covers" if r["covers_human"] else "misses"}
        for r in systems.iter_rows(named=True)
    ]  # fmt: skip
    tooltip = [alt.Tooltip("system:N"), alt.Tooltip("human_rank:Q", title="human rank"),
               alt.Tooltip("llm_rank:Q", title="LLM rank"),
               alt.Tooltip("human_score:Q", title="human score", format=".4f"),
               alt.Tooltip("estimate:Q", title="PPI++ estimate", format=".4f"),
               alt.Tooltip("lower:Q", format=".4f"), alt.Tooltip("upper:Q", format=".4f")]  # fmt: skip
    base = alt.Chart(alt.Data(values=values))
    ranks = base.mark_point(filled=True, size=50).encode(
        x=alt.X("human_rank:Q", title="rank under the human qrels"),
        y=alt.Y("llm_rank:Q", title="rank under the LLM qrels"),
        tooltip=tooltip,
    )
    score = alt.X("human_score:Q", title=f"{measure}, full human qrels", scale=alt.Scale(zero=False, padding=PAD))
    covers = alt.Color("covers:N", title="PPI++ interval", scale=alt.Scale(domain=["covers", "misses"]))
    bars = base.mark_rule().encode(x=score, y=alt.Y("lower:Q", title=f"{measure}, estimated"), y2="upper:Q",
                                   color=covers, tooltip=tooltip)  # fmt: skip
    dots = base.mark_point(filled=True, size=40).encode(x=score, y="estimate:Q", color=covers, tooltip=tooltip)
    chart = alt.hconcat(
        ranks.properties(width=300, height=260),
        (bars + dots).properties(width=300, height=260),
    ).properties(title=title)
    return to_spec(chart)
