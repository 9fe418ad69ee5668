"""The personas check's messages: one BFI-2 item per request, laid out as peras/prompting.py says (personality
instruction, blank line, task); peras/bfi2.py reads the 1-5 answer."""

from __future__ import annotations

from pathlib import Path

from peras.prompting import Personality, cached_prompt, personality_messages

PROMPT_DIR = Path(__file__).with_name("prompts")  # the stage's prompt files and their answer shapes


def prompt_file(name: str) -> Path:
    """The stage's prompt file of this name (bfi2_item, persona_keywords, persona_instruction)."""
    return PROMPT_DIR / f"{name}.toml"


def build_item_messages(personality: Personality, statement: str) -> list[dict[str, str]]:
    """A BFI-2 item under a personality, laid out as judging is (peras/bfi2.py reads the 1-5 answer)."""
    return personality_messages(personality, cached_prompt(prompt_file("bfi2_item")).render(item=statement))
