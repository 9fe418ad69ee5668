"""docs/evaluate.md's LLMJudge tables are what the code computes now: scripts/evaluate_doc_numbers.py runs the real
commands (ingest, build-runs, import-judgments, evaluate, holes) and its tables must equal the doc's (about 10 min)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[1]


def script():
    spec = importlib.util.spec_from_file_location("evaluate_doc_numbers", ROOT / "scripts" / "evaluate_doc_numbers.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["evaluate_doc_numbers"] = module
    spec.loader.exec_module(module)
    return module


def test_the_docs_tables_are_regenerated_from_the_code(shared_data):
    numbers = script()
    doc = numbers.DOC.read_text(encoding="utf-8")
    tables = numbers.compute()
    assert sorted(tables) == sorted(m["name"] for m in numbers.BLOCK.finditer(doc))
    assert numbers.render(doc, tables) == doc, "docs/evaluate.md is stale: run scripts/evaluate_doc_numbers.py"


def test_render_replaces_only_the_generated_blocks():
    numbers = script()
    doc = "a\n<!-- generated: t -->\n| old |\n<!-- end generated -->\nb\n"
    assert numbers.render(doc, {"t": "| new |"}) == "a\n<!-- generated: t -->\n| new |\n<!-- end generated -->\nb\n"
