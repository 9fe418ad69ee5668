"""The recognize stage's text side (issue 33), no server: the prompt is the PersonalityEvd paper's Figure 6 with
exactly docs/personas.md's changes, the dimension definition is the BFI-2's facets and items, sentences split into
ids on real CoT answers, and answers read strictly (ids naming no sentence are failures)."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from peras.errors import InputError
from tasks.recognize.parsing import read_score, read_state, read_trait
from tasks.recognize.prompt import (
    dimension_definition,
    evidence_messages,
    facets,
    read_recognize_prompt,
    state_messages,
)
from tasks.recognize.sentences import numbered, split_sentences
from tests.paper_text import apply_changes, changes_table, normalise, paper_text
from tests.prompt_files import prompt_file

pytestmark = pytest.mark.core

DOC = Path(__file__).resolve().parents[1] / "docs" / "personas.md"


def figure_6() -> str:
    """The paper's Figure 6 as extracted: from '## Role :' to the caption."""
    text = paper_text("personality-evd")
    return text[text.index("## Role : [Master") : text.index("Figure 6: The prompt for GPT-4")]


def test_the_prompt_is_figure_6_with_the_documented_changes():
    changes = changes_table(DOC, "### The recognize prompt")
    assert len(changes) == 6
    template = tomllib.loads((prompt_file("recognize_state")).read_text())["template"]
    assert apply_changes(figure_6(), changes) == normalise(template)
    # the template keeps the paper's line breaks (only the PDF's wrapped lines are joined)
    assert template.count("\n") == figure_6().count("\n") - 2


def test_a_request_is_the_template_filled_with_definition_and_numbered_sentences():
    [message] = state_messages("neuroticism", numbered(["I worry.", "Score 2."]))
    text = message["content"]
    assert "2. The definition of neuroticism: Neuroticism has three facets;" in text
    assert "- Anxiety\n  - high: Can be tense. Worries a lot.\n  - low: Is relaxed, handles stress well. " in text
    assert (
        "## Inputs :\n[Dialogue 1]\n1. the assessor: I worry.\n2. the assessor: Score 2.\n## Initialization :" in text
    )
    assert "{" not in text and "the assessor , and then judge the neuroticism level." in text


def test_each_definition_holds_its_three_facets_and_twelve_items():
    for dimension in ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism"):
        lines = dimension_definition(dimension).splitlines()
        assert [line[2:] for line in lines if line.startswith("- ")] == list(facets(dimension))
        assert sum(line.count(".") for line in lines if line.startswith("  - ")) == 12
    assert facets("agreeableness") == ("Compassion", "Respectfulness", "Trust")


# A real with-CoT answer of the embedded model (qwen2.5-coder-0.5b-instruct q4_k_m, on this machine 2026-11-25):
# `peras judge sample --personality default --cot with --confidence-method self`, topic s1, passage e3. The JSON's
# braces carry no words and are no sentence; the explanation's two sentences are two.
REAL_ANSWERS = [
    (
        '{\n  "relevance": 2,\n  "confidence_score": 0.8,\n  "explanation": "The passage discusses egg cooking times '
        "and provides information about different cooking methods, but it does not answer the question about boiling "
        "an egg for a soft yolk. The passage is not entirely relevant to the topic and does not contain the exact "
        'answer."\n}',
        [
            '"relevance": 2,',
            '"confidence_score": 0.8,',
            '"explanation": "The passage discusses egg cooking times and provides information about different cooking '
            "methods, but it does not answer the question about boiling an egg for a soft yolk.",
            'The passage is not entirely relevant to the topic and does not contain the exact answer."',
        ],
    ),
]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        *REAL_ANSWERS,
        # abbreviations and decimals do not end a sentence; a line break always does
        (
            "It costs e.g. 2.5 dollars. Dr. Smith agrees!\n\nFinal score: 2",
            ["It costs e.g. 2.5 dollars.", "Dr. Smith agrees!", "Final score: 2"],
        ),
        # a code fence or a rule has no words: no sentence
        ("```\nScore 1.\n---", ["Score 1."]),
        # lower case after a full stop continues the sentence
        ("the score is 2. since it helps. Yes.", ["the score is 2. since it helps.", "Yes."]),
    ],
)
def test_sentences(text, expected):
    assert split_sentences(text) == expected


@pytest.mark.parametrize(
    ("answer", "value", "reason"),
    [
        # the paper's output format, bold field names, a "U" before an id
        ("[Dialogue 1]\n- analysis: worries (2).\n- **level:** High\n- utterance ids: 2, U1",
         {"level": "high", "utterance_ids": [1, 2], "analysis": "worries (2)."}, ""),
        ("- analysis: nothing\n- level: uncertain\n- utterance ids: none",
         {"level": "uncertain", "utterance_ids": [], "analysis": "nothing"}, ""),
        # an id naming no sentence of a 3-sentence answer
        ("- analysis: x\n- level: low\n- utterance ids: 1, 4", None,
         "utterance ids [4] name no sentence (the answer has 3)"),
        ("- analysis: x\n- level: low\n- utterance ids: 0", None,
         "utterance ids [0] name no sentence (the answer has 3)"),
        ("- analysis: x\n- level: high\n- utterance ids: none", None, "level high cites no utterance"),
        ("- analysis: x\n- level: medium\n- utterance ids: 1", None, "level 'medium' is not high, low or uncertain"),
        ("- analysis: x\n- level: low\n- utterance ids: the first", None,
         "utterance ids 'the first' are not 'none' or numbers"),
        ("The assessor seems calm.", None, "no '- level:' line"),
    ],
)  # fmt: skip
def test_state_answers_read_strictly(answer, value, reason):
    parsed = read_state(answer, 3)
    assert (parsed.value, parsed.ok, parsed.reason) == (value, reason == "", reason)


TRAIT = (
    "In terms of anxiety, the assessor doubts the passage twice (1, 3). This shows that it worries a lot.\n"
    "In terms of depression, no answer reflects it.\n"
    "In terms of emotional volatility, it calls one passage useless (2). This shows that it is moody.\n"
    "In summary, it is judged that the assessor's trait level is high in neuroticism."
)


def test_a_trait_answer_reads_as_figure_8():
    parsed = read_trait(TRAIT, 3, facets("neuroticism"), "neuroticism")
    assert parsed.ok and parsed.value["level"] == "high" and parsed.value["answer_ids"] == [1, 2, 3]
    assert parsed.value["facet_paragraphs"][1] == "In terms of depression, no answer reflects it."
    assert read_trait(TRAIT, 2, facets("neuroticism"), "neuroticism").reason == (
        "anxiety cites answers [3] that were not shown (1-2)"
    )
    assert read_trait(TRAIT.replace("In terms of depression", "About depression"), 3, facets("neuroticism"),
                      "neuroticism").reason == "no paragraph 'In terms of depression'"  # fmt: skip


@pytest.mark.parametrize(
    ("change", "message"),
    [
        # a placeholder the file does not declare
        (("{dialogues}", "{dialogue}"), r"template placeholders \['BF dim definition', 'dialogue', 'target BF dim'\] "
                                        r"differ from declared"),
        # a declared placeholder the template no longer uses
        (("## Inputs :\n{dialogues}", "## Inputs :"), "differ from declared"),
        (('name = "recognize_state"', 'name = "state"'), "name is 'state', expected 'recognize_state'"),
    ],
)  # fmt: skip
def test_a_prompt_file_that_drifts_is_refused_on_load(tmp_path, change, message):
    path = tmp_path / "recognize_state.toml"
    path.write_text((prompt_file("recognize_state")).read_text().replace(*change))
    with pytest.raises(InputError, match=message):
        read_recognize_prompt(path, "recognize_state")


SCORES = [
    ("Score: 4", 4),
    ("**Score:** 5.", 5),  # markdown bold and a full stop
    ("The prediction misses half.\nScore: 2", 2),  # a line of reasoning before it
    ("Score: 7", None),  # outside 1-5
    ("I would give it a 3", None),  # no "Score:" line
    ("Score: three", None),  # not a number
]


def test_the_evidence_prompt_is_marked_written_for_peras_and_its_score_reads_strictly():
    source = prompt_file("recognize_evidence").read_text(encoding="utf-8")
    assert "WRITTEN FOR PERAS" in source  # the paper prints no scoring prompt: docs/fidelity.md row 59, adapted
    prompt = read_recognize_prompt(prompt_file("recognize_evidence"), "recognize_evidence")
    assert prompt.placeholders == ("target BF dim", "reference", "prediction")
    assert prompt.sampling == {"temperature": 0.0, "top_p": 1.0}
    # none of its instructions is the paper's (whose only printed prompt is Figure 6's)
    paper = normalise(paper_text("personality-evd"))
    assert normalise("rate their semantic overlap on a scale from 1 to 5") not in paper
    (message,) = evidence_messages("neuroticism", "- R", "- P")
    assert message["content"].endswith('## Ground-truth evidence:\n- R\n## Predicted evidence:\n- P\nAnswer with one '
                                       'line: "Score: <1-5>".')  # fmt: skip
    for text, score in SCORES:
        parsed = read_score(text)
        assert (parsed.value or {}).get("score") == score, text
        assert parsed.ok == (score is not None), text
