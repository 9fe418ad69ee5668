"""The personas check's messages: one BFI-2 item per request, laid out as peras/prompting.py says (personality
instruction, blank line, task); peras/bfi2.py reads the 1-5 answer."""

from __future__ import annotations

from peras.prompting import Personality, cached_prompt, personality_messages


def build_item_messages(personality: Personality, statement: str) -> list[dict[str, str]]:
    """A BFI-2 item under a personality, laid out as judging is (peras/bfi2.py reads the 1-5 answer)."""
    return personality_messages(personality, cached_prompt("bfi2_item").render(item=statement))
