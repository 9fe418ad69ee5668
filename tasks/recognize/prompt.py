"""The recognize stage's prompts (tasks/recognize/prompts/recognize_state.toml, recognize_trait.toml,
recognize_evidence.toml) and what fills them.

The state prompt is the PersonalityEvd paper's Figure 6 word for word with the changes docs/personas.md lists; its
placeholders keep the paper's names, written with spaces (`{target BF dim}`), so they are filled by name, not by
str.format. Loading checks the file's keys and that the placeholders the template uses are exactly the declared
ones. `{BF dim definition}` is the dimension's three BFI-2 facets, each with its four items marked by the pole they
describe (the paper's Figure 5 / Appendix A, from peras/data/bfi2/items.tsv); `{dialogues}` is one assessor answer,
one numbered sentence per line (tasks/recognize/sentences.py).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from peras.bfi2 import DOMAINS, load_items
from peras.prompting import PromptSyntax, read_prompt

STATE_PROMPT = "recognize_state"
TRAIT_PROMPT = "recognize_trait"
EVIDENCE_PROMPT = "recognize_evidence"
SPEAKER = "the assessor"  # the paper's {speaker}
PLACEHOLDER = re.compile(r"\{([^{}\n]+)\}")
# The paper's placeholder names, spaces and all (`{target BF dim}`): filled by name, never by str.format.
NAMED = PromptSyntax(PLACEHOLDER.findall, lambda name: PLACEHOLDER.fullmatch(f"{{{name}}}") is not None)
PROMPT_DIR = Path(__file__).with_name("prompts")  # the stage's prompt files and their answer shapes
DIMENSIONS = {name.lower(): code for code, name in DOMAINS.items()}  # 'openness' -> 'O'


@dataclass(frozen=True)
class RecognizePrompt:
    """A template with the paper's placeholders, its sampling and a fingerprint of its text."""

    name: str
    template: str
    placeholders: tuple[str, ...]
    sampling: dict[str, Any]

    @property
    def fingerprint(self) -> str:
        """sha256 of the template: a run keeps the prompt it was asked with."""
        return hashlib.sha256(self.template.encode("utf-8")).hexdigest()

    def render(self, **values: str) -> str:
        """Each placeholder replaced by its value, in one pass (a value holding braces is left as it is)."""
        if set(values) != set(self.placeholders):
            raise ValueError(f"prompt {self.name} takes {sorted(self.placeholders)}, got {sorted(values)}")
        return PLACEHOLDER.sub(lambda found: values[found.group(1)], self.template)


@cache
def load_recognize_prompt(name: str) -> RecognizePrompt:
    """Read `tasks/recognize/prompts/<name>.toml` (read_recognize_prompt)."""
    return read_recognize_prompt(PROMPT_DIR / f"{name}.toml", name)


def read_recognize_prompt(path: Path, name: str) -> RecognizePrompt:
    """A prompt file; its keys, name and placeholders are checked (peras.prompting.read_prompt: an InputError names
    the file)."""
    found = read_prompt(path, NAMED, name=name)
    return RecognizePrompt(name, found.template, found.placeholders, found.sampling)


def parse_dimension(name: str) -> str:
    """A dimension's name in lower case ('neuroticism'), from a name or a code (N)."""
    lowered = name.strip().lower()
    by_code = {code.lower(): dim for dim, code in DIMENSIONS.items()}
    if lowered in DIMENSIONS:
        return lowered
    if lowered in by_code:
        return by_code[lowered]
    raise ValueError(f"not a Big-Five dimension: {name!r}")


@cache
def facets(dimension: str) -> tuple[str, ...]:
    """The dimension's three BFI-2 facets, in the inventory's order."""
    code = DIMENSIONS[dimension]
    return tuple(dict.fromkeys(item.facet for item in load_items() if item.domain_code == code))


@cache
def dimension_definition(dimension: str) -> str:
    """`{BF dim definition}`: the three facets, each with its two high-pole and two low-pole BFI-2 items."""
    code = DIMENSIONS[dimension]
    items = [item for item in load_items() if item.domain_code == code]
    lines = [f"{DOMAINS[code]} has three facets; each is described by BFI-2 items of its high and low level."]
    for facet in facets(dimension):
        lines.append(f"- {facet}")
        for pole, keyed in (("high", "+"), ("low", "-")):
            statements = [item.item for item in items if item.facet == facet and item.keyed == keyed]
            lines.append(f"  - {pole}: {' '.join(statements)}")
    return "\n".join(lines)


def state_messages(dimension: str, dialogue: str) -> list[dict[str, str]]:
    """The EPR-S request for one dimension and one answer (numbered sentences)."""
    text = load_recognize_prompt(STATE_PROMPT).render(
        **{"target BF dim": dimension, "BF dim definition": dimension_definition(dimension), "dialogues": dialogue}
    )
    return [{"role": "user", "content": text}]


def trait_messages(dimension: str, dialogues: str) -> list[dict[str, str]]:
    """The EPR-T request for one dimension over a persona's sampled answers (numbered dialogues)."""
    facet_names = ", ".join(f.lower() for f in facets(dimension))
    text = load_recognize_prompt(TRAIT_PROMPT).render(
        **{
            "target BF dim": dimension,
            "BF dim definition": dimension_definition(dimension),
            "facets": facet_names,
            "dialogues": dialogues,
        }
    )
    return [{"role": "user", "content": text}]


def evidence_messages(dimension: str, reference: str, prediction: str) -> list[dict[str, str]]:
    """The evidence judge's request: the recognizer's evidence scored 1-5 against the check set's."""
    text = load_recognize_prompt(EVIDENCE_PROMPT).render(
        **{"target BF dim": dimension, "reference": reference, "prediction": prediction}
    )
    return [{"role": "user", "content": text}]
