"""Read a relevance label and its confidence out of ONE answer in the `self` method's JSON, or say why not.

The judge asks for it (`--method self`) and the fuser answers in it (tasks/fuse/), so it lives here, below both. Both
values must come from the answer's own format; a half-read answer is a failure, never a label without its confidence
or the reverse, and a value out of its range is never clipped:

- reasoning blocks (`<think>...</think>`) are dropped; the object may sit in a ```json fence or among prose;
- exactly one JSON object with a "relevance" key must be found ('no JSON object'; two that disagree:
  'ambiguous'); one equal to the prompt's own format line cannot parse as JSON and is never read;
- "relevance": a JSON integer 0-3 (2.0 counts as 2; a string, 2.5 or 4: failure, with the reason);
- "confidence_score": a JSON number 0-100 (a string such as "85%" or "85": 'confidence not a number' - the prompt
  says "Do not provide the % symbol"; 150: 'confidence out of range 0-100'). Missing keys: failure. As for the
  verbalized confidence (peras/llm/parsing.py), a number written with a decimal point whose value is at most 1
  (0.75, 1.0) is read as a probability and multiplied by 100; the integers 0 and 1 stay 0 and 1.

The `certainty` method's double brackets are the judge's own: tasks/judge/parsing.py.
"""

from __future__ import annotations

from peras.llm.parsing import Reading, json_confidence, json_object_with

JointResult = Reading[int]  # a label and its confidence read from one answer, or None for both with the reason


def parse_self_answer(text: str | None) -> JointResult:
    """The "relevance" and "confidence_score" of the answer's JSON object (rule in the module doc)."""
    answer = json_object_with(text, "relevance")
    if isinstance(answer, str):
        return _fail(answer)
    label = answer["relevance"]
    if isinstance(label, bool) or not isinstance(label, int | float):
        return _fail("relevance not a number")
    if label != int(label):
        return _fail("relevance not an integer")
    if not 0 <= label <= 3:
        return _fail("relevance out of range 0-3")
    confidence = json_confidence(answer, fraction_is_probability=True)
    if isinstance(confidence, str):
        return _fail(confidence)
    return Reading(int(label), confidence, True, "json")


def _fail(reason: str) -> JointResult:
    return Reading(None, None, False, reason)
