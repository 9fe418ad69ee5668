"""Each system's score under the full human qrels, as an interval from LLM labels and a small human sample.

The population is the judged pool (the LLM qrels' pairs); the human sample is a uniform random sample of its pairs.
A measure linear in the labels (P@k) is a total over pool pairs, estimated with PPI++ exactly. nDCG@k is a mean over
topics of DCG_q / IDCG_q: both are functions of per-topic totals of the labels (DCG_q of the system's weighted
gains, IDCG_q of the counts of pairs at or above each gain, IDCG = sum_j (v_j - v_j-1) D(C_qj) with D the cumulative
discount), so the score is a function F of pool totals T, smooth except where a count crosses an integer or the
cutoff. The delta method around the sample's own totals T^ (N/n x the sample's sums): F(T) ~ F(T^) + L(T) - L(T^),
L(T) the pool total of each pair's influence psi_i(label) = grad F(T^) . phi_i(label). PPI++ estimates L(T) from
Y = N psi(human label) on the sample and Yhat = N psi(prediction) on the sample and the pool, lambda tuned per
system; lambda 0 without predictions is the human sample alone (F(T^) and the classical interval). docs/evaluate.md
says what it assumes and what it covers; bench/bench_trust_coverage.py measures it.

Methods: `ppi` (predictions: the LLM labels), `human_only` (no predictions: the sample alone, lambda 0) and
`calibrated_ppi` (predictions: expected labels under P(human | LLM label, confidence bin) fitted on the sample, left
one out for the sampled pairs; needs `llm_confidence`, left out without it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from peras.errors import UsageError
from tasks.evaluate.intervals_input import Pool, Systems, prepare_pool, prepare_systems
from tasks.evaluate.ppi import calibrated_probabilities, confidence_bins, ppi_mean_ci

METHODS = {
    "ppi": "PPI++ (power-tuned) with the LLM labels as predictions",
    "human_only": "the human sample alone (classical interval)",
    "calibrated_ppi": "PPI++ with labels calibrated on the human sample per LLM label and confidence bin (adapted)",
}
RESULT_SCHEMA = {
    "system": pl.String,
    "method": pl.String,
    "measure": pl.String,
    "estimate": pl.Float64,
    "lower": pl.Float64,
    "upper": pl.Float64,
    "n_sample": pl.Int64,
}


@dataclass(frozen=True)
class IntervalSpec:
    """What to estimate: the measure (an ir_measures name), 1 - coverage, the methods, the sampling seed.

    The intervals themselves are deterministic: `seed` is the seed the caller draws the sample with
    (draw_human_sample), kept with the spec so a stored result says which sample it came from.
    """

    measure: str = "nDCG@10"
    alpha: float = 0.10
    methods: tuple[str, ...] = ("ppi", "human_only", "calibrated_ppi")
    seed: int = 0


def draw_human_sample(human_qrels: pl.DataFrame, share: float, seed: int) -> pl.DataFrame:
    """A seeded random sample of the judged pool: query_id, doc_id, relevance (share in (0, 1]).

    Stratified by topic: from each topic's pairs (sorted by doc_id) max(1, round(share x its pairs)) drawn without
    replacement by numpy's generator seeded with `seed`, topics in query_id order; returned sorted by (query_id,
    doc_id). Every topic gets a pair, so every topic's ideal DCG has an estimate.
    """
    if not 0 < share <= 1:
        raise UsageError(f"human sample share {share:g}: use a share in (0, 1], e.g. 0.05 for 5% of the pairs")
    pairs = (
        human_qrels.select("query_id", "doc_id", "relevance").unique(["query_id", "doc_id"]).sort("query_id", "doc_id")
    )
    rng = np.random.default_rng(seed)
    picked = []
    for start, size in (
        pairs.group_by("query_id", maintain_order=True)
        .len()
        .select(start=pl.col("len").cum_sum() - pl.col("len"), size="len")
        .iter_rows()
    ):
        draw = rng.choice(size, size=max(1, round(share * size)), replace=False)
        picked.append(start + np.sort(draw))
    return pairs[np.concatenate(picked)]


def check_spec(spec: IntervalSpec) -> None:
    """Known methods and 0 < alpha < 1."""
    unknown = [m for m in spec.methods if m not in METHODS]
    if unknown:
        raise UsageError(f"interval method {unknown[0]!r}: use {', '.join(METHODS)}")
    if not 0 < spec.alpha < 1:
        raise UsageError(f"alpha {spec.alpha:g}: use a level in (0, 1), e.g. 0.1 for 90% intervals")


def predictions(method: str, pool: Pool, llm_confidence: pl.DataFrame | None) -> tuple[np.ndarray, np.ndarray] | None:
    """Each pool pair's predicted grade distribution (N, G) and the sampled pairs' (n, G) for `method`."""
    n_grades = len(pool.grades)
    if method == "human_only":
        return np.zeros((pool.size, n_grades)), np.zeros((pool.sample.size, n_grades))
    if method == "ppi":
        onehot = np.eye(n_grades)[pool.llm]
        return onehot, onehot[pool.sample]
    if llm_confidence is None:
        return None
    bins = confidence_bins(pool.confidence(llm_confidence))
    return calibrated_probabilities(pool.llm, bins, pool.sample, pool.human, n_grades)


def linearise(pool: Pool, systems: Systems) -> tuple[np.ndarray, list[np.ndarray]]:
    """F at the sample's totals (each sampled pair counted N_q / n_q times) per system, and the influence
    coefficients there: (F, [a, b, e]) with psi_i(x) = a[s, q_i] W[s, i] (x . gain) - b[s, q_i] (x . e[q_i]) for a
    grade distribution x (e: the ideal DCG's slope per grade, per topic)."""
    scale = pool.expansion
    on_sample = pool.topic_matrix[pool.sample]  # (n, Q)
    dcg = (systems.weight[:, pool.sample] * pool.gain[pool.human] * scale) @ on_sample  # (S, Q)
    if pool.normalised:
        counts = on_sample.T @ (pool.at_least[pool.human] * scale[:, None])  # (Q, J)
        ideal, slope = pool.ideal(np.clip(counts, 0, pool.topic_sizes[:, None]))
    else:
        ideal, slope = np.ones(pool.n_topics), np.zeros((pool.n_topics, len(pool.grades)))
    ok = ideal > 0
    safe = np.where(ok, ideal, 1.0)
    per_topic = systems.answered / systems.n_topics[:, None]
    a = np.where(ok, per_topic / safe, 0.0)
    b = np.where(ok, per_topic * dcg / safe**2, 0.0)
    return (a * dcg).sum(axis=1), [a, b, slope]


def influence(pool: Pool, systems: Systems, coef: list[np.ndarray], x: np.ndarray, at: np.ndarray) -> np.ndarray:
    """N psi_i(x_i) for pool pairs `at` with grade distributions x (len(at), G): shape (len(at), S)."""
    a, b, e = coef
    topic = pool.topic[at]
    value = a[:, topic] * systems.weight[:, at] * (x @ pool.gain) - b[:, topic] * (x @ e.T)[np.arange(len(at)), topic]
    return pool.size * value.T


def method_interval(
    pool: Pool, systems: Systems, anchor: tuple[np.ndarray, list[np.ndarray], np.ndarray], method: str,
    dist: tuple[np.ndarray, np.ndarray], alpha: float,
) -> list[np.ndarray]:  # fmt: skip
    """estimate, lower, upper per system for one method (clipped to the measure's range [0, 1]).

    F(T) ~ F(T^) + L(T) - L(T^), T^ the sample's totals and L the sum of the influence over the pool; L(T^) is
    the mean of Y, L(T) PPI++'s estimate of the mean of Y from the predictions (lambda 0 for the sample alone, which
    leaves F(T^) and the classical interval).
    """
    f, coef, y = anchor
    everyone, sampled = dist
    yhat = influence(pool, systems, coef, sampled, pool.sample) * pool.sample_weight[:, None]
    yhat_all = influence(pool, systems, coef, everyone, np.arange(pool.size))
    found = ppi_mean_ci(y, yhat, yhat_all, alpha, lam=0.0 if method == "human_only" else None)
    shift = f - y.mean(axis=0)
    return [np.clip(v + shift, 0.0, 1.0) for v in (found.estimate, found.lower, found.upper)]


def system_intervals(
    runs: pl.DataFrame,
    llm_qrels: pl.DataFrame,
    human_sample: pl.DataFrame,
    spec: IntervalSpec,
    llm_confidence: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """One row per system x method: system, method, measure, estimate, lower, upper, n_sample.

    runs: system, query_id, doc_id, score (or rank); llm_qrels: the LLM labels of the whole judged pool;
    human_sample: human labels of a sample of its pairs; llm_confidence: query_id, doc_id, relevance, confidence
    (0-100) where the judge has one (without it `calibrated_ppi` is left out).
    """
    check_spec(spec)
    pool = prepare_pool(llm_qrels, human_sample, spec.measure)
    return pool_intervals(pool, prepare_systems(runs, pool), spec, llm_confidence)


def pool_intervals(
    pool: Pool, systems: Systems, spec: IntervalSpec, llm_confidence: pl.DataFrame | None = None
) -> pl.DataFrame:
    """system_intervals on prepared arrays (a benchmark prepares the systems once for many samples)."""
    f, coef = linearise(pool, systems)
    human = influence(pool, systems, coef, np.eye(len(pool.grades))[pool.human], pool.sample)
    anchor = (f, coef, human * pool.sample_weight[:, None])
    frames = []
    for method in spec.methods:
        dist = predictions(method, pool, llm_confidence)
        if dist is None:
            continue
        estimate, lower, upper = method_interval(pool, systems, anchor, method, dist, spec.alpha)
        frames.append(
            pl.DataFrame(
                {
                    "system": systems.names,
                    "method": method,
                    "measure": spec.measure,
                    "estimate": estimate,
                    "lower": lower,
                    "upper": upper,
                    "n_sample": pool.sample.size,
                },
                schema=RESULT_SCHEMA,
            )
        )
    return pl.concat(frames) if frames else pl.DataFrame(schema=RESULT_SCHEMA)
