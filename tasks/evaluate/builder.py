"""Real lexical runs over a collection's judged passages with bm25s: BM25 at several k1/b, stemmed or not.

The corpus is every passage the collection judges (its pool), the queries its judged topics. bm25s implements
BM25 variants only (Robertson, Lucene, ATIRE, BM25L, BM25+): it has no query-likelihood model, so none is built.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import bm25s
import polars as pl
import Stemmer

RUN_COLUMNS = {"system": pl.String, "query_id": pl.String, "doc_id": pl.String, "rank": pl.Int64, "score": pl.Float64}


@dataclass(frozen=True)
class Bm25Config:
    """One built system: a BM25 variant, its k1 and b, and whether words are stemmed (English Snowball)."""

    method: str
    k1: float
    b: float
    stem: bool

    @property
    def system(self) -> str:
        """The run's tag, e.g. bm25-lucene-k1.2-b0.75-stem."""
        return f"bm25-{self.method}-k{self.k1:g}-b{self.b:g}-{'stem' if self.stem else 'nostem'}"

    def metadata(self) -> dict[str, Any]:
        """The system as one ir_metadata `method: retrieval` entry (the indexing as build_run does it)."""
        return {
            "name": self.system,
            "method": f"bm25s.BM25(method={self.method!r})",
            "k1": self.k1,
            "b": self.b,
            "tokenizer": "bm25s.tokenize",
            "stemmer": "PyStemmer english (Snowball)" if self.stem else None,
            "stopwords": "bm25s 'en'",
        }


# Lucene's BM25 at four k1/b settings (Robertson's 1.2/0.75 and the settings tuned for MS MARCO passages in
# Anserini, 0.82/0.68 and 0.9/0.4, plus an extreme without length normalisation), stemmed and not, and three other
# bm25s variants at the common 1.2/0.75: eleven systems that differ enough to be ranked.
CONFIGS = [
    *(
        Bm25Config("lucene", k1, b, stem)
        for k1, b in ((0.9, 0.4), (0.82, 0.68), (1.2, 0.75), (2.0, 0.0))
        for stem in (True, False)
    ),
    *(Bm25Config(method, 1.2, 0.75, True) for method in ("robertson", "bm25l", "bm25+")),
]


def build_run(config: Bm25Config, queries: pl.DataFrame, passages: pl.DataFrame, depth: int) -> pl.DataFrame:
    """One system's ranking of the passages for every query, top `depth`: [system, query_id, doc_id, rank, score]."""
    stemmer = Stemmer.Stemmer("english") if config.stem else None
    doc_ids = passages["doc_id"].to_list()
    corpus = bm25s.tokenize(passages["text"].to_list(), stopwords="en", stemmer=stemmer, show_progress=False)
    index = bm25s.BM25(k1=config.k1, b=config.b, method=config.method)
    index.index(corpus, show_progress=False)
    tokens = bm25s.tokenize(queries["text"].to_list(), stopwords="en", stemmer=stemmer, show_progress=False)
    k = min(depth, len(doc_ids))
    found, scores = index.retrieve(tokens, k=k, show_progress=False, n_threads=1)
    rows = []
    for query_id, hits, values in zip(queries["query_id"].to_list(), found, scores, strict=True):
        # Zero-score hits match no query term: bm25s orders them arbitrarily, so they are not part of the run.
        kept = [(doc_ids[int(h)], float(v)) for h, v in zip(hits, values, strict=True) if v > 0]
        kept.sort(key=lambda hit: (-hit[1], hit[0]))
        rows += [(config.system, query_id, doc, rank, score) for rank, (doc, score) in enumerate(kept, start=1)]
    return pl.DataFrame(rows, schema=RUN_COLUMNS, orient="row")


def run_text(run: pl.DataFrame) -> str:
    """A TREC run file's text (`query_id Q0 doc_id rank score system`); scores written exactly (repr of the double)."""
    return "".join(f"{q} Q0 {d} {r} {s!r} {t}\n" for t, q, d, r, s in run.select(*RUN_COLUMNS).iter_rows())
