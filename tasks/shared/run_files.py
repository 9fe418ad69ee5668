"""Reader for TREC run files: `query_id Q0 doc_id rank score tag`, whitespace separated, plain or gzipped.

One file may hold several systems (the tag column); several files may be read together. A system is its tag, as
trec_eval reports it, unless another file uses the same tag (RankLLM writes every file with the tag `rank`): then it
is named after its file (`rankllm-BM25` for rankllm-BM25.run.gz; `<file>:<tag>` when that file holds several
tags), since trec_eval, reading one file at a time, keeps them apart too. Errors name the file and line, as the
qrels reader's do (the same line iterator: gzip by magic bytes, UTF-8 only, BOM dropped). A run ranks by score, as
trec_eval and ir_measures do; the rank column is kept as written.

Real runs are large (63 DL21 submissions: 477 topics x 100 passages each, 3 million lines): a line becomes six
column values, not an object, and a passage listed twice is found in one pass over the frame.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from peras.errors import InputError, clip
from tasks.shared.readers import QRELS_ITER_COLUMN, iter_lines, parse_integer, trec_fields

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
RANK_RANGE = range(-(2**63), 2**63)  # ranks are stored as BIGINT
RUN_SUFFIXES = re.compile(r"(\.(run|txt|trec|tsv))?(\.gz)?$")


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
    if rank not in RANK_RANGE:
        raise InputError(f"rank {clip(rank_text)} is past the 64-bit range (-2^63 .. 2^63-1)", path, line_no)
    return RunLine(system, query_id, doc_id, rank, score, str(path), line_no)


def read_run_file(path: Path) -> pl.DataFrame:
    """One run file's lines as columns (system = its tag); a bad line raises parse_run_line's error."""
    columns: tuple[list[str], list[str], list[str], list[int], list[float], list[int]] = ([], [], [], [], [], [])
    systems, queries, docs, ranks, scores, lines = columns
    for line_no, text in iter_lines(path):
        fields = text.split()
        if not fields:
            continue
        try:
            query_id, iteration, doc_id, rank_text, score_text, system = fields
            rank, score = int(rank_text), float(score_text)
        except ValueError:
            rank, score, iteration = 0, math.nan, ""
        if iteration not in QRELS_ITER_COLUMN or not math.isfinite(score) or rank not in RANK_RANGE:
            parse_run_line(text, path, line_no)  # raises, naming what is wrong
        systems.append(system)
        queries.append(query_id)
        docs.append(doc_id)
        ranks.append(rank)
        scores.append(score)
        lines.append(line_no)
    if not lines:
        raise InputError("no run lines found (only blank lines)", path)
    frame = dict(zip(("system", "query_id", "doc_id", "rank", "score", "line"), columns, strict=True))
    return pl.DataFrame(frame).with_columns(file=pl.lit(str(path))).select(list(RUN_SCHEMA)).cast(RUN_SCHEMA)  # type: ignore[arg-type]


def file_system_name(path: Path) -> str:
    """A run file's name without its run suffixes: rankllm-BM25.run.gz -> rankllm-BM25."""
    return RUN_SUFFIXES.sub("", path.name) or path.name


def name_systems(frames: list[tuple[Path, set[str], pl.DataFrame]]) -> list[pl.DataFrame]:
    """Each file's systems named by their tags, or after the file where another file uses the same tag (its path
    where two such files share a name)."""
    stems = [file_system_name(path) for path, _, _ in frames]
    renamed = []
    for i, (path, tags, frame) in enumerate(frames):
        shared = {tag for tag in tags if any(tag in other for j, (_, other, _) in enumerate(frames) if j != i)}
        if not shared:
            renamed.append(frame)
            continue
        stem = stems[i] if stems.count(stems[i]) == 1 else str(path)
        name = pl.lit(stem) if len(tags) == 1 else pl.lit(stem + ":") + pl.col("system")
        system = pl.when(pl.col("system").is_in(sorted(shared))).then(name).otherwise(pl.col("system"))
        renamed.append(frame.with_columns(system=system))
    return renamed


def refuse_repeats(lines: pl.DataFrame) -> None:
    """A passage listed twice for one system and query is an error naming both lines (trec_eval refuses such a run;
    scoring it would count the passage twice)."""
    keys = ["system", "query_id", "doc_id"]
    repeated = lines.filter(pl.struct(keys).is_duplicated())
    if repeated.is_empty():
        return
    later = repeated.filter(pl.struct(keys).is_first_distinct().not_()).row(0, named=True)
    first = repeated.filter(*[pl.col(k) == later[k] for k in keys]).row(0, named=True)
    raise InputError(
        f"system {clip(later['system'])} lists passage {clip(later['doc_id'])} for query "
        f"{clip(later['query_id'])} twice (first at {first['file']}:{first['line']})",
        Path(later["file"]),
        later["line"],
    )


def read_run_lines(paths: list[Path], keep: Callable[[Path, pl.DataFrame], pl.DataFrame] | None = None) -> pl.DataFrame:
    """Every line of the run files, with `file` and `line`; a passage listed twice for one system is an error.

    keep: what to keep of each file's lines (evaluate keeps the judged topics: a tenth of DL21's runs), applied
    file by file so that the rest is never held at once.
    """
    frames = []
    for path in paths:
        frame = read_run_file(path)
        refuse_repeats(frame)
        frames.append((path, set(frame["system"].unique().to_list()), keep(path, frame) if keep else frame))
    return pl.concat(name_systems(frames)) if frames else pl.DataFrame(schema=RUN_SCHEMA)


def read_runs(paths: list[Path]) -> pl.DataFrame:
    """TREC run files as one frame: system, query_id, doc_id, rank, score (one row per line, file order)."""
    return read_run_lines(paths).drop("file", "line")
