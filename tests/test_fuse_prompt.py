"""The fuser template (peras/prompts/fuser.toml): the study's wording kept, eleven judges rendered as JSON outputs,
and a template file that drifts refused on load."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from peras.errors import InputError
from peras.prompting import CANONICAL_ORDER, load_prompt
from tasks.fuse.asking import shuffled_judges
from tasks.fuse.prompt import build_fuser_messages, judge_output, read_fuser_prompt
from tests.paper_text import apply_changes, changes_table, excerpt, normalise
from tests.prompt_files import prompt_file

pytestmark = pytest.mark.core

DOC = Path(__file__).resolve().parents[1] / "docs" / "fuse.md"


def test_the_prompt_is_the_papers_a4_with_the_documented_changes():
    # The overconfidence paper's appendix A.4 with exactly docs/fuse.md's changes made is the prompt file's text.
    paper = excerpt(
        "overconfidence", "You are a helpful assistant tasked with combining", "}", after="##### LLM-AS-A-FUSER"
    )
    changes = changes_table(DOC, "## The fuser prompt")
    assert len(changes) == 13
    template = tomllib.loads((prompt_file("fuser")).read_text())["template"]
    assert apply_changes(paper, changes) == normalise(template)


def test_eleven_judges_render_as_numbered_json_outputs_with_the_study_wording():
    outputs = [judge_output(i % 4, 50.0 + i, f"judge {code} explains", None) for i, code in enumerate(CANONICAL_ORDER)]
    [message] = build_fuser_messages("what is a cat", "A cat is a small feline.", outputs)
    text = message["content"]
    assert message["role"] == "user"
    assert text.startswith("You are a helpful assistant tasked with combining multiple model responses to select the")
    shown = [line for line in text.splitlines() if line.startswith("  - JSON Output ")]
    assert shown == [f"  - JSON Output {i}: {output}" for i, output in enumerate(outputs, start=1)]
    assert json.loads(shown[10].split(": ", 1)[1]) == {
        "relevance": 2,
        "confidence_score": 60,
        "explanation": "judge LO explains",
    }
    # the loop's block tags leave no lines of their own
    assert "Query: what is a cat\nPassage: A cat is a small feline.\n- **JSON Outputs**:\n  - JSON Output 1: " in text
    assert f"{outputs[-1]}\n\n**Steps:**\n" in text
    # the rules are the judges' own rubric, word for word, as the instruction
    rubric = load_prompt("label_cot").template.split("\nQuery:")[0]
    assert f"- **Instruction**: {rubric}\nQuery: what is a cat\n" in text
    assert text.endswith(
        '"explanation": "Why you chose this relevance score, referencing JSON explanations, '
        'confidence scores, and evaluation rules."\n}\n```'
    )


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
        (("{% endfor %}", "{% endfor"), "not valid Jinja"),
    ],
)
def test_a_drifted_template_is_refused(tmp_path, change, message):
    path = tmp_path / "fuser.toml"
    path.write_text((prompt_file("fuser")).read_text().replace(*change))
    with pytest.raises(InputError, match=message):
        read_fuser_prompt(path)
