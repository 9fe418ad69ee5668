"""The recognizer's check set (peras/data/recognize/check_set.toml): texts written for PERAS, each showing one
dimension at a known level with the ids of the sentences that show it (or none), validated on load.

Every text is read like a persona's answer, for its one dimension, in the same run under the personality code
`check-set` (its query_id is the text's id); the expectations are stored with the run (recognize_check_texts) and
the figures (level accuracy, evidence-id F1) are the view recognize_check_scores.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache

import polars as pl

from peras.errors import InputError
from peras.paths import PACKAGE_DIR
from tasks.recognize.asking import CotAnswer, StateItem
from tasks.recognize.parsing import LEVELS
from tasks.recognize.prompt import DIMENSIONS
from tasks.recognize.sentences import split_sentences

CHECK_SET = PACKAGE_DIR / "data" / "recognize" / "check_set.toml"
CHECK = "check-set"  # the personality code its readings are stored under


@dataclass(frozen=True)
class CheckText:
    """One labelled text: its dimension, expected level and evidence sentence ids."""

    text_id: str
    dimension: str
    level: str
    evidence: tuple[int, ...]
    text: str


@cache
def load_check_set() -> tuple[CheckText, ...]:
    """The check set; a text whose level, dimension or evidence ids do not fit is an InputError naming it."""
    data = tomllib.loads(CHECK_SET.read_text(encoding="utf-8"))
    texts = []
    for entry in data["text"]:
        found = CheckText(entry["id"], entry["dimension"], entry["level"], tuple(entry["evidence"]), entry["text"])
        n = len(split_sentences(found.text))
        if found.dimension not in DIMENSIONS or found.level not in LEVELS:
            raise InputError(f"text {found.text_id}: unknown dimension or level", CHECK_SET)
        if (found.level == "uncertain") != (not found.evidence) or not all(1 <= i <= n for i in found.evidence):
            raise InputError(f"text {found.text_id}: evidence ids must name its {n} sentences (none if uncertain)",
                             CHECK_SET)  # fmt: skip
        texts.append(found)
    if len({t.text_id for t in texts}) != len(texts):
        raise InputError("text ids must be unique", CHECK_SET)
    return tuple(texts)


def plan_check(dimensions: list[str]) -> list[StateItem]:
    """Every check text of the dimensions asked, for its own dimension."""
    return [
        StateItem(CotAnswer(CHECK, t.text_id, "-", t.text), t.dimension)
        for t in load_check_set()
        if t.dimension in dimensions
    ]


def expected_frame(dimensions: list[str]) -> pl.DataFrame:
    """The expectations of the dimensions asked, as rows of recognize_check_texts (without the run id)."""
    return pl.DataFrame(
        [
            {"text_id": t.text_id, "dimension": t.dimension, "level": t.level, "evidence_ids": list(t.evidence)}
            for t in load_check_set()
            if t.dimension in dimensions
        ],
        schema={"text_id": pl.Utf8, "dimension": pl.Utf8, "level": pl.Utf8, "evidence_ids": pl.List(pl.Int32)},
    )


def evidence_pair(text_id: str, analysis: str | None, cited: list[str]) -> tuple[str, str]:
    """(reference, prediction) for the evidence judge: the check text's evidence sentences (or that none shows the
    dimension), and the recognizer's analysis with the sentences it cited, one per line."""
    text = next(t for t in load_check_set() if t.text_id == text_id)
    sentences = split_sentences(text.text)
    shown = [f"- {sentences[i - 1]}" for i in text.evidence]
    reference = "\n".join(shown) if shown else "- none: no sentence shows this dimension (level uncertain)"
    prediction = "\n".join([f"- {analysis or ''}".rstrip(), *(f"- {sentence}" for sentence in cited)])
    return reference, prediction
