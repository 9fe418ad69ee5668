"""Issue 22 feasibility probe: can the multi-writer warehouse be built on DuckLake or on PostgreSQL, here?

It measures, on this machine, with whatever DuckDB the interpreter has (it never changes the project's pins):

1. extensions: where the pip-installed DuckDB extension packages put `ducklake` and `postgres_scanner`
   (`duckdb-ext-ducklake`/`duckdb-ext-postgres`: duckdb_ext/extensions/v<X>/<platform>/; `duckdb-extension-ducklake`/
   `duckdb-extension-postgres-scanner`: duckdb_extension_<name>/extensions/v<X>/) and whether `LOAD '<path>'` works
   with this DuckDB (a build for another version is refused: the error is recorded verbatim);
2. a real PostgreSQL (initdb + pg_ctl in a temporary directory, unix socket only, as user `postgres` when run as
   root) holding a DuckLake catalog with data files in a local directory: W writer processes committing C commits of
   R judgment-shaped rows each at the same time (commit latency median/p95, conflicts and retries), a reader process
   querying during the writes (every snapshot holds whole commits only, two reads in one transaction agree, how long
   each query took), then views, macros and `query_table` over the lake, and every statement of sql/migrations plus
   every view file applied inside the lake (which fail, verbatim; whether a table passes with its primary key and
   unique constraints removed);
3. PostgreSQL itself as the warehouse: the migrations created through `ATTACH ... (TYPE postgres)`, the project's
   views created in DuckDB over the attached tables, and one aggregate over a 100k-row judgments table on PostgreSQL
   vs a local DuckDB file vs the DuckLake.

Each part is skipped, with the reason in the result, where the packages or PostgreSQL are missing.

    .venv/bin/python bench/backend_probe.py [--writers 2 --commits 200 --rows 1000 --judgments 100000]
    # writes bench/results/backend-probe-<date>.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import suppress
from pathlib import Path
from typing import Any

import duckdb

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import finish, headline, machine, versions  # noqa: E402
from peras.lake import strip_constraints  # noqa: E402
from peras.sql import view_files  # noqa: E402
from peras.warehouse import migrations  # noqa: E402
from support.postgres import Postgres, create_database, missing_reason, postgres_server  # noqa: E402

EXTENSIONS = ("ducklake", "postgres_scanner")
PACKAGES = (
    "duckdb-ext",
    "duckdb-ext-ducklake",
    "duckdb-ext-postgres",
    "duckdb-extension-ducklake",
    "duckdb-extension-postgres-scanner",
    "psycopg",
)
# Judgment-shaped rows (the judgments table's columns, no constraints), made inside DuckDB from range().
ROWS_COLUMNS = """
    run_id varchar, query_id varchar, doc_id varchar, personality varchar, cot boolean,
    confidence_method varchar, label integer, confidence double, expected_score double, status varchar,
    reason varchar, label_request_id varchar, confidence_request_id varchar, judged_at timestamp,
    writer integer, commit_no integer"""
ROWS_SELECT = """
    select 'run-' || $writer as run_id, 'q' || (i % 43) as query_id, 'd' || i as doc_id,
           ['default','HA','LA','HC','LC'][1 + i % 5] as personality, i % 2 = 0 as cot,
           'verbalized' as confidence_method, (i % 4)::integer as label, (i % 101)::double as confidence,
           null::double as expected_score, 'ok' as status, null::varchar as reason,
           md5(i::varchar) as label_request_id, null::varchar as confidence_request_id,
           now()::timestamp as judged_at, $writer::integer as writer, $commit_no::integer as commit_no
    from range($first, $first + $rows) t(i)"""
AGGREGATE = """
    select j.personality, j.cot, count(*) as n, avg(j.label) as mean_label, avg(j.confidence) as mean_conf,
           avg(case when q.relevance = j.label then 1 else 0 end) as accuracy
    from {judgments} j join {qrels} q on q.query_id = j.query_id and q.doc_id = j.doc_id
    group by all order by all"""
VIEW_QUERIES = {
    "stg_judgment_facts by personality": (
        "select personality, cot, count(*), avg(label) from stg_judgment_facts group by all order by all"
    ),
    "metrics_summary": "select * from metrics_summary order by all",
}

# --- extensions ------------------------------------------------------------------------------------------------


def extension_files() -> dict[str, list[str]]:
    """Every ducklake/postgres_scanner build the installed pip packages carry, by extension name."""
    found: dict[str, list[str]] = {name: [] for name in EXTENSIONS}
    for entry in sys.path:
        base = Path(entry)
        if not base.is_dir():
            continue
        for pattern in (
            "duckdb_ext/extensions/v*/*/{}.duckdb_extension",
            "duckdb_extension_*/extensions/v*/{}.duckdb_extension",
        ):
            for name in EXTENSIONS:
                found[name] += sorted(str(p) for p in base.glob(pattern.format(name)))
    return found


def matching_build(paths: list[str]) -> str | None:
    """The build made for this DuckDB (its directory is named v<version>)."""
    wanted = f"/v{duckdb.__version__}/"
    return next((p for p in paths if wanted in p), None)


def probe_extensions() -> dict[str, Any]:
    """LOAD every carried build by path; the one for this DuckDB must load, others show the refusal verbatim."""
    files = extension_files()
    report: dict[str, Any] = {"duckdb": duckdb.__version__, "files": files, "loads": [], "usable": {}}
    for name, paths in files.items():
        for path in paths:
            started = time.perf_counter()
            try:
                duckdb.connect().execute(f"load '{path}'")
                report["loads"].append({"path": path, "ok": True, "s": round(time.perf_counter() - started, 3)})
            except duckdb.Error as exc:
                report["loads"].append({"path": path, "ok": False, "error": str(exc)})
        report["usable"][name] = matching_build(paths)
    missing = [name for name, path in report["usable"].items() if path is None]
    if missing:
        report["skip"] = (
            f"no build of {', '.join(missing)} for DuckDB {duckdb.__version__} among the installed packages "
            "(duckdb-ext-ducklake/-postgres carry v1.4.4, duckdb-extension-ducklake/-postgres-scanner v1.5.x)"
        )
    return report


def lake_connection(ext: dict[str, str], attach: str | None = None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with both extensions loaded by path and, optionally, one ATTACH run."""
    con = duckdb.connect(config={"autoinstall_known_extensions": False})
    for path in ext.values():
        con.execute(f"load '{path}'")
    if attach:
        con.execute(attach)
    return con


# --- PostgreSQL ------------------------------------------------------------------------------------------------


class SkipPart(Exception):
    """A part cannot run here; the message says why."""


# --- part 2: DuckLake on PostgreSQL ----------------------------------------------------------------------------


def lake_attach(catalog_dsn: str, data_path: Path) -> str:
    return f"attach 'ducklake:postgres:{catalog_dsn}' as lake (data_path '{data_path}/')"


def worker_command(role: str, spec: dict[str, Any]) -> list[str]:
    return [sys.executable, __file__, "--role", role, "--spec", json.dumps(spec)]


def writer(spec: dict[str, Any]) -> dict[str, Any]:
    """Commit spec['commits'] transactions of spec['rows'] rows; a commit that conflicts is retried as a whole."""
    con = lake_connection(spec["ext"], spec["attach"])
    latencies: list[float] = []
    errors: list[str] = []
    retries = 0
    started = time.perf_counter()
    for commit_no in range(spec["commits"]):
        params = {
            "writer": spec["writer"],
            "commit_no": commit_no,
            "rows": spec["rows"],
            "first": (spec["writer"] * spec["commits"] + commit_no) * spec["rows"],
        }
        for _attempt in range(20):
            t0 = time.perf_counter()
            try:
                con.execute("begin transaction")
                con.execute(f"insert into lake.probe_rows {ROWS_SELECT}", params)
                con.execute("commit")
                latencies.append(time.perf_counter() - t0)
                break
            except duckdb.Error as exc:
                retries += 1
                errors.append(str(exc).splitlines()[0][:300])
                with_rollback(con)
        else:
            raise SystemExit(f"writer {spec['writer']}: commit {commit_no} failed 20 times: {errors[-1]}")
    return {
        "writer": spec["writer"],
        "wall_s": time.perf_counter() - started,
        "latencies_s": latencies,
        "retries": retries,
        "errors": sorted(set(errors)),
    }


def with_rollback(con: duckdb.DuckDBPyConnection) -> None:
    with suppress(duckdb.Error):
        con.execute("rollback")


def reader(spec: dict[str, Any]) -> dict[str, Any]:
    """Query until spec['stop_file'] exists: each snapshot must hold whole commits, two reads in it must agree."""
    con = lake_connection(spec["ext"], spec["attach"])
    snapshot_sql = "select count(*), count(distinct (writer, commit_no)) from lake.probe_rows"
    latencies: list[float] = []
    torn, disagreeing, errors = 0, 0, []
    counts = []
    while not Path(spec["stop_file"]).exists():
        t0 = time.perf_counter()
        try:
            con.execute("begin transaction")
            rows, commits = con.execute(snapshot_sql).fetchone() or (0, 0)
            again = con.execute("select count(*) from lake.probe_rows").fetchone()
            con.execute("commit")
        except duckdb.Error as exc:
            errors.append(str(exc).splitlines()[0][:300])
            with_rollback(con)
            continue
        latencies.append(time.perf_counter() - t0)
        torn += rows != commits * spec["rows"]
        disagreeing += again is None or again[0] != rows
        counts.append(rows)
    return {
        "queries": len(latencies),
        "latencies_s": latencies,
        "torn_snapshots": torn,
        "disagreeing_reads": disagreeing,
        "errors": sorted(set(errors)),
        "first_count": counts[0] if counts else None,
        "last_count": counts[-1] if counts else None,
    }


def spread(values: list[float]) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    return {
        "n": len(ordered),
        "median_ms": round(1000 * statistics.median(ordered), 1),
        "p95_ms": round(1000 * ordered[int(0.95 * (len(ordered) - 1))], 1),
        "max_ms": round(1000 * ordered[-1], 1),
    }


def concurrent_writes(ext: dict[str, str], attach: str, root: Path, args: argparse.Namespace) -> dict[str, Any]:
    con = lake_connection(ext, attach)
    con.execute(f"create table lake.probe_rows ({ROWS_COLUMNS})")
    con.close()
    stop_file = root / "stop-reader"
    base = {"ext": ext, "attach": attach, "rows": args.rows, "commits": args.commits}
    read = subprocess.Popen(
        worker_command("reader", base | {"stop_file": str(stop_file)}), stdout=subprocess.PIPE, text=True
    )
    started = time.perf_counter()
    writes = [
        subprocess.Popen(worker_command("writer", base | {"writer": w}), stdout=subprocess.PIPE, text=True)
        for w in range(args.writers)
    ]
    outs = [json.loads(p.communicate()[0]) for p in writes]
    wall = time.perf_counter() - started
    stop_file.touch()
    read_out = json.loads(read.communicate()[0])
    con = lake_connection(ext, attach)
    total = con.execute("select count(*), count(distinct (writer, commit_no)) from lake.probe_rows").fetchone()
    snapshots = con.execute("select count(*) from lake.snapshots()").fetchone()
    files = con.execute("select count(*) from glob($p)", {"p": f"{root}/lake-data/**/*.parquet"}).fetchone()
    con.close()
    all_latencies = [x for o in outs for x in o["latencies_s"]]
    return {
        "writers": args.writers,
        "commits_each": args.commits,
        "rows_per_commit": args.rows,
        "wall_s": round(wall, 2),
        "rows_per_s": round(args.writers * args.commits * args.rows / wall),
        "commits_per_s": round(args.writers * args.commits / wall, 1),
        "commit_latency": spread(all_latencies),
        "per_writer": [
            {
                "writer": o["writer"],
                "wall_s": round(o["wall_s"], 2),
                "retries": o["retries"],
                "errors": o["errors"],
                "latency": spread(o["latencies_s"]),
            }
            for o in outs
        ],
        "rows_after": total[0] if total else None,
        "commits_after": total[1] if total else None,
        "expected_rows": args.writers * args.commits * args.rows,
        "lake_snapshots": snapshots[0] if snapshots else None,
        "parquet_files": files[0] if files else None,
        "reader": {k: v for k, v in read_out.items() if k != "latencies_s"}
        | {"latency": spread(read_out["latencies_s"])},
    }


def attempt(con: duckdb.DuckDBPyConnection, sql: str) -> dict[str, Any]:
    """Run one statement: ok, or the error's first line verbatim."""
    try:
        result = con.execute(sql).fetchall()
        return {"ok": True, "result": [list(map(str, row)) for row in result[:3]]}
    except duckdb.Error as exc:
        return {"ok": False, "error": " ".join(str(exc).split())[:400]}


def lake_features(ext: dict[str, str], attach: str, root: Path) -> dict[str, Any]:
    """Views, macros and query_table: in the lake itself, and in a local DuckDB file that attaches the lake."""
    con = lake_connection(ext, attach)
    checks = {
        "create view in lake": (
            "create view lake.probe_view as select writer, count(*) n from lake.probe_rows group by all"
        ),
        "query view in lake": "select * from lake.probe_view order by writer",
        "create macro in lake": "create macro lake.probe_double(x) as x * 2",
        "create table macro in lake": (
            "create macro lake.probe_tm(t := 'lake.probe_rows') as table select count(*) from query_table(t)"
        ),
        "query_table over lake table": "select count(*) from query_table('lake.probe_rows')",
        "time travel (AT VERSION)": "select count(*) from lake.probe_rows at (version => 3)",
    }
    found = {name: attempt(con, sql) for name, sql in checks.items()}
    found["insert or replace (no primary key)"] = attempt(
        con, "insert or replace into lake.probe_rows select * from lake.probe_rows limit 1"
    )
    other = lake_connection(ext, attach)  # two transactions deleting the same rows: the second commit must fail
    for side in (con, other):
        side.execute("begin transaction")
        side.execute("delete from lake.probe_rows where writer = 0 and commit_no = 0")
    found["first of two conflicting deletes"] = attempt(con, "commit")
    found["second of two conflicting deletes"] = attempt(other, "commit")
    other.close()
    con.close()
    local = duckdb.connect(str(root / "local.duckdb"), config={"autoinstall_known_extensions": False})
    for path in ext.values():
        local.execute(f"load '{path}'")
    local.execute(attach)
    local_checks = {
        "local view over lake table": "create view main.local_view as select count(*) n from lake.probe_rows",
        "query local view": "select * from main.local_view",
        "local table macro with query_table over lake": (
            "create macro main.local_tm(t := 'lake.probe_rows') as table select count(*) n from query_table(t)"
        ),
        "query local table macro": "select * from main.local_tm()",
    }
    found |= {name: attempt(local, sql) for name, sql in local_checks.items()}
    local.close()
    return found


def apply_schema(con: duckdb.DuckDBPyConnection, strip: bool) -> dict[str, Any]:
    """Every statement of every migration, in order; failures verbatim, and (strip) whether the stripped one passes."""
    failures = []
    passed = 0
    for version, name, path in migrations():
        for statement in duckdb.extract_statements(path.read_text(encoding="utf-8")):
            sql = statement.query.strip()
            outcome = attempt(con, sql)
            if outcome["ok"]:
                passed += 1
                continue
            code = " ".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))
            failure = {
                "migration": f"V{version:03d}__{name}",
                "statement": " ".join(code.split())[:100],
                "error": outcome["error"],
            }
            if strip:
                stripped = strip_constraints(sql)  # what the DuckLake backend applies (peras/lake.py)
                if stripped != sql:
                    failure["without_constraints"] = attempt(con, stripped)
            failures.append(failure)
    return {"statements_ok": passed, "statements_failed": len(failures), "failures": failures}


def apply_all_views(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Each view file (views depend on each other: retried until no progress); those that never pass, verbatim."""
    pending = {path: "" for path in view_files()}
    created = 0
    progress = True
    while pending and progress:
        progress = False
        for path in list(pending):
            text = path.read_text(encoding="utf-8")
            code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("--")).lstrip().lower()
            sql = text if code.startswith("create") else f"create or replace view {path.stem} as\n{text}"
            outcome = attempt(con, sql)
            if outcome["ok"]:
                created += 1
                progress = True
                del pending[path]
            else:
                pending[path] = outcome["error"]
    return {
        "views_created": created,
        "views_failed": len(pending),
        "failures": {f"{p.parent.parent.name}/{p.name}": e for p, e in sorted(pending.items())},
    }


def lake_schema(ext: dict[str, str], attach: str) -> dict[str, Any]:
    con = lake_connection(ext, attach)
    con.execute("use lake")
    schema = apply_schema(con, strip=True)
    views = apply_all_views(con)
    con.close()
    local = lake_connection(ext, attach)  # the views and macros in an in-memory DuckDB, the tables in the lake
    local.execute("set search_path = 'memory.main,lake.main'")
    local_views = apply_all_views(local)
    queries = {
        name: attempt(local, f"select count(*) from {name}")
        for name in ("stg_judgment_facts", "metrics_summary", "metrics_vs_default", "long_from()")
    }
    local.close()
    return {"migrations": schema, "views_in_lake": views, "views_in_local_duckdb": local_views, "queries": queries}


# --- part 3: PostgreSQL as the warehouse -----------------------------------------------------------------------


def fill_judgments(con: duckdb.DuckDBPyConnection, prefix: str, n: int) -> dict[str, float]:
    """n judgment rows and their qrels into <prefix>judgments / <prefix>qrels; seconds each insert took."""
    timings = {}
    t0 = time.perf_counter()
    con.execute(
        f"insert into {prefix}judgments by name select * exclude (writer, commit_no) from ({ROWS_SELECT})",
        {"writer": 0, "commit_no": 0, "first": 0, "rows": n},
    )
    timings["insert_judgments_s"] = round(time.perf_counter() - t0, 2)
    t0 = time.perf_counter()
    con.execute(
        f"insert into {prefix}qrels by name select 'c' as collection_id, 'q' || (i % 43) as query_id, "
        "'d' || i as doc_id, (i * 7 % 4)::integer as relevance, 'test' as qrels_set from range($n) t(i)",
        {"n": n},
    )
    timings["insert_qrels_s"] = round(time.perf_counter() - t0, 2)
    con.execute(
        f"insert into {prefix}judge_runs by name select 'run-0' as run_id, 'probe' as run_name, 'llm' as source, "
        "'pointwise' as task_type, 'c' as collection_id, 'm' as model, 'x' as backend, '{}' as params, "
        "now()::timestamp as created_at, 'published' as status"
    )
    return timings


def time_query(con: duckdb.DuckDBPyConnection, sql: str, repeat: int = 3) -> dict[str, Any]:
    runs, rows = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        rows = con.execute(sql).fetchall()
        runs.append(time.perf_counter() - t0)
    return {
        "best_ms": round(1000 * min(runs), 1),
        "runs_ms": [round(1000 * r, 1) for r in runs],
        "rows": len(rows),
        "first_row": [str(v) for v in rows[0]] if rows else None,
    }


def time_views(con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """The project's own views over the filled tables: the staging view and the metrics summary."""
    found = {}
    for name, sql in VIEW_QUERIES.items():
        try:
            found[name] = time_query(con, sql)
        except duckdb.Error as exc:
            found[name] = {"error": " ".join(str(exc).split())[:400]}
    return found


def postgres_warehouse(ext: dict[str, str], pg: Postgres, root: Path, n: int) -> dict[str, Any]:
    """The migrations through the postgres extension, the views in DuckDB over them, and one aggregate timed."""
    wh_dsn = create_database(pg, "warehouse")
    con = lake_connection(ext, f"attach '{wh_dsn}' as pg (type postgres)")
    con.execute("use pg")
    schema = apply_schema(con, strip=False)
    con.execute("use memory")
    con.execute("set search_path = 'memory.main,pg.public'")
    views = apply_all_views(con)
    fill = fill_judgments(con, "pg.public.", n)
    pg_query = time_query(con, AGGREGATE.format(judgments="pg.public.judgments", qrels="pg.public.qrels"))
    pg_views = time_views(con)
    con.close()
    local = duckdb.connect(str(root / "warehouse.duckdb"))
    local_schema = apply_schema(local, strip=False)
    apply_all_views(local)
    local_fill = fill_judgments(local, "", n)
    local_query = time_query(local, AGGREGATE.format(judgments="judgments", qrels="qrels"))
    local_views = time_views(local)
    local.close()
    return {
        "migrations": schema,
        "views": views,
        "aggregate": {
            "rows": n,
            "sql": " ".join(AGGREGATE.split()),
            "postgres_attached": pg_query | fill | {"views": pg_views},
            "duckdb_file": local_query
            | local_fill
            | {"views": local_views, "migrations_failed": local_schema["statements_failed"]},
        },
    }


def lake_aggregate(ext: dict[str, str], attach: str, n: int) -> dict[str, Any]:
    """The same aggregate over the lake's judgments and qrels (created by lake_schema without constraints)."""
    con = lake_connection(ext, attach)
    con.execute("set search_path = 'memory.main,lake.main'")
    apply_all_views(con)
    fill = fill_judgments(con, "lake.", n)
    found = time_query(con, AGGREGATE.format(judgments="lake.judgments", qrels="lake.qrels")) | fill
    found["views"] = time_views(con)
    con.close()
    return found


# --- main ------------------------------------------------------------------------------------------------------


def run_part(result: dict[str, Any], key: str, part: Any, *args: Any) -> Any:
    """Run one part; its skip reason or its failure (verbatim) is recorded instead of stopping the probe."""
    try:
        result[key] = part(*args)
    except SkipPart as exc:
        result[key] = {"skip": str(exc)}
    except (duckdb.Error, subprocess.CalledProcessError, SystemExit, json.JSONDecodeError) as exc:
        detail = getattr(exc, "stderr", "") or ""
        result[key] = {"failed": f"{type(exc).__name__}: {exc} {detail}".strip()}
    return result[key]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=2)
    parser.add_argument("--commits", type=int, default=200)
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--judgments", type=int, default=100_000)
    parser.add_argument("--role", choices=("writer", "reader"), help=argparse.SUPPRESS)
    parser.add_argument("--spec", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        print(json.dumps((writer if args.role == "writer" else reader)(json.loads(args.spec))))
        return
    started = machine()
    result: dict[str, Any] = {"versions": versions(*PACKAGES), "extensions": probe_extensions()}
    rows: list[dict[str, Any]] = []
    ext = result["extensions"]["usable"]
    if "skip" in result["extensions"]:
        result["postgres"] = {"skip": result["extensions"]["skip"]}
    else:
        with tempfile.TemporaryDirectory(prefix="peras-probe-") as tmp:
            root = Path(tmp)
            try:
                if missing_reason():
                    raise SkipPart(str(missing_reason()))
                with postgres_server() as pg:
                    result["postgres"] = {"version": pg.version, "port": pg.port}
                    catalog = create_database(pg, "lakecatalog")
                    attach = lake_attach(catalog, root / "lake-data")
                    writes = run_part(result, "ducklake_concurrent_writes", concurrent_writes, ext, attach, root, args)
                    run_part(result, "ducklake_features", lake_features, ext, attach, root)
                    run_part(result, "ducklake_schema", lake_schema, ext, attach)
                    lake_agg = run_part(result, "ducklake_aggregate", lake_aggregate, ext, attach, args.judgments)
                    pgw = run_part(result, "postgres_warehouse", postgres_warehouse, ext, pg, root, args.judgments)
            except SkipPart as exc:
                result["postgres"] = {"skip": str(exc)}
            if "commit_latency" in result.get("ducklake_concurrent_writes", {}):
                lat = writes["commit_latency"]
                rows += [
                    headline("DuckLake commit latency median", lat["median_ms"], "ms", "reported", True),
                    headline("DuckLake commit latency p95", lat["p95_ms"], "ms", "reported", True),
                    headline(
                        "DuckLake rows committed",
                        writes["rows_after"],
                        "rows",
                        f"= {writes['expected_rows']:,}",
                        writes["rows_after"] == writes["expected_rows"],
                    ),
                    headline(
                        "torn reader snapshots",
                        writes["reader"]["torn_snapshots"],
                        "",
                        "0",
                        writes["reader"]["torn_snapshots"] == 0,
                    ),
                ]
            if "aggregate" in result.get("postgres_warehouse", {}):
                agg = pgw["aggregate"]
                rows += [
                    headline(
                        "aggregate on attached PostgreSQL", agg["postgres_attached"]["best_ms"], "ms", "reported", True
                    ),
                    headline("aggregate on DuckDB file", agg["duckdb_file"]["best_ms"], "ms", "reported", True),
                ]
            if "best_ms" in result.get("ducklake_aggregate", {}):
                rows.append(headline("aggregate on DuckLake", lake_agg["best_ms"], "ms", "reported", True))
    if not rows:
        rows.append(headline("probe parts run", 0, "", "skipped (see JSON)", True))
    result["headline"] = rows
    finish("backend-probe", result, started)


if __name__ == "__main__":
    main()
