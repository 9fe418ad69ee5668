"""A judge run as the stages built on its judgments find it: by name, and published (its gate passed), as every view
reads it. `peras evaluate`, `peras export-qrels` and `peras personas recognize` refuse any other with one line."""

from __future__ import annotations

from typing import Any

from peras.errors import UsageError
from peras.sql import run_sql


def published_judge_run(con: Any, run_name: str) -> tuple[str, str]:
    """The id and collection of the published judge run of that name; an unknown one, or one whose gate failed or
    that is still running (status failed_check, failed, running), is a UsageError saying what to do."""
    found = run_sql(con, "evaluate/select_judge_run", {"run_name": run_name}).fetchall()
    if not found:
        raise UsageError(f"no judge run named {run_name!r} (see `peras runs`)")
    run_id, collection_id, status = found[0]
    if status != "published":
        raise UsageError(f"judge run {run_name!r} is {status}, not published: finish it with `peras judge` first")
    return str(run_id), str(collection_id)
