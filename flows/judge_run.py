"""judge-run flow: the top-K passages of TREC run files that no human judged, judged by the normal judge flow."""

from __future__ import annotations

from typing import Any

from prefect import flow

from flows.judge import judge
from peras.settings import Settings, load_settings
from tasks.engine.shards import ROWS_PER_SHARD
from tasks.judge_run.tasks import check_personalities, pool_unlabelled_pairs, read_run_files, summarize_judge_run


@flow(name="judge-run", flow_run_name="judge-run-{collection}", log_prints=True)
def judge_run(
    collection: str,
    run_files: list[str],
    depth: int = 10,
    corpus: str | None = None,
    personalities: list[str] | None = None,
    cot: list[bool] | None = None,
    confidence_methods: list[str] | None = None,
    run_name: str | None = None,
    chunk_size: int = ROWS_PER_SHARD,
    n_samples: int = 10,
    backend: str | None = None,
    retry_failed: bool = False,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Read the run files, pool each query's top `depth` per system that the qrels lack (texts from the collection
    or the corpus file), and judge the pool like any judge run: same personalities, resumable, never asked twice.
    Pairs without a text are reported by run-file line, never judged."""
    settings = settings or load_settings()
    check_personalities(settings, personalities)
    lines = read_run_files(run_files)
    pool = pool_unlabelled_pairs(settings, collection, lines, depth, corpus)
    judged = judge(
        collection=collection,
        pool=pool.pool_id,
        personalities=personalities,
        cot=cot,
        confidence_methods=confidence_methods,
        run_name=run_name,
        chunk_size=chunk_size,
        n_samples=n_samples,
        backend=backend,
        retry_failed=retry_failed,
        settings=settings,
    )
    return summarize_judge_run(pool, judged)
