"""The layers of docs/architecture.md hold: imports run downward only, flows are wiring, commands call flows."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.core

ROOT = Path(__file__).resolve().parents[1]
# layer -> top-level packages it must never import
FORBIDDEN = {"peras": {"tasks", "flows", "cli"}, "tasks": {"flows", "cli"}, "flows": {"cli"}}


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def imported_packages(path: Path) -> set[str]:
    """Top-level package of every import in a module (function-level imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_run_downward_only(layer):
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & FORBIDDEN[layer]) for path in modules(layer)
    }
    assert {path: bad for path, bad in offenders.items() if bad} == {}


def test_flow_modules_define_only_flows():
    extra = []
    for path in modules("flows"):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                decorators = [ast.unparse(d) for d in getattr(node, "decorator_list", [])]
                if not any(d.startswith("flow") for d in decorators):
                    extra.append(f"{path.name}:{node.name}")
    assert extra == []


def test_no_task_body_is_called_outside_tests():
    calls = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for package in ("peras", "tasks", "flows", "cli", "bench")
        for path in modules(package)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "fn"
    ]
    assert calls == []


def test_every_stage_has_one_name_at_every_layer():
    stages = {path.stem for path in (ROOT / "flows").glob("*.py")} - {"__init__", "demo"}
    for stage in stages:
        assert (ROOT / "tasks" / stage / "tasks.py").is_file(), stage
        assert (ROOT / "sql" / stage).is_dir(), stage
