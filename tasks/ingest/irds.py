"""`peras ingest irds:<id>`: any ir_datasets dataset with queries, qrels and docs, as a collection.

ir_datasets (https://ir-datasets.com) downloads a dataset's files into IR_DATASETS_HOME (~/.ir_datasets) the first
time they are read, and reads them from there afterwards; a dataset registered over local files
(`ir_datasets.registry.register(name, ir_datasets.create_dataset(docs_tsv=..., queries_tsv=..., qrels_trec=...))`)
is read in place. Its judged queries and docs and its qrels are written once into PERAS's own files under
<local dir>/irds/<collection>/ (TREC qrels, queries TSV, passages JSONL), which the ingest then reads, checks and
fingerprints like any other collection's files: re-ingesting an unchanged dataset is a no-op.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from peras.errors import UsageError, clip
from peras.outputs import write_files
from peras.settings import Settings

PREFIX = "irds:"
COLLECTION_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")
FILES = {"qrels": "qrels.txt", "queries": "queries.tsv", "passages": "passages.jsonl"}
OFFLINE_HINT = (
    "with network access ir_datasets downloads them into IR_DATASETS_HOME (~/.ir_datasets); offline, place them "
    "there or register the dataset over local files (docs/formats.md)"
)


def is_irds(preset: str | None) -> bool:
    """Whether a preset argument names an ir_datasets dataset (`irds:<id>`)."""
    return bool(preset and preset.startswith(PREFIX))


def collection_name(dataset_id: str) -> str:
    """The collection an ir_datasets id becomes: irds-<id> with every run of other characters as one '-'."""
    return "irds-" + COLLECTION_CHARS.sub("-", dataset_id).strip("-")


def load_dataset(dataset_id: str) -> Any:
    """The ir_datasets dataset of that id, which must have queries, qrels and docs; otherwise one usage line."""
    import ir_datasets

    quiet_logs()
    try:
        dataset = ir_datasets.load(dataset_id)
    except KeyError:
        raise UsageError(
            f"ir_datasets has no dataset {dataset_id!r}: see https://ir-datasets.com for the ids"
        ) from None
    lacking = [part for part in ("queries", "qrels", "docs") if not getattr(dataset, f"has_{part}")()]
    if lacking:
        raise UsageError(
            f"ir_datasets dataset {dataset_id!r} has no {' and no '.join(lacking)}: PERAS needs queries, qrels and "
            "docs (pick the id of a test set, e.g. msmarco-passage/trec-dl-2019/judged)"
        )
    return dataset


class DropDownloadFailures(logging.Filter):
    """ir_datasets logs every failed download attempt (three per mirror); PERAS reports a failure once, as a usage
    error. Its other messages (a data usage agreement to accept, progress) are kept."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        return not message.startswith(("download error", "Download failed"))


def quiet_logs() -> None:
    """Install the filter on ir_datasets' one logger, once."""
    import ir_datasets

    logger = ir_datasets.log.easy().logger()
    if not any(isinstance(f, DropDownloadFailures) for f in logger.filters):
        logger.addFilter(DropDownloadFailures())


@contextlib.contextmanager
def reading(dataset_id: str, part: str) -> Iterator[None]:
    """A part of the dataset that cannot be read or downloaded: one line saying which and what to do."""
    try:
        yield
    except (OSError, RuntimeError, ValueError, ImportError) as exc:
        reason = exc.args[0] if exc.args else type(exc).__name__
        raise UsageError(
            f"ir_datasets cannot read the {part} of {dataset_id!r} ({clip(reason, 120)}): {OFFLINE_HINT}"
        ) from None


def dataset_files(dataset_id: str) -> dict[str, str]:
    """The dataset's judged pairs, judged queries and judged docs as the texts of FILES (qrels, queries, passages)."""
    dataset = load_dataset(dataset_id)
    with reading(dataset_id, "qrels"):
        qrels = [(q.query_id, q.doc_id, int(q.relevance)) for q in dataset.qrels_iter()]
    query_ids, doc_ids = {q for q, _, _ in qrels}, {d for _, d, _ in qrels}
    with reading(dataset_id, "queries"):
        queries = {q.query_id: one_line(text_of(q)) for q in dataset.queries_iter() if q.query_id in query_ids}
    with reading(dataset_id, "docs"):
        docs = judged_docs(dataset, doc_ids)
    return {
        "qrels": "".join(f"{q} 0 {d} {r}\n" for q, d, r in qrels),
        "queries": "".join(f"{q}\t{text}\n" for q, text in sorted(queries.items())),
        "passages": "".join(
            json.dumps({"doc_id": d, "text": text}, ensure_ascii=False) + "\n" for d, text in sorted(docs.items())
        ),
    }


def judged_docs(dataset: Any, doc_ids: set[str]) -> dict[str, str]:
    """The texts of the judged docs, read in one pass that stops once every one is found."""
    found: dict[str, str] = {}
    for doc in dataset.docs_iter():
        if doc.doc_id in doc_ids:
            found[doc.doc_id] = text_of(doc)
            if len(found) == len(doc_ids):
                break
    return found


def text_of(record: Any) -> str:
    """A query's or doc's text as ir_datasets gives it (default_text: the title and body where there are both)."""
    if hasattr(record, "default_text"):
        return str(record.default_text())
    return " ".join(str(v) for k, v in record._asdict().items() if k not in ("doc_id", "query_id") and v)


def one_line(text: str) -> str:
    """A query text fit for one TSV field."""
    return " ".join(text.split())


def write_dataset(settings: Settings, dataset_id: str, collection_id: str) -> dict[str, Path]:
    """Write the dataset's files under <local dir>/irds/<collection>/ (all or none); {role: path}."""
    directory = settings.local_dir / "irds" / collection_id
    texts = dataset_files(dataset_id)
    paths = {role: directory / name for role, name in FILES.items()}
    write_files({paths[role]: text for role, text in texts.items()}, settings.warehouse, "irds:", directory)
    return paths
