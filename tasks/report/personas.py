"""The report's persona fidelity section: per personas check run, the personality x domain heatmap of mean BFI-2
domain scores and the pass/fail table per trait (sql/personas/views, read by sql/report/select_persona_*.sql)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from matplotlib.figure import Figure

from peras.sql import query_frame
from tasks.report.charts import save
from tasks.report.tables import fmt

DOMAINS = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")


@dataclass(frozen=True)
class PersonaCheck:
    """One published check run: its matrix rows (a personality each) and its verdicts (a comparison each)."""

    run_name: str
    model: str
    personality_set: str
    matrix: pl.DataFrame
    fidelity: pl.DataFrame

    @property
    def n_pass(self) -> int:
        """Comparisons that pass."""
        return int(self.fidelity["is_pass"].fill_null(False).sum())

    def verdict_rows(self) -> list[dict[str, Any]]:
        """The pass/fail table's rows, numbers formatted as the report's other tables."""
        return [
            {
                "trait": r["trait"],
                "comparison": r["comparison"].replace("_", " "),
                "upper": f"{r['upper_personality']} {fmt(r['upper_score'])}",
                "lower": f"{r['lower_personality']} {fmt(r['lower_score'])}",
                "d": fmt(r["effect_size"], 2),
                "interval": f"[{fmt(r['effect_ci_low'], 2)}, {fmt(r['effect_ci_high'], 2)}]",
                "verdict": "pass" if r["is_pass"] else "FAIL",
            }
            for r in self.fidelity.iter_rows(named=True)
        ]


def read_persona_checks(con: Any) -> list[PersonaCheck]:
    """Every published check run, in name order (none: the report says there are no checks yet)."""
    matrix = query_frame(con, "report/select_persona_matrix")
    fidelity = query_frame(con, "report/select_persona_fidelity")
    checks = []
    for (run_name,), rows in matrix.group_by("run_name", maintain_order=True):
        first = rows.row(0, named=True)
        verdicts = fidelity.filter(pl.col("run_name") == run_name)
        checks.append(PersonaCheck(str(run_name), first["model"], first["personality_set"], rows, verdicts))
    return checks


def draw_persona_heatmap(check: PersonaCheck, title: str, path: Path) -> Path:
    """Mean domain score (1-5) per personality (rows) and domain (columns); off-target shifts show as colour off
    the diagonal pattern. Missing scores are grey."""
    names = check.matrix["personality"].to_list()
    values = np.array([[np.nan if v is None else float(v) for v in check.matrix[d].to_list()] for d in DOMAINS]).T
    figure = Figure(figsize=(6.4, 1.6 + 0.38 * len(names)))
    ax = figure.add_subplot()
    ax.set_facecolor("#d9d9d9")
    image = ax.imshow(np.ma.masked_invalid(values), cmap="RdBu_r", vmin=1, vmax=5, aspect="auto")
    for i in range(len(names)):
        for j in range(len(DOMAINS)):
            value = values[i, j]
            dark = not np.isnan(value) and abs(value - 3) > 1.2  # the colour map's ends are dark: white text there
            text = fmt(None if np.isnan(value) else float(value), 2)
            ax.text(j, i, text, ha="center", va="center", fontsize=8, color="white" if dark else "#222222")
    ax.set_xticks(range(len(DOMAINS)), [d.capitalize() for d in DOMAINS], fontsize=8, rotation=20, ha="right")
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_title(title, fontsize=9)
    figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="mean domain score (1-5)")
    return save(figure, path)


def persona_figures(checks: list[PersonaCheck], out: Path) -> list[tuple[str, str, Path]]:
    """One heatmap per check run: (run name, title, PNG path)."""
    drawn = []
    for check in checks:
        title = f"BFI-2 domain scores · {check.run_name} · {check.model}"
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", check.run_name)
        drawn.append((check.run_name, title, draw_persona_heatmap(check, title, out / f"personas-{slug}.png")))
    return drawn
