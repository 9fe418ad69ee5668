"""The 0-3 scale the judges were given, word for word from the label prompt (peras/prompts/label_nocot.toml)."""

from __future__ import annotations

import re

from peras.prompting import load_prompt

SCALE_LINE = re.compile(r"^\[(\d)\] (.+)$")


def rubric() -> list[dict[str, object]]:
    """The scale's lines, highest grade first: [{'grade': 3, 'text': 'Perfectly relevant: ...'}, ...]."""
    found = [SCALE_LINE.match(line) for line in load_prompt("label_nocot").template.splitlines()]
    return [{"grade": int(m.group(1)), "text": m.group(2)} for m in found if m]
