"""Readers for the file formats real collections come in; every error names the file and line.

- qrels: TREC `query_id Q0 doc_id relevance` (the second column may also be `0`), whitespace separated.
- queries: TSV `query_id<TAB>text`, split on the first tab only.
- passages: MS MARCO `collection.tsv` (`doc_id<TAB>text`, first tab only) or JSONL with one of the key
  pairs ("docid", "doc"), ("doc_id", "text"), ("pid", "passage"), ("id", "contents") (Pyserini), ("docid", "text").
Any of them may be gzipped (detected from the magic bytes, not the name), and may start with a UTF-8
byte-order mark (Windows editors write one), which is dropped.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from peras.errors import InputError, UsageError, clip

GZIP_MAGIC = b"\x1f\x8b"
UTF8_BOM = "\ufeff"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
QRELS_ITER_COLUMN = {"Q0", "0"}
JSONL_KEYS = (("docid", "doc"), ("doc_id", "text"), ("pid", "passage"), ("id", "contents"), ("docid", "text"))


@dataclass(frozen=True)
class Qrel:
    """One human judgment, with the line it came from."""

    query_id: str
    doc_id: str
    relevance: int
    line: int


@dataclass
class ReadResult:
    """What a reader found: records keyed by id, plus the count of records in the file."""

    records: dict[str, str]
    n_records: int


def _open_binary(path: Path) -> IO[bytes]:
    if not path.exists():
        raise UsageError(f"file not found: {path}")
    if not path.is_file():
        raise UsageError(f"not a file: {path}")
    with path.open("rb") as probe:
        magic = probe.read(2)
    # The caller closes it (a `with` around this call).
    handle: IO[bytes] = gzip.open(path, "rb") if magic == GZIP_MAGIC else path.open("rb")  # type: ignore[assignment]  # noqa: SIM115
    return handle


def sha256_file(path: Path) -> str:
    """sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def iter_lines(path: Path, on_bytes: Callable[[int], None] | None = None) -> Iterator[tuple[int, str]]:
    """Yield (line number, text without line ending) for each line; non-UTF-8 bytes are an error.

    A byte-order mark at the start of the file is not part of the first line: left in, it would glue itself
    to the first query id, which then matches nothing.
    """
    n_lines = 0
    with _open_binary(path) as handle:
        try:
            for n_lines, raw in enumerate(handle, start=1):  # noqa: B007 - n_lines used after the loop
                if on_bytes is not None:
                    on_bytes(len(raw))
                if n_lines == 1 and raw.startswith(UTF16_BOMS):
                    raise InputError("file is UTF-16: save it as UTF-8", path)
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(
                        f"not UTF-8: byte 0x{raw[exc.start]:02x} at column {exc.start + 1}", path, n_lines
                    ) from None
                if n_lines == 1:
                    text = text.removeprefix(UTF8_BOM)
                yield n_lines, text.rstrip("\r\n")
        except (OSError, EOFError) as exc:  # truncated or corrupt gzip
            raise InputError(f"cannot read file: {exc}", path, n_lines + 1) from None
    if n_lines == 0:
        raise InputError("file is empty", path)


@dataclass
class QrelsFile:
    """The qrels of one file: distinct pairs, lines read, and exact repeats skipped."""

    qrels: list[Qrel]
    n_records: int
    n_repeats: int


def read_qrels(path: Path) -> QrelsFile:
    """Read TREC qrels; labels must be integers 0-3; a duplicate pair with another label is an error."""
    qrels: list[Qrel] = []
    seen: dict[tuple[str, str], Qrel] = {}
    n_records = n_repeats = 0
    for line_no, text in iter_lines(path):
        if not text.strip():
            continue
        n_records += 1
        query_id, _, doc_id, label = trec_fields(text, "`query_id Q0 doc_id relevance`", path, line_no)
        relevance = parse_integer(label, "relevance", path, line_no)
        if not 0 <= relevance <= 3:
            raise InputError(f"relevance {clip(label)} is outside 0-3", path, line_no)
        qrel = Qrel(query_id, doc_id, relevance, line_no)
        earlier = seen.get((query_id, doc_id))
        if earlier is not None:
            if earlier.relevance != relevance:
                raise InputError(
                    f"pair ({clip(query_id)}, {clip(doc_id)}) judged {earlier.relevance} on line {earlier.line} "
                    f"and {relevance} here",
                    path,
                    line_no,
                )
            n_repeats += 1  # an exact repeat adds nothing
            continue
        seen[(query_id, doc_id)] = qrel
        qrels.append(qrel)
    if not qrels:
        raise InputError("no qrels found (only blank lines)", path)
    return QrelsFile(qrels, n_records, n_repeats)


def trec_fields(text: str, columns: str, path: Path, line_no: int) -> list[str]:
    """The whitespace-separated fields of a qrels or run line: as many as `columns` names, the second Q0 or 0."""
    fields = text.split()
    if len(fields) != len(columns.split()):
        raise InputError(f"expected {len(columns.split())} columns {columns}, found {len(fields)}", path, line_no)
    if fields[1] not in QRELS_ITER_COLUMN:
        raise InputError(f"second column must be Q0 or 0, found {clip(fields[1], quote=True)}", path, line_no)
    return fields


def parse_integer(text: str, what: str, path: Path, line_no: int) -> int:
    """A field that must be an integer, or an InputError naming it."""
    try:
        return int(text)
    except ValueError:
        raise InputError(f"{what} {clip(text, quote=True)} is not an integer", path, line_no) from None


def read_tsv(path: Path, wanted: set[str] | None = None, what: str = "query", refuse_empty: bool = True) -> ReadResult:
    """Read `id<TAB>text` lines (first tab only), keeping only ids in `wanted` when given.

    refuse_empty: an empty text is an InputError naming its line (ingest passes False: its quality gate checks every
    text and lists all the empty ones)."""
    return _read_records(path, wanted, what, _tsv_record, refuse_empty)


def read_jsonl(path: Path, wanted: set[str] | None = None, refuse_empty: bool = True) -> ReadResult:
    """Read passages from JSONL with any of the known key pairs, keeping only ids in `wanted`."""
    return _read_records(path, wanted, "passage", _jsonl_record, refuse_empty)


def _read_records(
    path: Path,
    wanted: set[str] | None,
    what: str,
    parse: Callable[[str, str, Path, int], tuple[str, str]],
    refuse_empty: bool,
) -> ReadResult:
    """The (id, text) records of a file, one per non-blank line as `parse` reads it; only ids in `wanted`."""
    records: dict[str, str] = {}
    n_records = 0
    for line_no, text in iter_lines(path):
        if not text.strip():
            continue
        n_records += 1
        record_id, body = parse(text, what, path, line_no)
        _keep(records, record_id, body, wanted, path, line_no, what, refuse_empty)
    return ReadResult(records, n_records)


def _tsv_record(text: str, what: str, path: Path, line_no: int) -> tuple[str, str]:
    if "\t" not in text:
        raise InputError(f"expected `{what}_id<TAB>text`, found no tab", path, line_no)
    record_id, body = text.split("\t", 1)
    record_id = record_id.strip()
    if not record_id:
        raise InputError(f"empty {what} id", path, line_no)
    return record_id, body.strip()


def _jsonl_record(text: str, what: str, path: Path, line_no: int) -> tuple[str, str]:
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} at column {exc.colno}", path, line_no) from None
    if not isinstance(obj, dict):
        raise InputError("expected a JSON object per line", path, line_no)
    for id_key, text_key in JSONL_KEYS:
        if id_key in obj and text_key in obj:
            break
    else:
        names = ", ".join(f'"{a}"/"{b}"' for a, b in JSONL_KEYS)
        found = ", ".join(clip(key, quote=True) for key in sorted(obj)[:6])
        raise InputError(f"expected keys {names}; found [{found}]", path, line_no)
    record_id, body = obj[id_key], obj[text_key]
    if not isinstance(body, str) or isinstance(record_id, bool | list | dict) or record_id is None:
        raise InputError(f'"{id_key}" must be a string or number and "{text_key}" a string', path, line_no)
    return str(record_id).strip(), body.strip()


def read_passages(path: Path, wanted: set[str] | None = None, refuse_empty: bool = True) -> ReadResult:
    """Read passages in JSONL or MS MARCO TSV, deciding by the first non-blank character."""
    for _, text in iter_lines(path):
        if text.strip():
            is_json = text.lstrip().startswith("{")
            break
    else:
        raise InputError("file has only blank lines", path)
    if is_json:
        return read_jsonl(path, wanted, refuse_empty)
    return read_tsv(path, wanted, what="passage", refuse_empty=refuse_empty)


def _keep(
    records: dict[str, str],
    record_id: str,
    body: str,
    wanted: set[str] | None,
    path: Path,
    line: int,
    what: str,
    refuse_empty: bool,
) -> None:
    if wanted is not None and record_id not in wanted:
        return
    if refuse_empty and not body:  # nothing to judge, and it would replace a text read earlier
        raise InputError(f"{what} {clip(record_id)} has an empty text: give every {what} its text", path, line)
    earlier = records.get(record_id)
    if earlier is not None and earlier != body:
        raise InputError(f"{what} {clip(record_id)} appears twice with different text", path, line)
    records[record_id] = body
