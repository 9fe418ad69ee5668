"""Read a relevance label and its certainty out of ONE answer of the `certainty` method, or say why not.

The answer must hold exactly two double-bracketed values, the label first, then the certainty: `[[2]]` ...
`[[85]]`. Fewer: 'missing [[label]] or [[certainty]]'; more: 'ambiguous'. Each must be a bare integer in its
brackets (`[[85%]]`, `[[high]]`, `[[8.5]]`: failure, with the reason); label 0-3, certainty 1-100 (the bands of the
prompt); outside: failure. Reasoning blocks (`<think>...</think>`) are dropped first. As for the `self` method
(peras/llm/joint_parsing.py), a half-read answer is a failure and a value out of its range is never clipped.
"""

from __future__ import annotations

from peras.llm.joint_parsing import JointResult
from peras.llm.parsing import Reading, answer_body, double_bracketed, is_integer_text, no_body_reason


def parse_certainty_answer(text: str | None) -> JointResult:
    """The `[[label]]` and `[[certainty]]` of the answer (rule in the module doc)."""
    body = answer_body(text)
    if body is None:
        return _fail(no_body_reason(text))
    values = double_bracketed(body)
    if len(values) < 2:
        return _fail("missing [[label]] or [[certainty]]")
    if len(values) > 2:
        return _fail("ambiguous")
    label_text, certainty_text = values
    if not is_integer_text(label_text):
        return _fail(f"label [[{label_text[:20]}]] not an integer")
    if not is_integer_text(certainty_text):
        return _fail(f"certainty [[{certainty_text[:20]}]] not an integer")
    label, certainty = int(label_text), int(certainty_text)
    if not 0 <= label <= 3:
        return _fail("label out of range 0-3")
    if not 1 <= certainty <= 100:
        return _fail("certainty out of range 1-100")
    return Reading(label, float(certainty), True, "brackets")


def _fail(reason: str) -> JointResult:
    return Reading(None, None, False, reason)
