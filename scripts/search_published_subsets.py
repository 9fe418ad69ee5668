"""Search each collection for the topic subsets that give the study's Table 4 counts exactly.

Integer program per collection: a binary x_t per judged topic; sum x_t = the published topic count and, for each
level k, sum x_t n_tk = the published count at level k (pairs = the sum of the levels). scipy.optimize.milp finds
one subset; a no-good cut (the sum of x_t over its topics <= topics - 1) excludes it and the solver runs again,
until it finds none or --max-solutions are found (2 is enough to tell zero, one and several apart). When there is
none, the closest subset (same topic count, least summed absolute level-count deviation: the L1 distance over the
four level counts) is reported.

--time-limit SECONDS bounds every milp solve (HiGHS's time_limit). The feasibility question then has three answers:
a subset (found), none (infeasible, proven), or unknown (stopped): the verdict says which, and when no subset was
found the closest one is searched too. A solve with an objective (--choose's best value, the closest subset) that
stops reports its best value, HiGHS's bound and gap, and is marked not proven optimal; --choose then takes the best
subset found (or the search's first exact one) and does not enumerate ties (its value is not known to be the best).

--choose picks one exact subset by the rule docs/subsets.md states for shipping `published` where several exist:
fewest topics outside the study's stated rule (<= ten judged pairs or a level missing), then most topics in common
with the `balanced` subset (the stated rule made deterministic), then the first in sorted order. An integer program
with that objective finds the best value; every subset with it is then enumerated (no-good cuts) and the first taken.

--count enumerates every exact subset by meet-in-the-middle (all subset sums of each half of the topics, matched
on the packed level counts): an independent check of the solver and the number of subsets. It needs a few GB
and a few minutes on DL20/DL21. --eligible-only searches only the topics the study's stated rule admits (more
than ten judged pairs, all four levels).

Qrels are read with the ingest reader (exact repeats collapsed) from Settings.data_dir (../shared/data). What
ships: `published_topics` in peras/presets.toml for a collection with exactly one subset; docs/subsets.md.

    .venv/bin/python scripts/search_published_subsets.py                  # all four, milp, stop at 2
    .venv/bin/python scripts/search_published_subsets.py dl19 --max-solutions 0 --count
    .venv/bin/python scripts/search_published_subsets.py dl19 dl20 dl21 --choose --max-solutions 1
    nice -n 10 .venv/bin/python scripts/search_published_subsets.py dl21 --max-solutions 1 --choose --time-limit 480
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from scipy.optimize import Bounds, LinearConstraint, milp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from peras.settings import load_settings  # noqa: E402
from tasks.ingest.sources import preset_source  # noqa: E402
from tasks.ingest.subsets import rank_balanced_topics  # noqa: E402
from tasks.shared.readers import read_qrels  # noqa: E402

# Table 4 of the study: topics and judged pairs at levels 0 / 1 / 2 / 3 (pairs = their sum).
PUBLISHED: dict[str, tuple[str, int, tuple[int, int, int, int]]] = {
    # collection: (qrels set searched, topics, level counts)
    "llmjudge": ("dev", 21, (3834, 1277, 588, 470)),
    "dl19": ("test", 22, (2314, 707, 760, 360)),
    "dl20": ("test", 25, (3756, 761, 328, 368)),
    "dl21": ("test", 21, (1709, 1198, 922, 475)),
}
CHOICE_TIES_LIMIT = 20  # --choose enumerates at most this many subsets sharing the best value
MIN_PAIRS = 10  # the study's rule: more than ten judged pairs (and all four levels)
FIELD_BITS = (6, 12, 12, 11, 10)  # packed (topics, n0, n1, n2, n3): room for twice each target, no carries


@dataclass
class Search:
    """What the search found for one collection."""

    collection: str
    topics: dict[str, list[int]]  # searched topics -> pairs at levels 0-3
    exact: list[list[str]] = field(default_factory=list)  # found by milp, in order (sorted topic ids)
    complete: bool = True  # False when --max-solutions stopped the enumeration
    seconds: list[float] = field(default_factory=list)  # per milp solve, the last one the proof (if complete)
    count: int | None = None  # every exact subset, by meet-in-the-middle (--count)
    closest: list[str] | None = None  # only when no exact subset was found
    closest_solve: Solve | None = None  # how the closest subset's solve ended (proven, or stopped with a gap)
    chosen: list[str] | None = None  # --choose: the exact subset the choice rule picks
    chosen_ties: int = 0  # --choose: how many exact subsets share the best (outside, overlap) value
    chosen_solve: Solve | None = None  # --choose: how the best-value solve ended (proven, or stopped with a gap)
    timed_out: bool = False  # a feasibility solve hit --time-limit without finding or excluding a subset


def topic_level_counts(collection: str, qrels_set: str, eligible_only: bool = False) -> dict[str, list[int]]:
    """Judged pairs per level for every topic of one qrels file (each pair once)."""
    source = preset_source(collection, load_settings())
    pairs = {(q.query_id, q.doc_id): q.relevance for q in read_qrels(source.qrels[qrels_set]).qrels}
    counts: dict[str, list[int]] = {}
    for (query_id, _), relevance in pairs.items():
        counts.setdefault(query_id, [0, 0, 0, 0])[relevance] += 1
    if eligible_only:
        counts = {t: c for t, c in counts.items() if sum(c) > MIN_PAIRS and min(c) > 0}
    return dict(sorted(counts.items()))


@dataclass
class Solve:
    """One milp solve: the 0/1 topic vector found (None if none), how it ended, and what HiGHS proved.

    status: 'optimal' (for a feasibility question: a subset found), 'infeasible' (proven: no subset exists),
    'time limit' (stopped; `x` is the best subset found so far, or None). objective, bound, gap: the best value
    found, the proven bound on the best possible one and HiGHS's relative gap between them (0 when proven)."""

    x: np.ndarray | None
    status: str
    seconds: float
    objective: float | None = None
    bound: float | None = None
    gap: float | None = None


def run_milp(
    c: np.ndarray,
    rows: list[np.ndarray],
    lower: list[float],
    upper: list[float],
    n_binary: int,
    time_limit: float | None,
) -> Solve:
    """milp over `n_binary` 0/1 topic variables (then any continuous ones, >= 0), stopped after `time_limit` s."""
    n = len(c)
    integrality = np.concatenate([np.ones(n_binary), np.zeros(n - n_binary)])
    upper_bounds = np.concatenate([np.ones(n_binary), np.full(n - n_binary, np.inf)])
    started = time.monotonic()
    result = milp(
        c=c,
        constraints=LinearConstraint(np.array(rows), lower, upper),
        integrality=integrality,
        bounds=Bounds(0, upper_bounds),
        options={} if time_limit is None else {"time_limit": time_limit},
    )
    seconds = round(time.monotonic() - started, 1)
    if result.status == 2:  # infeasible: proven, not a time-out
        return Solve(None, "infeasible", seconds)
    if result.status not in (0, 1):
        raise RuntimeError(f"milp stopped without an answer: {result.message}")
    x = None if result.x is None else np.round(result.x).astype(int)
    bound = getattr(result, "mip_dual_bound", None)
    gap = getattr(result, "mip_gap", None)
    status = "optimal" if result.status == 0 else "time limit"
    return Solve(x, status, seconds, None if x is None else float(result.fun), bound, gap)


def solve_exact(
    counts: np.ndarray,
    n_topics: int,
    target: np.ndarray,
    cuts: list[np.ndarray],
    cost: np.ndarray | None = None,
    at_cost: float | None = None,
    time_limit: float | None = None,
) -> Solve:
    """A 0/1 vector with n_topics topics and the target level counts, avoiding every cut subset (status
    'infeasible': proven none). With `cost`, the cheapest such vector; with `at_cost` too, one of exactly that cost."""
    n = counts.shape[0]
    fixed = [] if cost is None or at_cost is None else [cost]
    rows = [np.ones(n), *counts.T, *cuts, *fixed]
    lower = [n_topics, *target, *(-np.inf for _ in cuts), *(at_cost for _ in fixed)]
    upper = [n_topics, *target, *(cut.sum() - 1 for cut in cuts), *(at_cost for _ in fixed)]
    return run_milp(np.zeros(n) if cost is None else cost, rows, lower, upper, n, time_limit)


def solve_closest(counts: np.ndarray, n_topics: int, target: np.ndarray, time_limit: float | None = None) -> Solve:
    """The n_topics-topic subset with the least L1 distance to the target: sum over levels of |count - target|
    (d_k >= |count_k - target_k|, minimise sum d_k)."""
    n, levels = counts.shape
    rows = [np.concatenate([np.ones(n), np.zeros(levels)])]
    lower: list[float] = [n_topics]
    upper: list[float] = [n_topics]
    for k, unit in enumerate(np.eye(levels)):
        rows += [np.concatenate([counts[:, k], -unit]), np.concatenate([counts[:, k], unit])]
        lower += [-np.inf, target[k]]  # d_k >= count_k - target_k and d_k >= target_k - count_k
        upper += [target[k], np.inf]
    found = run_milp(np.concatenate([np.zeros(n), np.ones(levels)]), rows, lower, upper, n, time_limit)
    if found.x is not None:
        found.x = found.x[:n]
    return found


def choose(found: Search, n_topics: int, levels: tuple[int, ...], limit: int, time_limit: float | None = None) -> None:
    """The choice rule (module doc): the best (outside, overlap) value by milp, then every subset with it, first.

    With a time limit the best-value solve may stop before it proves its value: the best subset it found (or, if it
    found none, the first exact subset of the search) is then taken, with the bound and gap HiGHS reached, and the
    subsets sharing its value are not enumerated (the value is not known to be the best)."""
    ids = list(found.topics)
    counts = np.array([found.topics[t] for t in ids])
    frame = {"query_id": [t for t in ids for k in range(4) for _ in range(found.topics[t][k])]}
    frame["relevance"] = [k for t in ids for k in range(4) for _ in range(found.topics[t][k])]
    balanced = set(rank_balanced_topics(pl.DataFrame(frame), n_topics)["query_id"])
    outside = np.array([sum(c) <= MIN_PAIRS or min(c) == 0 for c in counts], float)
    cost = (len(ids) + 1) * outside - np.array([t in balanced for t in ids], float)  # outside first, then overlap
    best = solve_exact(counts, n_topics, np.array(levels), [], cost, time_limit=time_limit)
    found.chosen_solve = best
    if best.x is None and best.status == "time limit" and found.exact:
        best.x = np.array([t in found.exact[0] for t in ids], int)
        best.objective = float(cost @ best.x)
    if best.x is None:
        return
    if best.status != "optimal":
        found.chosen, found.chosen_ties = sorted(t for t, chosen in zip(ids, best.x, strict=True) if chosen), 0
        return
    at_cost = float(cost @ best.x)
    ties: list[list[str]] = []
    cuts: list[np.ndarray] = []
    x: np.ndarray | None = best.x
    while x is not None and len(ties) < limit:
        ties.append(sorted(t for t, chosen in zip(ids, x, strict=True) if chosen))
        cuts.append(x.astype(float))
        x = solve_exact(counts, n_topics, np.array(levels), cuts, cost, at_cost, time_limit).x
    found.chosen, found.chosen_ties = min(ties), len(ties)


def pack(vectors: np.ndarray) -> np.ndarray:
    """(topics, n0, n1, n2, n3) rows as one int64 each; sums of two rows within the targets never carry."""
    offsets = np.cumsum((0, *FIELD_BITS[:-1]))
    return (vectors.astype(np.int64) << offsets).sum(axis=-1)


def half_sums(vectors: np.ndarray, limit: np.ndarray) -> np.ndarray:
    """Packed sums of every subset of `vectors` whose fields stay within `limit`."""
    fields = np.zeros((1, vectors.shape[1]), np.int32)
    for vector in vectors:
        grown = fields + vector
        fields = np.concatenate([fields, grown[(grown <= limit).all(axis=1)]])
    return pack(fields)


def count_exact(counts: np.ndarray, n_topics: int, target: np.ndarray) -> int:
    """How many subsets hit the target exactly: the two halves' subset sums, matched to add up to it."""
    vectors = np.hstack([np.ones((counts.shape[0], 1), np.int32), counts])
    limit = np.array([n_topics, *target])
    middle = len(vectors) // 2
    left = np.sort(half_sums(vectors[:middle], limit))
    need = pack(limit) - half_sums(vectors[middle:], limit)
    return int((np.searchsorted(left, need, "right") - np.searchsorted(left, need, "left")).sum())


def search(
    collection: str,
    max_solutions: int,
    with_count: bool,
    eligible_only: bool,
    with_choice: bool = False,
    time_limit: float | None = None,
) -> Search:
    """Enumerate exact subsets with no-good cuts; count them all (--count); the closest one when none was found.
    Every milp solve stops after `time_limit` seconds (None: no limit); a feasibility solve stopped that way leaves
    the question open (`timed_out`), and the closest subset is then searched too."""
    qrels_set, n_topics, levels = PUBLISHED[collection]
    found = Search(collection, topic_level_counts(collection, qrels_set, eligible_only))
    ids = list(found.topics)
    counts = np.array([found.topics[t] for t in ids])
    target = np.array(levels)
    cuts: list[np.ndarray] = []
    while True:
        if max_solutions and len(found.exact) == max_solutions:
            found.complete = False
            break
        solved = solve_exact(counts, n_topics, target, cuts, time_limit=time_limit)
        found.seconds.append(solved.seconds)
        if solved.x is None:
            found.timed_out = solved.status == "time limit"
            found.complete = not found.timed_out
            break
        found.exact.append(sorted(t for t, chosen in zip(ids, solved.x, strict=True) if chosen))
        cuts.append(solved.x.astype(float))
    if with_count:
        found.count = count_exact(counts, n_topics, target)
    if with_choice and found.exact:
        choose(found, n_topics, levels, CHOICE_TIES_LIMIT, time_limit)
    if not found.exact:
        found.closest_solve = solve_closest(counts, n_topics, target, time_limit)
        x = found.closest_solve.x
        found.closest = None if x is None else sorted(t for t, chosen in zip(ids, x, strict=True) if chosen)
    return found


def levels_of(found: Search, topics: list[str]) -> list[int]:
    """Pairs at levels 0-3 over the given topics."""
    return [int(v) for v in np.array([found.topics[t] for t in topics]).sum(axis=0)]


def describe(found: Search) -> dict[str, Any]:
    """The result as JSON-ready data."""
    _, n_topics, levels = PUBLISHED[found.collection]
    exact = len(found.exact)
    verdict = "none" if exact == 0 and found.complete else "one" if exact == 1 and found.complete else "several"
    if exact == 0 and found.timed_out:
        verdict = "unknown (time limit)"
    elif exact == 1 and found.timed_out:
        verdict = "at least one (time limit)"
    out: dict[str, Any] = {
        "collection": found.collection,
        "searched_topics": len(found.topics),
        "target": {"topics": n_topics, "levels": list(levels), "pairs": sum(levels)},
        "verdict": verdict,
        "milp_found": exact,
        "milp_enumeration_complete": found.complete,
        "milp_seconds": found.seconds,
        "exact": [{"topics": t, "outside_stated_rule": outside_rule(found, t)} for t in found.exact],
    }
    if found.count is not None:
        out["count_all_exact"] = found.count
    if found.chosen is not None:
        out["chosen"] = {
            "topics": found.chosen,
            "outside_stated_rule": outside_rule(found, found.chosen),
            "subsets_with_the_best_value": found.chosen_ties,
        }
        if found.chosen_solve is not None:
            out["chosen"] |= solve_report(found.chosen_solve)
    if found.closest is not None:
        got = levels_of(found, found.closest)
        deviation = [g - w for g, w in zip(got, levels, strict=True)]
        out["closest"] = {
            "topics": found.closest,
            "levels": got,
            "deviation": deviation,
            "sum_abs_deviation": sum(abs(d) for d in deviation),
        }
    if found.closest_solve is not None:
        out["closest"] = out.get("closest", {"topics": None}) | solve_report(found.closest_solve)
    return out


def solve_report(solve: Solve) -> dict[str, Any]:
    """How a solve with an objective ended: proven optimal, or stopped with the best value, bound and gap."""
    return {
        "proven_optimal": solve.status == "optimal",
        "solve_status": solve.status,
        "solve_seconds": solve.seconds,
        "objective": solve.objective,
        "bound": solve.bound,
        "gap": solve.gap,
    }


def outside_rule(found: Search, topics: list[str]) -> list[str]:
    """The chosen topics the study's stated rule would not admit (<= ten pairs or a level missing)."""
    return [t for t in topics if sum(found.topics[t]) <= MIN_PAIRS or min(found.topics[t]) == 0]


def main() -> None:
    """Run the search for the named collections (default: all four) and print the result."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("collections", nargs="*", help=f"some of: {', '.join(PUBLISHED)} [all]")
    parser.add_argument("--max-solutions", type=int, default=2, help="stop after this many; 0 = all [2]")
    parser.add_argument("--count", action="store_true", help="also count every exact subset (meet-in-the-middle)")
    parser.add_argument("--eligible-only", action="store_true", help="only topics with > 10 pairs, all 4 levels")
    parser.add_argument("--choose", action="store_true", help="also pick one exact subset by the choice rule")
    parser.add_argument("--time-limit", type=float, help="stop every milp solve after this many seconds [none]")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    args = parser.parse_args()
    unknown = sorted(set(args.collections) - set(PUBLISHED))
    if unknown:
        parser.error(f"unknown collection(s) {', '.join(unknown)}; choose from {', '.join(PUBLISHED)}")
    for collection in args.collections or PUBLISHED:
        found = search(collection, args.max_solutions, args.count, args.eligible_only, args.choose, args.time_limit)
        result = describe(found)
        if args.json:
            print(json.dumps(result), flush=True)
            continue
        target = result["target"]
        print(
            f"{collection}: {result['searched_topics']} topics searched; target {target['topics']} topics, "
            f"levels {target['levels']} ({target['pairs']} pairs): {result['verdict']}"
        )
        stopped = "" if result["milp_enumeration_complete"] else f", stopped at {args.max_solutions}"
        print(f"  milp: {result['milp_found']} found{stopped}; seconds per solve {result['milp_seconds']}")
        for subset in result["exact"]:
            outside = subset["outside_stated_rule"]
            print(f"    {' '.join(subset['topics'])}" + (f"  (outside the rule: {' '.join(outside)})" * bool(outside)))
        if "count_all_exact" in result:
            print(f"  every exact subset (meet-in-the-middle): {result['count_all_exact']}")
        if "chosen" in result:
            chosen = result["chosen"]
            print(
                f"  chosen ({chosen['subsets_with_the_best_value']} with the best value, enumeration stops at "
                f"{CHOICE_TIES_LIMIT}; outside the rule: "
                f"{' '.join(chosen['outside_stated_rule'])}):\n    {' '.join(chosen['topics'])}"
            )
            if "proven_optimal" in chosen:
                print(f"    best-value solve: {proof(chosen)}")
        if result.get("closest", {}).get("topics"):
            closest = result["closest"]
            print(
                f"  closest: levels {closest['levels']}, deviation {closest['deviation']} "
                f"(sum |dev| = {closest['sum_abs_deviation']})\n    {' '.join(closest['topics'])}"
            )
        if "closest" in result and "proven_optimal" in result["closest"]:
            print(f"  closest solve: {proof(result['closest'])}")
        sys.stdout.flush()


def proof(solved: dict[str, Any]) -> str:
    """One line: proven optimal, or stopped at the time limit with the best value, the bound and the gap."""
    if solved["proven_optimal"]:
        return f"proven optimal (value {solved['objective']}, {solved['solve_seconds']} s)"
    return (
        f"stopped at the time limit after {solved['solve_seconds']} s: best value {solved['objective']}, "
        f"bound {solved['bound']}, gap {solved['gap']}"
    )


if __name__ == "__main__":
    main()
