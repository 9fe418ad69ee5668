"""The report's 'Rankings you can trust' section (issue 50): per `peras trust` study, the human and the LLM ranks of
every system side by side, each system's PPI++ interval against its full human score (coverage: the human qrels
exist), the agreement with its bootstrap intervals, and the pairs whose order flips (sql/evaluate/views/trust_*)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from matplotlib.figure import Figure

from peras.sql import query_frame
from tasks.report.charts import COLORS, save
from tasks.report.interactive import Spec, trust_ranks
from tasks.report.tables import fmt

SHOWN_FLIPS = 10


@dataclass(frozen=True)
class TrustStudy:
    """One study: its summary row, its systems (PPI++ intervals) and its flipped pairs."""

    study_id: str
    title: str
    summary: dict[str, Any]
    systems: pl.DataFrame
    flips: pl.DataFrame

    def rows(self) -> list[dict[str, str]]:
        """The summary table: each statistic with its interval, the flips, each method's coverage and width."""
        s = self.summary
        values = {
            "Kendall's tau": interval(s["kendall_tau"], s["kendall_tau_lower"], s["kendall_tau_upper"]),
            "tau-AP": interval(s["tau_ap"], s["tau_ap_lower"], s["tau_ap_upper"]),
            "Spearman's rho": fmt(s["spearman_rho"]),
            "pairs whose order flips": f"{s['n_flips']:,}",
            "PPI++: coverage, mean width": f"{fmt(s['ppi_coverage'])}, {fmt(s['ppi_mean_width'])}",
            "human only: coverage, mean width": f"{fmt(s['human_only_coverage'])}, {fmt(s['human_only_mean_width'])}",
        }
        return [{"statistic": name, "value": value} for name, value in values.items()]

    def flip_rows(self) -> list[dict[str, str]]:
        """The largest flips (SHOWN_FLIPS): which conclusions change, and by how much under each qrels."""
        return [
            {"higher for the humans": r["system_a"], "higher for the LLM": r["system_b"],
             "human gap": fmt(r["human_gap"]), "LLM gap": fmt(r["llm_gap"])}
            for r in self.flips.head(SHOWN_FLIPS).iter_rows(named=True)
        ]  # fmt: skip


def interval(estimate: float | None, lower: float | None, upper: float | None) -> str:
    """'0.912 [0.870, 0.945]'."""
    return f"{fmt(estimate)} [{fmt(lower)}, {fmt(upper)}]"


def read_trust(con: Any, collection: str | None) -> list[TrustStudy]:
    """Every trust study, oldest first."""
    params = {"collection_id": collection}
    summaries = query_frame(con, "evaluate/select_report_trust", params)
    systems = query_frame(con, "evaluate/select_report_trust_systems", params)
    flips = query_frame(con, "evaluate/select_report_trust_flips", params)
    found = []
    for s in summaries.iter_rows(named=True):
        title = (
            f"{s['collection_id']}: {s['n_systems']} systems by {s['measure']}, judge run {s['run_name']} "
            f"({s['labels']}), {s['human_sample']} human sample ({s['n_sample']:,} pairs), "
            f"{s['level']:.0%} intervals, {s['replicates']:,} replicates, seed {s['seed']}"
        )
        mine = systems.filter(pl.col("study_id") == s["study_id"])
        found.append(TrustStudy(s["study_id"], title, s, mine, flips.filter(pl.col("study_id") == s["study_id"])))
    return found


def draw_trust(study: TrustStudy, path: Path) -> Path:
    """Left: each system's LLM rank against its human rank. Right: its PPI++ interval against its full human score
    (an interval crossing the diagonal covers it)."""
    figure = Figure(figsize=(10.0, 4.6))
    ranks, scores = figure.subplots(1, 2)
    points = study.systems
    ranks.scatter(points["human_rank"], points["llm_rank"], s=16, color=COLORS[0])
    n = max(points.height, 1)
    ranks.plot([1, n], [1, n], color="#999999", linewidth=0.8, linestyle="--")
    ranks.set_xlabel("rank under the human qrels")
    ranks.set_ylabel("rank under the LLM qrels")
    covered = points["covers_human"].fill_null(False)
    for flag, color, label in ((True, COLORS[2], "covers"), (False, COLORS[1], "misses")):
        chosen = points.filter(covered == flag)
        below = (chosen["estimate"] - chosen["lower"]).to_numpy()
        above = (chosen["upper"] - chosen["estimate"]).to_numpy()
        scores.errorbar(chosen["human_score"], chosen["estimate"], yerr=[below, above], fmt="o", markersize=3,
                        color=color, elinewidth=0.8, label=f"PPI++ interval {label} the human score")  # fmt: skip
    values = [*points["human_score"].to_list(), *points["lower"].to_list(), *points["upper"].to_list()]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    scores.plot([low, high], [low, high], color="#999999", linewidth=0.8, linestyle="--")
    scores.set_xlabel(f"{study.summary['measure']}, full human qrels")
    scores.set_ylabel(f"{study.summary['measure']}, estimated from the human sample")
    scores.legend(fontsize=7, loc="upper left")
    figure.suptitle(study.title, fontsize=8)
    return save(figure, path)


def trust_figures(studies: list[TrustStudy], out: Path) -> list[tuple[str, str, str, Path, Spec]]:
    """(section, study id, title, PNG, interactive spec): one figure per study (hover: the system)."""
    return [
        ("trust", s.study_id, s.title, draw_trust(s, out / f"trust-{s.study_id[:12]}.png"),
         trust_ranks(s.systems, s.summary["measure"], s.title))
        for s in studies
    ]  # fmt: skip
