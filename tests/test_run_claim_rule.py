"""The one claim rule compares a stored run only on what it records (tasks/engine/runs.py)."""

from __future__ import annotations

import pytest

from tasks.engine.runs import _differences
from tasks.engine.stage import declaration

pytestmark = pytest.mark.core

LABEL = {"temperature": 0.0, "max_tokens": 64}


def stored_and_asked() -> tuple[dict, dict]:
    """A pairwise run recorded before the logp and mp prompts existed, and the same call today."""
    stored = {
        "request_params": {"certainty": LABEL, "tie": LABEL, "self": LABEL},
        "prompt_templates": {"certainty": "C", "tie": "T", "self": "S"},
    }
    asked = {
        "request_params": {"certainty": LABEL, "tie": LABEL, "self": LABEL, "logp": LABEL, "mp": LABEL},
        "prompt_templates": {"certainty": "C", "tie": "T", "self": "S", "logp": "A3", "mp": "A3"},
        "mp_samples": 10,
    }
    return stored, asked


def test_a_run_made_before_a_prompt_existed_resumes_on_the_prompts_it_records():
    stage = declaration("pairwise")
    fixed = tuple(f"v{i}" for i, _ in enumerate(stage.fixed))
    want = {c.name: f"v{i}" for i, c in enumerate(stage.fixed)}
    stored, asked = stored_and_asked()
    assert _differences(stage, fixed, want, stored, asked) == []


def test_what_it_records_still_has_to_match():
    stage = declaration("pairwise")
    fixed = tuple(f"v{i}" for i, _ in enumerate(stage.fixed))
    want = {c.name: f"v{i}" for i, c in enumerate(stage.fixed)}
    stored, asked = stored_and_asked()
    asked["prompt_templates"]["tie"] = "T, reworded"
    assert _differences(stage, fixed, want, stored, asked) == ["request parameters differ (prompt_templates)"]
    stored["mp_samples"] = 5
    asked["prompt_templates"]["tie"] = "T"
    assert _differences(stage, fixed, want, stored, asked) == ["request parameters differ (mp_samples)"]
