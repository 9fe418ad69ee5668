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

`mp_logp_pairwise` (the MP and LogP template, the SC one without a confidence): the same "selected_output" rule;
no confidence is read from the text (a "confidence_score" the model adds anyway is ignored). LogP's confidence
comes from the answer's log-probabilities (`option_logprobs`), MP's from the votes of its samples.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from peras.llm.logprobs import OptionDistribution, option_distribution
from peras.llm.parsing import (
    Reading,
    answer_body,
    double_bracketed,
    is_integer_text,
    json_confidence,
    json_object_with,
    no_body_reason,
)

_PRIMED_OPENING = re.compile(r"\s*[^\[\]\s]{1,20}\s*\]\]")  # 'A]]': the continuation of the prompt's "[["
_SELECTED = {"Output (a)": "A", "Output (b)": "B"}

Verdict = Reading[str]  # a pairwise choice ('A', 'B', 'C') and its confidence (None for the tie prompt), or why not


def parse_certainty_verdict(text: str | None) -> Verdict:
    """`[[A]]`/`[[B]]` then `[[X]]` 1-100 (rule in the module doc)."""
    values = _bracketed(text)
    if isinstance(values, Reading):
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
    if not is_integer_text(certainty):
        return _fail(f"certainty [[{certainty[:20]}]] not an integer")
    if not 1 <= int(certainty) <= 100:
        return _fail("certainty out of range 1-100")
    return Reading(choice, float(certainty), True, "brackets")


def parse_tie_verdict(text: str | None) -> Verdict:
    """One `[[A]]`, `[[B]]` or `[[C]]` (rule in the module doc)."""
    values = _bracketed(text)
    if isinstance(values, Reading):
        return values
    if not values:
        return _fail("missing [[verdict]]")
    if len(values) > 1:
        return _fail("ambiguous")
    if values[0] not in ("A", "B", "C"):
        return _fail(f"verdict [[{values[0][:20]}]] not A, B or C")
    return Reading(values[0], None, True, "brackets")


def parse_self_verdict(text: str | None) -> Verdict:
    """The "selected_output" and "confidence_score" of the answer's JSON object (rule in the module doc)."""
    found = _selected(text)
    if isinstance(found, Reading):
        return found
    choice, answer = found
    confidence = json_confidence(answer, fraction_is_probability=False)
    if isinstance(confidence, str):
        return _fail(confidence)
    return Reading(choice, confidence, True, "json")


def parse_choice_verdict(text: str | None) -> Verdict:
    """The "selected_output" of the answer's JSON object, without a confidence (rule in the module doc)."""
    found = _selected(text)
    return found if isinstance(found, Reading) else Reading(found[0], None, True, "json")


PARSERS = {
    "pairwise_certainty": parse_certainty_verdict,
    "pairwise_tie": parse_tie_verdict,
    "self_pairwise": parse_self_verdict,
    "mp_logp_pairwise": parse_choice_verdict,
}

# The chosen option's letter inside the answer's JSON: `"selected_output": "Output (a)"` (group 1 is the letter).
_SELECTED_LETTER = re.compile(r'"selected_output"\s*:\s*"\s*Output \(([ab])\)\s*"')
_OTHER_LETTER = {"a": "b", "b": "a"}


@dataclass(frozen=True, slots=True)
class OptionLogprobs:
    """LogP for a pairwise answer: the two options' probabilities at the token that spells the chosen letter."""

    p_chosen: float | None  # the chosen option's probability, renormalised over the two options
    dist: OptionDistribution[str]
    token_index: int | None
    reason: str


def option_logprobs(content: list[dict[str, Any]] | None, choice: str) -> OptionLogprobs:
    """The overconfidence study's LogP over the two options of one answer to the MP and LogP prompt.

    The answer token is the one that spells the chosen letter of `"selected_output": "Output (a)"` (the last such
    value in the generated tokens whose letter is `choice`'s: 'A' is a, 'B' is b); the other option is the same
    token with that letter swapped (`a` <-> `b`, `(a` <-> `(b`). p(chosen) = exp(l_chosen) / (exp(l_a) + exp(l_b))
    over the token's top log-probabilities (`option_distribution`: an option not among them has probability 0).
    Without such a token, or without either option among its top log-probabilities, p_chosen is None and `reason`
    says why."""
    tokens = [str(entry.get("token", "")) for entry in content or []]
    if not tokens:
        return OptionLogprobs(None, OptionDistribution(None, "no logprobs"), None, "no logprobs")
    letter = "a" if choice == "A" else "b"
    spans = [m.start(1) for m in _SELECTED_LETTER.finditer("".join(tokens)) if m.group(1) == letter]
    if not spans:
        return OptionLogprobs(None, OptionDistribution(None, "no option token"), None, "no option token")
    ends = list(accumulate(len(token) for token in tokens))
    index = bisect_right(ends, spans[-1])  # the token whose characters hold the letter
    token = tokens[index]
    at = spans[-1] - (ends[index] - len(token))
    other = token[:at] + _OTHER_LETTER[letter] + token[at + 1 :]
    options = {token.strip(): choice, other.strip(): "B" if choice == "A" else "A"}
    found = option_distribution((content or [])[index].get("top_logprobs"), options)
    p_chosen = None if found.dist is None else found.dist[choice]
    return OptionLogprobs(p_chosen, found, index, found.reason)


def _selected(text: str | None) -> tuple[str, dict[str, Any]] | Verdict:
    """The position chosen by the answer's one JSON object with a "selected_output" ('A' for Output (a)), and that
    object; a failure if there is none, several that differ, or its value is not one of the two outputs."""
    answer = json_object_with(text, "selected_output")
    if isinstance(answer, str):
        return _fail(answer)
    selected = answer["selected_output"]
    if not isinstance(selected, str) or selected.strip() not in _SELECTED:
        return _fail("selected_output not 'Output (a)' or 'Output (b)'")
    return _SELECTED[selected.strip()], answer


def _bracketed(text: str | None) -> list[str] | Verdict:
    """The double-bracketed values of the answer, the primed opening completed; a failure if nothing to read."""
    body = answer_body(text)
    if body is None:
        return _fail(no_body_reason(text))
    if _PRIMED_OPENING.match(body):
        body = "[[" + body.lstrip()
    return double_bracketed(body)


def _fail(reason: str) -> Verdict:
    return Reading(None, None, False, reason)
