"""The DuckLake warehouse (PERAS_WAREHOUSE=ducklake:postgres:...) on a real PostgreSQL: same numbers, many writers.

One PostgreSQL server for the module; each test gets its own catalog database and its own data directory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest

from support.postgres import Postgres, create_database, missing_reason, postgres_server

REASON = missing_reason()
if REASON is not None:
    pytest.skip(REASON, allow_module_level=True)

from flows.ingest import ingest  # noqa: E402 - only once PostgreSQL is known to be there
from flows.judge import judge  # noqa: E402
from flows.metrics import metrics  # noqa: E402
from peras.errors import UsageError  # noqa: E402
from peras.settings import Settings, load_settings  # noqa: E402
from peras.warehouse import connect, migrations, open_migrated  # noqa: E402
from support.fake_openai import FakeOpenAI, Reply, instant  # noqa: E402
from support.prefect_server import free_port  # noqa: E402
from tasks.engine import shards  # noqa: E402
from tests.conftest import SHARED_DATA  # noqa: E402
from tests.helpers import outputs_of, run_cli  # noqa: E402
from tests.test_warehouse_tools import ATTACKS, REFUSED, file_digests  # noqa: E402

pytestmark = pytest.mark.integration

MODEL = "fake-model"
# What a judgment is, without what names its warehouse (run_id) or its time (judged_at).
JUDGMENT_COLUMNS = "personality, cot, confidence_method, query_id, doc_id, label, confidence, status, reason"


@pytest.fixture(scope="module")
def pg() -> Iterator[Postgres]:
    """One PostgreSQL server for the whole module (each test creates its own database in it)."""
    with postgres_server() as server:
        yield server


def new_catalog(pg: Postgres) -> str:
    """A fresh, empty PostgreSQL database as a DuckLake warehouse setting."""
    return f"ducklake:postgres:{create_database(pg, 'lake_' + uuid.uuid4().hex[:12])}"


@pytest.fixture
def lake(pg: Postgres, tmp_path: Path, shared_data: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings for a new lake: PERAS_WAREHOUSE, PERAS_LAKE_DATA_PATH, PERAS_SHARDS_DIR in the environment.

    The environment, not only the Settings object: the lake reads PERAS_LAKE_DATA_PATH when it creates a catalog,
    and the CLI subprocesses inherit it.
    """
    monkeypatch.setenv("PERAS_WAREHOUSE", new_catalog(pg))
    monkeypatch.setenv("PERAS_LAKE_DATA_PATH", str(tmp_path / "lake-data"))
    monkeypatch.setenv("PERAS_SHARDS_DIR", str(tmp_path / "shards"))
    monkeypatch.setenv("PERAS_DATA_DIR", str(shared_data))
    monkeypatch.setenv("PERAS_REPORTS_DIR", str(tmp_path / "reports"))
    monkeypatch.setenv("PERAS_ANALYST_SNAPSHOT", "false")
    return load_settings()


def query(settings: Settings, sql: str) -> list[tuple]:
    """Rows of `sql` on a read-only connection to the warehouse (a lake or a file)."""
    with connect(settings.warehouse, read_only=True) as con:
        return con.execute(sql).fetchall()


def frame(settings: Settings, sql: str) -> pl.DataFrame:
    with connect(settings.warehouse, read_only=True) as con:
        return con.sql(sql).pl()


def judge_sample(settings: Settings, run_name: str | None = None) -> tuple[dict, int]:
    """Judge 4 sample pairs x default, HA x with and without CoT (3 judgments a shard); the summary, requests sent."""
    with FakeOpenAI(instant, models=[MODEL]) as server:
        settings.base_urls, settings.model = [server.base_url], MODEL
        summary = judge(
            collection="sample",
            personalities=["default", "HA"],
            cot=[False, True],
            limit_pairs=4,
            chunk_size=3,
            run_name=run_name,
            settings=settings,
        )
        return summary, len(server.chat_requests)


def judge_command(run_name: str, base_url: str, *options: str) -> list[str]:
    """`peras judge sample` in another process; the warehouse comes from the (monkeypatched) environment."""
    return [
        sys.executable,
        "-m",
        "cli.main",
        "judge",
        "sample",
        "--base-url",
        base_url,
        "--model",
        MODEL,
        "--run-name",
        run_name,
        *options,
    ]


def run_ids(settings: Settings) -> dict[str, str]:
    return dict(query(settings, "select run_name, run_id from judge_runs"))


def test_lake_judges_exactly_like_a_duckdb_file(lake, tmp_path):
    file = load_settings(warehouse=tmp_path / "peras.duckdb", shards_dir=tmp_path / "file-shards")
    results = {}
    for name, settings in (("lake", lake), ("file", file)):
        ingest(preset="sample", settings=settings)
        results[name] = judge_sample(settings)
    (lake_summary, lake_requests), (file_summary, file_requests) = results["lake"], results["file"]
    assert (lake_summary["n_planned"], lake_summary["n_judged_now"], lake_summary["n_failures"]) == (16, 16, 0)
    assert lake_requests == file_requests == lake_summary["n_http"] == file_summary["n_http"] == 27
    order = f"select {JUDGMENT_COLUMNS} from judgments order by all"
    lake_judgments, file_judgments = frame(lake, order), frame(file, order)
    assert lake_judgments.height == 16
    assert lake_judgments.equals(file_judgments)
    assert query(lake, "select count(*), count(distinct label_request_id) from judgments") == [(16, 16)]
    lake_metrics = metrics(views=["summary"], settings=lake)["summary"].drop("run_id")
    file_metrics = metrics(views=["summary"], settings=file)["summary"].drop("run_id")
    assert lake_metrics.height == 4
    assert_same_metrics(lake_metrics, file_metrics)


def assert_same_metrics(got: pl.DataFrame, want: pl.DataFrame) -> None:
    """The same rows in any order; floats equal to 1e-12 (a lake may sum in another order: docs/scaling-backends.md)."""
    assert got.columns == want.columns and got.height == want.height
    keys = [column for column in got.columns if got.schema[column] != pl.Float64]
    got, want = got.sort(keys, nulls_last=True), want.sort(keys, nulls_last=True)
    assert got.select(keys).equals(want.select(keys))
    for column in set(got.columns) - set(keys):
        a, b = got[column].to_numpy(), want[column].to_numpy()
        assert np.array_equal(np.isnan(a), np.isnan(b)), column
        assert np.allclose(a[~np.isnan(a)], b[~np.isnan(b)], rtol=1e-12, atol=1e-12), column


def test_two_judge_processes_at_once_on_one_lake_both_commit_everything(lake):
    ingest(preset="sample", settings=lake)
    # the same pairs and personalities: both runs send (and store) the same requests at the same time
    shared = ["--personality", "default", "--personality", "HA", "--cot", "both", "--limit-pairs", "6"]
    with FakeOpenAI(instant, models=[MODEL]) as server:
        procs = [
            subprocess.Popen(
                judge_command(name, server.base_url, *shared, "--chunk-size", "2"),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for name in ("first", "second")
        ]
        outputs = outputs_of(procs, timeout_s=900)  # generous: the loaded-machine benchmark runs it beside two hogs
    assert [proc.returncode for proc in procs] == [0, 0], [err[-2000:] for _, err in outputs]
    ids = run_ids(lake)
    assert sorted(ids) == ["first", "second"]
    # each request stored once, whichever run stored it
    [(n_requests, n_request_ids)] = query(lake, "select count(*), count(distinct request_id) from llm_requests")
    assert n_requests == n_request_ids
    # each run holds exactly its 6 pairs x 2 personalities x 2 CoT settings, each once
    per_run = query(
        lake,
        "select run_id, count(*), count(distinct (query_id, doc_id, personality, cot)), count(*) filter "
        "(status = 'ok') from judgments group by run_id",
    )
    assert sorted(per_run) == sorted((run_id, 24, 24, 24) for run_id in ids.values())
    # every shard was loaded (none left behind by a lost commit)
    assert [path for path in lake.shards.rglob("*") if path.is_file()] == []


def test_a_gate_mends_the_request_copies_another_process_committed_and_has_not_mended_yet(lake, monkeypatch):
    """Another process's load commits a copy of a request this run holds, and mends the copies only after its commit:
    a gate that looked in between found 'request stored twice' and withheld a whole run (CI, 2026-11-29:
    test_two_judge_processes_at_once_on_one_lake_both_commit_everything). The gate mends them as a load does and
    looks again. Here the other loader never mends: its later copy of one of the run's requests is left to the gate."""
    ingest(preset="sample", settings=lake)
    left: list[str] = []

    def another_process_committed_a_copy(con, identity):
        if not left:
            found = con.execute(
                "select request_id from llm_requests where request_id in (select request_id from staged_requests)"
                " and parse_status = 'ok' limit 1"
            ).fetchone()
            if found is not None:
                left.append(found[0])
                con.execute(  # the same answer, stored by another run a moment later
                    "insert into llm_requests select * replace ('another-run' as run_id,"
                    " created_at + interval 1 second as created_at) from llm_requests where request_id = $request_id",
                    {"request_id": found[0]},
                )
        return 0  # and not mended: the other process has not got that far

    monkeypatch.setattr(shards, "mend_request_copies", another_process_committed_a_copy)
    summary, _ = judge_sample(lake)
    [request_id] = left
    assert (summary["n_planned"], summary["n_failures"]) == (16, 0)
    assert query(lake, "select status from judge_runs") == [("published",)]
    assert query(lake, f"select run_id <> 'another-run' from llm_requests where request_id = '{request_id}'") == [
        (True,)
    ]  # this run's copy, stored first, stayed; the other went to the history
    assert query(lake, f"select run_id, why from llm_request_history where request_id = '{request_id}'") == [
        ("another-run", "duplicate answer")
    ]


@pytest.mark.parametrize("dedupe_by", ["this run's loader", "another run's loader"])
def test_a_judgment_built_on_a_request_copy_that_went_is_derived_again_from_the_one_that_stayed(
    lake, monkeypatch, dedupe_by
):
    """A lake has no keys: two loaders committing one request at once both store it, and the copy stored first stays
    (sql/engine/dedupe_requests.sql). Another run's copy, stored first, reads otherwise than this run's: the judgment
    this run built on its copy leaves the run ('request copy replaced') and is derived again from the copy that stayed,
    whether this run's loader brought the copies back to one or another run's did (then this run learns it only by
    counting what is left after its pass). Found by `bench/chaos_judge.py --lake` (round 1, seed 14): the judgment
    stayed, the gate refused it as not derivable, and a resume planned nothing."""
    ingest(preset="sample", settings=lake)
    dedupe = shards.mend_request_copies
    other: list[tuple[str, float, float]] = []  # the request, its answer for this run, the other run's answer

    def another_loader_stored_one_first(con, identity):
        if not other:
            found = con.execute(
                "select r.request_id, r.parsed_value from llm_requests as r"
                " inner join judgments as j on j.label_request_id = r.request_id"
                " where r.request_id in (select request_id from staged_requests) and r.parse_status = 'ok' limit 1"
            ).fetchone()
            if found is not None:
                request_id, value = found
                other.append((request_id, value, 0.0 if value else 1.0))
                con.execute(  # the other loader's copy, committed first: another run, another answer
                    "insert into llm_requests select * replace ("
                    " 'another-run' as run_id, cast(cast($value as integer) as varchar) as raw_text,"
                    " $value as parsed_value, created_at - interval 1 hour as created_at)"
                    " from llm_requests where request_id = $request_id",
                    {"request_id": request_id, "value": other[0][2]},
                )
        moved = dedupe(con, identity)
        return moved if dedupe_by == "this run's loader" else 0  # another process's loader: this run is not told

    monkeypatch.setattr(shards, "mend_request_copies", another_loader_stored_one_first)
    summary, _ = judge_sample(lake)
    [(request_id, went, stayed)] = other
    assert (summary["n_planned"], summary["n_failures"]) == (16, 0)
    assert query(lake, "select status from judge_runs") == [("published",)]
    # the copy that stayed is the only one, and the judgment built on it reads so
    assert query(lake, f"select run_id, parsed_value from llm_requests where request_id = '{request_id}'") == [
        ("another-run", stayed)
    ]
    assert query(lake, f"select label from judgments where label_request_id = '{request_id}'") == [(int(stayed),)]
    assert query(lake, "select count(*) from judgments") == [(16,)]
    # the judgment built on the copy that went is kept in the history, with why
    assert query(lake, "select label, why from judgment_history") == [(int(went), "request copy replaced")]


def test_a_run_reusing_a_request_stored_twice_stores_each_judgment_once_and_the_copies_are_mended(lake):
    """Two loaders committing one request at once both store it (a lake has no keys); each brings the copies back to
    one after its commit, but a third load can come in between -- or a loader is killed before it does. A run whose
    judgments are derived from such a request (another run's answer, reused) stores each judgment once, not once
    per copy joined, and its load mends the copies it finds. Found by bench/bench_loaded_hosts.py (round 2:
    'judgment stored twice' in test_two_judge_processes_at_once_on_one_lake_both_commit_everything)."""
    ingest(preset="sample", settings=lake)
    judge_sample(lake)
    with connect(lake.warehouse) as con:  # the copies a killed loader left: every request of the first run, again
        con.execute(
            "insert into llm_requests select * replace ('another-run' as run_id,"
            " created_at + interval 1 second as created_at) from llm_requests"
        )
    assert query(lake, "select count(*), count(distinct request_id) from llm_requests") == [(54, 27)]
    summary, sent = judge_sample(lake, run_name="again")
    assert sent == 0  # every answer reused
    assert (summary["n_planned"], summary["n_failures"]) == (16, 0)
    assert query(lake, "select status from judge_runs where run_name = 'again'") == [("published",)]
    per_run = query(
        lake,
        "select run_name, count(*), count(distinct (query_id, doc_id, personality, cot, confidence_method))"
        " from judgments inner join judge_runs using (run_id) group by run_name order by run_name",
    )
    assert [row[1:] for row in per_run] == [(16, 16), (16, 16)]
    # the copies went, each to the history as a duplicate answer; the first stored stayed
    assert query(
        lake, "select count(*), count(distinct request_id), count(*) filter (run_id = 'another-run') from llm_requests"
    ) == [(27, 27, 0)]
    assert query(lake, "select why, count(*) from llm_request_history group by why") == [("duplicate answer", 27)]


# An analyst's loop on one read-only connection to the lake, until the stop file appears: every count seen, the
# longest query, every error.
READER = """
import json, sys, time
from pathlib import Path
from peras.warehouse import connect
counts, errors, longest = [], [], 0.0
stop = Path(sys.argv[2])
with connect(Path(sys.argv[1]), read_only=True) as con:
    print("ready", flush=True)
    while not stop.exists():
        started = time.monotonic()
        try:
            counts.append(con.execute("select count(*) from judgments").fetchone()[0])
        except Exception as exc:
            errors.append(str(exc))
        longest = max(longest, time.monotonic() - started)
        time.sleep(0.02)
print(json.dumps({"counts": counts, "errors": errors, "longest_s": longest}), flush=True)
"""


def timed_judge(base_url: str, run_name: str, personality: str) -> float:
    """Seconds one `peras judge` process takes for 8 pairs x one personality x both CoT settings, 2 a shard."""
    options = ["--personality", personality, "--cot", "both", "--limit-pairs", "8", "--chunk-size", "2"]
    started = time.monotonic()
    done = subprocess.run(judge_command(run_name, base_url, *options), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return time.monotonic() - started


def test_an_analyst_reading_the_lake_during_a_run_sees_whole_shards_and_blocks_nothing(lake, tmp_path):
    ingest(preset="sample", settings=lake)
    stop = tmp_path / "stop"
    with FakeOpenAI(instant, models=[MODEL]) as server:
        alone_s = timed_judge(server.base_url, "alone", "HA")
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, str(lake.warehouse), str(stop)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert reader.stdout is not None
        assert reader.stdout.readline().strip() == "ready"
        read_s = timed_judge(server.base_url, "read", "LA")
        stop.touch()
        out, err = reader.communicate(timeout=60)
    assert reader.returncode == 0, err[-2000:]
    seen = json.loads(out)
    assert seen["errors"] == []
    counts = seen["counts"]
    assert counts[0] == 16 and counts[-1] == 32  # the first run's 16 before, both runs' 32 after
    assert counts == sorted(counts)  # never a count that goes back
    assert all(count % 2 == 0 for count in counts)  # whole shards of 2 judgments only
    assert len(set(counts)) >= 3  # the reader saw the run in progress, not only before and after
    assert seen["longest_s"] < 10  # never waited on the writer
    assert read_s < 2 * alone_s + 20, (read_s, alone_s)  # roughly the same time as without the reader
    assert query(lake, "select count(*) from judgments where personality = 'LA'") == [(16,)]


# Migrate each lake named on the command line once its gate file appears (so that both processes start each at the
# same moment); one line per lake: "migrated" or the error.
MIGRATOR = """
import faulthandler, sys, time
faulthandler.enable()
from pathlib import Path
from peras.warehouse import open_migrated
gates = Path(sys.argv[1])
for i, target in enumerate(sys.argv[2:]):
    while not (gates / str(i)).exists():
        time.sleep(0.01)
    try:
        with open_migrated(Path(target)):
            pass
        print("migrated", flush=True)
    except Exception as exc:
        print(" ".join(str(exc).split()), flush=True)
"""
ROUNDS = 5  # the race is lost in about half of the rounds


def base_tables(settings: Settings) -> list[tuple[str, int]]:
    """Every table (not view) in the warehouse's main schema, with how many times it is listed."""
    return query(
        settings,
        "select table_name, count(*) from information_schema.tables where table_schema = 'main' "
        "and table_type = 'BASE TABLE' and table_catalog = current_database() group by all order by all",
    )


def test_two_processes_migrating_a_new_lake_at_once_both_succeed_once(pg, lake, tmp_path):
    lakes = [lake] + [load_settings(warehouse=new_catalog(pg)) for _ in range(ROUNDS - 1)]
    for each in lakes:
        with connect(each.warehouse):  # the catalog exists, without a table (creating it at once: the next test)
            pass
    gates = tmp_path / "gates"
    gates.mkdir()
    command = [sys.executable, "-c", MIGRATOR, str(gates), *(str(each.warehouse) for each in lakes)]
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    file = load_settings(warehouse=tmp_path / "peras.duckdb")
    with open_migrated(file.warehouse):
        pass
    file_tables = [name for name, _ in base_tables(file)]
    try:
        for i, each in enumerate(lakes):  # round by round: the first round that shows the race ends the test
            (gates / str(i)).touch()
            said = [proc.stdout.readline().strip() for proc in procs if proc.stdout is not None]
            # a migrator that said nothing has died: show why (CI once saw '', no message, no traceback kept)
            died = [
                (proc.wait(timeout=60), proc.communicate(timeout=60)[1][-3000:])
                for proc, line in zip(procs, said, strict=True)
                if not line
            ]  # (exit code, stderr): a negative code is the signal that killed it (faulthandler prints the stack)
            assert said == ["migrated"] * 2, died
            assert query(each, "select version, count(*) from schema_migrations group by all order by all") == [
                (version, 1) for version, _, _ in migrations()
            ]
            tables = base_tables(each)
            assert all(count == 1 for _, count in tables)
            # the same tables as a DuckDB file's (schema_views included: which view definitions it stores)
            assert "schema_views" in file_tables
            assert [name for name, _ in tables] == sorted(file_tables)
    finally:
        for proc in procs:
            proc.kill()
            proc.communicate()


def test_two_connections_creating_a_new_catalog_at_once_both_get_it(pg, lake):
    errors: list[str] = []
    for _ in range(3):  # the race is lost nearly every time; three fresh catalogs make it certain
        target = Path(new_catalog(pg))
        barrier = threading.Barrier(2)

        def attach(target: Path = target, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                with connect(target):
                    pass
            except UsageError as exc:
                errors.append(str(exc))

        threads = [threading.Thread(target=attach) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []


def test_an_unreachable_catalog_is_one_line_without_the_password(pg, lake, monkeypatch, capsys):
    target = f"ducklake:postgres:dbname=nowhere host={pg.host} port={free_port()} user=peras password=secret"
    with pytest.raises(UsageError) as caught, connect(Path(target)):
        pass
    message = str(caught.value)
    assert message.startswith(f"cannot reach the DuckLake catalog of {target.replace('secret', '***')} (")
    assert "\n" not in message and "secret" not in message
    result = run_cli(capsys, "sql", "select 1", "--warehouse", target)
    assert (result.exit_code, result.out) == (2, "")
    assert result.err.startswith("error: cannot reach the DuckLake catalog of ")
    assert result.err.count("\n") == 1 and "secret" not in result.err


def test_a_new_catalog_without_a_data_path_names_the_setting(pg, lake, monkeypatch):
    monkeypatch.delenv("PERAS_LAKE_DATA_PATH")
    target = new_catalog(pg) + " password=secret"  # trust authentication: the password is never checked
    with pytest.raises(UsageError) as caught, connect(Path(target)):
        pass
    assert str(caught.value) == (
        f"the DuckLake catalog of {target.replace('secret', '***')} is new: set PERAS_LAKE_DATA_PATH to the "
        "directory (shared by every host) where its Parquet files go"
    )


def test_reading_a_catalog_that_does_not_exist_never_shows_the_password(pg, lake):
    target = new_catalog(pg) + " password=secret"
    with pytest.raises(UsageError) as caught, connect(Path(target), read_only=True):
        pass
    assert "secret" not in str(caught.value)


def test_settings_never_show_the_catalog_password(lake):
    target = str(lake.warehouse) + " password=secret"
    settings = load_settings(warehouse=target)
    shown = settings.model_dump(mode="json")
    assert shown["warehouse"] == str(lake.warehouse) + " password=***"
    assert "secret" not in json.dumps(shown)
    assert str(settings.model_dump()["warehouse"]) == target  # in this process the connection still has it


def test_a_new_catalog_takes_the_data_path_of_the_settings_passed(pg, tmp_path, monkeypatch):
    monkeypatch.delenv("PERAS_LAKE_DATA_PATH", raising=False)
    settings = Settings(
        warehouse=Path(new_catalog(pg)), lake_data_path=tmp_path / "lake-data", shards_dir=tmp_path / "shards"
    )
    ingest(preset="sample", settings=settings)
    assert query(settings, "select count(*) from qrels") == [(40,)]


def test_sql_reads_the_lake_and_no_other_file(lake, capsys):
    with open_migrated(lake.warehouse) as con:
        # more rows than DuckLake inlines into its catalog: they go to a Parquet file in the data path
        con.execute(
            "insert into qrels (collection_id, query_id, doc_id, relevance, qrels_set) "
            "select 'mine', 'q' || i % 10, 'd' || i, i % 4, 'test' from range(200) as t(i)"
        )
    counted = run_cli(
        capsys,
        "sql",
        "select (select count(*) from judgments) as n_judgments, (select count(*) from qrels) as n_qrels",
        "--format",
        "csv",
    )
    assert (counted.exit_code, counted.out, counted.err) == (0, "n_judgments,n_qrels\n0,200\n", "")
    refused = run_cli(capsys, "sql", "select * from read_csv('/etc/passwd')")
    assert (refused.exit_code, refused.out) == (2, "")
    assert refused.err.startswith("error: Permission Error: ")
    assert refused.err.endswith("(peras sql reads only the warehouse; save a result with --format csv > FILE)\n"), (
        refused.err
    )
    assert "root:" not in refused.err
    copied = run_cli(capsys, "sql", "copy (select 1) to '/tmp/peras-lake-test.csv'")
    assert copied.exit_code == 2 and not Path("/tmp/peras-lake-test.csv").exists()
    # the lake's own Parquet files stay readable: its tables are made of them
    files = str(Path(os.environ["PERAS_LAKE_DATA_PATH"]).resolve() / "**" / "*.parquet")
    with duckdb.connect() as con:
        [(n_rows,)] = con.execute("select count(*) from read_parquet($files)", {"files": files}).fetchall()
    direct = run_cli(capsys, "sql", f"select count(*) as n from read_parquet('{files}')", "--format", "csv")
    assert (direct.exit_code, direct.out, direct.err) == (0, f"n\n{n_rows}\n", "")
    assert n_rows >= 200


def test_two_processes_asking_one_run_on_a_lake_one_is_refused_and_nothing_is_copied(lake):
    """Issue 36 item 3: two processes with one run name on one lake stored it twice (pairwise: 120 answer rows for 60
    planned, published). The run's lease lives in the catalog: the second process is refused, the first completes
    each item once (the toy stage of tests/toy_stage.py, declared like pairwise)."""
    from support.fake_openai import Reply
    from tests.test_stage_declaration import WORD, truthful

    ingest(preset="sample", settings=lake)  # migrates the new lake
    words = [f"w{'x' * i}" for i in range(20)]
    refused = threading.Event()

    def slow(request: dict) -> Reply:
        if not WORD.search(str(request["messages"][-1]["content"])):
            return Reply("ok")
        return Reply(truthful(request), delay_s=0.0 if refused.is_set() else 3.0, until=refused)

    with FakeOpenAI(slow, models=[MODEL]) as server:
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        command = [sys.executable, "-m", "tests.toy_stage", "-", server.base_url, *words]
        first = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 180
        while not server.chat_requests and time.monotonic() < deadline and first.poll() is None:
            time.sleep(0.05)
        second = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        refused.set()
        _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert second.returncode != 0 and "toy run 'toy' is being asked by another process" in second.stderr
    assert query(lake, "select count(*), count(distinct word) from toy_answers") == [(20, 20)]
    assert query(lake, "select status from toy_runs") == [("published",)]


def test_two_judge_processes_with_one_run_name_one_is_refused_and_nothing_is_copied(lake):
    """Issue 36 item 3 for the judge: two `peras judge` with one run name on one lake stored 24 judgments for 20
    planned, and one lost its shard to the other. The judge run's lease lives in the catalog as every stage's does:
    the second process is refused naming the first, the first completes each judgment once."""
    ingest(preset="sample", settings=lake)
    asked, refused = threading.Event(), threading.Event()

    def slow(request: dict) -> Reply:  # slow until the second process has been answered (it starts in ~10-30 s)
        asked.set()
        return Reply(instant(request), delay_s=0.0 if refused.is_set() else 30.0, until=refused)

    options = ["--personality", "default", "--cot", "without", "--limit-pairs", "10", "--chunk-size", "2"]
    with FakeOpenAI(slow, models=[MODEL]) as server:
        first = subprocess.Popen(
            judge_command("one", server.base_url, *options), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert asked.wait(timeout=180), first.communicate(timeout=60)
        second = subprocess.run(
            judge_command("one", server.base_url, *options), capture_output=True, text=True, timeout=300
        )
        refused.set()
        _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err
    assert second.returncode == 2, second.stderr[-2000:]
    assert second.stderr.startswith("error: judge run 'one' is being asked by another process (pid "), second.stderr
    assert query(lake, "select count(*), count(distinct (query_id, doc_id)) from judgments") == [(10, 10)]
    assert query(lake, "select status from judge_runs") == [("published",)]
    assert query(lake, "select count(*) from run_leases") == [(0,)]


# DuckLake's own ways to change the lake or reach past it, beside every escape tried on a DuckDB file
LAKE_ATTACKS = [
    *ATTACKS,
    # maintenance functions: delete the lake's data files, or write new ones
    (
        "select * from ducklake_cleanup_old_files('lake', cleanup_all => true)",
        f"error: peras sql does not run ducklake_cleanup_old_files() {REFUSED}",
    ),
    (
        "select * from ducklake_merge_adjacent_files('lake')",
        f"error: peras sql does not run ducklake_merge_adjacent_files() {REFUSED}",
    ),
    (
        "call ducklake_merge_adjacent_files('lake')",
        f"error: peras sql runs queries (SELECT), not CALL statements {REFUSED}",
    ),
    # SQL run on the catalog's PostgreSQL server (pg_read_file reads the server's files)
    (
        "select * from postgres_query('__ducklake_metadata_lake', 'select 1')",
        f"error: peras sql does not run postgres_query() {REFUSED}",
    ),
    # the catalog's tables themselves
    (
        "delete from __ducklake_metadata_lake.public.ducklake_table",
        f"error: peras sql runs queries (SELECT), not DELETE statements {REFUSED}",
    ),
]


def tree_digests(directory: Path) -> dict[str, str]:
    """Every file under `directory` by relative path, hashed: a refused statement leaves them all as they were."""
    return {str(p.relative_to(directory)): file_digests(p)[0] for p in sorted(directory.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def attacked_lake(pg: Postgres, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """One lake for every escape tried (each test checks the attack left it exactly as it was, so they can share it;
    a new lake per case cost ~35 s): its environment, with more qrels rows than DuckLake inlines (a Parquet file)."""
    root = tmp_path_factory.mktemp("attacked-lake")
    env = {
        "PERAS_WAREHOUSE": new_catalog(pg),
        "PERAS_LAKE_DATA_PATH": str(root / "lake-data"),
        "PERAS_SHARDS_DIR": str(root / "shards"),
        "PERAS_DATA_DIR": str(SHARED_DATA),
        "PERAS_REPORTS_DIR": str(root / "reports"),
        "PERAS_ANALYST_SNAPSHOT": "false",
    }
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            patch.setenv(name, value)
        with open_migrated(load_settings().warehouse) as con:
            con.execute(
                "insert into qrels (collection_id, query_id, doc_id, relevance, qrels_set) "
                "select 'mine', 'q' || i % 10, 'd' || i, i % 4, 'test' from range(200) as t(i)"
            )
    return env


@pytest.mark.parametrize(("attack", "message"), LAKE_ATTACKS)
def test_sql_on_a_lake_refuses_every_escape_a_file_refuses(
    attacked_lake, monkeypatch, capsys, tmp_path, attack, message
):
    for name, value in attacked_lake.items():
        monkeypatch.setenv(name, value)
    data = Path(os.environ["PERAS_LAKE_DATA_PATH"]).resolve()
    [target] = (data / "main" / "qrels").glob("*.parquet")
    other = tmp_path / "other.duckdb"
    with duckdb.connect(str(other)) as con:
        con.execute("create table t as select 1 as x")
    paths = {"warehouse": target, "snapshot": target.with_name("new.parquet"), "other": other}
    before = tree_digests(data), file_digests(other)
    result = run_cli(capsys, "sql", attack.format(**paths))
    assert result.exit_code == 2 and result.err.count("\n") == 1, result.err
    assert result.err.startswith(message.format(**paths)), result.err
    assert (tree_digests(data), file_digests(other)) == before
    counted = run_cli(capsys, "sql", "select count(*) as n from qrels", "--format", "csv")
    assert (counted.exit_code, counted.out, counted.err) == (0, "n\n200\n", "")


def test_no_command_writes_into_the_lakes_data_path(lake, capsys):
    with open_migrated(lake.warehouse):
        pass
    data = Path(os.environ["PERAS_LAKE_DATA_PATH"]).resolve()
    output = data / "main" / "qrels" / "mine.parquet"
    before = tree_digests(data)
    result = run_cli(capsys, "export", "qrels", "--output", str(output))
    assert (result.exit_code, result.err) == (
        2,
        f"error: --output {output} is inside the DuckLake warehouse's data path {data}: choose another file name\n",
    )
    assert tree_digests(data) == before
