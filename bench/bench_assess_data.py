"""The two settings bench/bench_assess_budget.py measures the assess strategies on, read from ../shared/data.

A setting is the human qrels (the pool, sorted by query_id, doc_id), the systems' runs, the systems' rank spread of
each pair (tasks/assess/plan.py's ranking-impact signal) and a panel of judges: per seed, every judge's labels of
every pool pair (J, N). The seed's chosen judge is the run a plan is made from; the panel stands for the run's
personalities (disagreement: the entropy of the panel's labels) and gives the chosen judge's confidence
(low-confidence: the share of the other judges that give its label): neither the submissions nor the simulated
judges carry confidences of their own.

- llmjudge: the 4,423 LLMJudge test pairs, the 33 real submissions as the panel (labels past 3 clipped to 3), the
  eleven bm25s systems `peras build-runs` builds over the collection's 11,621 passages;
- dl21: DL21's 10,828 pairs, the 60 distinct official runs (bench_trust_coverage.distinct_runs), and per seed 33
  simulated judges, one per LLMJudge submission's confusion matrix (bench_trust_coverage.simulate).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from bench.bench_trust_coverage import GRADES, confusions, distinct_runs, human_qrels, simulate
from tasks.assess.plan import rank_spread
from tasks.evaluate.builder import CONFIGS, build_run

QRELS_SCHEMA = {"query_id": pl.String, "x": pl.String, "doc_id": pl.String, "relevance": pl.Int64}
DEPTH = 100  # what `peras build-runs` ranks


@dataclass(frozen=True)
class Setting:
    """One collection's pool, systems and judges."""

    name: str
    qrels: pl.DataFrame  # [query_id, doc_id, relevance], sorted
    runs: pl.DataFrame  # [system, query_id, doc_id, rank, score]
    spread: np.ndarray  # (N,) each pair's rank spread over the systems
    judge_names: list[str]
    panel: Callable[[int], np.ndarray]  # seed -> (J, N) every judge's labels


def read_trec_qrels(path: Path) -> pl.DataFrame:
    """A qrels file as [query_id, doc_id, relevance] (labels as they are)."""
    return pl.read_csv(path, separator=" ", has_header=False, schema=QRELS_SCHEMA).drop("x")


def pair_spread(qrels: pl.DataFrame, runs: pl.DataFrame) -> np.ndarray:
    """Each pool pair's rank spread over the systems (0 where no system ranks it within nDCG@10's depth)."""
    spread = rank_spread(runs, runs["system"].n_unique())
    joined = qrels.join(spread, on=["query_id", "doc_id"], how="left", maintain_order="left")
    return joined["rank_spread"].fill_null(0.0).to_numpy()


def llmjudge(data: Path) -> Setting:
    """LLMJudge's test pool, its 33 submissions, the built bm25s runs."""
    folder = data / "llmjudge"
    qrels = read_trec_qrels(folder / "llmjudge_test_qrel_idx.txt").sort("query_id", "doc_id")
    paths = sorted((folder / "judge-runs").glob("*.txt"))
    labels = []
    for path in paths:
        judged = qrels.select("query_id", "doc_id").join(read_trec_qrels(path), on=["query_id", "doc_id"], how="left")
        labels.append(np.clip(judged["relevance"].fill_null(0).to_numpy(), 0, GRADES - 1))
    panel = np.stack(labels)
    queries = pl.read_csv(folder / "llm4eval_query_2024.txt", separator="\t", has_header=False, quote_char=None,
                          new_columns=["query_id", "text"], schema_overrides={"column_1": pl.String})  # fmt: skip
    queries = queries.filter(pl.col("query_id").is_in(qrels["query_id"].unique().implode())).sort("query_id")
    lines = (folder / "llm4eval_document_2024.jsonl").read_text(encoding="utf-8").splitlines()
    passages = pl.DataFrame([json.loads(line) for line in lines]).select(doc_id="docid", text="doc").sort("doc_id")
    runs = pl.concat([build_run(config, queries, passages, DEPTH) for config in CONFIGS])
    return Setting("llmjudge", qrels, runs, pair_spread(qrels, runs), [p.stem for p in paths], lambda seed: panel)


def dl21(data: Path) -> Setting:
    """DL21's pool, its 60 distinct official runs, 33 simulated judges per seed."""
    qrels = human_qrels(data)
    runs = distinct_runs(data, qrels["query_id"].unique())
    judges = confusions(data)
    names = sorted(judges)

    def panel(seed: int) -> np.ndarray:
        rng = np.random.default_rng([seed, 51])
        return np.stack([simulate(qrels, judges[name], rng)["relevance"].to_numpy() for name in names])

    return Setting("dl21", qrels, runs, pair_spread(qrels, runs), names, panel)


def entropy_bits(panel: np.ndarray) -> np.ndarray:
    """Per pair, the entropy (bits) of the panel's labels."""
    shares = np.stack([(panel == grade).mean(axis=0) for grade in range(GRADES)])
    logs = np.log2(np.where(shares > 0, shares, 1.0))
    return -(shares * logs).sum(axis=0) + 0.0


def plan_pool(setting: Setting, panel: np.ndarray, chosen: int) -> pl.DataFrame:
    """The pool a plan picks from (sql/assess/select_pool.sql's columns, with the rank spread): the chosen judge's
    labels, its confidence (the other judges' share giving its label, x 100), the panel's entropy."""
    others = np.delete(panel, chosen, axis=0)
    agree = (others == panel[chosen]).mean(axis=0) * 100.0
    return setting.qrels.select("query_id", "doc_id").with_columns(
        llm_label=pl.Series(panel[chosen], dtype=pl.Int64),
        mean_confidence=pl.Series(agree, dtype=pl.Float64),
        label_entropy=pl.Series(entropy_bits(panel), dtype=pl.Float64),
        rank_spread=pl.Series(setting.spread, dtype=pl.Float64),
    )
