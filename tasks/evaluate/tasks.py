"""Evaluate tasks: qrels from the warehouse (human, a judge run's LLM labels, filled), runs read or built, systems
scored with ir_measures, rankings compared, results stored (sql/evaluate/).

The measures and correlations are in tasks/evaluate/ranking.py, the qrels logic in tasks/evaluate/qrels.py, the
bm25s builder in tasks/evaluate/builder.py, the hole-filling experiment in tasks/evaluate/holes.py.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import polars as pl
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import UsageError
from peras.outputs import write_files
from peras.settings import Settings
from peras.sql import query_frame, run_sql
from peras.warehouse import now, open_migrated, transaction
from tasks.evaluate.builder import CONFIGS, build_run, run_text
from tasks.evaluate.duplicates import drop_duplicates, duplicate_groups
from tasks.evaluate.provenance import qrels_header, run_header
from tasks.evaluate.qrels import MAJORITY, fill_holes, majority_labels, personality_labels, qrels_files
from tasks.evaluate.ranking import ALL_TOPICS, MISSING_TOPICS, TIE_ORDER, compare_rankings, score_systems
from tasks.shared.ir_metadata import side_path
from tasks.shared.judge_runs import published_judge_run
from tasks.shared.run_files import read_run_lines

HUMAN = "human"
HYBRID = "hybrid:"  # --qrels hybrid:PLAN: an assessment plan's hybrid qrels (docs/assess.md)


@dataclass(frozen=True)
class RunLabels:
    """One judge run's labels under one CoT setting and confidence method, every personality's."""

    run_id: str
    run_name: str
    collection_id: str
    cot: bool
    confidence_method: str
    labels: pl.DataFrame  # [query_id, doc_id, personality, label, confidence]
    fused: pl.DataFrame  # the latest published fuse run's labels for this run's pairs [query_id, doc_id, relevance, ..]


@task(cache_policy=NO_CACHE)
def load_human_qrels(settings: Settings, collection_id: str) -> pl.DataFrame:
    """The collection's human qrels [query_id, doc_id, relevance]; a collection not ingested is a usage error."""
    with open_migrated(settings.warehouse) as con:
        if not run_sql(con, "evaluate/select_collection", {"collection_id": collection_id}).fetchall()[0][0]:
            raise UsageError(
                f"collection {collection_id!r} is not in the warehouse: run `peras ingest {collection_id}`"
            )
        return query_frame(con, "evaluate/select_human_qrels", {"collection_id": collection_id})


@task(cache_policy=NO_CACHE)
def load_run_labels(settings: Settings, run_name: str, cot: bool | None, method: str | None) -> RunLabels:
    """A published judge run's labels; CoT setting and confidence method are needed only when the run has several."""
    with open_migrated(settings.warehouse) as con:
        run_id, collection_id = published_judge_run(con, run_name)
        groups = query_frame(con, "evaluate/select_run_groups", {"run_id": run_id})
        cot, method = choose_group(run_name, groups, cot, method)
        params = {"run_id": run_id, "cot": cot, "confidence_method": method}
        labels = query_frame(con, "evaluate/select_run_labels", params)
        fused = query_frame(con, "evaluate/select_fuser_labels", {"run_name": run_name})
    return RunLabels(run_id, run_name, collection_id, cot, method, labels, fused.drop("fuse_run_name"))


def choose_group(run_name: str, groups: pl.DataFrame, cot: bool | None, method: str | None) -> tuple[bool, str]:
    """The (CoT, method) group asked for, or the run's only one; otherwise say which to pick."""
    if groups.is_empty():
        raise UsageError(f"judge run {run_name!r} holds no judgments: there is nothing to evaluate")
    chosen = groups
    if cot is not None:
        chosen = chosen.filter(pl.col("cot") == cot)
    if method is not None:
        chosen = chosen.filter(pl.col("confidence_method") == method)
    if chosen.height == 1:
        return bool(chosen["cot"][0]), str(chosen["confidence_method"][0])
    have = ", ".join(f"{'--cot' if c else '--no-cot'} --confidence-method {m}" for c, m, *_ in groups.iter_rows())
    raise UsageError(
        f"judge run {run_name!r} has {'no' if chosen.is_empty() else 'several'} such label groups; pick one of: {have}"
    )


def llm_qrels(labels: RunLabels, personality: str | None, aggregate: str | None) -> dict[str, pl.DataFrame]:
    """Qrels made of the run's labels, by name: one personality's, an aggregate's, or (neither given) each one's."""
    if aggregate == "classifier":
        raise UsageError(
            "--aggregate classifier: `peras classify` stores its trials' scores, not per-pair labels, so there are "
            "none to write; use --aggregate majority or fuser, or --personality"
        )
    if aggregate == "fuser":
        if labels.fused.is_empty():
            raise UsageError(
                f"--aggregate fuser: no published fuse run with fuser answers fuses judge run {labels.run_name!r}; "
                f"run `peras fuse` on it first (docs/fuse.md), or use --aggregate majority"
            )
        return {"fuser": labels.fused}
    if aggregate == MAJORITY:
        return {MAJORITY: majority_labels(labels.labels)}
    names = [personality] if personality else sorted(labels.labels["personality"].unique().to_list())
    return {name: personality_labels(labels.labels, name) for name in names}


@task(cache_policy=NO_CACHE)
def qrels_sets(
    human: pl.DataFrame,
    labels: RunLabels | None,
    source: str,
    personality: str | None,
    aggregate: str | None,
    hybrid: Any = None,
) -> dict[str, pl.DataFrame]:
    """The human qrels and, for source 'llm' or 'filled', one qrels set per personality (or the aggregate's); for
    'hybrid:PLAN', the plan's hybrid qrels (`hybrid`, the assess stage's HybridQrels, which the flow hands over)."""
    if hybrid is not None:
        made = hybrid.qrels.select("query_id", "doc_id", "relevance")
        return {HUMAN: human.join(made.select("query_id").unique(), on="query_id", how="semi"), source: made}
    if labels is None:
        return {HUMAN: human}
    made = llm_qrels(labels, personality, aggregate)
    if source == "filled":
        return {HUMAN: human} | {name: fill_holes(human, q) for name, q in made.items()}
    # LLM labels alone: the human ranking is taken on the topics the run labels (LLMJudge labels its test topics
    # only), so both means run over the same topics.
    topics = labels.labels.select("query_id").unique()
    return {HUMAN: human.join(topics, on="query_id", how="semi")} | made


def one_qrels(labels: RunLabels, personality: str | None, aggregate: str | None) -> pl.DataFrame:
    """One qrels set from the run's labels: the aggregate's, or one personality's ('default' when none is named)."""
    if personality is not None and aggregate is not None:
        raise UsageError("give --personality or --aggregate, not both")
    return next(iter(llm_qrels(labels, personality or (None if aggregate else "default"), aggregate).values()))


def make_evaluation(
    collection_id: str,
    source: str,
    labels: RunLabels | None,
    measures: list[str],
    runs: pl.DataFrame,
    scores: pl.DataFrame,
    agreement: pl.DataFrame,
) -> Evaluation:
    """What one `peras evaluate` call stores."""
    run_id = labels.run_id if labels else None
    source = "hybrid" if source.startswith(HYBRID) else source
    return Evaluation(collection_id, source, run_id, measures, system_sources(runs), scores, agreement)


def check_collection(labels: RunLabels, collection_id: str) -> RunLabels:
    """A judge run's labels are used only on the collection it judged."""
    if labels.collection_id != collection_id:
        raise UsageError(
            f"judge run {labels.run_name!r} judged collection {labels.collection_id!r}, not {collection_id!r}"
        )
    return labels


@task(cache_policy=NO_CACHE)
def describe_qrels(
    settings: Settings,
    labels: RunLabels,
    personality: str | None,
    aggregate: str | None,
    fill_from_human: bool,
    hybrid: str | None = None,
) -> str:
    """The ir_metadata block of a qrels export of the run's labels (tasks/evaluate/provenance.py); `hybrid`: the
    assessment plan whose labels replace the run's where given."""
    choice = {
        "run": labels.run_name,
        "personality": personality or "default",
        "aggregate": aggregate,
        "fill_from_human": fill_from_human,
        "hybrid": hybrid,
    }
    with open_migrated(settings.warehouse) as con:
        return qrels_header(con, labels.run_id, labels.cot, labels.confidence_method, choice)


@task(cache_policy=NO_CACHE)
def export_qrels(
    settings: Settings, human: pl.DataFrame, llm: pl.DataFrame, fill_from_human: bool, output: Path, header: str
) -> dict[str, Any]:
    """Write the qrels file, its confidences and its ir_metadata (all or none); LLM labels alone, or filling the
    human holes."""
    qrels = fill_holes(human, llm) if fill_from_human else llm.with_columns(source=pl.lit("llm"))
    files = qrels_files(qrels, output) | {side_path(output): header}
    write_files(files, settings.warehouse, "--output", output)
    n_llm = qrels.filter(pl.col("source") == "llm").height
    return {"output": str(output), "n_pairs": qrels.height, "n_llm": n_llm, "n_human": qrels.height - n_llm}


@task(cache_policy=NO_CACHE)
def read_run_files(paths: list[str], human: pl.DataFrame | None = None, collection_id: str = "") -> pl.DataFrame:
    """TREC run files (gz too) as one frame [system, query_id, doc_id, rank, score, source]; tag = system.

    With the human qrels, each file is cut to the topics they judge as it is read (the rest counts in no score: DL21's
    runs answer 477 topics, 53 are judged) and a file that answers none of them is refused: it is for another
    collection.
    """
    missing = [path for path in paths if not Path(path).is_file()]
    if missing:
        raise UsageError(f"run file {missing[0]} does not exist")
    if human is None:
        return read_run_lines([Path(path) for path in paths]).drop("line").rename({"file": "source"})
    judged, unjudged = human["query_id"].unique(), {}

    def keep(path: Path, lines: pl.DataFrame) -> pl.DataFrame:
        kept = lines.filter(pl.col("query_id").is_in(judged))
        if kept.is_empty():
            unjudged[path] = sorted(lines["query_id"].unique().to_list())
        return kept

    runs = read_run_lines([Path(path) for path in paths], keep).drop("line").rename({"file": "source"})
    refuse_unjudged(unjudged, len(paths), collection_id)
    return runs


def refuse_unjudged(unjudged: dict[Path, list[str]], n_files: int, collection_id: str) -> None:
    """Run files none of whose queries the collection judges: one usage error naming them (or the first file)."""
    if not unjudged:
        return
    asked = sorted({q for queries in unjudged.values() for q in queries})
    shown = ", ".join(asked[:5]) + (" ..." if len(asked) > 5 else "")
    if len(unjudged) == n_files:
        where = "the run files"
    else:
        path = next(iter(unjudged))
        where, shown = f"run file {path}", ", ".join(unjudged[path][:5]) + (" ..." if len(unjudged[path]) > 5 else "")
    raise UsageError(
        f"no query of {where} ({shown}) is judged in collection {collection_id!r}: "
        "give the --collection the runs answer"
    )


@task(cache_policy=NO_CACHE)
def collapse_duplicates(runs: pl.DataFrame, dedupe: bool) -> tuple[pl.DataFrame, list[list[str]]]:
    """The near-duplicate groups (the same top 10 on every judged topic) and the runs, one of each group kept when
    `dedupe`."""
    groups = duplicate_groups(runs)
    return (drop_duplicates(runs, groups) if dedupe else runs), groups


def system_sources(runs: pl.DataFrame) -> dict[str, str]:
    """{system: the run file it came from}."""
    return dict(runs.select("system", "source").unique("system").sort("system").iter_rows())


def runs_dir(settings: Settings, collection_id: str, output_dir: str | None) -> Path:
    """Where built runs go: the directory given, else runs/<collection> beside the warehouse."""
    return Path(output_dir) if output_dir else settings.local_dir / "runs" / collection_id


@task(cache_policy=NO_CACHE)
def build_runs(settings: Settings, collection_id: str, output_dir: Path, depth: int) -> list[str]:
    """Every bm25s configuration's run over the collection's judged pool, written as <output_dir>/<system>.run."""
    with open_migrated(settings.warehouse) as con:
        topics = query_frame(con, "evaluate/select_topics", {"collection_id": collection_id})
        pool = query_frame(con, "evaluate/select_pool", {"collection_id": collection_id})
    if topics.is_empty():
        raise UsageError(f"collection {collection_id!r} has no judged topics: run `peras ingest {collection_id}`")
    files: dict[Path, str] = {}
    for config in CONFIGS:
        path = output_dir / f"{config.system}.run"
        files[path] = run_text(build_run(config, topics, pool, depth))
        files[side_path(path)] = run_header(config.system, config.metadata(), collection_id, depth)
    written = write_files(files, settings.warehouse, "--output-dir", output_dir)
    return [str(path) for path in written if path.suffix == ".run"]


@task(cache_policy=NO_CACHE)
def score_under(
    runs: pl.DataFrame, qrels: dict[str, pl.DataFrame], measures: list[str], missing_topics: str = "skip"
) -> pl.DataFrame:
    """Every system scored under every qrels set: [qrels_name, system, measure, query_id, value]."""
    if runs.is_empty():
        raise UsageError("the run files hold no ranked passages")
    frames = [
        score_systems(runs, q, measures, missing_topics).select(pl.lit(name).alias("qrels_name"), pl.all())
        for name, q in qrels.items()
    ]
    return pl.concat(frames)


@task(cache_policy=NO_CACHE)
def rank_agreement(scores: pl.DataFrame) -> pl.DataFrame:
    """Every non-human qrels set's ranking against the human one, overall and per topic (ranking.compare_rankings)."""
    return compare_rankings(scores)


@dataclass(frozen=True)
class Evaluation:
    """What an evaluation stores: where, which qrels, which systems, and the scores and agreements."""

    collection_id: str
    qrels_source: str
    judge_run_id: str | None
    measures: list[str]
    systems: dict[str, str]
    scores: pl.DataFrame
    agreement: pl.DataFrame
    holes_id: str | None = None

    def with_holes(self, holes_id: str) -> Evaluation:
        """The same evaluation, as one share of a holes experiment."""
        return replace(self, holes_id=holes_id)


def insert_evaluation(con: Any, evaluation: Evaluation) -> str:
    """Insert one evaluation inside the caller's transaction; return its id."""
    evaluation_id = str(uuid.uuid4())
    con.register("eval_new_scores", evaluation.scores.to_arrow())
    con.register("eval_new_agreement", evaluation.agreement.to_arrow())
    record = {
        "evaluation_id": evaluation_id,
        "collection_id": evaluation.collection_id,
        "qrels_source": evaluation.qrels_source,
        "judge_run_id": evaluation.judge_run_id,
        "holes_id": evaluation.holes_id,
        "measures": json.dumps(evaluation.measures),
        "systems": json.dumps(evaluation.systems),
        "created_at": now(),
    }
    run_sql(con, "evaluate/insert_evaluation", record)
    con.unregister("eval_new_scores")
    con.unregister("eval_new_agreement")
    return evaluation_id


@task(cache_policy=NO_CACHE)
def store_evaluation(settings: Settings, evaluation: Evaluation) -> str:
    """Publish one evaluation (its scores and agreements) in one transaction."""
    with open_migrated(settings.warehouse) as con, transaction(con):
        return insert_evaluation(con, evaluation)


def summarize_evaluation(
    evaluation_id: str,
    evaluation: Evaluation,
    missing_topics: str = "skip",
    duplicates: list[list[str]] | None = None,
    dedupe: bool = False,
) -> dict[str, Any]:
    """Mean scores per qrels set and system, each qrels set's agreement with the human ranking, the conventions, the
    near-duplicate systems (and whether only the first of each was scored)."""
    means = evaluation.scores.filter(pl.col("query_id") == ALL_TOPICS).drop("query_id")
    agreement = evaluation.agreement.filter(pl.col("query_id") == ALL_TOPICS).drop("query_id")
    per_topic = (
        evaluation.agreement.filter(pl.col("query_id") != ALL_TOPICS)
        .group_by("qrels_name", "measure")
        .agg(mean_topic_tau=pl.col("kendall_tau").mean())
    )
    agreement = agreement.join(per_topic, on=["qrels_name", "measure"], how="left").sort(
        "measure", "kendall_tau", descending=[False, True], nulls_last=True
    )
    return {
        "evaluation_id": evaluation_id,
        "collection_id": evaluation.collection_id,
        "qrels_source": evaluation.qrels_source,
        "conventions": {"missing_topics": missing_topics, "missing": MISSING_TOPICS[missing_topics], "ties": TIE_ORDER},
        "scores": means.sort("qrels_name", "measure", "system").to_dicts(),
        "agreement": agreement.to_dicts(),
        "duplicates": duplicates or [],
        "deduped": dedupe,
    }
