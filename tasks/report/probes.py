"""The report's 'Can the judge be fooled?' table: the gaming-probe measures of the report's probe runs, per kind x
personality x CoT x confidence method (sql/probes/views/probe_measures.sql, read by
sql/report/select_probe_measures.sql; docs/probes.md says what each measure is)."""

from __future__ import annotations

import polars as pl

from tasks.report.tables import fmt, fmt_count

PROBE_COLUMNS = {
    "run_name": "Run",
    "kind": "Kind",
    "role": "Role",
    "personality": "Personality",
    "cot": "CoT",
    "confidence_method": "Method",
    "n_copies": "Copies",
    "n_attackable": "Attackable",
    "n_success": "Raised to 2+",
    "attack_success_rate": "Attack success",
    "mean_label_shift_targets": "Label shift 0/1",
    "mean_label_shift_relevant": "Label shift 2/3",
    "mean_confidence_shift": "Confidence shift",
    "auroc_low_confidence": "AUROC low confidence",
    "auroc_disagreement": "AUROC persona disagreement",
}
LABELS = ("run_name", "kind", "role", "personality", "cot", "confidence_method")


def probe_rows(measures: pl.DataFrame) -> list[list[str]]:
    """The table's rows as printed: names, counts with separators, rates and shifts as every metric of the report."""
    rows = []
    for r in measures.iter_rows(named=True):
        cells = [("CoT" if r[c] else "no CoT") if c == "cot" else str(r[c]) for c in LABELS]
        cells += [fmt_count(r[c]) if c.startswith("n_") else fmt(r[c]) for c in PROBE_COLUMNS if c not in LABELS]
        rows.append(cells)
    return rows
