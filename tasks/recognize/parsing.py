"""Reading the recognizer's answers: the Figure 6 output (analysis, level, utterance ids) and the Figure 8 trait
paragraphs. Free text, read strictly; whatever does not read is a failure with its reason (the engine asks again,
then records it).

State (EPR-S), for an answer of n sentences: the first `- analysis:` (up to `- level:`), `- level:` one of high /
low / uncertain, `- utterance ids:` "none" or numbers separated by ',' (a "U" before a number is allowed). Markdown
bold and quotes around the fields are ignored. An id outside 1..n names no sentence: a failure. A high or low level
must cite at least one sentence (the paper's evidence); an uncertain one cites none ("none"; ids given are dropped).

Trait (EPR-T), over n answers: one paragraph per facet, in order, each beginning "In terms of <facet>", the ids in
its parentheses all within 1..n, and the line "In summary, it is judged that the assessor's trait level is <level>
in <dimension>" (level high, low or uncertain).

Evidence score: the first line "Score: <n>" with n in 1..5 (markdown marks ignored); anything else is a failure.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

LEVELS = ("high", "low", "uncertain")
_FIELD = r"^[ \t]*[-*]?[ \t]*{name}[ \t]*:[ \t]*"
_ANALYSIS = re.compile(_FIELD.format(name="analysis") + r"(.*?)(?=^[ \t]*[-*]?[ \t]*level[ \t]*:)", re.I | re.M | re.S)
_LEVEL = re.compile(_FIELD.format(name="level") + r"(.*)$", re.I | re.M)
_IDS = re.compile(_FIELD.format(name=r"utterance[ \t]+ids?") + r"(.*)$", re.I | re.M)
_ID = re.compile(r"^u?(\d+)$", re.I)
_MARKDOWN = str.maketrans("", "", "*`")  # bold and code marks around the fields
_QUOTES = "\"'[]() "
_SUMMARY = re.compile(r"In summary, it is judged that .*?trait level is (\w+) in (\w+)", re.I)
_CITED = re.compile(r"\(([\d,\s]+)\)")
_SCORE = re.compile(r"^[ \t]*score[ \t]*:[ \t]*(\d+)[ \t.]*$", re.I | re.M)


@dataclass(frozen=True, slots=True)
class Parsed:
    """A read answer: its value (a dict) when ok, else why not."""

    value: dict[str, Any] | None
    ok: bool
    reason: str


def failure(reason: str) -> Parsed:
    """An answer that does not read, and why."""
    return Parsed(None, False, reason)


def read_state(text: str, n_sentences: int) -> Parsed:
    """The level, the cited sentence ids and the analysis of one answer of `n_sentences` sentences (module doc)."""
    clean = text.translate(_MARKDOWN)
    level_found = _LEVEL.search(clean)
    if level_found is None:
        return failure("no '- level:' line")
    level = level_found.group(1).strip().rstrip(".").strip(_QUOTES).lower()
    if level not in LEVELS:
        return failure(f"level {level[:40]!r} is not high, low or uncertain")
    ids_found = _IDS.search(clean)
    if ids_found is None:
        return failure("no '- utterance ids:' line")
    ids = read_ids(ids_found.group(1))
    if ids is None:
        return failure(f"utterance ids {ids_found.group(1).strip()[:40]!r} are not 'none' or numbers")
    outside = [i for i in ids if not 1 <= i <= n_sentences]
    if outside:
        return failure(f"utterance ids {outside} name no sentence (the answer has {n_sentences})")
    if level != "uncertain" and not ids:
        return failure(f"level {level} cites no utterance")
    analysis = _ANALYSIS.search(clean)
    value = {
        "level": level,
        "utterance_ids": ids if level != "uncertain" else [],
        "analysis": analysis.group(1).strip() if analysis else "",
    }
    return Parsed(value, True, "")


def read_ids(field: str) -> list[int] | None:
    """'none' (or nothing) as no ids, '1, 3' as [1, 3] (sorted, each once); anything else None."""
    cleaned = field.strip().rstrip(".").strip(_QUOTES)
    if cleaned.lower() in ("", "none", "n/a"):
        return []
    parts = [part.strip(_QUOTES) for part in cleaned.split(",")]
    found = [_ID.match(part) for part in parts]
    if not all(found):
        return None
    return sorted({int(match.group(1)) for match in found if match})


def read_trait(text: str, n_answers: int, facet_names: tuple[str, ...], dimension: str) -> Parsed:
    """The trait level, the cited answer ids and one paragraph per facet (module doc)."""
    paragraphs: list[str] = []
    cited: set[int] = set()
    rest = text
    for facet in facet_names:
        start = re.search(rf"In terms of {re.escape(facet)}\b", rest, re.I)
        if start is None:
            return failure(f"no paragraph 'In terms of {facet.lower()}'")
        rest = rest[start.start() :]
        end = re.search(r"\n\s*(?=In terms of |In summary)", rest[1:], re.I)
        paragraph = rest if end is None else rest[: end.start() + 1]
        paragraphs.append(paragraph.strip())
        for group in _CITED.findall(paragraph):
            numbers = [int(n) for n in re.findall(r"\d+", group)]
            outside = [n for n in numbers if not 1 <= n <= n_answers]
            if outside:
                return failure(f"{facet.lower()} cites answers {outside} that were not shown (1-{n_answers})")
            cited.update(numbers)
        rest = rest[len(paragraph) :]
    summary = _SUMMARY.search(rest)
    if summary is None:
        return failure("no line 'In summary, it is judged that ... trait level is <level> in <dimension>'")
    level = summary.group(1).lower()
    if level not in LEVELS:
        return failure(f"trait level {level!r} is not high, low or uncertain")
    if summary.group(2).lower() != dimension:
        return failure(f"the summary judges {summary.group(2).lower()}, not {dimension}")
    value = {"level": level, "answer_ids": sorted(cited), "facet_paragraphs": paragraphs, "summary": summary.group(0)}
    return Parsed(value, True, "")


def read_score(text: str) -> Parsed:
    """The evidence judge's 1-5 score (module doc)."""
    found = _SCORE.search(text.translate(_MARKDOWN))
    if found is None:
        return failure('no line "Score: <1-5>"')
    score = int(found.group(1))
    if not 1 <= score <= 5:
        return failure(f"score {score} is not 1-5")
    return Parsed({"score": score}, True, "")
