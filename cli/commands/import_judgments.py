"""`peras import-judgments`: a TREC qrels-style file of judgments made elsewhere becomes a run."""

from __future__ import annotations

from pathlib import Path

import click

from cli.common import bounded, run_flow, run_tags, settings_options
from peras.settings import Settings


@click.command(name="import-judgments")
@click.argument("file", type=click.Path(path_type=Path))
@click.option("--name", required=True, help="Run name (re-importing under it replaces the run).")
@click.option("--collection", required=True, help="Ingested collection whose qrels the labels are scored against.")
@click.option(
    "--confidence-column",
    type=bounded(5),
    metavar="N",
    help="1-based column holding a 0-100 confidence (5 = right after the label).",
)
@click.option("--model", help="Model that made the judgments, for the record [unknown].")
@click.option(
    "--out-of-range",
    default="fail",
    metavar="fail|clip",
    help="An integer label outside 0-3: a label failure (fail), or 0 / 3 as LLMJudge scored (clip) [fail].",
)
@settings_options
def import_judgments(
    settings: Settings,
    file: Path,
    name: str,
    collection: str,
    confidence_column: int | None,
    model: str | None,
    out_of_range: str,
) -> None:
    """Import FILE (`query_id 0 doc_id label [confidence ...]`) as run NAME on an ingested collection.

    The run joins every metric view as personality `default`, without CoT. Pairs of the file's topics that
    the file misses, pairs the qrels lack, labels outside 0-3, bad confidences and repeated pairs are
    reported (counts and first examples, also kept in import_reports); a line with the wrong number of
    columns stops the import and changes nothing. An integer label outside 0-3 is a label failure, or with
    --out-of-range clip the nearest of 0 and 3 (how the LLMJudge challenge computed its published numbers);
    a label that is not an integer is a failure either way. The same file with the same options again is a
    no-op.

    \b
    Examples:
        peras import-judgments ../shared/data/llmjudge/judge-runs/Olz-gpt4o.txt --name Olz-gpt4o --collection llmjudge
        peras import-judgments mine.txt --name mine --collection dl19 --confidence-column 5 --model gpt-4o
        peras import-judgments RMITIR-llama70B.txt --name RMITIR-llama70B --collection llmjudge --out-of-range clip
    """
    from flows.import_judgments import import_judgments as import_flow
    from tasks.import_judgments.tasks import check_out_of_range, describe_import

    check_out_of_range(out_of_range)  # before a flow run starts: a bad value is one line, not a failed run
    report = run_flow(
        import_flow,
        tags=run_tags("import", collection),
        path=str(file),
        name=name,
        collection=collection,
        confidence_column=confidence_column,
        model=model,
        out_of_range=out_of_range,
        settings=settings,
    )
    click.echo("\n".join(describe_import(report)))


COMMANDS = [import_judgments]
