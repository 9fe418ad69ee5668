"""Which pairs of judged passages a pairwise run asks about, drawn from the qrels.

For each topic, every unordered pair of its judged passages falls in one stratum, the difference of their grades
(0 = a tie, 1, 2, 3). A topic's `pairs_per_topic` are spread over the strata it has, round robin from 0 up (a short
stratum gives its remainder to the others), and each stratum's pairs are taken from the front of its own shuffle.
Every shuffle is seeded by (seed, topic, stratum) alone, so adding topics never changes an existing topic's draws,
and a larger `pairs_per_topic` keeps the smaller draw and adds to it. The passage shown first in the 'AB' order
(`doc_1`) is chosen by the same seeded generator; every pair is asked in both orders (tasks/pairwise/asking.py).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import combinations

GRADE_DIFFERENCES = (0, 1, 2, 3)


@dataclass(frozen=True, slots=True)
class Judged:
    """A judged passage of a topic: `query_id, doc_id, relevance`."""

    query_id: str
    doc_id: str
    relevance: int


@dataclass(frozen=True, slots=True)
class PairDraw:
    """One drawn pair: doc_1 is passage A in the 'AB' order (and B in 'BA'); truth from the grades."""

    query_id: str
    doc_1: str
    doc_2: str
    relevance_1: int
    relevance_2: int

    @property
    def grade_difference(self) -> int:
        """|relevance_1 - relevance_2|: the pair's stratum (0 = a tie)."""
        return abs(self.relevance_1 - self.relevance_2)


def topic_rng(seed: int, query_id: str, stratum: int) -> random.Random:
    """A generator for one topic's stratum that depends on nothing else (not on the other topics)."""
    digest = hashlib.sha256(f"{seed}\x1f{query_id}\x1f{stratum}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def stratum_quotas(sizes: dict[int, int], n_pairs: int) -> dict[int, int]:
    """How many pairs each stratum gives: round robin over 0..3 while a stratum has pairs left."""
    quotas = dict.fromkeys(sizes, 0)
    remaining = n_pairs
    while remaining > 0 and any(quotas[d] < sizes[d] for d in sizes):
        for difference in sorted(sizes):
            if remaining > 0 and quotas[difference] < sizes[difference]:
                quotas[difference] += 1
                remaining -= 1
    return quotas


def draw_topic(seed: int, judged: list[Judged], pairs_per_topic: int) -> list[PairDraw]:
    """A topic's stratified draw (the module doc says how), ordered by stratum then draw order."""
    if not judged:
        return []
    query_id = judged[0].query_id
    ordered = sorted(judged, key=lambda j: j.doc_id)
    strata: dict[int, list[tuple[Judged, Judged]]] = {d: [] for d in GRADE_DIFFERENCES}
    for first, second in combinations(ordered, 2):
        strata[abs(first.relevance - second.relevance)].append((first, second))
    quotas = stratum_quotas({d: len(pairs) for d, pairs in strata.items()}, pairs_per_topic)
    draws = []
    for difference in GRADE_DIFFERENCES:
        rng = topic_rng(seed, query_id, difference)
        pairs = strata[difference]
        rng.shuffle(pairs)
        for first, second in pairs[: quotas[difference]]:
            if rng.random() < 0.5:
                first, second = second, first
            draws.append(PairDraw(query_id, first.doc_id, second.doc_id, first.relevance, second.relevance))
    return draws


def draw_pairs(seed: int, judged: Iterable[Judged], pairs_per_topic: int) -> list[PairDraw]:
    """Every topic's draw, topics in query_id order."""
    by_topic: dict[str, list[Judged]] = {}
    for row in judged:
        by_topic.setdefault(row.query_id, []).append(row)
    return [draw for query_id in sorted(by_topic) for draw in draw_topic(seed, by_topic[query_id], pairs_per_topic)]
