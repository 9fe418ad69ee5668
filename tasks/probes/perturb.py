"""A probe copy's text: a kind's template filled from the query and the passage (no LLM, deterministic)."""

from __future__ import annotations

import re

# Left out of a query's terms: what carries no topic ("how long should you boil an egg" -> "long boil egg").
STOP_WORDS = frozenset([
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "did", "for", "from", "has", "have", "how",
    "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "should", "the", "their", "there", "this", "to", "was",
    "were", "what", "when", "where", "which", "who", "whom", "why", "will", "with", "you", "your",
])  # fmt: skip
WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
SPACES = re.compile(r" {2,}")


def query_terms(query: str) -> str:
    """The query's content terms, lower case, each once, in the query's order, space-separated."""
    seen: dict[str, None] = {}
    for word in WORD.findall(query.lower()):
        if word not in STOP_WORDS:
            seen.setdefault(word, None)
    return " ".join(seen)


def sentences(passage: str) -> list[str]:
    """The passage's sentences: split after ., ! or ? followed by white space."""
    return [part for part in SENTENCE_END.split(passage.strip()) if part]


def placeholders(passage: str, query: str) -> dict[str, str]:
    """Every value a kind's template may use (tasks/probes/kinds.py PLACEHOLDERS), but {sentence}."""
    parts = sentences(passage)
    return {
        "passage": passage.strip(),
        "query": query.strip(),
        "terms": query_terms(query),
        "first_sentence": parts[0] if parts else "",
        "rest": " ".join(parts[1:]),
        "sentences_lines": "\n".join(parts),
        "sentences_reversed": " ".join(reversed(parts)),
        "passage_lower": passage.strip().lower(),
    }


def render(template: str, passage: str, query: str) -> str:
    """The copy's text: the template filled, runs of spaces (an empty piece leaves two) made one, ends stripped."""
    return SPACES.sub(" ", template.format(**placeholders(passage, query))).strip()
