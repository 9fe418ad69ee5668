"""Answer parsers: every edge case a row, and properties over arbitrary text."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from peras.llm.logprobs import LogprobScores, label_logprob_scores, label_token_top_logprobs
from peras.llm.parsing import ParseResult, parse_confidence, parse_label

pytestmark = pytest.mark.core


def ok(value: int | float, how: str) -> ParseResult:
    return ParseResult(value, True, how)


def fail(reason: str) -> ParseResult:
    return ParseResult(None, False, reason)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2", ok(2, "bare")),  # the answer we asked for
        ("0", ok(0, "bare")),  # a real zero is a label, not a failure
        ("2.", ok(2, "bare")),  # sentence full stop
        ("[2]", ok(2, "bare")),  # echoing the rubric's brackets
        (" 2\n", ok(2, "bare")),  # whitespace around
        ("**2**", ok(2, "bare")),  # markdown bold
        ('"3"', ok(3, "bare")),  # quoted
        ("2.0", ok(2, "bare")),  # an integral decimal is that integer
        ("3/3", ok(3, "bare")),  # a denominator of 3 is the scale, not a score
        ("2 out of 3", ok(2, "bare")),  # the same in words
        ("\\boxed{1}", ok(1, "bare")),  # LaTeX answer box from maths-tuned models
        ("<think>maybe 3?</think>\n1", ok(1, "bare")),  # reasoning block dropped
        ("the intent is clear</think>2", ok(2, "bare")),  # template opened <think> in the prompt
        ("２", ok(2, "bare")),  # full-width digit from a CJK-tuned model
        ("Score: 2", ok(2, "marker")),  # labelled answer
        ("Score: 2/3", ok(2, "marker")),  # a denominator is not a score
        ("Relevance: 2\nConfidence score: 80", ok(2, "marker")),  # confidence is not a relevance marker
        ("I would give it a score of 1.", ok(1, "marker")),  # "score of"
        ("2 - Highly relevant", ok(2, "leading")),  # number then its rubric name
        ("2\nThe passage discusses 3 topics", ok(2, "leading")),  # answer first, explanation after
        ("On a scale of 0 to 3 this is 2", ok(2, "single")),  # the scale's range is not an answer
        ("", fail("empty")),  # nothing came back
        ("   \n", fail("empty")),  # only whitespace
        ("<think>all reasoning</think>", fail("empty")),  # reasoning, then nothing
        ("<think>cut off at 3", fail("truncated")),  # max_tokens hit inside the reasoning
        ("85%", fail("out of range 0-3")),  # a percentage above the scale
        ("2%", fail("wrong scale")),  # a percentage is never a label
        ("8/10", fail("out of range 0-3")),  # another scale, above ours
        ("2/4", fail("wrong scale")),  # another scale, inside ours
        ("4", fail("out of range 0-3")),  # one past the top
        ("-1", fail("out of range 0-3")),  # negative
        ("2.5", fail("not an integer")),  # between two labels
        ("2 or 3", fail("ambiguous")),  # could not decide
        ("2-3", fail("ambiguous")),  # a range
        ("Relevant: 2, maybe 3", fail("ambiguous")),  # two distinct numbers, no marker
        ("I cannot assess this passage.", fail("refusal")),  # refusal
        ("I'm sorry, but I can't help with that.", fail("refusal")),  # refusal with apology
        ("Highly relevant.", fail("no number")),  # words only
    ],
)
def test_parse_label_without_cot(text: str, expected: ParseResult) -> None:
    assert parse_label(text, cot=False) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("M=3, T=1 ... final score (O): 2", ok(2, "marker")),  # the final score, not the first digit
        ("O = 3", ok(3, "marker")),  # UMBRELA's output letter
        ("**Score: 2**", ok(2, "marker")),  # markdown around a marker
        ("Intent is clear.\nFinal score: 2", ok(2, "marker")),  # reasoning then the final score
        ("Final score: 2\n\nNote: 3 sources agree", ok(2, "marker")),  # a marked score beats a later number
        ("Score: 1\nAfter reflection, final answer: 3", ok(3, "marker")),  # the last marker wins
        (
            "1. Consider intent: strong.\n2. Trust: high.\nFinal score (O): 3",
            ok(3, "marker"),
        ),  # numbered steps
        ("Score (0-3): 2", ok(2, "marker")),  # scale in parentheses after the marker
        ("### Final score\n\n1", ok(1, "marker")),  # marker as a heading, number below
        ("Step 1: intent\nStep 2: M = 3\nT = 1\n\n2", ok(2, "last")),  # steps and aspects skipped
        ("The passage matches the intent well, so 2", ok(2, "last")),  # no marker: the last number
        ("2", ok(2, "bare")),  # the prompt asks for no reasoning: a bare digit is the common case
        ("M: 3\nT: 1", fail("no number")),  # aspects but no final score: not a label
        ("Final score: 2-3", fail("ambiguous")),  # a range as the final score
        ("Final score: 2 or 3", fail("ambiguous")),  # undecided final score
        ("Final score: 5", fail("out of range 0-3")),  # marked but off the scale
        ("After weighing M and T, I'm 90% sure", fail("no number")),  # a percentage is never a label
        ("I cannot provide a score for this.", fail("refusal")),  # refusal
        ("The passage is about cats.", fail("no number")),  # no score at all
    ],
)
def test_parse_label_with_cot(text: str, expected: ParseResult) -> None:
    assert parse_label(text, cot=True) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("85", ok(85.0, "bare")),  # the answer we asked for
        ("0", ok(0.0, "bare")),  # no confidence at all is a value
        ("100", ok(100.0, "bare")),  # the top of the scale
        ("85%", ok(85.0, "bare")),  # percent sign
        ("85/100", ok(85.0, "bare")),  # explicit scale
        ("85 out of 100", ok(85.0, "bare")),  # explicit scale in words
        ("95.5", ok(95.5, "bare")),  # a decimal above 1 is taken as written
        ("0.85", ok(85.0, "bare")),  # a fraction: the model means a probability
        ("1.0", ok(100.0, "bare")),  # written as a fraction: full confidence
        ("1", ok(1.0, "bare")),  # the integer 1 stays 1
        ("0.5%", ok(0.5, "bare")),  # a percentage is never rescaled
        ("Confidence: 90", ok(90.0, "marker")),  # labelled
        ("Confidence: 0.9", ok(90.0, "marker")),  # labelled fraction
        ("Confidence level (0-100): 75", ok(75.0, "marker")),  # labelled with the scale
        ("90\n\nThe score of 2 fits the passage", ok(90.0, "leading")),  # answer first
        ("I am 90% confident that 2 is right", ok(90.0, "percent")),  # the only percentage
        ("I'd say 80.", ok(80.0, "single")),  # the only number
        ("", fail("empty")),  # nothing came back
        ("150", fail("out of range 0-100")),  # above the scale
        ("-5", fail("out of range 0-100")),  # negative
        ("8/10", fail("wrong scale")),  # another scale
        ("70-80", fail("ambiguous")),  # a range
        ("between 70 and 80", fail("ambiguous")),  # two numbers, neither marked
        ("I'm sorry, I can't give a number.", fail("refusal")),  # refusal
        ("Very confident.", fail("no number")),  # words only
    ],
)
def test_parse_confidence(text: str, expected: ParseResult) -> None:
    assert parse_confidence(text) == expected


@given(prefix=st.text(max_size=200), k=st.integers(0, 3))
@settings(max_examples=300, deadline=None)
def test_cot_final_score_wins(prefix: str, k: int) -> None:
    # Whatever the reasoning says, a closing "Final score: k" is the label (unless reasoning never closed).
    result = parse_label(f"{prefix}\nFinal score: {k}", cot=True)
    if "<think>" in prefix.lower() and "</think>" not in prefix.lower():
        assert result == fail("truncated")
    else:
        assert result == ok(k, "marker")


@given(text=st.text(max_size=120), cot=st.booleans())
@settings(max_examples=500, deadline=None)
def test_label_never_out_of_range(text: str, cot: bool) -> None:
    result = parse_label(text, cot)
    assert result.ok == (result.value is not None)
    assert result.value is None or result.value in (0, 1, 2, 3)


@given(text=st.text(alphabet="0123456789.%/- abcO:=\n", max_size=40))
@settings(max_examples=500, deadline=None)
def test_confidence_never_out_of_range(text: str) -> None:
    result = parse_confidence(text)
    assert result.ok == (result.value is not None)
    assert result.value is None or 0.0 <= result.value <= 100.0


@given(k=st.integers(0, 100))
def test_bare_confidence_roundtrip(k: int) -> None:
    assert parse_confidence(str(k)) == ok(float(k), "bare")


def test_logprob_scores_renormalised_over_labels() -> None:
    # "2" 0.6 and " 2" 0.1 add up; "The" is not a label and drops out before renormalising.
    top = [
        {"token": "2", "logprob": math.log(0.6)},
        {"token": " 2", "logprob": math.log(0.1)},
        {"token": "3", "logprob": math.log(0.2)},
        {"token": "The", "logprob": math.log(0.1)},
    ]
    p_chosen, expected, dist, reason, missing, mass = label_logprob_scores(top)
    assert reason == "ok"
    assert missing == (0, 1)
    assert mass == pytest.approx(0.9)
    assert dist == pytest.approx({0: 0.0, 1: 0.0, 2: 0.7 / 0.9, 3: 0.2 / 0.9})
    assert p_chosen == pytest.approx(0.7 / 0.9)
    assert expected == pytest.approx((2 * 0.7 + 3 * 0.2) / 0.9)


@pytest.mark.parametrize(
    ("top", "expected"),
    [
        # no logprobs returned at all
        ([], LogprobScores(None, None, None, "no logprobs")),
        (None, LogprobScores(None, None, None, "no logprobs")),
        # only non-label tokens in the top list: no distribution, never a guess
        (
            [{"token": "The", "logprob": -0.1}, {"token": "4", "logprob": -2.0}],
            LogprobScores(None, None, None, "no label token"),
        ),
        # "2." is not exactly a label token
        ([{"token": "2.", "logprob": -0.1}], LogprobScores(None, None, None, "no label token")),
        # a lone label token gets probability 1
        (
            [{"token": "1", "logprob": -3.0}],
            LogprobScores(1.0, 1.0, {0: 0.0, 1: 1.0, 2: 0.0, 3: 0.0}, "ok", (0, 2, 3), math.exp(-3.0)),
        ),
        # a tie goes to the lower label, and the expectation sits between
        (
            [{"token": "1", "logprob": -1.0}, {"token": "2", "logprob": -1.0}],
            LogprobScores(0.5, 1.5, {0: 0.0, 1: 0.5, 2: 0.5, 3: 0.0}, "ok", (0, 3), 2 * math.exp(-1.0)),
        ),
    ],
)
def test_logprob_scores_edges(top: list[dict[str, object]] | None, expected: LogprobScores) -> None:
    assert label_logprob_scores(top) == expected


def test_label_token_top_logprobs_finds_last_label_token() -> None:
    content = [
        {"token": "Score", "top_logprobs": []},
        {"token": ":", "top_logprobs": []},
        {"token": " 2", "top_logprobs": [{"token": " 2", "logprob": -0.1}]},
    ]
    assert label_token_top_logprobs(content, 2) == [{"token": " 2", "logprob": -0.1}]
    assert label_token_top_logprobs(content, 3) is None
    assert label_token_top_logprobs(None, 3) is None


# An answer that is exactly one JSON object is read with one orjson.loads before the scan for objects (issue 35): the
# same result as the scan, which a leading space sends every text through.
ONE_OBJECT_ANSWERS = [
    '{"relevance": 2, "confidence_score": 85}',
    '{"relevance": 2, "relevance": 3, "confidence_score": 85}',  # a repeated key: the last one, as json reads it
    '{"relevance": 2, "confidence_score": NaN}',  # orjson refuses NaN: the scan reads it
    '{"relevance": 2, "confidence_score": 1e400}',  # orjson refuses infinity: the scan reads it
    '{"relevance": 2, "note": {"relevance": 0}}',  # a nested object holding the key: the outer one, once
    '{"relevance": 2} {"relevance": 3}',  # two objects: ambiguous
    '{"confidence_score": 85}',  # no "relevance": no JSON object
    '{"relevance": 2, "confidence_score": 85',  # cut off
    '{"relevance": 2, "confidence_score": 85, "why": "a <b>bold</b> claim"}',  # "<": the reasoning check first
    "{}",
]


@pytest.mark.parametrize("text", ONE_OBJECT_ANSWERS)
def test_one_json_object_is_read_as_the_scan_reads_it(text: str) -> None:
    from peras.llm.parsing import json_object_with

    fast, scanned = json_object_with(text, "relevance"), json_object_with(" " + text, "relevance")
    assert fast == scanned or (fast != fast and scanned != scanned)  # NaN is never equal to itself
    assert type(fast) is type(scanned)


KEYS = st.sampled_from(["relevance", "confidence_score", "x"])


@given(st.dictionaries(KEYS, st.integers() | st.floats() | st.text()))
@settings(max_examples=200, deadline=None)
def test_any_one_object_is_read_as_the_scan_reads_it(answer: dict) -> None:
    import json

    from peras.llm.parsing import json_object_with

    text = json.dumps(answer, ensure_ascii=False)
    fast, scanned = json_object_with(text, "relevance"), json_object_with(" " + text, "relevance")
    assert json.dumps(fast, sort_keys=True) == json.dumps(scanned, sort_keys=True)


def test_now_text_is_now_as_iso_text() -> None:
    from datetime import datetime, timedelta

    from peras.warehouse import now, now_text

    before = now()
    stamped = [now_text() for _ in range(3)]
    after = now()
    for text in stamped:
        assert len(text) == 26 and text[10] == "T" and text[19] == "."  # always with microseconds
        assert before - timedelta(microseconds=1) <= datetime.fromisoformat(text) <= after


@settings(max_examples=300, deadline=None)
@given(
    st.integers(2 * 10**9, 4_102_444_800 * 10**9),
    st.lists(st.integers(-(2 * 10**9), 2 * 10**9), min_size=1, max_size=6),
)
def test_now_text_writes_any_instant_as_isoformat_would(base: int, steps: list[int]) -> None:
    # The kept second's text is reused only within that second: instants in any order (the clock may step back),
    # across second boundaries, each written as datetime.isoformat writes it.
    from datetime import datetime, timedelta
    from unittest import mock

    from peras import warehouse

    for ns in (base + step for step in steps):
        with mock.patch.object(warehouse.time, "time_ns", return_value=ns):
            written = warehouse.now_text()
        expected = datetime(1970, 1, 1) + timedelta(microseconds=ns // 1000)
        assert written == expected.isoformat(timespec="microseconds")
