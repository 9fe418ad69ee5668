"""Issue 30 against the real embedded llama.cpp server: the probe finds its dialect in one request, a constrained
label is one of 0-3 where the free answer is not, a constrained JSON answer has exactly the schema's keys, and every
regex shape's GBNF grammar is one llama-server accepts and keeps to."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from peras import local_model as lm
from peras.llm.client import LLMClient
from peras.llm.constraints import Probe, answer_shape, constrain, numbered_shape, probe_dialect
from peras.llm.joint_parsing import parse_self_answer
from peras.llm.logprobs import label_logprob_scores, label_token
from peras.prompting import select_personalities
from peras.settings import Settings
from tasks.judge.prompt import build_joint_messages, build_label_messages
from tasks.pairwise.prompt import build_pairwise_messages
from tasks.recognize.parsing import read_state
from tasks.recognize.prompt import state_messages
from tasks.recognize.sentences import numbered, split_sentences
from tests.prompt_files import prompt_file

pytestmark = pytest.mark.model

QUERY = "what is the boiling point of water at sea level"
PASSAGE = "At sea level, pure water boils at 100 degrees Celsius (212 degrees Fahrenheit)."
OTHER = "The Eiffel Tower is a wrought-iron lattice tower in Paris."
TIMEOUT_S = 900.0  # a 200-token answer on two shared cores under load took more than the default 120 s


@pytest.fixture(scope="module")
def server() -> Iterator[lm.LocalServer]:
    with lm.local_server(Settings(), parallel=1) as running:
        yield running


def local_client(server: lm.LocalServer) -> LLMClient:
    """A client of the embedded server, patient with a loaded machine, that never retries (requests are counted)."""
    return LLMClient([server.base_url], server.model, concurrency=1, timeout_s=TIMEOUT_S, max_retries=0)


def ask(server: lm.LocalServer, messages: list[dict[str, str]], params: dict[str, Any]) -> tuple[str, int]:
    """The answer's text and the requests the client sent."""

    async def one() -> tuple[str, int]:
        async with local_client(server) as client:
            result = await client.chat(messages, params)
            return result.text, client.requests_sent

    return asyncio.run(one())


def test_the_probe_finds_llama_cpp_in_one_request(server):
    async def probe() -> tuple[Probe, int]:
        async with local_client(server) as client:
            return await probe_dialect(client.chat), client.requests_sent

    assert asyncio.run(probe()) == (Probe("llama.cpp", "the probe's llama.cpp constraint held"), 1)


def test_a_constrained_label_request_returns_one_of_0_3(server):
    # A request that asks for prose: the model writes a sentence unconstrained, and one digit constrained.
    messages = [{"role": "user", "content": f"Describe this passage in one sentence: {PASSAGE}"}]
    params = {"temperature": 0.0, "max_tokens": 24}
    free, _ = ask(server, messages, params)
    constrained, sent = ask(server, messages, constrain(params, answer_shape("label_nocot"), "llama.cpp"))
    assert sent == 1
    assert constrained in {"0", "1", "2", "3"}
    assert not re.fullmatch(r"\s*[0-3]\s*", free)  # the same request, free, is not a bare label


def test_logprob_under_the_label_constraint_reads_the_label_distribution_at_the_first_token(server):
    default = select_personalities(["default"])[0]
    messages = build_label_messages(default, QUERY, PASSAGE, False)
    params = {"temperature": 0.0, "max_tokens": 4, "logprobs": True, "top_logprobs": 20}

    async def one() -> Any:
        async with local_client(server) as client:
            return await client.chat(messages, constrain(params, answer_shape("label_nocot"), "llama.cpp"))

    result = asyncio.run(one())
    label = int(result.text)
    index, top = label_token(result.logprobs[0], label)
    scores = label_logprob_scores(top)
    assert index == 0  # the grammar makes the first token the label
    assert scores.dist is not None and max(scores.dist, key=lambda k: (scores.dist[k], -k)) == label
    assert 0.0 < (scores.mass or 0.0) <= 1.0


def test_a_constrained_json_request_returns_the_schemas_keys(server):
    default = select_personalities(["default"])[0]
    messages = build_joint_messages(default, QUERY, PASSAGE, False, "self")
    params = constrain({"temperature": 0.0, "max_tokens": 200}, answer_shape(prompt_file("self_nocot")), "llama.cpp")
    text, _ = ask(server, messages, params)
    answer = json.loads(text)
    assert list(answer) == ["relevance", "confidence_score", "explanation"]
    assert answer["relevance"] in (0, 1, 2, 3) and 0 <= answer["confidence_score"] <= 100
    assert parse_self_answer(text).ok


@pytest.mark.parametrize("prompt", ["label_cot", "confidence", "certainty_nocot", "pairwise_tie", "pairwise_certainty"])
def test_each_grammar_is_accepted_and_kept_to(server, prompt):
    default = select_personalities(["default"])[0]
    messages = {
        "label_cot": lambda: build_label_messages(default, QUERY, PASSAGE, True),
        "confidence": lambda: [{"role": "user", "content": "How confident are you, 0 to 100? Say it in words."}],
        "certainty_nocot": lambda: build_joint_messages(default, QUERY, PASSAGE, False, "certainty"),
        "pairwise_tie": lambda: build_pairwise_messages(default, "pairwise_tie", QUERY, PASSAGE, OTHER),
        "pairwise_certainty": lambda: build_pairwise_messages(default, "pairwise_certainty", QUERY, PASSAGE, OTHER),
    }[prompt]()
    shape = answer_shape(prompt_file(prompt))
    text, _ = ask(server, messages, constrain({"temperature": 0.0, "max_tokens": 160}, shape, "llama.cpp"))
    assert re.fullmatch(shape.regex or "|".join(map(re.escape, shape.choice or ())), text), text


def test_the_recognize_grammar_is_kept_to_and_its_ids_name_sentences(server):
    sentences = split_sentences("The passage names the boiling point. It answers the query exactly. Final score: 3")
    messages = state_messages("conscientiousness", numbered(sentences))
    shape = numbered_shape(prompt_file("recognize_state")).for_count(len(sentences))
    text, _ = ask(server, messages, constrain({"temperature": 0.0, "max_tokens": 160}, shape, "llama.cpp"))
    assert re.fullmatch(shape.regex or "", text), text
    assert read_state(text, len(sentences)).ok
