"""Read a pairwise verdict (and its confidence) out of one answer, or say why not.

The verdict is a position: 'A' (the passage shown first), 'B' (second) or, for the tie prompt only, 'C' (a tie).
The bracket prompts end with "[[" (the study's `[Answer]` / `[[` skeleton), so a model that continues them writes
`A]] ...`: an answer that opens with a bare verdict and `]]` is read as if the "[[" were in it.

`pairwise_certainty`: exactly two double-bracketed values, the verdict first, then the certainty:
`[[A]]` ... `[[85]]`. Fewer: 'missing [[verdict]] or [[certainty]]'; more: 'ambiguous'. The verdict must be A or B
(`[[C]]`: 'tie not offered'; `[[a]]`, `[[Passage A]]`: failure); the certainty a bare integer 1-100 (`[[85%]]`,
`[[0]]`: failure).

`pairwise_tie`: exactly one double-bracketed value, A, B or C (none: 'missing [[verdict]]'; two: 'ambiguous',
even when they agree: the study's format has one).

`self_pairwise` (the SC template's JSON): exactly one JSON object with a "selected_output" key (two that disagree:
'ambiguous'); its value "Output (a)" or "Output (b)" (exactly, as the template shows); "confidence_score" a JSON
number 0-100 (a string such as "85%": failure). Reasoning blocks (`<think>...</think>`) are dropped first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from peras.llm.joint_parsing import _json_objects, _strip_reasoning

_DOUBLE_BRACKETS = re.compile(r"\[\[\s*([^\[\]]*?)\s*\]\]")
_PRIMED_OPENING = re.compile(r"\s*[^\[\]\s]{1,20}\s*\]\]")  # 'A]]': the continuation of the prompt's "[["
_INTEGER = re.compile(r"-?\d+")
_SELECTED = {"Output (a)": "A", "Output (b)": "B"}


@dataclass(frozen=True, slots=True)
class Verdict:
    """A pairwise choice ('A', 'B', 'C') and its confidence (None for the tie prompt), or the reason it failed."""

    value: str | None
    confidence: float | None
    ok: bool
    reason: str


def parse_certainty_verdict(text: str | None) -> Verdict:
    """`[[A]]`/`[[B]]` then `[[X]]` 1-100 (rule in the module doc)."""
    values = _bracketed(text)
    if isinstance(values, Verdict):
        return values
    if len(values) < 2:
        return _fail("missing [[verdict]] or [[certainty]]")
    if len(values) > 2:
        return _fail("ambiguous")
    choice, certainty = values
    if choice == "C":
        return _fail("tie not offered")
    if choice not in ("A", "B"):
        return _fail(f"verdict [[{choice[:20]}]] not A or B")
    if not _INTEGER.fullmatch(certainty):
        return _fail(f"certainty [[{certainty[:20]}]] not an integer")
    if not 1 <= int(certainty) <= 100:
        return _fail("certainty out of range 1-100")
    return Verdict(choice, float(certainty), True, "brackets")


def parse_tie_verdict(text: str | None) -> Verdict:
    """One `[[A]]`, `[[B]]` or `[[C]]` (rule in the module doc)."""
    values = _bracketed(text)
    if isinstance(values, Verdict):
        return values
    if not values:
        return _fail("missing [[verdict]]")
    if len(values) > 1:
        return _fail("ambiguous")
    if values[0] not in ("A", "B", "C"):
        return _fail(f"verdict [[{values[0][:20]}]] not A, B or C")
    return Verdict(values[0], None, True, "brackets")


def parse_self_verdict(text: str | None) -> Verdict:
    """The "selected_output" and "confidence_score" of the answer's JSON object (rule in the module doc)."""
    body = _strip_reasoning(text)
    if body is None:
        return _fail("truncated" if text and text.strip() else "empty")
    found = [obj for obj in _json_objects(body) if "selected_output" in obj]
    if not found:
        return _fail("no JSON object")
    if any(obj != found[0] for obj in found[1:]):
        return _fail("ambiguous")
    selected = found[0]["selected_output"]
    if not isinstance(selected, str) or selected.strip() not in _SELECTED:
        return _fail("selected_output not 'Output (a)' or 'Output (b)'")
    if "confidence_score" not in found[0]:
        return _fail("no confidence_score")
    confidence = found[0]["confidence_score"]
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        return _fail("confidence not a number")
    if not 0 <= confidence <= 100:
        return _fail("confidence out of range 0-100")
    return Verdict(_SELECTED[selected.strip()], float(confidence), True, "json")


PARSERS = {
    "pairwise_certainty": parse_certainty_verdict,
    "pairwise_tie": parse_tie_verdict,
    "self_pairwise": parse_self_verdict,
}


def _bracketed(text: str | None) -> list[str] | Verdict:
    """The double-bracketed values of the answer, the primed opening completed; a failure if nothing to read."""
    body = _strip_reasoning(text)
    if body is None:
        return _fail("truncated" if text and text.strip() else "empty")
    if _PRIMED_OPENING.match(body):
        body = "[[" + body.lstrip()
    return _DOUBLE_BRACKETS.findall(body)


def _fail(reason: str) -> Verdict:
    return Verdict(None, None, False, reason)
