"""Evaluate flows: qrels out of LLM labels, systems ranked under human vs LLM qrels, lexical runs built, holes filled.

`export_qrels` writes a judge run's labels as TREC qrels; `evaluate` scores run files with ir_measures under the
human qrels and the LLM's and compares the rankings (Kendall's tau, Spearman's rho, tau-AP); `build_runs` writes
bm25s runs over a collection's judged pool; `holes` hides a growing share of the human labels, fills them with LLM
labels and ranks the systems again; `trust` ranks run files under the human qrels and a judge run's labels with error
bars on the agreement and on each system's score, stored as one study. See docs/evaluate.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prefect import flow

from flows.assess import plan_hybrid_qrels
from flows.judge import judge
from peras.settings import Settings, load_settings
from tasks.evaluate.autojudge import export_autojudge, whose_labels, with_leaderboard
from tasks.evaluate.holes import check_shares, fill_experiment, store_holes, summarize_holes
from tasks.evaluate.tasks import (
    HYBRID,
    build_runs,
    check_collection,
    collapse_duplicates,
    describe_qrels,
    export_qrels,
    load_human_qrels,
    load_run_labels,
    make_evaluation,
    one_qrels,
    qrels_sets,
    rank_agreement,
    read_run_files,
    runs_dir,
    score_under,
    store_evaluation,
    summarize_evaluation,
)
from tasks.evaluate.trust import (
    TrustSpec,
    check_spec,
    draw_sample,
    judged_pool,
    rank_trust,
    score_both,
    score_intervals,
    trust_identity,
)
from tasks.evaluate.trust_store import load_study, store_study, study_inputs
from tasks.publish.tasks import publish_analyst_snapshot

DEFAULT_MEASURES = ["nDCG@10"]
DEFAULT_SHARES = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]


@flow(name="export-qrels", flow_run_name="export-qrels-{run}", log_prints=True)
def export_qrels_flow(
    run: str,
    output: str,
    personality: str | None = None,
    aggregate: str | None = None,
    fill_from_human: bool = False,
    cot: bool | None = None,
    confidence_method: str | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """A judge run's labels as TREC qrels (one personality's or the majority's), alone or filling the human qrels."""
    settings = settings or load_settings()
    labels = load_run_labels(settings, run, cot, confidence_method)
    human = load_human_qrels(settings, labels.collection_id)
    llm = one_qrels(labels, personality, aggregate)
    header = describe_qrels(settings, labels, personality, aggregate, fill_from_human)
    return export_qrels(settings, human, llm, fill_from_human, Path(output), header)


@flow(name="export-autojudge", flow_run_name="export-autojudge-{run}", log_prints=True)
def export_autojudge_flow(
    run: str,
    run_files: list[str],
    output_dir: str,
    measures: list[str] | None = None,
    personality: str | None = None,
    aggregate: str | None = None,
    cot: bool | None = None,
    confidence_method: str | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """A judge run as a TREC AutoJudge submission: the run files' systems scored under its labels (leaderboard),
    its labels (qrels) and its provenance (ir-metadata.yml)."""
    settings = settings or load_settings()
    labels = load_run_labels(settings, run, cot, confidence_method)
    human = load_human_qrels(settings, labels.collection_id)
    runs = read_run_files(run_files, human, labels.collection_id)
    llm = one_qrels(labels, personality, aggregate)
    scores = score_under(runs, {"llm": llm}, measures or DEFAULT_MEASURES).drop("qrels_name")
    return export_autojudge(settings, labels, llm, scores, whose_labels(personality, aggregate), Path(output_dir))


@flow(name="evaluate", flow_run_name="evaluate-{collection}", log_prints=True)
def evaluate(
    run_files: list[str],
    collection: str,
    qrels: str = "human",
    run: str | None = None,
    personality: str | None = None,
    aggregate: str | None = None,
    cot: bool | None = None,
    confidence_method: str | None = None,
    measures: list[str] | None = None,
    settings: Settings | None = None,
    missing_topics: str = "skip",
    dedupe: bool = False,
    autojudge: str | None = None,
) -> dict[str, Any]:
    """Score the systems under the human qrels and (qrels 'llm' or 'filled' with run, or 'hybrid:PLAN') the LLM's;
    compare.

    autojudge: a TREC AutoJudge leaderboard file whose scores of the same systems are compared as one more set.

    missing_topics: 'skip' (trec_eval's default) or 'zero' (trec_eval -c) for qrels topics a run lacks.
    dedupe: score one system of each near-duplicate group (the same top 10 on every judged topic); the groups are
    reported either way.

    With a judge run and no personality or aggregate, every personality gets its own qrels set: which one ranks the
    systems most like the humans' is the agreement table's order.
    """
    settings = settings or load_settings()
    chosen = measures or DEFAULT_MEASURES
    human = load_human_qrels(settings, collection)
    runs, duplicates = collapse_duplicates(read_run_files(run_files, human, collection), dedupe)
    plan = qrels.removeprefix(HYBRID) if qrels.startswith(HYBRID) else None
    hybrid = plan_hybrid_qrels(plan, personality, aggregate, cot, confidence_method, settings) if plan else None
    hybrid = hybrid.check_collection(collection) if hybrid else None
    labels = hybrid.labels if hybrid else load_run_labels(settings, run, cot, confidence_method) if run else None
    made = check_collection(labels, collection) if labels else None
    sets = qrels_sets(human, made, qrels, personality, aggregate, hybrid)
    scores = score_under(runs, sets, chosen, missing_topics)
    scores = with_leaderboard(scores, autojudge, runs, chosen)
    evaluation = make_evaluation(collection, qrels, labels, chosen, runs, scores, rank_agreement(scores))
    evaluation_id = store_evaluation(settings, evaluation)
    publish_analyst_snapshot(settings)
    return summarize_evaluation(evaluation_id, evaluation, missing_topics, duplicates, dedupe)


@flow(name="build-runs", flow_run_name="build-runs-{collection}", log_prints=True)
def build_runs_flow(
    collection: str, output_dir: str | None = None, depth: int = 100, settings: Settings | None = None
) -> list[str]:
    """bm25s runs (BM25 at several k1/b, stemmed and not) over the collection's judged pool, as TREC run files."""
    settings = settings or load_settings()
    return build_runs(settings, collection, runs_dir(settings, collection, output_dir), depth)


@flow(name="holes", flow_run_name="holes-{collection}", log_prints=True)
def holes(
    collection: str,
    run: str | None = None,
    run_files: list[str] | None = None,
    personality: str | None = None,
    aggregate: str | None = None,
    cot: bool | None = None,
    confidence_method: str | None = None,
    shares: list[float] | None = None,
    measures: list[str] | None = None,
    seed: int = 42,
    depth: int = 100,
    backend: str | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Hide 10%..90% of the human labels (stratified, seeded), fill them with a judge run's labels, rank the systems.

    run: a judge run that labels the collection's pairs (an imported one too); none: the collection is judged now
    through the judge flow (run 'holes-<collection>', the chosen personality, no CoT, verbalized confidence).
    run_files: the systems; none: the bm25s runs built over the collection's pool.
    """
    settings = settings or load_settings()
    chosen_shares = check_shares(shares or DEFAULT_SHARES)
    human = load_human_qrels(settings, collection)
    if run is None:
        judged = judge(
            collection=collection,
            personalities=[personality or "default"],
            cot=[False],
            run_name=f"holes-{collection}",
            backend=backend,
            settings=settings,
        )
        run = judged["run_name"]
    labels = check_collection(load_run_labels(settings, run, cot, confidence_method), collection)
    llm = one_qrels(labels, personality, aggregate)
    paths = run_files or build_runs(settings, collection, runs_dir(settings, collection, None), depth)
    systems = read_run_files(paths)
    result = fill_experiment(
        human,
        labels,
        llm,
        personality or aggregate or "default",
        systems,
        chosen_shares,
        measures or DEFAULT_MEASURES,
        seed,
    )
    holes_id = store_holes(settings, result)
    publish_analyst_snapshot(settings)
    return summarize_holes(holes_id, result)


@flow(name="trust", flow_run_name="trust-{collection}", log_prints=True)
def trust(
    collection: str,
    run: str,
    run_files: list[str],
    spec: TrustSpec | None = None,
    personality: str | None = None,
    aggregate: str | None = None,
    cot: bool | None = None,
    confidence_method: str | None = None,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Rank the run files under the human qrels and judge run `run`'s labels: tau, rho and tau-AP with bootstrap
    intervals, the flipped pairs, each system's interval from a human sample; stored as one study, read back when
    the same inputs ask again (nothing recomputed)."""
    settings = settings or load_settings()
    spec = check_spec(spec or TrustSpec())
    human = load_human_qrels(settings, collection)
    labels = check_collection(load_run_labels(settings, run, cot, confidence_method), collection)
    study_id = trust_identity(collection, labels, personality, aggregate, run_files, spec)
    stored = load_study(settings, study_id, reused=True)
    if stored is not None:
        return stored
    human, pool = judged_pool(human, labels, personality, aggregate, collection)
    sample = draw_sample(human, pool, spec)
    runs, duplicates = collapse_duplicates(read_run_files(run_files, human, collection), spec.dedupe)
    scores = score_both(runs, human, pool, spec.measure)
    agreement, flips = rank_trust(scores, spec)
    intervals = score_intervals(runs, pool, sample, spec)
    counts = {"n_sample": sample.height, "n_pool": pool.height, "n_topics": human["query_id"].n_unique()}
    inputs = study_inputs(collection, labels, aggregate or personality or "default", spec, runs, counts, duplicates)
    parts = {"scores": scores, "agreement": agreement, "flips": flips, "intervals": intervals}
    store_study(settings, study_id, inputs, parts)
    publish_analyst_snapshot(settings)
    return load_study(settings, study_id) or {}
