"""A probe set from a collection's judged pairs: a seeded draw, then a clean copy and each kind's copies per pair.

Pure functions over plain rows (no warehouse): tasks.py reads the pairs and publishes what these return.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import Any

from peras.errors import UsageError
from tasks.probes.kinds import ProbeKind
from tasks.probes.perturb import render


@dataclass(frozen=True)
class SourcePair:
    """A judged pair of the source collection with its texts."""

    query_id: str
    doc_id: str
    relevance: int
    qrels_set: str
    query_text: str
    passage_text: str


@dataclass(frozen=True)
class ProbeCopy:
    """A passage of the probe collection: its text and what it is a copy of."""

    query_id: str
    doc_id: str
    text: str
    source_doc_id: str
    text_doc_id: str
    kind: str
    variant: str
    role: str
    baseline_doc_id: str
    relevance: int
    qrels_set: str


def draw_pairs(
    pairs: list[SourcePair], n: int, seed: int, collection: str, subset: str | None = None
) -> list[SourcePair]:
    """`n` pairs drawn with `seed`, each passage at most once (its first pair in a seeded shuffle), in id order;
    refused when the collection (its `subset`, when given) has fewer distinct judged passages."""
    order = list(pairs)
    random.Random(seed).shuffle(order)
    first: dict[str, SourcePair] = {}
    for pair in order:
        first.setdefault(pair.doc_id, pair)
    if n > len(first):
        source = f"collection {collection!r}" + (f" (subset {subset!r})" if subset else "")
        raise UsageError(
            f"--sample {n} is more than {source} has: {len(first)} judged pairs with distinct "
            f"passages ({len(pairs)} pairs); give --sample {len(first)} or fewer"
        )
    drawn = list(first.values())[:n]
    return sorted(drawn, key=lambda pair: (pair.query_id, pair.doc_id))


def other_topic_passage(pair: SourcePair, pairs: list[SourcePair], seed: int) -> SourcePair:
    """A passage judged for another query and not for this one, chosen with `seed` and the pair's ids."""
    own = {p.doc_id for p in pairs if p.query_id == pair.query_id}
    candidates = sorted({p.doc_id: p for p in pairs if p.doc_id not in own}.values(), key=lambda p: p.doc_id)
    if not candidates:
        raise UsageError(f"no passage of another topic for query {pair.query_id!r}: other-topic kinds need 2 topics")
    return random.Random(f"{seed}/{pair.query_id}/{pair.doc_id}").choice(candidates)


def copies_of(pair: SourcePair, kinds: list[ProbeKind], pairs: list[SourcePair], seed: int) -> list[ProbeCopy]:
    """The pair's clean copy, its other topic's clean copy (when a kind uses one), and every kind's variants."""
    base = {"query_id": pair.query_id, "source_doc_id": pair.doc_id, "qrels_set": pair.qrels_set}
    clean = f"{pair.doc_id}#clean"
    out = [
        ProbeCopy(
            **base,
            doc_id=clean,
            text=pair.passage_text.strip(),
            text_doc_id=pair.doc_id,
            kind="clean",
            variant="own",
            role="clean",
            baseline_doc_id=clean,
            relevance=pair.relevance,
        )
    ]
    other = other_topic_passage(pair, pairs, seed) if any(k.passage == "other-topic" for k in kinds) else None
    if other is not None:
        out.append(
            ProbeCopy(
                **base,
                doc_id=f"{clean}-other",
                text=other.passage_text.strip(),
                text_doc_id=other.doc_id,
                kind="clean",
                variant="other-topic",
                role="clean",
                baseline_doc_id=f"{clean}-other",
                relevance=0,
            )
        )
    for kind in kinds:
        source = other if kind.passage == "other-topic" and other is not None else pair
        baseline = f"{clean}-other" if source is other else clean
        for variant, template in kind.variants:
            out.append(
                ProbeCopy(
                    **base,
                    doc_id=f"{pair.doc_id}#{kind.kind}-{variant}",
                    text=render(template, source.passage_text, pair.query_text),
                    text_doc_id=source.doc_id,
                    kind=kind.kind,
                    variant=variant,
                    role=kind.role,
                    baseline_doc_id=baseline,
                    relevance=0 if source is other else pair.relevance,
                )
            )
    return out


def build_copies(
    pairs: list[SourcePair], drawn: list[SourcePair], kinds: list[ProbeKind], seed: int
) -> list[ProbeCopy]:
    """Every copy of every drawn pair, in the drawn pairs' order."""
    return [copy for pair in drawn for copy in copies_of(pair, kinds, pairs, seed)]


def copy_rows(copies: list[ProbeCopy]) -> list[dict[str, Any]]:
    """The copies as rows (one dict each)."""
    return [asdict(copy) for copy in copies]
