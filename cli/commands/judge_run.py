"""`peras judge-run`: judge the top-K passages of TREC run files that no human judged, with the normal judge."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from cli import preflight
from cli.commands.judge import judged_line, judging_options, judging_parameters
from cli.common import bounded, endpoint_options, endpoint_tags, run_flow, run_tags, settings_options
from cli.model_presets import check_served, model_preset_option
from peras.models import ModelPreset
from peras.settings import Settings


def pool_lines(result: dict[str, Any]) -> list[str]:
    """What was pooled from the run files, and the pairs that could not be (by run-file line)."""
    lines = [
        f"{result['n_lines']:,} run lines from {result['n_systems']:,} system(s): {result['n_top_pairs']:,} top-K "
        f"pairs, {result['n_labelled']:,} judged by humans, {result['n_pooled']:,} to judge "
        f"({result['n_from_corpus']:,} passage texts from the corpus file)"
    ]
    n_skipped = result["n_unknown_query"] + result["n_without_text"]
    if n_skipped:
        lines.append(
            f"not judged: {result['n_without_text']:,} pair(s) without a passage text, {result['n_unknown_query']:,} "
            "of queries the collection does not hold; first ones:"
        )
        lines += [f"  {example}" for example in result["examples"]]
    return lines


@click.command(name="judge-run")
@click.argument("run_files", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--collection", required=True, help="Collection whose queries and qrels the runs are for.")
@click.option("--depth", type=bounded(1), default=10, show_default=True, help="Top K per system and query to judge.")
@click.option(
    "--corpus",
    type=click.Path(path_type=Path),
    help="Passage texts the collection lacks: MS MARCO collection.tsv (pid<TAB>text) or JSONL (id/contents, "
    "docid/text, docid/doc), gzip too; streamed, only the needed passages kept.",
)
@judging_options
@endpoint_options
@model_preset_option
@settings_options
def judge_run(
    settings: Settings,
    run_files: tuple[Path, ...],
    collection: str,
    depth: int,
    corpus: Path | None,
    backend: str | None,
    model_preset: ModelPreset | None,
    **judging: Any,
) -> None:
    """Judge each query's top K passages per system in TREC run files that the qrels lack.

    Run files are `query_id Q0 doc_id rank score tag` (gzip too; one file may hold several systems), ranked by
    score as trec_eval does. Pairs a human judged are never asked; the others go through the normal judge flow
    (personalities, CoT, confidence methods), so re-running sends nothing. A pair whose passage has no text is
    reported by run-file line, never judged. Their human relevance is unknown: metrics leave them out.

    \b
    Examples:
        peras judge-run peras/data/sample/two-systems.run --collection sample --depth 3 --personality default
        peras judge-run bm25.run.gz dense.run.gz --collection dl19 --depth 20 --corpus collection.tsv \\
            --base-url http://gpu:8000/v1 --model meta-llama/Llama-3.1-8B-Instruct
    """
    check_served(model_preset, settings)
    preflight.collection(settings, collection)
    preflight.personalities(settings, list(judging["personalities"]) or None, None)
    preflight.endpoint(settings)
    from flows.judge_run import judge_run as judge_run_flow  # Prefect: loaded once the checks above passed

    result = run_flow(
        judge_run_flow,
        tags=run_tags("judge-run", collection, None, **endpoint_tags(settings, backend)),
        collection=collection,
        run_files=[str(path) for path in run_files],
        depth=depth,
        corpus=str(corpus) if corpus else None,
        **judging_parameters(judging, model_preset),
        backend=backend,
        settings=settings,
    )
    for line in pool_lines(result):
        click.echo(line)
    click.echo(judged_line(result))


COMMANDS = [judge_run]
