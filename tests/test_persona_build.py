"""Persona construction (`peras personas build`, `export`, `judge --personality-set`) against a scripted server."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

import pytest

from flows.personas import personas_build
from peras.bfi2 import load_items
from peras.prompting import load_personalities, load_prompt
from support.fake_openai import FakeOpenAI, instant
from tasks.personas.build_text import parse_instruction, parse_keywords
from tests.helpers import run_cli
from tests.prompt_files import prompt_file
from tests.test_personas import rows, use

ITEMS = {item.statement: item for item in load_items()}
NAMES = {p.name: p for p in load_personalities()}
STEP_1 = re.compile(r"^Please provide keywords related to (.+)\.$")
STEP_2 = re.compile(r"^(.+)\. Based on the keywords above, how would a person with (.+) behave when making")
PERSONA = re.compile(r"You are a person with (High|Low) (\w+) \(sample (\d+)\)")
STATEMENT = re.compile(r"^I am someone who (.+)$", re.M)


def keywords_answer(name: str) -> str:
    """A Step 1 answer as chat models write it: a preface, a numbered list with bold and glosses, a closing line."""
    return (
        f"Sure! Here are some keywords related to {name}:\n\n"
        "1. **Imaginative**: has a vivid inner life\n2. **Curious** - eager to learn\n3. Artistic (loves beauty)\n"
        "4. Adventurous\n\nThese keywords capture the essence of the trait."
    )


def instruction_answer(name: str, seed: int) -> str:
    """A Step 2 answer: a preface, the prompt in bold-labelled quotes, an afterword. The seed marks the sample."""
    return (
        f"Certainly! Below is a prompt that instructs an LLM to imitate a person with {name}:\n\n**Prompt:**\n\n"
        f'"You are a person with {name} (sample {seed}). Judge and decide as such a person would, in every answer '
        'you give."\n\nThis prompt encourages the model to stay in character.'
    )


def scripted(failing: str | None) -> Callable[[dict], str | list[str]]:
    """Both steps answered as above; BFI-2 items answered like the persona's trait, except that the `failing`
    condition's first sample (seed 43: round 1) answers at random; later samples answer like the trait."""

    def respond(request: dict) -> str:
        content = request["messages"][-1]["content"]
        seed = int(request.get("seed") or 0)
        if step := STEP_1.match(content):
            return keywords_answer(step.group(1))
        if step := STEP_2.match(content):
            return instruction_answer(step.group(2), seed)
        statement = STATEMENT.search(content)
        if statement is None:
            return instant(request)  # a judging request
        item = ITEMS[statement.group(1)]
        persona = PERSONA.search(content)
        noise = random.Random(f"{content[:80]} {item.item_id} {seed}").choice((-1, 0, 0, 1))
        if persona is None:
            return str(3 + noise)
        personality = NAMES[f"{persona.group(1)} {persona.group(2)}"]
        if personality.code == failing and persona.group(3) == "43":
            return str(random.Random(item.item_id * 1000 + seed).randint(1, 5))
        if personality.trait != item.domain:
            return str(3 + noise)
        score = 5 + min(0, noise) if personality.pole == "high" else 1 + max(0, noise)
        return str(score if item.keyed == "+" else 6 - score)

    return respond


@pytest.mark.core
def test_the_step_prompts_are_the_studys_words():
    step_1 = load_prompt(prompt_file("persona_keywords")).render(personality_type="High Openness")
    assert step_1 == "Please provide keywords related to High Openness."
    step_2 = load_prompt(prompt_file("persona_instruction")).render(
        personality_keywords="imaginative, curious", personality_type="High Openness"
    )
    assert step_2 == (
        "imaginative, curious. Based on the keywords above, how would a person with High Openness behave when making "
        "judgments and decisions? Generate a prompt that instructs an LLM to imitate a person with High Openness."
    )


@pytest.mark.core
@pytest.mark.parametrize(
    ("answer", "keywords"),
    [
        # a preface, a numbered list with bold keywords and glosses, a closing remark
        (keywords_answer("High Openness"), "Imaginative, Curious, Artistic, Adventurous"),
        # the study's example: one comma-separated line
        (
            "imaginative, curious, artistic, adventurous, original, insightful, broad-minded, aesthetic sensitivity",
            "imaginative, curious, artistic, adventurous, original, insightful, broad-minded, aesthetic sensitivity",
        ),
        # bullets, a duplicate (case-insensitive), a sentence that is no keyword
        (
            "Keywords:\n- Organized\n* disciplined\n- organized\n- A person who always plans everything far ahead\n",
            "Organized, disciplined",
        ),
    ],
)
def test_keywords_are_read_from_lists_and_lines(answer, keywords):
    parsed = parse_keywords(answer)
    assert (parsed.ok, parsed.value) == (True, keywords)


@pytest.mark.core
@pytest.mark.parametrize(
    ("answer", "instruction"),
    [
        # a preface, a bold "Prompt:" label, the prompt in quotes, an afterword
        (
            instruction_answer("High Openness", 43),
            "You are a person with High Openness (sample 43). Judge and decide as such a person would, in every "
            "answer you give.",
        ),
        # prose around a fenced block: the block
        (
            "A person low in conscientiousness acts on impulse.\n\nHere's a prompt you can use:\n\n```text\n"
            "You are someone with low conscientiousness. You decide quickly, without planning, and overlook "
            "details.\n```\n\nFeel free to adjust it.",
            "You are someone with low conscientiousness. You decide quickly, without planning, and overlook details.",
        ),
        # a markdown heading labels it, a blockquote holds it, a note follows
        (
            "### Prompt for imitating High Extraversion\n\n> You are an outgoing, **energetic** person. When you "
            "judge something, you go with your gut.\n\nNote: adjust the tone as needed.",
            "You are an outgoing, energetic person. When you judge something, you go with your gut.",
        ),
        # as the embedded 0.5B model wrote one: rules around a labelled prompt, bold bullets, an afterword
        (
            "Certainly! Here's a prompt that mimics a person with High Openness:\n\n---\n\n**Prompt:**\n"
            '"Please make judgments and decisions. What will you do next?"\n\n**Emphasis on High Openness:**\n'
            "- **Creativity:** think outside the box.\n\n---\n\nThis prompt provides a clear, engaging way.",
            '"Please make judgments and decisions. What will you do next?"\n\nEmphasis on High Openness:\n'
            "- Creativity: think outside the box.",
        ),
        # no wrapping at all: the answer is the instruction (two paragraphs kept)
        (
            "Imagine you are a calm, secure person.\n\nWhen you make decisions, you stay composed under pressure.",
            "Imagine you are a calm, secure person.\n\nWhen you make decisions, you stay composed under pressure.",
        ),
    ],
)
def test_the_instruction_is_extracted_from_prose_quotes_and_markdown(answer, instruction):
    parsed = parse_instruction(answer)
    assert (parsed.ok, parsed.value) == (True, instruction)


@pytest.mark.core
def test_an_answer_without_an_instruction_is_unreadable():
    parsed = parse_instruction('Sure! Here is the prompt:\n\n"Be open."')
    assert (parsed.ok, parsed.reason) == (False, "instruction has 2 words, fewer than 10")
    assert parse_keywords("\n\n").ok is False


@pytest.mark.integration
def test_a_failing_condition_is_rebuilt_and_its_rounds_recorded(settings):
    with FakeOpenAI(scripted(failing="HA")) as server:
        summary = personas_build(
            "mine",
            ["HA", "LA", "HO"],
            max_rounds=3,
            check_samples=4,
            items_per_domain=2,
            settings=use(settings, server),
        )
        steps = [r.body["messages"][0]["content"] for r in server.requests if r.body]
    rounds = {r["condition"]: r["rounds"] for r in summary["conditions"]}
    assert rounds == {"HA": 2, "LA": 1, "HO": 1}
    assert all(r["is_faithful"] for r in summary["conditions"])
    assert (summary["personality_set"], summary["model"]) == ("mine@1", "fake-model")
    assert sum(1 for s in steps if STEP_1.match(s)) == 4  # three conditions, HA twice
    assert sum(1 for s in steps if STEP_2.match(s)) == 4
    assert rows(settings, "select status from persona_sets") == [("published",)]
    assert rows(
        settings,
        "select round, is_faithful, check_run_name, keywords, instruction from persona_set_builds"
        " where condition = 'HA' order by round",
    ) == [
        (1, False, "build-mine-v1-round1", "Imaginative, Curious, Artistic, Adventurous",
         "You are a person with High Agreeableness (sample 43). Judge and decide as such a person would, in every "
         "answer you give."),
        (2, True, "build-mine-v1-round2", "Imaginative, Curious, Artistic, Adventurous",
         "You are a person with High Agreeableness (sample 44). Judge and decide as such a person would, in every "
         "answer you give."),
    ]  # fmt: skip
    assert rows(settings, "select personality, chosen_round from persona_set_members where condition = 'HA'") == [
        ("mine-v1-HA", 2)
    ]
    # round 2 asked only HA's ten new items x (1 + 3) samples: default's and the others' answers were reused
    assert rows(settings, "select run_name, status from persona_check_runs order by run_name") == [
        ("build-mine-v1-round1", "published"),
        ("build-mine-v1-round2", "published"),
    ]


@pytest.fixture
def sample(settings, tmp_path, monkeypatch, ingested):
    """The shipped sample (5 topics, 8 judged passages each) in a fresh warehouse."""
    monkeypatch.setenv("PERAS_ENDPOINT_SLOTS_DIR", str(tmp_path / "slots"))
    ingested("sample", settings)
    return settings


@pytest.mark.integration
def test_a_built_set_judges_end_to_end_and_exports(sample, capsys, tmp_path):
    warehouse = str(sample.warehouse)
    with FakeOpenAI(scripted(failing=None)) as server:
        endpoint = ["--base-url", server.base_url, "--model", "fake-model", "--warehouse", warehouse]
        built = run_cli(capsys, "personas", "build", "mine", "--condition", "HO", "--condition", "LO",
                        "--max-rounds", "1", "--check-samples", "4", "--items-per-domain", "2", *endpoint)  # fmt: skip
        assert built.exit_code == 0, built.err
        assert built.out.splitlines()[-1] == "set mine@1: 2 of 2 conditions faithful; model fake-model"
        judged = run_cli(capsys, "judge", "sample", "--personality-set", "mine", "--cot", "without",
                         "--limit-pairs", "4", *endpoint)  # fmt: skip
        assert judged.exit_code == 0, judged.err
    assert rows(sample, "select count(*), count(distinct personality) from judgments") == [(12, 3)]
    assert rows(sample, "select instruction from personalities where personality = 'mine-v1-LO'") == [
        ("You are a person with Low Openness (sample 43). Judge and decide as such a person would, in every answer "
         "you give.",)
    ]  # fmt: skip
    exported = run_cli(
        capsys, "personas", "export", "mine", "--output", str(tmp_path / "out"), "--warehouse", warehouse
    )
    assert exported.exit_code == 0, exported.err
    assert exported.out == f"2 personality files written to {tmp_path / 'out'}\n"
    user = load_personalities(tmp_path / "out")[11:]
    assert [(p.code, p.trait, p.pole) for p in user] == [("mine-v1-HO", "Openness", "high"),
                                                      ("mine-v1-LO", "Openness", "low")]  # fmt: skip
