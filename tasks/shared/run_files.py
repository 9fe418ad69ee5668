"""Reader for TREC run files: `query_id Q0 doc_id rank score tag`, whitespace separated, plain or gzipped.

One file may hold several systems (the tag column); several files may be read together. Errors name the file
and line, as the qrels reader's do (the same line iterator: gzip by magic bytes, UTF-8 only, BOM dropped).
A run ranks by score, as trec_eval and ir_measures do; the rank column is kept as written.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from peras.errors import InputError, clip
from tasks.shared.readers import iter_lines, parse_integer, trec_fields

RUN_COLUMNS = "`query_id Q0 doc_id rank score tag`"
RUN_SCHEMA = {
    "system": pl.Utf8,
    "query_id": pl.Utf8,
    "doc_id": pl.Utf8,
    "rank": pl.Int64,
    "score": pl.Float64,
    "file": pl.Utf8,
    "line": pl.Int64,
}


@dataclass(frozen=True)
class RunLine:
    """One retrieved passage, with the file and line it came from."""

    system: str
    query_id: str
    doc_id: str
    rank: int
    score: float
    file: str
    line: int


def parse_run_line(text: str, path: Path, line_no: int) -> RunLine:
    """One run-file line as a RunLine, or an InputError naming the file, the line and what is wrong."""
    query_id, _, doc_id, rank_text, score_text, system = trec_fields(text, RUN_COLUMNS, path, line_no)
    rank = parse_integer(rank_text, "rank", path, line_no)
    try:
        score = float(score_text)
    except ValueError:
        raise InputError(f"score {clip(score_text, quote=True)} is not a number", path, line_no) from None
    if not math.isfinite(score):
        raise InputError(f"score {clip(score_text)} is not a finite number", path, line_no)
    if not -(2**63) <= rank < 2**63:  # ranks are stored as BIGINT
        raise InputError(f"rank {clip(rank_text)} is past the 64-bit range (-2^63 .. 2^63-1)", path, line_no)
    return RunLine(system, query_id, doc_id, rank, score, str(path), line_no)


def read_run_lines(paths: list[Path]) -> pl.DataFrame:
    """Every line of the run files, with `file` and `line`; a passage listed twice for one system is an error."""
    rows: list[RunLine] = []
    seen: dict[tuple[str, str, str], RunLine] = {}
    for path in paths:
        n_before = len(rows)
        for line_no, text in iter_lines(path):
            if not text.strip():
                continue
            row = parse_run_line(text, path, line_no)
            earlier = seen.get((row.system, row.query_id, row.doc_id))
            if earlier is not None:
                # trec_eval refuses such a run; scoring it twice would count the passage twice.
                raise InputError(
                    f"system {clip(row.system)} lists passage {clip(row.doc_id)} for query {clip(row.query_id)} "
                    f"twice (first at {earlier.file}:{earlier.line})",
                    path,
                    line_no,
                )
            seen[(row.system, row.query_id, row.doc_id)] = row
            rows.append(row)
        if len(rows) == n_before:
            raise InputError("no run lines found (only blank lines)", path)
    return pl.DataFrame([vars(row) for row in rows], schema=RUN_SCHEMA, orient="row")


def read_runs(paths: list[Path]) -> pl.DataFrame:
    """TREC run files as one frame: system, query_id, doc_id, rank, score (one row per line, file order)."""
    return read_run_lines(paths).drop("file", "line")
