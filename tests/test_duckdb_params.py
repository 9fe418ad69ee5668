"""Binding a parameter through peras/sql.py does not import pandas (peras/duckdb_params.py); pandas still works."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.core

# A fresh interpreter: the test process may have imported pandas already (then nothing is refused, rightly).
SCRIPT = """
import sys
import duckdb
from peras.sql import run_statements
con = duckdb.connect()
params = {"name": "dl19", "n": 41, "flag": True}
rows = run_statements(con, ["select $name as name, $n + 1 as n, $flag as flag"], params)
print(rows.fetchall(), "pandas" in sys.modules)
import pandas
nat = run_statements(con, ["select $t is null"], {"t": pandas.NaT}).fetchall()
print(con.execute("select 2 as x").df().to_dict(), nat)
"""


def test_binding_parameters_imports_no_pandas_and_pandas_still_works() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [
        "[('dl19', 42, True)] False",  # bound without pandas (DuckDB's conversion asked for it: ~0.4 s of CPU)
        "{'x': {0: 2}} [(True,)]",  # imported by whoever wants it, DuckDB's .df() and pandas.NaT as NULL work
    ]
