"""Systems scored with ir_measures and the agreement of two rankings of them (Kendall, Spearman, tau-AP).

Runs and qrels are Polars frames: runs [system, query_id, doc_id, rank, score], qrels [query_id, doc_id, relevance].

Two conventions, chosen so that a score is the one users compare against, plain `trec_eval`:
- **Ties**: one order for every measure, trec_eval's: score descending, then doc id descending (byte order; trec_eval's
  strcmp). trec_eval holds a score as a C float (32 bits, `TEXT_RESULTS.sim`), so scores that differ only past the
  7th significant digit tie, and the doc id decides: real runs (DL21's Fast_Forward, ...) write such scores. Each
  topic's run is re-scored n, n-1, ..., 1 in that order before ir_measures sees it, so no provider breaks a tie its
  own way (its Judged@k took doc ids ascending while pytrec_eval's nDCG took them descending). The rank column is
  ignored, as trec_eval ignores it.
- **Topics the run lacks** (`missing_topics`): 'skip' (trec_eval's default) averages over the qrels topics the run
  answers; 'zero' (`trec_eval -c`) scores every qrels topic the run lacks as 0 and averages over all qrels topics.
  Topics in the run without qrels count in neither.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import ir_measures
import numpy as np
import polars as pl
from scipy import stats

from peras.errors import UsageError

ALL_TOPICS = "all"
MISSING_TOPICS = {
    "skip": "topics the run lacks are left out of the mean (trec_eval's default)",
    "zero": "topics the run lacks score 0 in the mean (trec_eval -c)",
}
TIE_ORDER = "ties broken by doc id descending for every measure (trec_eval's order)"


def parse_measures(names: Sequence[str]) -> list[ir_measures.Measure]:
    """ir_measures measures from their names ('nDCG@10', 'AP@100', 'P(rel=2)@10'); a bad name is a usage error."""
    measures = []
    for name in names:
        try:
            measures.append(ir_measures.parse_measure(name))
        except (ValueError, NameError, SyntaxError, TypeError) as exc:
            raise UsageError(
                f"unknown measure {name!r} ({exc}); use ir_measures names such as nDCG@10, AP@100"
            ) from exc
        check_measure_params(name, measures[-1])
    return measures


def check_measure_params(name: str, measure: ir_measures.Measure) -> None:
    """A cutoff of at least 1, and integer parameters pytrec_eval can take (C ints): else it aborts the process."""
    for key, value in dict(measure.params).items():
        if key == "cutoff" and isinstance(value, int) and value < 1:
            raise UsageError(f"measure {name!r}: the cutoff must be at least 1 (@1 is the top passage), not {value}")
        if isinstance(value, int) and not -(2**31) <= value < 2**31:
            raise UsageError(f"measure {name!r}: {key} {value} is past the range -2^31 .. 2^31-1 pytrec_eval takes")


def as_qrels(qrels: pl.DataFrame) -> list[ir_measures.Qrel]:
    """ir_measures Qrel records of a qrels frame."""
    return [ir_measures.Qrel(q, d, int(r)) for q, d, r in qrels.select("query_id", "doc_id", "relevance").iter_rows()]


def as_run(run: pl.DataFrame) -> list[ir_measures.ScoredDoc]:
    """ir_measures ScoredDoc records of one system's run."""
    return [ir_measures.ScoredDoc(q, d, float(s)) for q, d, s in run.select("query_id", "doc_id", "score").iter_rows()]


def trec_order(run: pl.DataFrame) -> pl.DataFrame:
    """The run re-scored n, n-1, ..., 1 per system and topic in trec_eval's order (score, then doc id, descending)."""
    keys = ["system", "query_id"]
    trec_score = pl.col("score").cast(pl.Float32)  # trec_eval keeps a score as a C float: 68.631864929 = 68.631864738
    ordered = run.sort([*keys, trec_score, "doc_id"], descending=[False, False, True, True])
    return ordered.with_columns(score=(pl.len() - pl.int_range(pl.len())).over(keys).cast(pl.Float64))


def score_systems(
    runs: pl.DataFrame, qrels: pl.DataFrame, measures: Sequence[str], missing_topics: str = "skip"
) -> pl.DataFrame:
    """Every system's per-topic and mean ('all') value of each measure: [system, measure, query_id, value].

    Ties and topics the run lacks as the module doc says ('skip': those topics have no row and are not in the mean;
    'zero': they have a row with value 0, in the mean). Topics without any qrels are left out, as trec_eval does;
    the mean is ir_measures' aggregate.
    """
    if missing_topics not in MISSING_TOPICS:
        raise UsageError(f"missing topics {missing_topics!r}: use {' or '.join(MISSING_TOPICS)}")
    parsed = parse_measures(measures)
    rows: list[tuple[str, str, str, float]] = []
    for (system,), run in trec_order(runs).partition_by("system", as_dict=True, maintain_order=True).items():
        answered = qrels if missing_topics == "zero" else qrels.filter(pl.col("query_id").is_in(run["query_id"]))
        judged, scored = as_qrels(answered), as_run(run)
        rows += [
            (str(system), str(m.measure), m.query_id, float(m.value))
            for m in ir_measures.iter_calc(parsed, judged, scored)
        ]
        means = ir_measures.calc_aggregate(parsed, judged, scored)
        rows += [(str(system), str(measure), ALL_TOPICS, float(value)) for measure, value in means.items()]
    schema = {"system": pl.String, "measure": pl.String, "query_id": pl.String, "value": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def tau_ap(reference: Sequence[float], estimate: Sequence[float]) -> float:
    """tau-AP (Yilmaz, Aslam, Robertson, SIGIR 2008) of `estimate` against `reference` (higher = ranked first).

    tau_AP = 2/(n-1) * sum over i=2..n of C(i)/(i-1) - 1, systems taken in the estimate's order; C(i): how many
    of the i-1 systems above system i in the estimate are also above it in the reference. Not symmetric: a swap
    near the estimate's top costs more than one near its bottom. Ties (the paper assumes none): a pair tied in
    both rankings agrees (1), a pair tied in one ranking only counts half; tied systems of the estimate are taken
    in the order given.
    """
    ref = np.asarray(reference, dtype=float)
    est = np.asarray(estimate, dtype=float)
    n = len(ref)
    if n < 2:
        return math.nan
    order = np.argsort(-est, kind="stable")
    total = 0.0
    for i in range(1, n):
        ref_above, est_above = ref[order[:i]], est[order[:i]]
        ref_mine, est_mine = ref[order[i]], est[order[i]]
        est_tied, ref_tied = est_above == est_mine, ref_above == ref_mine
        agree = np.where(est_tied, np.where(ref_tied, 1.0, 0.5), np.where(ref_tied, 0.5, ref_above > ref_mine))
        total += float(agree.sum()) / i
    return float(2.0 * total / (n - 1) - 1.0)


def agreement(reference: Sequence[float], estimate: Sequence[float]) -> tuple[float | None, float | None, float | None]:
    """(Kendall's tau-b, Spearman's rho, tau-AP) of two score lists over the same systems; None where undefined."""
    if len(reference) < 2 or len(set(reference)) < 2 or len(set(estimate)) < 2:
        return None, None, None  # a constant ranking has no correlation (scipy would warn and give NaN)
    tau = stats.kendalltau(reference, estimate).statistic
    rho = stats.spearmanr(reference, estimate).statistic
    ap = tau_ap(reference, estimate)
    return tuple(None if v is None or math.isnan(v) else float(v) for v in (tau, rho, ap))  # type: ignore[return-value]


def compare_rankings(scores: pl.DataFrame, reference: str = "human") -> pl.DataFrame:
    """Agreement of every qrels set's ranking of the systems with the reference's, overall and per topic.

    scores: [qrels_name, system, measure, query_id, value]; returns [qrels_name, measure, query_id, n_systems,
    kendall_tau, spearman_rho, tau_ap]. Per topic, only systems scored under both qrels on that topic count.
    """
    ref = scores.filter(pl.col("qrels_name") == reference).select("system", "measure", "query_id", ref="value")
    other = scores.filter(pl.col("qrels_name") != reference)
    joined = other.join(ref, on=["system", "measure", "query_id"], how="inner").sort("system")
    rows = []
    for (name, measure, query_id), group in joined.group_by(["qrels_name", "measure", "query_id"], maintain_order=True):
        tau, rho, ap = agreement(group["ref"].to_list(), group["value"].to_list())
        rows.append((name, measure, query_id, group.height, tau, rho, ap))
    schema = {
        "qrels_name": pl.String,
        "measure": pl.String,
        "query_id": pl.String,
        "n_systems": pl.Int32,
        "kendall_tau": pl.Float64,
        "spearman_rho": pl.Float64,
        "tau_ap": pl.Float64,
    }
    return pl.DataFrame(rows, schema=schema, orient="row").sort("qrels_name", "measure", "query_id")
