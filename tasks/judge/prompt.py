"""The judge's messages: the label request, the post-hoc confidence request, and the joint (`self`, `certainty`)
request, each one user message laid out as peras/prompting.py says (personality instruction, blank line, task).

The confidence prompt is a second, independent request with the same layout and personality; the label the model
gave is written into the template (`{predicted_score}`), not replayed as a chat turn.
"""

from __future__ import annotations

from pathlib import Path

from peras.prompting import Personality, cached_prompt, personality_messages

# The judge's own prompt files (the joint methods'); the label and confidence prompts are the foundation's
# (peras/prompts/): the study's preset check and the assessor page's scale read them too.
PROMPT_DIR = Path(__file__).with_name("prompts")
JOINT_PROMPTS = ("self", "certainty")  # methods asking the label and its confidence in one request


def label_prompt(cot: bool, method: str) -> str | Path:
    """The prompt a label request asks with: a joint method's own file, else the shared label prompt's name."""
    if method in JOINT_PROMPTS:
        return PROMPT_DIR / f"{method}_{'cot' if cot else 'nocot'}.toml"
    return "label_cot" if cot else "label_nocot"


def build_label_messages(personality: Personality, query: str, document: str, cot: bool) -> list[dict[str, str]]:
    """The label request: personality instruction, blank line, UMBRELA (cot) or bare-integer task."""
    template = cached_prompt("label_cot" if cot else "label_nocot")
    return personality_messages(personality, template.render(query=query, document=document))


def build_confidence_messages(
    personality: Personality, query: str, document: str, predicted_score: int
) -> list[dict[str, str]]:
    """The post-hoc confidence request for a label the same personality gave."""
    template = cached_prompt("confidence")
    return personality_messages(
        personality, template.render(query=query, document=document, predicted_score=predicted_score)
    )


def build_joint_messages(
    personality: Personality, query: str, document: str, cot: bool, method: str
) -> list[dict[str, str]]:
    """One request asking for the label and its confidence together: method 'self' (a JSON answer) or
    'certainty' (the label and a 1-100 certainty in double brackets), with the no-CoT or CoT rubric."""
    template = cached_prompt(label_prompt(cot, method))
    return personality_messages(personality, template.render(query=query, document=document))
