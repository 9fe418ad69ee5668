"""The trust study (`peras trust`): run files ranked under the human qrels and a judge run's labels, the two
rankings' agreement with bootstrap intervals over topics, the pairs whose order flips, and each system's interval
for its human score from a small human sample (tasks/evaluate/intervals.py), stored as one study.

A study is fixed by its inputs: the collection, the judge run and which of its labels, the run files' bytes
(sha256), the measure, the sample asked for, the bootstrap's replicates, level and seed, and --dedupe. Its id is
the sha256 of them all, so a rerun with the same inputs finds it stored and reads it back: nothing is recomputed.

The judged pool is the pairs the judge run labels that the human qrels judge too (a sample of human labels can only
come from there); the LLM qrels are the run's labels of that pool, the human qrels are the collection's on the
topics the run labels, so both rank the systems over the same topics.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import UsageError, clip
from tasks.evaluate.bootstrap import BootstrapSpec, agreement_intervals, flipped_pairs
from tasks.evaluate.intervals import IntervalSpec, draw_human_sample, system_intervals
from tasks.evaluate.qrels import QRELS_SCHEMA
from tasks.evaluate.ranking import ALL_TOPICS, parse_measures, score_systems
from tasks.evaluate.tasks import RunLabels, one_qrels
from tasks.shared.readers import read_qrels, sha256_file

SAMPLE_TEXT = re.compile(r"^(?:(?P<percent>\d+(?:\.\d+)?)%|(?P<share>\d*\.\d+)|(?P<pairs>\d+))$")


@dataclass(frozen=True)
class TrustSpec:
    """What a study asks for besides its collection, judge run and run files."""

    measure: str = "nDCG@10"
    human_sample: str = "5%"
    replicates: int = 1000
    level: float = 0.90
    seed: int = 0
    dedupe: bool = False

    def bootstrap(self) -> BootstrapSpec:
        """The bootstrap over topics (its checks raise here, before anything is read)."""
        return BootstrapSpec(self.replicates, self.level, self.seed)

    def intervals(self) -> IntervalSpec:
        """The per-system intervals at the same level and seed."""
        return IntervalSpec(measure=self.measure, alpha=round(1 - self.level, 12), seed=self.seed)


@dataclass(frozen=True)
class Study:
    """One study's identity, inputs and results, as stored."""

    study_id: str
    record: dict[str, Any]
    scores: pl.DataFrame
    agreement: pl.DataFrame
    flips: pl.DataFrame
    intervals: pl.DataFrame


def check_spec(spec: TrustSpec) -> TrustSpec:
    """A measure ir_measures knows, a readable sample, a valid bootstrap: usage errors before anything is read."""
    parse_measures([spec.measure])
    spec.bootstrap()
    if supplied_sample(spec.human_sample) is None:
        parse_sample(spec.human_sample)
    return spec


def supplied_sample(text: str) -> Path | None:
    """The qrels file of human labels the user supplies as the sample (`--human-sample FILE`), or None."""
    path = Path(text)
    return path if path.is_file() else None


def human_sample(human: pl.DataFrame, pool: pl.DataFrame, text: str, seed: int) -> pl.DataFrame:
    """The sample's human labels: the supplied file's (TREC qrels), or a seeded random sample of the judged pool at
    the share asked for (a number of pairs: that share of the pool), drawn by topic (intervals.draw_human_sample:
    at least one pair per topic, so the count is approximate). intervals.py refuses a sample that is empty, of one
    topic, larger than the pool or with pairs outside it."""
    path = supplied_sample(text)
    if path is not None:
        rows = [(q.query_id, q.doc_id, q.relevance) for q in read_qrels(path).qrels]
        return pl.DataFrame(rows, schema=QRELS_SCHEMA, orient="row")
    in_pool = human.join(pool, on=["query_id", "doc_id"], how="semi")
    size = sample_size(text, in_pool.height)
    return draw_human_sample(in_pool, size / in_pool.height, seed)


def parse_sample(text: str) -> tuple[int | None, float | None]:
    """(pairs, None) for '500', (None, share) for '5%' or '0.05'; unreadable or above 100%: a usage error."""
    found = SAMPLE_TEXT.match(text.strip())
    if found is None:
        raise UsageError(f"--human-sample {text!r}: give a share (5% or 0.05) or a number of pairs (500)")
    if found["pairs"] is not None:
        return int(found["pairs"]), None
    share = float(found["percent"]) / 100 if found["percent"] is not None else float(found["share"])
    if share > 1:
        raise UsageError(f"--human-sample {text}: a share above 100% is more than the judged pool")
    return None, share


def sample_size(text: str, n_pool: int) -> int:
    """Pairs to sample: '5%' or '0.05' (a share of the pool, rounded) or '500' (pairs); more than the pool: an error."""
    pairs, share = parse_sample(text)
    size = pairs if pairs is not None else round((share or 0.0) * n_pool)
    if size > n_pool:
        raise UsageError(f"--human-sample {text}: {size} pairs is more than the {n_pool} pairs of the judged pool")
    if size == 0:
        raise UsageError(f"--human-sample {text}: that draws no pair of the {n_pool} of the judged pool")
    return size


def study_id(collection_id: str, labels: RunLabels, chosen: str, run_files: list[str], spec: TrustSpec) -> str:
    """The sha256 of everything that fixes a study (the run files by their bytes, in the order given)."""
    fixed = {
        "collection_id": collection_id,
        "judge_run_id": labels.run_id,
        "labels": chosen,
        "cot": labels.cot,
        "confidence_method": labels.confidence_method,
        "files": [[Path(path).name, sha256_file(Path(path))] for path in run_files],
        "sample_file": None if (sample := supplied_sample(spec.human_sample)) is None else sha256_file(sample),
        "spec": vars(spec),
    }
    return hashlib.sha256(json.dumps(fixed, sort_keys=True).encode()).hexdigest()


@task(cache_policy=NO_CACHE)
def trust_identity(
    collection_id: str, labels: RunLabels, personality: str | None, aggregate: str | None, run_files: list[str],
    spec: TrustSpec,
) -> str:  # fmt: skip
    """The study's id (tasks/evaluate/trust.py's module doc says what fixes it)."""
    missing = [path for path in run_files if not Path(path).is_file()]
    if missing:
        raise UsageError(f"run file {missing[0]} does not exist")
    return study_id(collection_id, labels, aggregate or personality or "default", run_files, spec)


@task(cache_policy=NO_CACHE)
def judged_pool(
    human: pl.DataFrame, labels: RunLabels, personality: str | None, aggregate: str | None, collection_id: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(human qrels on the run's topics, the run's labels of the pairs the human qrels judge: the judged pool)."""
    llm = one_qrels(labels, personality, aggregate)
    extra = sorted(set(llm["query_id"]) - set(human["query_id"]))
    if extra:
        shown = ", ".join(clip(q) for q in extra[:5]) + (" ..." if len(extra) > 5 else "")
        raise UsageError(
            f"judge run {labels.run_name!r} labels {len(extra)} topic(s) the human qrels of {collection_id!r} lack "
            f"({shown}): a study compares rankings on topics both judge"
        )
    pool = llm.join(human, on=["query_id", "doc_id"], how="semi")
    if pool.is_empty():
        raise UsageError(f"judge run {labels.run_name!r} labels no pair the human qrels of {collection_id!r} judge")
    return human.join(pool.select("query_id").unique(), on="query_id", how="semi"), pool


@task(cache_policy=NO_CACHE)
def draw_sample(human: pl.DataFrame, pool: pl.DataFrame, spec: TrustSpec) -> pl.DataFrame:
    """The human labels of the sample: supplied, or drawn from the judged pool."""
    return human_sample(human, pool, spec.human_sample, spec.seed)


@task(cache_policy=NO_CACHE)
def score_both(runs: pl.DataFrame, human: pl.DataFrame, pool: pl.DataFrame, measure: str) -> pl.DataFrame:
    """[qrels_name, system, query_id, value]: every system under the human qrels and the LLM's ('all': the mean)."""
    frames = [
        score_systems(runs, qrels, [measure]).drop("measure").select(pl.lit(name).alias("qrels_name"), pl.all())
        for name, qrels in (("human", human), ("llm", pool))
    ]
    return pl.concat(frames)


@task(cache_policy=NO_CACHE)
def rank_trust(scores: pl.DataFrame, spec: TrustSpec) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the agreement statistics with their bootstrap intervals, the flipped pairs)."""
    topics, means = scores.filter(pl.col("query_id") != ALL_TOPICS), scores.filter(pl.col("query_id") == ALL_TOPICS)
    human, llm = (topics.filter(qrels_name=name).drop("qrels_name") for name in ("human", "llm"))
    agreement = agreement_intervals(human, llm, spec.bootstrap())
    flips = flipped_pairs(*(means.filter(qrels_name=name).drop("qrels_name") for name in ("human", "llm")))
    return agreement, flips


@task(cache_policy=NO_CACHE)
def score_intervals(runs: pl.DataFrame, pool: pl.DataFrame, sample: pl.DataFrame, spec: TrustSpec) -> pl.DataFrame:
    """Each system's interval for its human score from the sample, by every method the labels allow."""
    confidence = pool if pool["confidence"].null_count() < pool.height else None
    return system_intervals(runs, pool.drop("confidence"), sample, spec.intervals(), confidence)
