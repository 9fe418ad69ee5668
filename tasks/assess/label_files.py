"""Files of human labels for a plan's pairs: TREC qrels (`query_id 0 doc_id relevance`) or a TSV with a header
(`query_id, doc_id, relevance` and optionally `assessor`), the format `peras assess export --format tsv` writes."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from peras.errors import UsageError

LABEL_SCHEMA = {"query_id": pl.String, "doc_id": pl.String, "assessor": pl.String, "relevance": pl.Int64}
IMPORTED = "import"


def read_label_file(path: Path, assessor: str | None) -> pl.DataFrame:
    """Every line's label: [line, query_id, doc_id, assessor, relevance]; a line that is not a label is refused."""
    if not path.is_file():
        raise UsageError(f"label file {path} does not exist")
    lines = path.read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t") if lines else []
    is_tsv = "query_id" in header
    rows = []
    for number, line in enumerate(lines[1:] if is_tsv else lines, start=2 if is_tsv else 1):
        if not line.strip():
            continue
        fields = dict(zip(header, line.split("\t"), strict=False)) if is_tsv else trec_fields(line)
        if is_tsv and not fields.get("relevance", "").strip():
            continue  # a pair of the exported TSV left unlabelled
        rows.append((number, *label_row(fields, assessor, path, number)))
    return pl.DataFrame(rows, schema={"line": pl.Int64, **LABEL_SCHEMA}, orient="row")


def trec_fields(line: str) -> dict[str, str]:
    """A TREC qrels line's fields (its second column, the iteration, is not kept)."""
    parts = line.split()
    return dict(zip(("query_id", "iteration", "doc_id", "relevance"), parts, strict=False)) if len(parts) == 4 else {}


def label_row(fields: dict[str, str], assessor: str | None, path: Path, number: int) -> tuple[str, str, str, int]:
    """(query_id, doc_id, assessor, relevance) of one line; a label outside 0-3 or a malformed line is refused."""
    if not all(fields.get(key) for key in ("query_id", "doc_id", "relevance")):
        raise UsageError(f"{path}:{number}: not a label line (`query_id 0 doc_id relevance`, or the TSV's columns)")
    text = fields["relevance"].strip()
    if text not in ("0", "1", "2", "3"):
        raise UsageError(f"{path}:{number}: label {text!r} is not one of 0, 1, 2, 3: fix the file and import it again")
    who = assessor or fields.get("assessor", "").strip() or IMPORTED
    return fields["query_id"].strip(), fields["doc_id"].strip(), who, int(text)


def check_labels(labels: pl.DataFrame, pairs: pl.DataFrame, plan_name: str, path: Path) -> pl.DataFrame:
    """The labels, every one for a pair of the plan and each pair x assessor once; else the first wrong line."""
    if labels.is_empty():
        raise UsageError(f"{path} holds no labels")
    unknown = labels.join(pairs.select("query_id", "doc_id"), on=["query_id", "doc_id"], how="anti")
    if not unknown.is_empty():
        line, query_id, doc_id = unknown.row(0)[:3]
        raise UsageError(
            f"{path}:{line}: pair ({query_id}, {doc_id}) is not in plan {plan_name!r} "
            f"({unknown.height:,} such lines): label only its pairs"
        )
    twice = labels.filter(pl.struct("query_id", "doc_id", "assessor").is_duplicated())
    if not twice.is_empty():
        line, query_id, doc_id, assessor = twice.row(1)[:4]
        raise UsageError(f"{path}:{line}: pair ({query_id}, {doc_id}) is labelled twice by {assessor!r}: keep one")
    return labels.drop("line")
