"""An assessor answer as the paper's dialogue: numbered sentences, the utterance ids the recognizer cites.

A line break always ends a sentence (CoT answers list steps on lines of their own); within a line a sentence ends
at '.', '!' or '?' followed by white space and a capital letter, a digit, a quote or an opening bracket - but not
after an abbreviation (e.g., i.e., etc., vs., Mr., Dr.) or a single capital (an initial, "M." in "score M."). Empty
pieces and pieces without a letter or digit (a lone "```" or "---") are left out. Ids count from 1.
"""

from __future__ import annotations

import re

from tasks.recognize.prompt import SPEAKER

_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
_ABBREVIATION = re.compile(r"(?:\b(?:e\.g|i\.e|etc|vs|Mr|Mrs|Ms|Dr|No|approx)\.|\b[A-Z]\.)$", re.IGNORECASE)
_CONTENT = re.compile(r"[A-Za-z0-9]")


def split_sentences(text: str) -> list[str]:
    """The answer's sentences in order, stripped (module doc)."""
    sentences: list[str] = []
    for line in text.splitlines():
        pending = ""
        start = 0
        for found in _END.finditer(line):
            piece = line[start : found.start()]
            pending += piece
            start = found.end()
            if _ABBREVIATION.search(pending):
                pending += line[found.start() : found.end()]
                continue
            sentences.append(pending)
            pending = ""
        sentences.append(pending + line[start:])
    return [s.strip() for s in sentences if _CONTENT.search(s)]


def numbered(sentences: list[str]) -> str:
    """`{dialogues}` of the state prompt: one answer as the paper's Dialogue 1, one utterance per line."""
    lines = ["[Dialogue 1]", *(f"{i}. {SPEAKER}: {s}" for i, s in enumerate(sentences, start=1))]
    return "\n".join(lines)


def numbered_dialogues(answers: list[str]) -> str:
    """`{dialogues}` of the trait prompt: each sampled answer as [Dialogue k], its text as the assessor's."""
    return "\n".join(
        f"[Dialogue {k}]\n{SPEAKER}: {' '.join(split_sentences(text))}" for k, text in enumerate(answers, 1)
    )
