"""Import tasks: read a TREC qrels-style judgment file, compare it with the qrels, publish it as a run.

A file line is `query_id iteration doc_id label` (whitespace separated), optionally with more columns, one
of which (1-based --confidence-column) holds a 0-100 confidence. A line with the wrong number of columns
is an error naming file and line; everything else that is off (a label outside 0-3, a confidence that is
not a number 0-100, a repeated pair, pairs that the qrels and the file do not share) is reported: counted,
with the first few examples, in the printed report and in import_reports. Nothing is dropped silently.

An integer label outside 0-3 is a label failure by default (--out-of-range fail). With --out-of-range clip it
becomes the nearest end of the scale (5 -> 3, -1 -> 0), counted as clipped: how the LLMJudge challenge scored
its submissions, so that their published Cohen's kappa is reproduced. A label that is not an integer ('2.5',
'two') is a failure under either policy: clipping guesses nothing but which end of the scale was meant.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from prefect import task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE

from peras.errors import InputError, UsageError, clip
from peras.settings import Settings
from peras.sql import query_rows, run_sql
from peras.warehouse import now, open_migrated, transaction
from tasks.shared.readers import iter_lines, sha256_file

IMPORT_VERSION = "1"  # bump when parsing changes, so that unchanged files are read again
MAX_EXAMPLES = 5
OUT_OF_RANGE = ("fail", "clip")  # what an integer label outside 0-3 becomes: a label failure, or 0 / 3
INTEGER = re.compile(r"^[+-]?\d+$")
COUNT_COLUMNS = {
    "bad_label": "n_bad_labels",
    "clipped": "n_clipped",
    "bad_confidence": "n_bad_confidences",
    "duplicate": "n_duplicates",
    "not_in_qrels": "n_not_in_qrels",
    "missing_from_file": "n_missing_from_file",
}
ROW_SCHEMA = {
    "line_no": pl.Int32,
    "query_id": pl.String,
    "doc_id": pl.String,
    "label": pl.Int32,
    "confidence": pl.Float64,
    "status": pl.String,
    "reason": pl.String,
}


@dataclass
class Issue:
    """How often one kind of problem occurred, and where first."""

    n: int = 0
    examples: list[dict[str, Any]] = field(default_factory=list)

    def add(self, line: int | None, query_id: str, doc_id: str, value: str | None) -> None:
        """Count one occurrence; keep it as an example while there are fewer than MAX_EXAMPLES."""
        self.n += 1
        if len(self.examples) < MAX_EXAMPLES:
            self.examples.append({"line": line, "query_id": query_id, "doc_id": doc_id, "value": value})


@dataclass
class ParsedFile:
    """A judgment file read into rows (one per distinct pair, first line wins) and its line-level issues."""

    path: str
    sha256: str
    rows: pl.DataFrame
    n_lines: int
    issues: dict[str, Issue]


@dataclass
class ImportReport:
    """What an import did and found; `status` is 'imported', 'replaced' or 'unchanged'."""

    status: str
    run_id: str
    run_name: str
    collection_id: str
    path: str
    out_of_range: str  # 'fail' or 'clip'
    n_lines: int
    n_judgments: int
    n_scored: int
    counts: dict[str, int]  # bad_label, clipped, bad_confidence, duplicate, not_in_qrels, missing_from_file
    examples: dict[str, list[dict[str, Any]]]


@task
def parse_judgment_file(path: Path, confidence_column: int | None, out_of_range: str) -> ParsedFile:
    """Read every line; a wrong column count stops the import, any other problem is recorded as an issue."""
    check_out_of_range(out_of_range)
    n_columns = 4 if confidence_column is None else None  # with a confidence column: the first line's count
    issues = {kind: Issue() for kind in ("bad_label", "clipped", "bad_confidence", "duplicate")}
    seen: set[tuple[str, str]] = set()
    rows: list[tuple[Any, ...]] = []
    n_lines = 0
    for line_no, text in iter_lines(path):
        fields = text.split()
        if not fields:
            continue
        n_lines += 1
        n_columns = n_columns or len(fields)
        problem = _column_problem(len(fields), n_columns, confidence_column)
        if problem:
            raise InputError(problem, path, line_no)
        query_id, doc_id = fields[0], fields[2]
        if (query_id, doc_id) in seen:
            issues["duplicate"].add(line_no, query_id, doc_id, text.strip())
            continue
        seen.add((query_id, doc_id))
        rows.append(_judgment_row(line_no, fields, confidence_column, out_of_range, issues))
    if not rows:
        raise InputError("no judgments in file (only blank lines)", path)
    frame = pl.DataFrame(rows, schema=ROW_SCHEMA, orient="row")
    return ParsedFile(str(path), sha256_file(path), frame, n_lines, issues)


def check_out_of_range(out_of_range: str) -> None:
    """A policy other than fail or clip is a usage error (one line), before a byte of the file is read."""
    if out_of_range not in OUT_OF_RANGE:
        raise UsageError(f"--out-of-range must be fail or clip, not {clip(out_of_range, quote=True)}")


def _column_problem(found: int, expected: int, confidence_column: int | None) -> str | None:
    """Why a line's column count is wrong, or None when it is right."""
    if confidence_column is None:
        if found == 4:
            return None
        hint = " (a confidence column? use --confidence-column N)" if found > 4 else ""
        return f"expected 4 columns `query_id 0 doc_id label`, found {found}{hint}"
    if found != expected:
        return f"expected {expected} columns, as on the first line, found {found}"
    if found < max(confidence_column, 4):
        return f"--confidence-column {confidence_column}, but the line has only {found} columns"
    return None


def _judgment_row(
    line_no: int, fields: list[str], confidence_column: int | None, out_of_range: str, issues: dict[str, Issue]
) -> tuple[Any, ...]:
    """(line, query, doc, label, confidence, status, reason): a bad label or confidence becomes null + reason."""
    query_id, doc_id, label_text = fields[0], fields[2], fields[3]
    label = int(label_text) if INTEGER.match(label_text) else None
    note = None  # a clipped label says so in its reason, though its status is 'ok'
    if label is not None and not 0 <= label <= 3 and out_of_range == "clip":
        issues["clipped"].add(line_no, query_id, doc_id, label_text)
        label = min(max(label, 0), 3)
        note = f"line {line_no}: label {clip(label_text, quote=True)} clipped to {label} (--out-of-range clip)"
    confidence: float | None = None
    status, reason = "ok", note
    if label is None or not 0 <= label <= 3:
        issues["bad_label"].add(line_no, query_id, doc_id, label_text)
        label, status = None, "label_parse_failure"
        reason = f"line {line_no}: label {clip(label_text, quote=True)} is not an integer 0-3"
    elif confidence_column is not None:
        confidence_text = fields[confidence_column - 1]
        confidence = _number(confidence_text)
        if confidence is None or not 0 <= confidence <= 100:
            issues["bad_confidence"].add(line_no, query_id, doc_id, confidence_text)
            confidence, status = None, "confidence_parse_failure"
            reason = f"line {line_no}: confidence {clip(confidence_text, quote=True)} is not a number 0-100"
    return (line_no, query_id, doc_id, label, confidence, status, reason)


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


@task
def fingerprint_import(
    parsed: ParsedFile, collection_id: str, model: str, confidence_column: int | None, out_of_range: str
) -> str:
    """sha256 over the file's sha256 and every option that changes what is stored."""
    basis = {
        "v": IMPORT_VERSION,
        "sha256": parsed.sha256,
        "collection_id": collection_id,
        "model": model,
        "confidence_column": confidence_column,
        "out_of_range": out_of_range,
    }
    return hashlib.sha256(json.dumps(basis, sort_keys=True).encode()).hexdigest()


@task
def publish_import(
    settings: Settings,
    parsed: ParsedFile,
    run_name: str,
    collection_id: str,
    model: str,
    confidence_column: int | None,
    fingerprint: str,
    out_of_range: str,
) -> ImportReport:
    """Compare with the qrels and replace the named run in one transaction (a no-op if nothing changed)."""
    run_id = "import-" + hashlib.sha256(f"{run_name}\n{fingerprint}".encode()).hexdigest()[:16]
    with open_migrated(settings.warehouse) as con:
        existing = _existing_run(con, run_name, collection_id)
        if existing is not None and existing[2] == fingerprint:
            return _stored_report(con, existing[0])
        con.register("import_rows", parsed.rows.to_arrow())
        pair_issues = run_sql(con, "import_judgments/select_pair_issues", {"collection_id": collection_id}).fetchall()
        issues = dict(parsed.issues)
        for kind, n_pairs, examples in pair_issues:
            issues[kind] = Issue(int(n_pairs), json.loads(examples))
        n_scored = run_sql(con, "import_judgments/count_scored", {"collection_id": collection_id}).fetchall()[0][0]
        report = ImportReport(
            status="replaced" if existing else "imported",
            run_id=run_id,
            run_name=run_name,
            collection_id=collection_id,
            path=parsed.path,
            out_of_range=out_of_range,
            n_lines=parsed.n_lines,
            n_judgments=parsed.rows.height,
            n_scored=int(n_scored),
            counts={kind: issues[kind].n for kind in COUNT_COLUMNS},
            examples={kind: issues[kind].examples for kind in COUNT_COLUMNS},
        )
        _replace_run(con, report, parsed, model, confidence_column, fingerprint)
    return report


def _existing_run(con: Any, run_name: str, collection_id: str) -> tuple[str, str, str | None] | None:
    """The run holding this name; an LLM run's name cannot be taken, nor an unknown collection imported into."""
    if run_sql(con, "import_judgments/select_collection", {"collection_id": collection_id}).fetchall()[0][0] == 0:
        raise UsageError(f"no collection {collection_id!r} in the warehouse: run `peras ingest` first")
    found = run_sql(con, "import_judgments/select_run", {"run_name": run_name}).fetchall()
    existing = found[0] if found else None
    if existing is not None and existing[1] != "import":
        raise UsageError(f"run name {run_name!r} belongs to a judged ({existing[1]}) run: choose another --name")
    return existing


def _stored_report(con: Any, run_id: str) -> ImportReport:
    """The report of the import that is already published."""
    row = query_rows(con, "import_judgments/select_report", {"run_id": run_id})[0]
    counts = {kind: int(row[column]) for kind, column in COUNT_COLUMNS.items()}
    return ImportReport(
        status="unchanged",
        run_id=run_id,
        run_name=row["run_name"],
        collection_id=row["collection_id"],
        path=row["path"],
        out_of_range=row["out_of_range"],
        n_lines=row["n_lines"],
        n_judgments=row["n_judgments"],
        n_scored=row["n_scored"],
        counts=counts,
        examples=json.loads(row["examples"]),
    )


def _replace_run(
    con: Any,
    report: ImportReport,
    parsed: ParsedFile,
    model: str,
    confidence_column: int | None,
    fingerprint: str,
) -> None:
    params = {
        "file": parsed.path,
        "sha256": parsed.sha256,
        "fingerprint": fingerprint,
        "confidence_column": confidence_column,
        "out_of_range": report.out_of_range,
    }
    with transaction(con):
        run_sql(
            con,
            "import_judgments/replace_run",
            {
                "run_id": report.run_id,
                "run_name": report.run_name,
                "collection_id": report.collection_id,
                "model": model,
                "params": json.dumps(params),
                "imported_at": now(),
                "confidence_method": "none" if confidence_column is None else "given",
                "path": parsed.path,
                "sha256": parsed.sha256,
                "fingerprint": fingerprint,
                "out_of_range": report.out_of_range,
                "n_lines": parsed.n_lines,
                "n_judgments": report.n_judgments,
                "n_scored": report.n_scored,
                "examples": json.dumps(report.examples),
            }
            | {column: report.counts[kind] for kind, column in COUNT_COLUMNS.items()},
        )


def describe_import(report: ImportReport) -> list[str]:
    """The report as lines for a terminal or a markdown artifact: counts, then the first examples."""
    verb = {
        "unchanged": "unchanged (same file and options already imported)",
        "imported": "imported",
        "replaced": "replaced the earlier import",
    }[report.status]
    lines = [
        f"{report.run_name}: {verb} from {report.path} into {report.collection_id}",
        f"  {report.n_lines:,} lines, {report.n_judgments:,} judgments stored, {report.n_scored:,} scored "
        f"against the qrels",
    ]
    for kind, n in report.counts.items():
        if n:
            shown = "; ".join(_example(example) for example in report.examples.get(kind, []))
            lines.append(f"  {ISSUE_WORDS[kind]}: {n:,} (e.g. {shown})")
    if not any(report.counts.values()):
        lines.append("  no problems: every line a valid label, every pair in the qrels and vice versa")
    return lines


ISSUE_WORDS = {
    "bad_label": "labels not an integer 0-3 (kept as label failures)",
    "clipped": "labels outside 0-3 clipped to 0 or 3 (--out-of-range clip)",
    "bad_confidence": "confidences not a number 0-100 (kept without confidence)",
    "duplicate": "lines repeating an earlier pair (first kept)",
    "not_in_qrels": "pairs not in the qrels (kept, not scored)",
    "missing_from_file": "qrels pairs of the file's topics missing from the file",
}


def _example(example: dict[str, Any]) -> str:
    """One example as `line N: query doc 'value'`, each part clipped: a file may hold a megabyte-long id."""
    where = f"line {example['line']}: " if example.get("line") is not None else ""
    value = f" {clip(example['value'], quote=True)}" if example.get("value") is not None else ""
    return f"{where}{clip(example['query_id'])} {clip(example['doc_id'])}{value}"


@task(cache_policy=NO_CACHE)
def publish_import_artifact(report: ImportReport) -> None:
    """The import report as a markdown artifact on the flow run."""
    lines = describe_import(report)
    body = "\n".join([f"# Import `{report.run_name}`", "", lines[0], "", *[f"- {line.strip()}" for line in lines[1:]]])
    create_markdown_artifact(markdown=body, key="import-report", description=f"import of {report.run_name}")
