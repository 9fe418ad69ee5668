"""A judge run in the TREC AutoJudge exchange format, and its leaderboard read back.

An AutoJudge system hands in a leaderboard (per system and topic, each measure's value, and each system's `all` row)
with the qrels it judged and an `ir-metadata.yml` (the track's upload skeleton: method name and description, actor
team, data test collection, platform libraries, implementation source). The leaderboard is written in the column order
the track's `Leaderboard.load(path, format="ir_measures")` reads: `run_id topic_id measure value`, tab separated; the
qrels are TREC qrels (`topic_id 0 doc_id grade`). autojudge-base's own reader and verifier check both in the tests.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import yaml
from prefect import task
from prefect.cache_policies import NO_CACHE

from peras.errors import InputError, UsageError
from peras.outputs import write_files
from peras.settings import Settings
from peras.warehouse import open_migrated
from tasks.evaluate.provenance import judge_method
from tasks.evaluate.qrels import qrels_files
from tasks.evaluate.ranking import ALL_TOPICS
from tasks.evaluate.tasks import RunLabels
from tasks.shared.ir_metadata import implementation, platform

LEADERBOARD = "trec-leaderboard.txt"
QRELS = "qrels.txt"
METADATA = "ir-metadata.yml"
SCORES_SCHEMA = {"system": pl.String, "measure": pl.String, "query_id": pl.String, "value": pl.Float64}


def leaderboard_text(scores: pl.DataFrame) -> str:
    """Scores [system, measure, query_id, value] (topics and the 'all' mean) as the track's leaderboard lines:
    per system its topics in order, then its `all` row; values written exactly (repr of the double)."""
    ordered = scores.with_columns(is_all=pl.col("query_id") == ALL_TOPICS).sort(
        "system", "is_all", "query_id", "measure"
    )
    return "".join(f"{s}\t{q}\t{m}\t{v!r}\n" for s, m, q, v in ordered.select(*SCORES_SCHEMA).iter_rows())


def metadata_yaml(header_components: dict[str, Any], run_name: str, description: str, collection_id: str) -> str:
    """The track's ir-metadata.yml skeleton filled in, with the judge's provenance under method.judge."""
    document = {
        "method": {"name": run_name, "description": description, **header_components["method"]},
        "actor": {"team": "PERAS"},
        "data": {"test collection": {"name": collection_id}},
        "platform": platform(["duckdb", "polars", "ir-measures"]),
        "implementation": implementation(header_components["cmd"]),
    }
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False, width=4096, allow_unicode=True)


def read_leaderboard(path: Path) -> pl.DataFrame:
    """A leaderboard file (`run_id topic_id measure value`, whitespace separated) as scores [system, measure,
    query_id, value]; a line that is not four fields with a number last is an InputError naming it."""
    rows: list[tuple[str, str, str, float]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        fields = line.split()
        if not fields:
            continue
        if len(fields) != 4:
            raise InputError(f"expected 4 fields `run_id topic_id measure value`, found {len(fields)}", path, number)
        system, query_id, measure, value = fields
        try:
            rows.append((system, measure, query_id, float(value)))
        except ValueError:
            raise InputError(f"value {value!r} is not a number", path, number) from None
    if not rows:
        raise InputError("the leaderboard holds no rows", path, 1)
    return pl.DataFrame(rows, schema=SCORES_SCHEMA, orient="row")


def whose_labels(personality: str | None, aggregate: str | None) -> dict[str, str]:
    """{'aggregate': name} or {'personality': code} ('default' when neither is named)."""
    return {"aggregate": aggregate} if aggregate else {"personality": personality or "default"}


def with_leaderboard(scores: pl.DataFrame, path: str | None, runs: pl.DataFrame, measures: list[str]) -> pl.DataFrame:
    """The scores, and a leaderboard's scores of the same systems as one more set when a file is given."""
    return scores if path is None else pl.concat([scores, leaderboard_scores(Path(path), runs, measures)])


def leaderboard_scores(path: Path, runs: pl.DataFrame, measures: list[str]) -> pl.DataFrame:
    """A leaderboard read back as one more scores set [qrels_name, system, measure, query_id, value] for the systems
    of the run files: named autojudge:<file name>; a system or measure it lacks is a usage error."""
    board = read_leaderboard(path)
    systems = set(runs["system"].unique().to_list())
    lacking = sorted(systems - set(board["system"].to_list()))
    missing_measures = sorted(set(measures) - set(board["measure"].to_list()))
    if lacking or missing_measures:
        what = f"systems {', '.join(lacking[:5])}" if lacking else f"measures {', '.join(missing_measures)}"
        raise UsageError(f"leaderboard {path} has no rows for the {what} of this evaluation: give its run files")
    chosen = board.filter(pl.col("system").is_in(systems) & pl.col("measure").is_in(measures))
    return chosen.select(pl.lit(f"autojudge:{path.name}").alias("qrels_name"), *SCORES_SCHEMA)


@task(cache_policy=NO_CACHE)
def export_autojudge(
    settings: Settings, labels: RunLabels, llm: pl.DataFrame, scores: pl.DataFrame, whose: dict[str, str], output: Path
) -> dict[str, Any]:
    """Write the judge run's AutoJudge files into `output` (all or none): the leaderboard of the systems under its
    labels, its qrels, and ir-metadata.yml with its provenance."""
    with open_migrated(settings.warehouse) as con:
        method, _ = judge_method(con, labels.run_id, labels.cot, labels.confidence_method, whose)
    judge = method["judge"]
    description = (
        f"PERAS LLM relevance judge: the {next(iter(whose.values()))} labels of judge run {labels.run_name} "
        f"({judge['model']}, {'with' if labels.cot else 'without'} CoT, {labels.confidence_method} confidence)"
    )
    flags = " ".join(f"--{k} {v}" for k, v in whose.items())
    cmd = f"peras export-autojudge RUNFILE... --run {labels.run_name} {flags} --output-dir DIR"
    qrels_path = output / QRELS
    files = {
        output / LEADERBOARD: leaderboard_text(scores),
        qrels_path: qrels_files(llm, qrels_path)[qrels_path],
        output / METADATA: metadata_yaml({"method": method, "cmd": cmd}, labels.run_name, description,
                                         labels.collection_id),
    }  # fmt: skip
    write_files(files, settings.warehouse, "--output-dir", output)
    n_systems = scores["system"].n_unique()
    return {"output_dir": str(output), "files": [str(p) for p in files], "n_systems": n_systems, "n_pairs": llm.height}
