"""Small helpers shared by tests: run the real CLI in-process, snapshot a warehouse, wait for subprocesses."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest


@dataclass
class CliResult:
    """Exit code and what the command printed."""

    exit_code: int
    out: str
    err: str


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
    """Run `peras ARGS` through the real entry point (same error handling and exit codes)."""
    from cli.main import main

    argv = sys.argv
    sys.argv = ["peras", *args]
    code = 0
    try:
        main()
    except SystemExit as exc:
        code = int(exc.code or 0)
    finally:
        sys.argv = argv
    captured = capsys.readouterr()
    return CliResult(code, captured.out, captured.err)


def snapshot(path: Path) -> str:
    """A digest of every user table's rows, to prove a failed stage changed nothing."""
    if not path.exists():
        return "absent"
    digest = hashlib.sha256()
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [
            r[0]
            for r in con.execute(
                "select table_name from information_schema.tables where table_type = 'BASE TABLE' order by 1"
            ).fetchall()
        ]
        for table in tables:
            rows = con.execute(f'select * from "{table}" order by all').fetchall()  # noqa: S608 - test helper
            digest.update(f"{table}:{rows!r}".encode())
    finally:
        con.close()
    return digest.hexdigest()


def outputs_of(procs: list[subprocess.Popen[str]], timeout_s: float) -> list[tuple[str, str]]:
    """Each process's (stdout, stderr) once all have ended; if any is still running after `timeout_s` (a hang, or a
    very loaded machine), every one of them is killed before the test fails, so none outlives the test."""
    deadline = time.monotonic() + timeout_s
    try:
        return [proc.communicate(timeout=max(1.0, deadline - time.monotonic())) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
