"""Read a relevance label and a confidence out of ONE answer (the `self` and `certainty` methods), or say why not.

Both values must come from the answer's own format; a half-read answer is a failure, never a label without its
confidence or the reverse, and a value out of its range is never clipped.

`self` (self-confidence, a JSON object as the prompt shows):
- reasoning blocks (`<think>...</think>`) are dropped; the object may sit in a ```json fence or among prose;
- exactly one JSON object with a "relevance" key must be found ('no JSON object'; two that disagree:
  'ambiguous'); one equal to the prompt's own format line cannot parse as JSON and is never read;
- "relevance": a JSON integer 0-3 (2.0 counts as 2; a string, 2.5 or 4: failure, with the reason);
- "confidence_score": a JSON number 0-100 (a string such as "85%" or "85": 'confidence not a number' - the prompt
  says "Do not provide the % symbol"; 150: 'confidence out of range 0-100'). Missing keys: failure. As for the
  verbalized confidence (peras/llm/parsing.py), a number written with a decimal point whose value is at most 1
  (0.75, 1.0) is read as a probability and multiplied by 100; the integers 0 and 1 stay 0 and 1.

`certainty` (in-prompt certainty, values in double brackets):
- the answer must hold exactly two double-bracketed values, the label first, then the certainty:
  `[[2]]` ... `[[85]]`. Fewer: 'missing [[label]] or [[certainty]]'; more: 'ambiguous';
- each must be a bare integer in its brackets (`[[85%]]`, `[[high]]`, `[[8.5]]`: failure, with the reason);
- label 0-3, certainty 1-100 (the bands of the prompt); outside: failure.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.S | re.I)
_DOUBLE_BRACKETS = re.compile(r"\[\[\s*([^\[\]]*?)\s*\]\]")
_INTEGER = re.compile(r"-?\d+")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True, slots=True)
class JointResult:
    """A label and its confidence read from one answer, or None for both with the reason."""

    value: int | None
    confidence: float | None
    ok: bool
    reason: str


def parse_self_answer(text: str | None) -> JointResult:
    """The "relevance" and "confidence_score" of the answer's JSON object (rule in the module doc)."""
    body = _strip_reasoning(text)
    if body is None:
        return _fail("truncated" if text and text.strip() else "empty")
    found = [obj for obj in _json_objects(body) if "relevance" in obj]
    if not found:
        return _fail("no JSON object")
    if any(obj != found[0] for obj in found[1:]):
        return _fail("ambiguous")
    answer = found[0]
    label = answer["relevance"]
    if isinstance(label, bool) or not isinstance(label, int | float):
        return _fail("relevance not a number")
    if label != int(label):
        return _fail("relevance not an integer")
    if not 0 <= label <= 3:
        return _fail("relevance out of range 0-3")
    if "confidence_score" not in answer:
        return _fail("no confidence_score")
    confidence = answer["confidence_score"]
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        return _fail("confidence not a number")
    if isinstance(confidence, float) and 0 <= confidence <= 1:
        confidence *= 100  # 0.75 means 75%, as the verbalized parser reads it
    if not 0 <= confidence <= 100:
        return _fail("confidence out of range 0-100")
    return JointResult(int(label), float(confidence), True, "json")


def parse_certainty_answer(text: str | None) -> JointResult:
    """The `[[label]]` and `[[certainty]]` of the answer (rule in the module doc)."""
    body = _strip_reasoning(text)
    if body is None:
        return _fail("truncated" if text and text.strip() else "empty")
    values = _DOUBLE_BRACKETS.findall(body)
    if len(values) < 2:
        return _fail("missing [[label]] or [[certainty]]")
    if len(values) > 2:
        return _fail("ambiguous")
    label_text, certainty_text = values
    if not _INTEGER.fullmatch(label_text):
        return _fail(f"label [[{label_text[:20]}]] not an integer")
    if not _INTEGER.fullmatch(certainty_text):
        return _fail(f"certainty [[{certainty_text[:20]}]] not an integer")
    label, certainty = int(label_text), int(certainty_text)
    if not 0 <= label <= 3:
        return _fail("label out of range 0-3")
    if not 1 <= certainty <= 100:
        return _fail("certainty out of range 1-100")
    return JointResult(label, float(certainty), True, "brackets")


def _strip_reasoning(text: str | None) -> str | None:
    """The answer without closed reasoning blocks; None when nothing is left or a block never closed."""
    if text is None:
        return None
    body = _THINK_BLOCK.sub(" ", text)
    lowered = body.lower()
    if "</think>" in lowered:
        body = body[lowered.rindex("</think>") + len("</think>") :]
    elif "<think>" in lowered:
        return None
    return body if body.strip() else None


def _json_objects(text: str) -> list[dict[str, object]]:
    """Every JSON object that decodes at a '{' of the text, outermost first (nested ones are inside it)."""
    found: list[dict[str, object]] = []
    position = text.find("{")
    while position != -1:
        try:
            value, end = _DECODER.raw_decode(text, position)
        except json.JSONDecodeError:
            position = text.find("{", position + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        position = text.find("{", end)
    return found


def _fail(reason: str) -> JointResult:
    return JointResult(None, None, False, reason)
