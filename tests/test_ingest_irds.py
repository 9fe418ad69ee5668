"""Issue 53 item 1: `peras ingest irds:<id>`, any ir_datasets dataset with queries, qrels and docs.

These machines reach no ir_datasets host, so datasets are registered over local files built from ../shared/data with
ir_datasets' own documented API (`ir_datasets.create_dataset`, `ir_datasets.registry.register`): DL19 read that way
is the same collection `peras ingest dl19` makes. A dataset whose files are missing and cannot be downloaded is one
usage line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import ir_datasets
import pytest

from peras.paths import PROJECT_ROOT
from tasks.ingest.irds import collection_name
from tests.helpers import run_cli

DEAD_PROXY = "http://127.0.0.1:9"  # nothing listens: a download attempt fails at once, network or not


def register_local_dl19(shared_data: Path, directory: Path) -> str:
    """DL19 as an ir_datasets dataset over local files: its queries and qrels as they are, its judged passages as
    the docs TSV ir_datasets' TsvDocs reads (no passage holds a tab or a newline)."""
    name = f"peras-local/dl19-{directory.name}"
    docs = directory / "docs.tsv"
    with docs.open("w", encoding="utf-8") as out:
        for line in (shared_data / "dl19" / "judged_passages.jsonl").open(encoding="utf-8"):
            record = json.loads(line)
            out.write(f"{record['docid']}\t{record['doc']}\n")
    dataset = ir_datasets.create_dataset(
        docs_tsv=str(docs),
        queries_tsv=str(shared_data / "dl19" / "msmarco-test2019-queries.tsv"),
        qrels_trec=str(shared_data / "dl19" / "2019qrels-pass.txt"),
    )
    ir_datasets.registry.register(name, dataset)
    return name


def tables(settings, collection_id: str) -> dict[str, set[tuple]]:
    """The collection's qrels, queries and passages as the warehouse holds them."""
    columns = {"qrels": "query_id, doc_id, relevance", "queries": "query_id, text", "passages": "doc_id, text"}
    with duckdb.connect(str(settings.warehouse), read_only=True) as con:
        return {
            table: set(con.execute(f"select {cols} from {table} where collection_id = ?", [collection_id]).fetchall())
            for table, cols in columns.items()
        }


def description_of(settings, collection_id: str) -> str:
    with duckdb.connect(str(settings.warehouse), read_only=True) as con:
        sql = "select description from collections where collection_id = ?"
        return con.execute(sql, [collection_id]).fetchall()[0][0]


@pytest.mark.integration
def test_dl19_through_ir_datasets_is_the_dl19_collection(settings, shared_data, tmp_path, capsys, ingested):
    ingested("dl19", settings)
    dataset_id = register_local_dl19(shared_data, tmp_path)
    collection_id = collection_name(dataset_id)
    result = run_cli(capsys, "ingest", f"irds:{dataset_id}", "--warehouse", str(settings.warehouse))
    assert result.exit_code == 0, result.err
    assert result.out == (
        f"{collection_id}: 9,260 judged pairs, 43 queries, 9,139 passages; balanced subset 0 topics / 0 pairs\n"
    )
    mine, preset = tables(settings, collection_id), tables(settings, "dl19")
    assert {k: len(v) for k, v in mine.items()} == {"qrels": 9260, "queries": 43, "passages": 9139}
    assert mine == preset
    assert description_of(settings, collection_id) == f"ir_datasets {dataset_id}"
    again = run_cli(capsys, "ingest", f"irds:{dataset_id}", "--warehouse", str(settings.warehouse))
    assert again.out == f"{collection_id}: unchanged (same files already ingested)\n"


@pytest.mark.integration
def test_a_dataset_whose_files_cannot_be_downloaded_is_one_line(settings, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HTTPS_PROXY", DEAD_PROXY)
    monkeypatch.setenv("HTTP_PROXY", DEAD_PROXY)
    download = ir_datasets.util.Download(
        [ir_datasets.util.RequestsDownload("http://ir-datasets.invalid/qrels.txt")],
        cache_path=str(tmp_path / "cache" / "qrels.txt"),
    )
    local = ir_datasets.util.LocalDownload(tmp_path / "none.tsv")
    dataset = ir_datasets.datasets.base.Dataset(
        ir_datasets.formats.TsvDocs(local),
        ir_datasets.formats.TsvQueries(local),
        ir_datasets.formats.TrecQrels(download, {}),
    )
    ir_datasets.registry.register(f"peras-unreachable/{tmp_path.name}", dataset)
    result = run_cli(
        capsys, "ingest", f"irds:peras-unreachable/{tmp_path.name}", "--warehouse", str(settings.warehouse)
    )
    assert result.exit_code == 2
    last = result.err.strip().splitlines()[-1]
    assert last.startswith(f"error: ir_datasets cannot read the qrels of 'peras-unreachable/{tmp_path.name}' (")
    assert "download error" not in result.err and "Download failed" not in result.err
    assert last.endswith(
        "with network access ir_datasets downloads them into IR_DATASETS_HOME (~/.ir_datasets); offline, place them "
        "there or register the dataset over local files (docs/formats.md)"
    )
    assert not (settings.local_dir / "irds").exists()


def test_the_real_dl19_id_offline_without_its_files_is_one_line(tmp_path):
    """msmarco-passage/trec-dl-2019/judged with an empty IR_DATASETS_HOME and no way out (a fresh process: ir_datasets
    fixes its home when imported)."""
    code = (
        "from peras.errors import UsageError\n"
        "from tasks.ingest.irds import dataset_files\n"
        "try:\n    dataset_files('msmarco-passage/trec-dl-2019/judged')\n"
        "except UsageError as exc:\n    print(exc)\n"
    )
    env = os.environ | {"IR_DATASETS_HOME": str(tmp_path), "HTTPS_PROXY": DEAD_PROXY, "HTTP_PROXY": DEAD_PROXY}
    env["PYTHONPATH"] = str(PROJECT_ROOT)
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=PROJECT_ROOT, timeout=300
    )
    assert done.stdout.startswith(
        "ir_datasets cannot read the qrels of 'msmarco-passage/trec-dl-2019/judged' (All download sources failed): "
    ), (done.stdout, done.stderr)
    # ir_datasets' own notice stays; its nine failed attempts (three per mirror) do not
    assert done.stderr.splitlines() == [
        "[INFO] Please confirm you agree to the MSMARCO data usage agreement found at "
        "<http://www.msmarco.org/dataset.aspx>"
    ]


@pytest.mark.parametrize(
    ("dataset_id", "message"),
    [
        ("nope/none", "ir_datasets has no dataset 'nope/none': see https://ir-datasets.com for the ids"),
        # a corpus alone: no queries, no qrels
        ("msmarco-passage", "ir_datasets dataset 'msmarco-passage' has no queries and no qrels: PERAS needs queries"),
    ],
)
def test_unknown_and_incomplete_datasets_are_usage_errors(settings, capsys, dataset_id, message):
    result = run_cli(capsys, "ingest", f"irds:{dataset_id}", "--warehouse", str(settings.warehouse))
    assert (result.exit_code, message in result.err) == (2, True), result.err


def test_collection_names_of_ids():
    assert collection_name("msmarco-passage/trec-dl-2019/judged") == "irds-msmarco-passage-trec-dl-2019-judged"
    assert collection_name("beir/trec-covid") == "irds-beir-trec-covid"
