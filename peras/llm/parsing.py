"""Read a relevance label (0-3) or a confidence (0-100) out of a model's answer, or say why not.

An answer that cannot be read NEVER becomes a label: it comes back with `ok=False`, `value=None` and a
reason, so the judge can count and report failures (UMBRELA maps them to 0, which biases every metric).

The rule, applied in this order; the first step that finds something decides:

0. Clean: drop closed `<think>...</think>` blocks (and everything up to a lone `</think>`), `*` and
   backtick markup, and `\\boxed{..}` wrappers. Nothing left: 'empty'. An unclosed `<think>`: 'truncated'.
1. Bare: the whole answer is one number, maybe in brackets or quotes, maybe followed by `.` or `!`
   ("2", "[2]", "2.", " 2\\n", "85%", "2/3"). "2-3" or "2 or 3" alone: 'ambiguous'.
2. Marker: the LAST number that directly follows a score marker. Labels: "final score", "final answer",
   "overall score", "score", "rating", "label", "grade", "category", "relevance", "answer", and the UMBRELA
   output letter "O" (case-sensitive), each followed by `:`, `=`, `-`, "is", "of" or a line break,
   optionally with a short parenthesis between ("final score (O): 2", "Score (0-3): 2").
   Confidence: "confidence", "confidence score|level|rating". A marked number followed by "-", "to" or
   "or" and another number: 'ambiguous'.
3. Refusal ("I cannot", "I can't", "I'm sorry", "I am unable", "as an AI" ...): 'refusal'.
4. Fallback, over the numbers that are not asides. Asides: UMBRELA aspect values ("M = 3", "T: 1",
   "(T): 1"), "step 2", list numbering at a line start ("1. Consider"), both ends of a range ("0 to 3",
   "0-100"), and, for labels, percentages.
   - label with CoT: the last remaining number (the final score comes after the reasoning);
   - label without CoT and confidence: the number that opens the answer if it does ("2 - highly relevant");
     otherwise, for confidence, the only distinct percentage if there is one; otherwise the only distinct
     number; several distinct numbers: 'ambiguous'; none: 'no number'.

The number found is then checked:
- label: a denominator other than 3 ("8/10") or a percentage is 'wrong scale' (out of range when above 3:
  "85%" is 'out of range 0-3'); a fraction ("2.5") is 'not an integer' ("2.0" counts as 2); outside 0-3 is
  'out of range 0-3'.
- confidence: "85%", "85/100", "85 out of 100" are 85; another denominator is 'wrong scale'. A number
  written with a decimal point whose value is at most 1 ("0.85", "1.0") is read as a fraction and
  multiplied by 100: models that answer this way mean a probability, and 0.85 on a 0-100 scale would be
  an absurd reading. Integers 0 and 1 stay 0 and 1. Outside 0-100: 'out of range 0-100'.

On success `reason` names the step that decided: 'bare', 'marker', 'last', 'leading', 'percent', 'single'.

The generic helpers the other answer readers build on (peras/llm/joint_parsing.py, tasks/judge/parsing.py,
tasks/pairwise/parsing.py) are here too: `Reading` (a value and its confidence, or the reason there is none),
`without_reasoning`/`answer_body` (step 0's reasoning rule), `double_bracketed`, `is_integer_text`,
`json_object_with` and `json_confidence`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Generic, TypeVar


@dataclass(slots=True)  # not frozen: one is built for every answer read (0.14 us, frozen 0.49)
class ParseResult:
    """A parsed value, or None with the reason it could not be read."""

    value: int | float | None
    ok: bool
    reason: str


V = TypeVar("V")


# Built directly, never through an alias (`Reading[int](...)` raises TypeError on a slotted class, and cost 1.3 us an
# answer where this costs 0.14: one is read for every request); not frozen, as `Answer` (frozen cost 0.5 us).
@dataclass(slots=True)
class Reading(Generic[V]):
    """A value and its confidence read from one answer (confidence None where the format has none), or None for both
    with the reason it could not be read."""

    value: V | None
    confidence: float | None
    ok: bool
    reason: str


@dataclass(frozen=True, slots=True)
class _Number:
    text: str
    value: Decimal
    has_point: bool
    percent: bool
    denominator: int | None
    start: int
    end: int


_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.S | re.I)
_DOUBLE_BRACKETS = re.compile(r"\[\[\s*([^\[\]]*?)\s*\]\]")
_INTEGER = re.compile(r"-?\d+")
_DECODER = json.JSONDecoder()
_BOXED = re.compile(r"\\boxed\{([^{}]*)\}")
# A standalone number: not glued to letters, a decimal point, a slash or a hyphen on the left (so "H2O",
# the "3" of "2/3" and the "3" of "2-3" are not numbers), optionally "%" or "/N" or "out of N" after it.
_NUMBER = re.compile(
    r"(?<![\w./-])(?<!\d,)(?P<num>-?(?:\d+(?:\.\d+)?|\.\d+))"
    r"(?:\s*(?P<pct>%)|\s*(?:/|\bout\s+of\b)\s*(?P<den>\d+))?"
    r"(?![\w%]|[.,]\d)"
)
# Ranges stay on one line: "2\n- 3 reasons" is a list, not "2-3".
_RANGE_AFTER = re.compile(r"[ \t]*(?:-|–|\bto\b|\bor\b)[ \t]*-?\d")
_RANGE_BEFORE = re.compile(r"(?:\d[ \t]*(?:–|\bto\b|\bor\b)|\d-)[ \t]*$")
# A marker needs a separator, or ends its line ("### Final score" over the number): "category 1 if" in
# an echoed rubric is not a marker.
_SEPARATOR = r"(?:\s*(?:[:=]|-|\bis\b|\bof\b|\b(?:would|should)\s+be\b)|[ \t]*\n)\s*[\[(]?\s*$"
_PAREN = r"(?:\s*\([^()\n]{0,12}\))?"
_LABEL_MARKER = re.compile(
    r"(?:\b(?:final|overall)(?:\s+relevance)?(?:\s+(?:score|answer|label|rating|grade|category|judge?ment))?"
    r"|(?<!confidence\s)\b(?:relevance\s+)?(?:score|rating|label|grade|category|answer)|\brelevance|(?-i:\bO\b))"
    + _PAREN
    + _SEPARATOR,
    re.I,
)
_CONFIDENCE_MARKER = re.compile(r"\bconfidence(?:\s+(?:score|level|rating))?" + _PAREN + _SEPARATOR, re.I)
_ASPECT = re.compile(r"(?:(?-i:\b[MT]\b)|\((?-i:[MT])\)|\bstep)\s*[:=]?\s*[\[(]?\s*$", re.I)
_REFUSAL = re.compile(
    r"\b(?:I\s+(?:cannot|can[’']t|can\s+not|am\s+unable|am\s+not\s+able|won[’']t|will\s+not)"
    r"|I[’']m\s+(?:sorry|unable|not\s+able)|I\s+am\s+sorry|as\s+an\s+AI)\b",
    re.I,
)
_BARE_STRIP = " \t\r\n[](){}\"'"
_FAST_LABELS = {str(k): ParseResult(k, True, "bare") for k in range(4)}


def parse_label(text: str | None, cot: bool) -> ParseResult:
    """A 0-3 relevance label; with `cot` the final score after any reasoning (rule in the module doc)."""
    if text is not None and (fast := _FAST_LABELS.get(text.strip())) is not None:
        return fast  # the common case, kept cheap: a bare digit
    found = _locate(text, _LABEL_MARKER, skip_percent=True, take_last=cot)
    return found if isinstance(found, ParseResult) else _check_label(*found)


def parse_confidence(text: str | None) -> ParseResult:
    """A 0-100 confidence (rule in the module doc); "0.85" is read as 85."""
    if text is not None and (stripped := text.strip()).isascii() and stripped.isdigit():
        value = int(stripped)  # the common case, kept cheap: a bare integer
        return ParseResult(float(value), True, "bare") if value <= 100 else _fail("out of range 0-100")
    found = _locate(text, _CONFIDENCE_MARKER, skip_percent=False, take_last=False)
    return found if isinstance(found, ParseResult) else _check_confidence(*found)


def without_reasoning(text: str) -> str | None:
    """The text without its closed `<think>...</think>` blocks and without everything up to a lone `</think>` (some
    chat templates put "<think>" in the prompt, so only the closing tag reaches us); None when a block never closed."""
    text = _THINK_BLOCK.sub(" ", text)
    lowered = text.lower()
    if "</think>" in lowered:
        return text[lowered.rindex("</think>") + len("</think>") :]
    return None if "<think>" in lowered else text


def answer_body(text: str | None) -> str | None:
    """The answer without its reasoning (`without_reasoning`); None when nothing is left or a block never closed
    (`no_body_reason` says which to report)."""
    body = None if text is None else without_reasoning(text)
    return body if body is not None and body.strip() else None


def no_body_reason(text: str | None) -> str:
    """Why `answer_body` found nothing to read: 'empty' for an answer of white space, else 'truncated'."""
    return "truncated" if text and text.strip() else "empty"


def double_bracketed(body: str) -> list[str]:
    """The values written in double brackets, in order, spaces inside the brackets dropped: `[[ 2 ]] .. [[85]]` gives
    ['2', '85']."""
    return _DOUBLE_BRACKETS.findall(body)


def is_integer_text(text: str) -> bool:
    """True for a bare integer, maybe negative ('85', '-1'; not '85%', '8.5' or 'high')."""
    return _INTEGER.fullmatch(text) is not None


def _json_objects(text: str) -> list[dict[str, Any]]:
    """Every JSON object that decodes at a '{' of the text, outermost first (nested ones are inside it)."""
    found: list[dict[str, Any]] = []
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


def json_object_with(text: str | None, key: str) -> dict[str, Any] | str:
    """The answer's one JSON object holding `key` (equal copies count as one), its reasoning dropped first
    (`answer_body`), or why not: 'empty' or 'truncated' (`no_body_reason`), 'no JSON object', or 'ambiguous' for two
    that differ."""
    if text and text[0] == "{" and text[-1] == "}" and "<" not in text:  # the usual answer: the object alone
        try:  # the scan below would decode it at its first '{' and find nothing after it: its result, without the scan
            whole, end = _DECODER.raw_decode(text, 0)
        except json.JSONDecodeError:
            whole, end = None, 0
        if end == len(text) and isinstance(whole, dict) and key in whole:
            return whole
    body = answer_body(text)
    if body is None:
        return no_body_reason(text)
    found = [obj for obj in _json_objects(body) if key in obj]
    if not found:
        return "no JSON object"
    if any(obj != found[0] for obj in found[1:]):
        return "ambiguous"
    return found[0]


def json_confidence(answer: Mapping[str, Any], *, fraction_is_probability: bool) -> float | str:
    """The object's "confidence_score", a JSON number 0-100, or why not: 'no confidence_score', 'confidence not a
    number' (a string such as "85%" too), 'confidence out of range 0-100'. With `fraction_is_probability` a number
    written with a decimal point whose value is at most 1 (0.75, 1.0) is a probability and multiplied by 100."""
    if "confidence_score" not in answer:
        return "no confidence_score"
    confidence = answer["confidence_score"]
    if isinstance(confidence, bool) or not isinstance(confidence, int | float):
        return "confidence not a number"
    if fraction_is_probability and isinstance(confidence, float) and 0 <= confidence <= 1:
        confidence *= 100
    if not 0 <= confidence <= 100:
        return "confidence out of range 0-100"
    return float(confidence)


def _locate(
    text: str | None, marker: re.Pattern[str], *, skip_percent: bool, take_last: bool
) -> ParseResult | tuple[_Number, str]:
    """Steps 0-4 of the module rule: the number that answers, with how it was found, or a failure."""
    if text is None or not text.strip():
        return _fail("empty")
    clean = _clean(text)
    if clean is None:
        return _fail("truncated")
    if not clean:
        return _fail("empty")
    numbers = [_number(m) for m in _NUMBER.finditer(clean)]
    bare = clean.strip(_BARE_STRIP).rstrip(".!").strip(_BARE_STRIP)
    if len(numbers) == 1 and clean[numbers[0].start : numbers[0].end] == bare:
        return numbers[0], "bare"
    if re.fullmatch(r"-?\d+(?:\.\d+)?\s*(?:-|–|\bto\b|\bor\b)\s*-?\d+(?:\.\d+)?%?", bare):
        return _fail("ambiguous")
    marked = [n for n in numbers if marker.search(clean, max(0, n.start - 80), n.start)]
    if marked:
        last = marked[-1]
        if _RANGE_AFTER.match(clean, last.end):
            return _fail("ambiguous")
        return last, "marker"
    if _REFUSAL.search(clean):
        return _fail("refusal")
    kept = [n for n in numbers if not _is_aside(clean, n, skip_percent)]
    if not kept:
        return _fail("no number")
    if take_last:
        return kept[-1], "last"
    if kept[0].start == len(clean) - len(clean.lstrip(_BARE_STRIP)):
        return kept[0], "leading"
    percents = {n.value for n in kept if n.percent}
    if len(percents) == 1:
        return next(n for n in kept if n.percent), "percent"
    if len({n.value for n in kept}) == 1:
        return kept[0], "single"
    return _fail("ambiguous")


def _clean(text: str) -> str | None:
    """Remove reasoning blocks and markup; None when a reasoning block never closed."""
    body = without_reasoning(text)
    if body is None:
        return None
    body = _BOXED.sub(r"\1", body)
    return body.replace("*", "").replace("`", "").strip()


def _number(match: re.Match[str]) -> _Number:
    num = match.group("num")
    den = match.group("den")
    return _Number(
        num,
        Decimal(num),
        "." in num,
        match.group("pct") is not None,
        int(den) if den is not None else None,
        match.start(),
        match.end(),
    )


def _is_aside(text: str, number: _Number, skip_percent: bool) -> bool:
    """Numbers that are part of the reasoning's scaffolding, not an answer (see the module rule)."""
    if skip_percent and number.percent:
        return True
    if _ASPECT.search(text, max(0, number.start - 20), number.start):
        return True
    if _RANGE_AFTER.match(text, number.end) or _RANGE_BEFORE.search(text, max(0, number.start - 8), number.start):
        return True
    line_start = text.rfind("\n", 0, number.start) + 1
    at_line_start = not text[line_start : number.start].strip()
    return at_line_start and re.match(r"[.)]\s+\w", text[number.end : number.end + 3]) is not None


def _check_label(number: _Number, how: str) -> ParseResult:
    value = number.value
    if number.percent or (number.denominator is not None and number.denominator != 3):
        return _fail("out of range 0-3" if value > 3 else "wrong scale")
    if value != value.to_integral_value():
        return _fail("not an integer")
    if not 0 <= value <= 3:
        return _fail("out of range 0-3")
    return ParseResult(int(value), True, how)


def _check_confidence(number: _Number, how: str) -> ParseResult:
    value = number.value
    if number.denominator is not None and number.denominator != 100:
        return _fail("wrong scale")
    if number.has_point and not number.percent and number.denominator is None and 0 <= value <= 1:
        value = value * 100
    if not 0 <= value <= 100:
        return _fail("out of range 0-100")
    return ParseResult(float(value), True, how)


def _fail(reason: str) -> ParseResult:
    return ParseResult(None, False, reason)
