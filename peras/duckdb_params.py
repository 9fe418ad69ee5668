"""DuckDB's Python client imports pandas to bind a parameter: peras's own statements do without it.

duckdb 1.5's value conversion (GetPythonObjectType) first asks whether a bound value *is* `pandas.NaT` or `pandas.NA`,
importing pandas to find out: the first bound parameter of every peras command cost ~0.4 s of CPU, pandas and what it
imports, in commands that never use pandas. No value can be a pandas object while pandas is not imported, so an import
of pandas that DuckDB starts while binding a statement of peras/sql.py is refused (DuckDB takes the failed import as
"no pandas" and asks again the next time); every other import of pandas (a command that uses it, DuckDB's `.df()`,
another thread) goes on as usual.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from pathlib import Path
from types import FrameType, ModuleType

BINDING_MODULES = frozenset({str(Path(__file__).with_name("sql.py"))})  # where peras binds DuckDB parameters


class NoPandasWhileBinding(MetaPathFinder):
    """Refuses `import pandas` when the Python frame that started it is a peras function binding parameters."""

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == "pandas" and _importer() in BINDING_MODULES:
            raise ModuleNotFoundError("pandas is not imported to bind DuckDB parameters", name=fullname)
        return None  # every other import: the next finders as usual


def _importer() -> str:
    """The file of the nearest frame outside the import machinery (DuckDB's C++ import adds no frame of its own)."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
        frame = frame.f_back
    return frame.f_code.co_filename if frame is not None else ""


def install() -> None:
    """Put the finder first on sys.meta_path, once."""
    if not any(isinstance(finder, NoPandasWhileBinding) for finder in sys.meta_path):
        sys.meta_path.insert(0, NoPandasWhileBinding())
