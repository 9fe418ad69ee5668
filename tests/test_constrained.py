"""Issue 30: each prompt's answer shape, the fields each dialect sends for it, and the probe that finds the dialect."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from peras.bfi2 import parse_answer
from peras.errors import RequestRejected, UsageError
from peras.llm.constraints import (
    DIALECTS,
    PROBE_ANSWERS,
    Probe,
    answer_shape,
    constrain,
    constraint_fields,
    keyed_shape,
    numbered_shape,
    probe_dialect,
    probe_params,
    resolve_answer_format,
)
from peras.llm.joint_parsing import parse_self_answer
from peras.llm.parsing import parse_confidence, parse_label
from support.fake_openai import speaking
from tasks.judge.parsing import parse_certainty_answer
from tasks.pairwise.parsing import PARSERS
from tasks.priming.prompt import parse_batch_answer
from tasks.recognize.parsing import read_state
from tests.prompt_files import FORMAT_PROMPTS, prompt_file

pytestmark = pytest.mark.core

LABEL = ["0", "1", "2", "3"]


@pytest.mark.parametrize(
    ("dialect", "fields"),
    [
        ("vllm", {"structured_outputs": {"choice": LABEL}}),
        ("vllm-guided", {"guided_choice": LABEL}),
        ("llama.cpp", {"grammar": 'root ::= "0" | "1" | "2" | "3"'}),
        ("openai", None),  # hosted APIs take JSON schemas only: the no-CoT label stays free text there
        ("free", None),
    ],
)
def test_the_no_cot_label_is_a_choice_of_four_digits_in_each_dialect(dialect, fields):
    assert constraint_fields(answer_shape(prompt_file("label_nocot")), dialect) == fields


def test_a_json_answer_is_a_schema_in_each_dialect_and_strict_for_openai():
    shape = answer_shape(prompt_file("self_nocot"))
    schema = {
        "type": "object",
        "required": ["relevance", "confidence_score", "explanation"],
        "additionalProperties": False,
        "properties": {
            "relevance": {"type": "integer", "enum": [0, 1, 2, 3]},
            "confidence_score": {"type": "integer", "minimum": 0, "maximum": 100},
            "explanation": {"type": "string", "maxLength": 400},
        },
    }
    assert shape.schema == schema
    assert constraint_fields(shape, "vllm") == {"structured_outputs": {"json": schema}}
    assert constraint_fields(shape, "vllm-guided") == {"guided_json": schema}
    assert constraint_fields(shape, "llama.cpp") == {"json_schema": schema}
    strict = json.loads(json.dumps(schema))
    del strict["properties"]["explanation"]["maxLength"]  # strict structured outputs refuse maxLength
    assert constraint_fields(shape, "openai") == {
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "self_nocot", "schema": strict, "strict": True},
        }
    }


def test_a_regex_shape_is_a_regex_for_vllm_and_its_grammar_for_llama_cpp():
    shape = answer_shape(prompt_file("label_cot"))
    assert constraint_fields(shape, "vllm") == {"structured_outputs": {"regex": shape.regex}}
    assert constraint_fields(shape, "vllm-guided") == {"guided_regex": shape.regex}
    assert constraint_fields(shape, "llama.cpp") == {"grammar": 'root ::= line* [0-3]\nline ::= [^\\n]* "\\n"'}


def test_the_constraint_joins_extra_body_and_leaves_the_rest_of_the_parameters():
    params = {"temperature": 0.0, "max_tokens": 4, "extra_body": {"cache_prompt": True}}
    assert constrain(params, answer_shape(prompt_file("bfi2_item")), "vllm-guided") == {
        "temperature": 0.0,
        "max_tokens": 4,
        "extra_body": {"cache_prompt": True, "guided_choice": ["1", "2", "3", "4", "5"]},
    }
    assert params["extra_body"] == {"cache_prompt": True}  # not changed in place
    assert constrain(params, answer_shape(prompt_file("label_nocot")), "openai") is params
    assert constrain(params, None, "vllm") is params


def test_the_priming_batch_is_an_object_with_exactly_its_passage_ids_in_order():
    shape = keyed_shape(prompt_file("batch_umbrela")).for_keys(("d7", "d2"))
    score = {"type": "integer", "enum": [0, 1, 2, 3]}
    assert shape.schema == {
        "type": "object",
        "properties": {"d7": score, "d2": score},
        "required": ["d7", "d2"],
        "additionalProperties": False,
    }


# Each row: a prompt, an answer its constraint allows, and what the prompt's own parser reads from it.
ALLOWED = [
    ("label_nocot", "2", lambda t: parse_label(t, False).value, 2),
    ("label_cot", "M: 2, T: 1.\nThe passage answers it.\n3", lambda t: parse_label(t, True).value, 3),
    ("label_cot", "Final score (O):\n0", lambda t: parse_label(t, True).value, 0),
    ("label_cot", "2", lambda t: parse_label(t, True).value, 2),
    ("confidence", "100", lambda t: parse_confidence(t).value, 100.0),
    ("confidence", "7", lambda t: parse_confidence(t).value, 7.0),
    ("certainty_nocot", "[[2]] [[85]]", lambda t: parse_certainty_answer(t).confidence, 85.0),
    ("certainty_cot", "It matches.\n[[1]]\nCertainty: [[40]]", lambda t: parse_certainty_answer(t).value, 1),
    ("pairwise_certainty", "B]] Passage B answers it. [[90]]", lambda t: PARSERS["pairwise_certainty"](t).value, "B"),
    ("pairwise_tie", "C]]", lambda t: PARSERS["pairwise_tie"](t).value, "C"),
    ("bfi2_item", "4", lambda t: parse_answer(t).value, 4),
    (
        "self_cot",
        '{"relevance": 2, "confidence_score": 80, "explanation": "x"}',
        lambda t: parse_self_answer(t).value,
        2,
    ),
    (
        "self_pairwise",
        '{"selected_output": "Output (b)", "confidence_score": 70, "explanation": "x"}',
        lambda t: PARSERS["self_pairwise"](t).value,
        "B",
    ),
    (
        "mp_logp_pairwise",
        '{"selected_output": "Output (a)", "explanation": "x"}',
        lambda t: PARSERS["mp_logp_pairwise"](t).value,
        "A",
    ),
]


@pytest.mark.parametrize(("prompt", "text", "read", "value"), ALLOWED)
def test_an_answer_the_constraint_allows_reads_with_the_prompts_parser(prompt, text, read, value):
    assert answer_shape(prompt_file(prompt)).allows(text)
    assert read(text) == value


@pytest.mark.parametrize(
    ("prompt", "text"),
    [
        ("label_nocot", "2."),  # nothing but the digit
        ("label_cot", "The score is 2"),  # the last line is the score alone
        ("label_cot", "2\nbecause it answers"),
        ("confidence", "101"),
        ("pairwise_certainty", "A]] [[Highly Confident]]"),  # the failure: a certainty in words
        ("pairwise_certainty", "A]] [[99]] [[A]]"),  # a third bracketed value
        ("certainty_nocot", "[[4]] [[50]]"),
        ("bfi2_item", "6"),
        ("mp_logp_pairwise", '{"selected_output": "Output (a)", "confidence_score": 80, "explanation": "x"}'),
    ],
)
def test_what_the_parsers_refuse_the_constraint_does_not_allow(prompt, text):
    assert not answer_shape(prompt_file(prompt)).allows(text)


def test_the_batch_answer_the_constraint_builds_reads():
    assert parse_batch_answer('{"d7": 3, "d2": 0}', ("d7", "d2")).scores == (3, 0)


def test_every_prompt_that_asks_for_a_fixed_format_has_a_shape():
    free_text = {"persona_keywords", "persona_instruction", "batch_umbrela"}
    for name in sorted(set(FORMAT_PROMPTS) - free_text):
        assert answer_shape(prompt_file(name)).name == name
    assert answer_shape(prompt_file("fuser")).kind == "json"
    with pytest.raises(ValueError, match="persona_keywords"):
        answer_shape(prompt_file("persona_keywords"))


def test_a_gbnf_grammar_for_every_regex_shape():
    for name in ("label_cot", "confidence", "certainty_nocot", "certainty_cot", "pairwise_certainty"):
        shape = answer_shape(prompt_file(name))
        assert shape.kind == "regex" and shape.grammar and shape.grammar.startswith("root ::= ")
        re.compile(shape.regex or "")


class Result:
    def __init__(self, text: str) -> None:
        self.text = text


def probing(server: Any) -> tuple[Probe, list[dict[str, Any]]]:
    """Probe a scripted server (a `speaking` responder) through a stand-in for LLMClient.chat."""
    sent: list[dict[str, Any]] = []

    async def chat(messages: list[dict[str, str]], params: dict[str, Any]) -> Result:
        body = {"messages": messages} | {k: v for k, v in params.items() if k != "extra_body"} | params["extra_body"]
        sent.append(body)
        reply = server(body)
        if not isinstance(reply, str):
            raise RequestRejected(f"http://x/v1 rejected the request: HTTP {reply.status}: unknown field")
        return Result(reply)

    return asyncio.run(probe_dialect(chat)), sent


@pytest.mark.parametrize("dialect", DIALECTS)
def test_the_probe_finds_each_dialect_in_one_request_or_two_for_openai(dialect):
    probe, sent = probing(speaking(dialect))
    assert probe == Probe(dialect, f"the probe's {dialect} constraint held")
    first = {"structured_outputs", "guided_choice", "grammar"}
    assert [set(body) - {"messages", "temperature", "max_tokens"} for body in sent] == (
        [first, {"response_format"}] if dialect == "openai" else [first]
    )


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_strict_server_refusing_unknown_fields_is_probed_one_dialect_at_a_time(dialect):
    probe, sent = probing(speaking(dialect, unknown="reject"))
    assert probe.answer_format == dialect
    expected = {"vllm": 3, "vllm-guided": 4, "llama.cpp": 5, "openai": 2}[dialect]
    assert len(sent) == expected


def test_a_server_that_ignores_every_constraint_is_free_text_said_so():
    probe, sent = probing(speaking(None))
    assert probe == Probe(
        "free",
        "no constraint held, answers are free text read by the parsers: vllm + vllm-guided + llama.cpp: ignored;"
        " openai: ignored",
    )
    assert len(sent) == 2


def test_a_server_that_refuses_every_constraint_is_free_text_said_so():
    probe, sent = probing(speaking(None, unknown="reject"))
    assert probe.answer_format == "free" and len(sent) == 5
    assert probe.found.endswith(
        "vllm: rejected (HTTP 400); vllm-guided: rejected (HTTP 400); llama.cpp: rejected (HTTP 400)"
    )


def test_constrained_refuses_an_endpoint_that_enforces_nothing():
    with pytest.raises(UsageError, match="--answer-format constrained: the endpoint enforces no constraint"):
        resolve_answer_format("constrained", Probe("free", "none held"))
    assert resolve_answer_format("auto", Probe("free", "none held")) == Probe("free", "none held")


def test_the_probe_answers_differ_per_dialect():
    assert len(set(PROBE_ANSWERS.values())) == len(DIALECTS)
    assert probe_params(("llama.cpp",))["extra_body"] == {"grammar": 'root ::= "peras probe 3"'}


# The recognize stage's state answer (tasks/recognize/parsing.py read_state), for an answer of 3 sentences.
RECOGNIZE_ALLOWED = [
    (
        "[Dialogue 1]\n- analysis: The assessor hedges twice.\n- level: high\n- utterance ids: 1, 3",
        {"level": "high", "utterance_ids": [1, 3], "analysis": "The assessor hedges twice."},
    ),
    (
        "- analysis: It states a score.\n- level: uncertain\n- utterance ids: none",
        {"level": "uncertain", "utterance_ids": [], "analysis": "It states a score."},
    ),
    ("- analysis:\n- level: low\n- utterance ids: 2,2", {"level": "low", "utterance_ids": [2], "analysis": ""}),
]


@pytest.mark.parametrize(("text", "value"), RECOGNIZE_ALLOWED)
def test_a_recognize_answer_the_constraint_allows_reads_with_its_parser(text, value):
    assert numbered_shape(prompt_file("recognize_state")).for_count(3).allows(text)
    assert read_state(text, 3).value == value


@pytest.mark.parametrize(
    "text",
    [
        "- analysis: x\n- level: high\n- utterance ids: 4",  # names no sentence of a 3-sentence answer
        "- analysis: x\n- level: high\n- utterance ids: none",  # high must cite a sentence
        "- analysis: x\n- level: uncertain\n- utterance ids: 1",  # uncertain cites none
        "- analysis: x\n- level: medium\n- utterance ids: 1",
        "- analysis: x\nlevel: high\n- level: low\n- utterance ids: 1",  # a second analysis line
    ],
)
def test_what_the_recognize_parser_refuses_or_misreads_the_constraint_does_not_allow(text):
    assert not numbered_shape(prompt_file("recognize_state")).for_count(3).allows(text)


def test_the_recognize_ids_are_the_requests_sentence_numbers_in_each_dialect():
    shape = numbered_shape(prompt_file("recognize_state")).for_count(3)
    assert shape.kind == "regex"
    assert shape.grammar == (
        'root ::= ("[Dialogue 1]\\n")? "- analysis:" [^\\n\\r]* "\\n- level: " verdict\n'
        'verdict ::= ("high" | "low") "\\n- utterance ids: " id ("," " "? id){0,2} '
        '| "uncertain\\n- utterance ids: none"\n'
        'id ::= ("3" | "2" | "1")'
    )
    assert constraint_fields(shape, "llama.cpp") == {"grammar": shape.grammar}
    assert constraint_fields(shape, "vllm") == {"structured_outputs": {"regex": shape.regex}}
    assert constraint_fields(shape, "openai") is None  # hosted APIs: JSON schemas only, the answer stays free text
    assert (
        numbered_shape(prompt_file("recognize_state"))
        .for_count(12)
        .allows("- analysis: x\n- level: low\n- utterance ids: 12")
    )
    with pytest.raises(ValueError, match="recognize_trait"):
        numbered_shape(prompt_file("recognize_trait"))


# What the embedded 0.5B model wrote free (2026-11-27): the facet paragraphs, never the summary line step 4 asks for.
TRAIT_WITHOUT_SUMMARY = (
    "In terms of anxiety, the assessor shows that they feel anxious (1). This shows that the assessor's trait level is"
    " high in neuroticism.\n\nIn terms of depression, the assessor shows that they feel depressed (1).\n\nIn terms of"
    " emotional volatility, the assessor is moody (1)."
)


def test_a_trait_answer_keeps_its_paragraphs_free_and_ends_with_the_summary_its_parser_reads():
    from tasks.recognize.parsing import read_trait
    from tasks.recognize.prompt import facets

    shape = answer_shape(prompt_file("recognize_trait"))
    whole = f"{TRAIT_WITHOUT_SUMMARY}\nIn summary, it is judged that the assessor's trait level is high in neuroticism."
    assert shape.allows(whole)
    assert read_trait(whole, 1, facets("neuroticism"), "neuroticism").value["level"] == "high"
    assert not shape.allows(TRAIT_WITHOUT_SUMMARY)
    assert not read_trait(TRAIT_WITHOUT_SUMMARY, 1, facets("neuroticism"), "neuroticism").ok
    assert constraint_fields(shape, "llama.cpp") == {"grammar": shape.grammar}
