"""The recognize stage's measures, as views over its tables (sql/recognize/measures/<view>.sql).

They are not among the warehouse's views of `sql/<stage>/views/` (created for every warehouse) because the tables
they read are the declared stage's, created when its first run is claimed; so the stage creates them then (the
recipe's `prepare`), and a reader creates them as temporary views over a warehouse that has the tables. The order
is declared: each view reads only the ones before it (and persona_fidelity, personalities, judge_runs,
recognize_check_texts).
"""

from __future__ import annotations

from typing import Any

from peras.sql import load_sql

MEASURE_VIEWS = (
    "recognize_shares",
    "recognize_shift",
    "recognize_accuracy",
    "recognize_bfi2_agreement",
    "recognize_evidence",
    "recognize_trait_levels",
    "recognize_check_scores",
    "recognize_evidence_quality",
)
# A view over a table that a warehouse made by earlier code may lack (the evidence stage came later): left out there.
NEEDS = {"recognize_evidence_quality": "recognize_evidence_scores"}


def create_measure_views(con: Any, temporary: bool = False) -> None:
    """Create (or replace) every measure view, in declared order; `temporary` in the connection's temp schema."""
    tables = {row[0] for row in con.execute("select table_name from information_schema.tables").fetchall()}
    for name in MEASURE_VIEWS:
        if name in NEEDS and NEEDS[name] not in tables:
            continue
        body = load_sql(f"recognize/measures/{name}")
        con.execute(f"create or replace {'temp ' if temporary else ''}view {name} as\n{body}")
