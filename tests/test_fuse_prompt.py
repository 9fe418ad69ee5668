"""The fuser template (peras/prompts/fuser.toml): the study's wording kept, eleven judges rendered as JSON outputs,
and a template file that drifts refused on load."""

from __future__ import annotations

import json

import pytest

from peras.errors import InputError
from peras.paths import PROMPTS_DIR
from peras.prompting import CANONICAL_ORDER, load_prompt
from tasks.fuse.asking import shuffled_judges
from tasks.fuse.prompt import build_fuser_messages, judge_output, read_fuser_prompt

pytestmark = pytest.mark.core

STUDY = (
    "You are a helpful assistant tasked with combining multiple model responses",
    "1. Check JSON Outputs: Look at each selected relevance, confidence_score and explanation. Note the "
    "confidence_score, but focus on the quality of the explanation and whether it follows the rules.",
    "4. Explain: Give a short explanation of your selection, mentioning where the models agree and where they differ.",
    '"confidence_score": number(0-100),',
    "Your response must be in the JSON format as shown above. Do not output ANYTHING else. "
    "Do not provide the % symbol.",
)


def test_eleven_judges_render_as_numbered_json_outputs_with_the_study_wording():
    outputs = [judge_output(i % 4, 50.0 + i, f"judge {code} explains", None) for i, code in enumerate(CANONICAL_ORDER)]
    [message] = build_fuser_messages("what is a cat", "A cat is a small feline.", outputs)
    text = message["content"]
    assert message["role"] == "user" and text.startswith(STUDY[0])
    assert all(part in text for part in STUDY)
    shown = [line for line in text.splitlines() if line.startswith("JSON Output ")]
    assert shown == [f"JSON Output {i}: {output}" for i, output in enumerate(outputs, start=1)]
    assert json.loads(shown[10].split(": ", 1)[1]) == {
        "relevance": 2,
        "confidence_score": 60,
        "explanation": "judge LO explains",
    }
    assert "Query: what is a cat\nPassage: A cat is a small feline.\nJSON Outputs:\nJSON Output 1: " in text
    # the rules are the judges' own rubric, word for word
    rubric = load_prompt("label_cot").template.split("\nQuery:")[0].split("meanings:\n", 1)[1]
    assert rubric in text


@pytest.mark.parametrize(
    ("label", "confidence", "explanation", "name", "expected"),
    [
        # a CoT judge with a confidence, anonymised; the explanation is stripped
        (3, 85.0, "  Clear answer.\n", None, {"relevance": 3, "confidence_score": 85, "explanation": "Clear answer."}),
        # a fractional confidence is kept to two decimals
        (1, 72.456, None, None, {"relevance": 1, "confidence_score": 72.46}),
        # a label-only judge, named
        (0, None, None, "HA", {"judge": "HA", "relevance": 0}),
    ],
)
def test_judge_output(label, confidence, explanation, name, expected):
    assert json.loads(judge_output(label, confidence, explanation, name)) == expected


def test_the_shuffle_is_a_seeded_permutation_per_pair():
    judges = list(CANONICAL_ORDER)
    first = shuffled_judges(judges, 42, "q1", "d1")
    assert sorted(first) == sorted(judges) and first != tuple(judges)
    assert shuffled_judges(judges, 42, "q1", "d1") == first
    assert shuffled_judges(judges, 42, "q1", "d2") != first
    assert shuffled_judges(judges, 7, "q1", "d1") != first


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # the study's opening reworded
        (("combining multiple model responses", "merging several answers"), "lacks the study's wording"),
        # a variable nobody declared
        (("Passage: {{ passage }}", "Passage: {{ passage }} {{ title }}"), "template variables"),
        # broken Jinja
        (("{%- endfor %}", "{%- endfor"), "not valid Jinja"),
    ],
)
def test_a_drifted_template_is_refused(tmp_path, change, message):
    path = tmp_path / "fuser.toml"
    path.write_text((PROMPTS_DIR / "fuser.toml").read_text().replace(*change))
    with pytest.raises(InputError, match=message):
        read_fuser_prompt(path)
