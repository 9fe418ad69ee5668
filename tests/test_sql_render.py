"""Rendered SQL templates are kept on disk (peras/sql.py, render_sql): the same template and context give the same
statements without Jinja2, another context renders anew, and a spoiled file is rendered again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from peras import sql
from tasks.engine.tasks import PERSONALITY_ROWS

pytestmark = pytest.mark.core


@pytest.fixture
def kept(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("PERAS_LOCAL_CACHE_DIR", str(tmp_path))
    return tmp_path / "sql"


def test_a_rendered_template_is_read_back_in_another_process_without_jinja(kept: Path):
    rendered = sql.render_sql("engine/upsert_changed", PERSONALITY_ROWS)
    assert any("personalities" in statement for statement in rendered)
    [path] = kept.glob("*.json")
    expected = repr(rendered)
    code = (
        "import sys\nfrom peras.sql import render_sql\nfrom tasks.engine.tasks import PERSONALITY_ROWS\n"
        f"print(render_sql('engine/upsert_changed', PERSONALITY_ROWS) == {expected}, 'jinja2' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "False"]
    assert list(kept.glob("*")) == [path]  # nothing new, no temporary file left


def test_another_context_renders_anew_and_a_spoiled_file_is_rendered_again(kept: Path):
    first = sql.render_sql("engine/upsert_changed", PERSONALITY_ROWS)
    other = PERSONALITY_ROWS | {"target": "prompt_items", "staged": "staged_items", "key": "item"}
    second = sql.render_sql("engine/upsert_changed", other)
    assert second != first and any("prompt_items" in statement for statement in second)
    assert len(list(kept.glob("*.json"))) == 2
    for path in kept.glob("*.json"):
        path.write_text('["half a stat', encoding="utf-8")
    assert sql.render_sql("engine/upsert_changed", PERSONALITY_ROWS) == first
    assert sql.render_sql("engine/upsert_changed", other) == second


def test_a_bad_name_is_refused_and_nothing_is_kept(kept: Path):
    with pytest.raises(ValueError, match="not a plain SQL identifier"):
        sql.render_sql("engine/upsert_changed", PERSONALITY_ROWS | {"target": "x; drop table y"})
    assert not list(kept.glob("*.json"))
