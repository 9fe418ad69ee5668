"""The pairwise stage's messages: one user message laid out as peras/prompting.py says (personality instruction,
blank line, task), the query as the question and the two passages as answers A and B."""

from __future__ import annotations

from pathlib import Path

from peras.prompting import Personality, cached_prompt, personality_messages

PROMPT_DIR = Path(__file__).with_name("prompts")  # the stage's prompt files and their answer shapes


def prompt_file(name: str) -> Path:
    """The stage's prompt file of this name (pairwise_certainty, pairwise_tie, self_pairwise, mp_logp_pairwise)."""
    return PROMPT_DIR / f"{name}.toml"


def build_pairwise_messages(
    personality: Personality, name: str, query: str, passage_a: str, passage_b: str
) -> list[dict[str, str]]:
    """A pairwise request (pairwise_certainty, pairwise_tie, or the overconfidence study's templates self_pairwise
    and mp_logp_pairwise): the query as the question, the passages as answers A and B, laid out as judging is."""
    template = cached_prompt(prompt_file(name))
    if name in ("self_pairwise", "mp_logp_pairwise"):
        return personality_messages(
            personality, template.render(question=query, answer_a=passage_a, answer_b=passage_b)
        )
    return personality_messages(personality, template.render(question=query, asst_A=passage_a, asst_B=passage_b))
