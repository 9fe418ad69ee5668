"""The fuser prompt (tasks/fuse/prompts/fuser.toml, a Jinja template) and what it shows of each judge.

Loading checks the file's keys, that the template compiles, that the variables it uses are exactly the declared
placeholders, and that the parts kept word for word from the study are there. A judge is shown as one JSON object
`{"relevance": 2, "confidence_score": 85, "explanation": "..."}`: without "confidence_score" when its stream has no
confidence, without "explanation" when it judged without CoT, and with "judge" (its name) first when judges are
named rather than anonymised. The fuser's answer is read as the `self` method's JSON (peras/llm/joint_parsing.py):
"relevance" 0-3 and "confidence_score" 0-100, anything else a failure with its reason, regenerated, never scored.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import jinja2.meta

from peras.errors import InputError
from peras.prompting import PromptSyntax, read_prompt

PROMPT_NAME = "fuser"  # the keys of its file are every prompt file's (PROMPT_KEYS); its template is Jinja
PROMPT_DIR = Path(__file__).with_name("prompts")  # the stage's prompt file and its answer shape
# Word for word from the study's fuser prompt (docs/fuse.md lists what was changed around them).
VERBATIM = (
    "You are a helpful assistant tasked with combining multiple model responses to select the best",
    "Evaluate the quality of multiple outputs for a given instruction and select the best one based on specific rules.",
    "{% for output in json_outputs %}\n  - JSON Output {{ loop.index }}: {{ output }}\n{% endfor %}",
    "  - Note the confidence_score, but focus on explanation quality and rule compliance.",
    "- Mention the JSON outputs' explanations and scores, noting agreements or differences.",
    '"confidence_score": number(0-100),',
)
# Block tags on lines of their own ({% for %}, {% endfor %}, as the study writes them) leave no blank lines.
_ENV = jinja2.Environment(  # noqa: S701 - a chat prompt, not HTML
    undefined=jinja2.StrictUndefined,
    autoescape=False,
    keep_trailing_newline=False,
    trim_blocks=True,
    lstrip_blocks=True,
)


@dataclass(frozen=True)
class FuserPrompt:
    """The compiled template, its sampling parameters and a fingerprint of its text."""

    source: str
    sampling: dict[str, Any]
    fingerprint: str

    def render(self, query: str, passage: str, outputs: list[str]) -> str:
        """The fuser's task text for one pair and its judges' JSON outputs, in the order shown."""
        return _ENV.from_string(self.source).render(query=query, passage=passage, json_outputs=outputs)


def jinja_variables(template: str) -> list[str]:
    """The variables a Jinja template reads (a ValueError: it does not compile)."""
    try:
        return sorted(jinja2.meta.find_undeclared_variables(_ENV.parse(template)))
    except jinja2.TemplateSyntaxError as exc:
        raise ValueError(f"not valid Jinja (line {exc.lineno}): {exc.message}") from exc


JINJA = PromptSyntax(jinja_variables, word="variables")


def read_fuser_prompt(path: Path) -> FuserPrompt:
    """Read and check a fuser template file (peras.prompting.read_prompt; the rules in the module doc)."""
    found = read_prompt(path, JINJA, name=PROMPT_NAME)
    missing = [part for part in VERBATIM if part not in found.template]
    if missing:
        raise InputError(f"template lacks the study's wording {missing[0]!r}", path)
    fingerprint = hashlib.sha256(found.template.encode()).hexdigest()[:16]
    return FuserPrompt(found.template, found.sampling, fingerprint)


@cache
def fuser_prompt() -> FuserPrompt:
    """The shipped fuser template, read once."""
    return read_fuser_prompt(PROMPT_DIR / f"{PROMPT_NAME}.toml")


def judge_output(label: int, confidence: float | None, explanation: str | None, name: str | None) -> str:
    """One judge as the fuser sees it: a JSON object on one line (rules in the module doc)."""
    shown: dict[str, Any] = {"judge": name} if name is not None else {}
    shown["relevance"] = int(label)
    if confidence is not None:
        shown["confidence_score"] = int(confidence) if float(confidence).is_integer() else round(float(confidence), 2)
    if explanation is not None:
        shown["explanation"] = explanation.strip()
    return json.dumps(shown, ensure_ascii=False)


def build_fuser_messages(query: str, passage: str, outputs: list[str]) -> list[dict[str, str]]:
    """One user message, as every PERAS prompt (no personality: the fuser speaks as itself)."""
    return [{"role": "user", "content": fuser_prompt().render(query, passage, outputs)}]
