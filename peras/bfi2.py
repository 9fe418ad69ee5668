"""The BFI-2 inventory (Soto & John, 2017): its 60 items, validated on load, and the strict reading of an answer.

The items ship in peras/data/bfi2/items.tsv (with the citation in its README). An answer is one number 1-5
(1 disagree strongly ... 5 agree strongly); anything else is unreadable and the engine asks again. Scores are the
warehouse's (sql/personas/views): reverse-keyed items count `6 - answer`, a facet is the mean of its 4 items, a
domain the mean of its 12.
"""

from __future__ import annotations

import csv
import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from peras.errors import InputError
from peras.paths import PACKAGE_DIR

BFI2_ITEMS = PACKAGE_DIR / "data" / "bfi2" / "items.tsv"
COLUMNS = ("item_id", "domain_code", "domain", "facet", "keyed", "item")
DOMAINS = {
    "O": "Openness",
    "C": "Conscientiousness",
    "E": "Extraversion",
    "A": "Agreeableness",
    "N": "Neuroticism",
}
# One number 1-5, optionally followed by a full stop: nothing else is an answer (no label, no explanation).
ANSWER = re.compile(r"\s*([1-5])\.?\s*")


@dataclass(frozen=True, slots=True)
class Bfi2Item:
    """One statement of the inventory; `keyed` '+' describes the domain's high pole, '-' its low pole."""

    item_id: int
    domain_code: str
    domain: str
    facet: str
    keyed: str
    item: str

    @property
    def statement(self) -> str:
        """The item as it completes "I am someone who ...": its first letter in lower case."""
        return self.item[:1].lower() + self.item[1:]


@dataclass(frozen=True, slots=True)
class ParsedAnswer:
    """An answer read strictly: its value 1-5, or why it could not be read."""

    value: int | None
    ok: bool
    reason: str


def load_items(path: Path = BFI2_ITEMS) -> list[Bfi2Item]:
    """The 60 items in item_id order; a file that is not the BFI-2's shape is an InputError."""
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t"))
    if not rows or tuple(rows[0]) != COLUMNS:
        raise InputError(f"expected the columns {', '.join(COLUMNS)}", path)
    items = [_item(row, number, path) for number, row in enumerate(rows[1:], start=2)]
    if [item.item_id for item in items] != list(range(1, 61)):
        raise InputError("expected the 60 items numbered 1-60 in order", path)
    for code, name in DOMAINS.items():
        domain = [item for item in items if item.domain_code == code]
        facets = sorted({item.facet for item in domain})
        if len(domain) != 12 or len(facets) != 3 or [i.keyed for i in domain].count("+") != 6:
            raise InputError(f"domain {name}: expected 12 items in 3 facets, 6 keyed '+'", path)
        for facet in facets:
            keyed = [item.keyed for item in domain if item.facet == facet]
            if len(keyed) != 4 or keyed.count("+") != 2:
                raise InputError(f"facet {facet}: expected 4 items, 2 keyed '+'", path)
    return items


def items_fingerprint(path: Path = BFI2_ITEMS) -> str:
    """sha256 of the items file: a check run keeps the inventory it was asked with."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def parse_answer(text: str) -> ParsedAnswer:
    """One number 1-5 and nothing else (a trailing full stop allowed); else unreadable, with why."""
    match = ANSWER.fullmatch(text)
    if match is None:
        return ParsedAnswer(None, False, f"not a single number 1-5: {text.strip()[:80]!r}")
    return ParsedAnswer(int(match.group(1)), True, "")


def _item(row: list[str], number: int, path: Path) -> Bfi2Item:
    if len(row) != len(COLUMNS):
        raise InputError(f"line {number}: expected {len(COLUMNS)} tab-separated fields, got {len(row)}", path)
    item_id, code, domain, facet, keyed, text = (value.strip() for value in row)
    if not item_id.isdigit():
        raise InputError(f"line {number}: item_id {item_id!r} is not a number", path)
    if DOMAINS.get(code) != domain:
        raise InputError(f"line {number}: domain {code} {domain!r} is not one of the Big Five", path)
    if keyed not in ("+", "-"):
        raise InputError(f"line {number}: keyed must be '+' or '-', got {keyed!r}", path)
    if not facet or not text:
        raise InputError(f"line {number}: facet and item must not be empty", path)
    return Bfi2Item(int(item_id), code, domain, facet, keyed, text)
