"""Import-judgments flow: a TREC qrels-style file of judgments made elsewhere becomes a run in the warehouse."""

from __future__ import annotations

from pathlib import Path

from prefect import flow

from peras.settings import Settings, load_settings
from tasks.import_judgments.tasks import (
    ImportReport,
    fingerprint_import,
    parse_judgment_file,
    publish_import,
    publish_import_artifact,
)
from tasks.publish.tasks import publish_analyst_snapshot


@flow(name="import-judgments", flow_run_name="import-{name}", log_prints=True)
def import_judgments(
    path: str,
    name: str,
    collection: str,
    confidence_column: int | None = None,
    model: str | None = None,
    out_of_range: str = "fail",
    settings: Settings | None = None,
) -> ImportReport:
    """Read the file, report what does not match the qrels, and publish it as run `name` atomically.

    `out_of_range` is what an integer label outside 0-3 becomes: 'fail' (a label failure, never scored) or
    'clip' (0 or 3, as the LLMJudge challenge scored). Re-importing the same file with the same options is a
    no-op; a changed file or another option replaces the run.
    """
    settings = settings or load_settings()
    parsed = parse_judgment_file(Path(path), confidence_column, out_of_range)
    fingerprint = fingerprint_import(parsed, collection, model or "unknown", confidence_column, out_of_range)
    report = publish_import(
        settings, parsed, name, collection, model or "unknown", confidence_column, fingerprint, out_of_range
    )
    publish_analyst_snapshot(settings)
    publish_import_artifact(report)
    return report
