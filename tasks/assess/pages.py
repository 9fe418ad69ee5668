"""A plan's pairs for people: the assessor page (served, or offline and self-contained) and a TSV to fill in."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

import polars as pl

from tasks.assess.rubric import rubric
from tasks.assess.tasks import StoredPlan

TSV_COLUMNS = ["query_id", "doc_id", "query", "passage", "relevance"]


def pairs_tsv(plan: StoredPlan) -> str:
    """The plan's pairs in pick order with their texts and an empty relevance column (tabs and line breaks in the
    texts become spaces)."""
    flat = [pl.col(c).fill_null("").str.replace_all(r"[\t\r\n]+", " ") for c in ("query_text", "passage_text")]
    table = plan.pairs.select(
        "query_id", "doc_id", flat[0].alias("query"), flat[1].alias("passage"), relevance=pl.lit("")
    )
    return table.select(TSV_COLUMNS).write_csv(separator="\t", quote_style="never")


def page(config: dict[str, Any]) -> str:
    """The assessor page with its configuration (mode 'server' or 'offline', the plan, the rubric, ...) inlined."""
    template = resources.files("tasks.assess").joinpath("page.html").read_text(encoding="utf-8")
    data = json.dumps({"rubric": rubric(), **config}).replace("</", "<\\/")
    return template.replace("/*CONFIG*/null", data)


def offline_page(plan: StoredPlan, show_llm: bool) -> str:
    """A page that needs no server: every pair inlined, labels kept in the browser, downloaded as TREC qrels."""
    columns = ["query_id", "doc_id", "query_text", "passage_text", *(["llm_label"] if show_llm else [])]
    pairs = plan.pairs.select(columns).to_dicts()
    return page({"mode": "offline", "plan": plan.row["plan_name"], "pairs": pairs, "showLlm": show_llm})
