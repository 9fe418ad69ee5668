"""The report's recognize section: per published recognize run, the recognizer's check-set figures first, then
each persona's own-dimension verdict against default and the BFI-2 check, and evidence examples (the views of
sql/recognize/views, created with the stage's first run; read by sql/report/select_recognize_*.sql)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from peras.sql import query_frame

NEEDED = ["recognize_check_scores", "recognize_accuracy", "recognize_shift", "recognize_evidence"]


@dataclass(frozen=True)
class Recognition:
    """One published recognize run: its summary row, its verdicts and its evidence examples."""

    summary: dict[str, Any]
    verdicts: list[dict[str, Any]]
    evidence: list[dict[str, Any]]


def read_recognitions(con: Any) -> list[Recognition]:
    """Every published recognize run, in name order (none, or no recognize views yet: an empty list)."""
    present = query_frame(con, "report/select_priming_views", {"view_names": NEEDED})["view_name"].to_list()
    if len(present) < len(NEEDED):
        return []
    runs = query_frame(con, "report/select_recognize_runs").to_dicts()
    verdicts = query_frame(con, "report/select_recognize_verdicts").to_dicts()
    evidence = query_frame(con, "report/select_recognize_evidence").to_dicts()
    return [
        Recognition(
            run,
            [v for v in verdicts if v["run_name"] == run["run_name"]],
            [e for e in evidence if e["run_name"] == run["run_name"]],
        )
        for run in runs
    ]
