"""The layers of docs/architecture.md hold: imports run downward only, flows are wiring, commands call flows."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.core

ROOT = Path(__file__).resolve().parents[1]
# layer -> top-level packages it must never import
FORBIDDEN = {"peras": {"tasks", "flows", "cli"}, "tasks": {"flows", "cli"}, "flows": {"cli"}}
# What every stage may import under tasks/ besides its own package (docs/architecture.md); these import no stage.
NOT_STAGES = {"engine", "publish", "shared"}
STAGES = sorted(
    p.name for p in (ROOT / "tasks").iterdir() if (p / "__init__.py").is_file() and p.name not in NOT_STAGES
)


def modules(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def imported_modules(path: Path) -> set[str]:
    """Dotted name of every module a module imports (function-level imports included); `from tasks import x` gives
    tasks.x, as x may be a package."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module} if node.module != "tasks" else {f"tasks.{alias.name}" for alias in node.names}
    return found


def imported_packages(path: Path) -> set[str]:
    """Top-level package of every import in a module (function-level imports included)."""
    return {name.split(".")[0] for name in imported_modules(path)}


def imported_task_packages(path: Path) -> set[str]:
    """The packages under tasks/ a module imports: {'engine', 'judge', ...}."""
    return {name.split(".")[1] for name in imported_modules(path) if name.startswith("tasks.") and name.count(".")}


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_imports_run_downward_only(layer):
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_packages(path) & FORBIDDEN[layer]) for path in modules(layer)
    }
    assert {path: bad for path, bad in offenders.items() if bad} == {}


def test_stages_import_no_other_stage():
    # A stage may import the engine, publish and the shared package (tasks/shared/) and the foundation; what two
    # stages need goes to tasks/shared/ (or, if it is one stage's own, the flow hands it over: flows/study.py).
    assert STAGES and "judge" in STAGES
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_task_packages(path) - NOT_STAGES - {path.parent.name})
        for stage in STAGES
        for path in modules(f"tasks/{stage}")
    }
    assert {path: bad for path, bad in offenders.items() if bad} == {}


@pytest.mark.parametrize("package", sorted(NOT_STAGES))
def test_engine_publish_and_shared_import_no_stage(package):
    offenders = {
        str(path.relative_to(ROOT)): sorted(imported_task_packages(path) - NOT_STAGES)
        for path in modules(f"tasks/{package}")
    }
    assert {path: bad for path, bad in offenders.items() if bad} == {}


@pytest.mark.parametrize("package", ["bench", "support"])
def test_benchmarks_and_support_use_no_test_code(package):
    # What tests and benchmarks both need (the scripted servers, the reference metrics) lives in support/; a
    # `python -m tests....` child counts as an import.
    assert modules(package)
    offenders = {
        str(path.relative_to(ROOT)): sorted(
            (imported_packages(path) & {"tests"})
            | {
                node.value
                for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("tests.")
            }
        )
        for path in modules(package)
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
    # ask: any stage; judge_part: one part of a judge run (its own module: `peras judge` does not build its schema)
    stages = {path.stem for path in (ROOT / "flows").glob("*.py")} - {"__init__", "demo", "ask", "judge_part"}
    for stage in stages:
        assert (ROOT / "tasks" / stage / "tasks.py").is_file(), stage
        assert (ROOT / "sql" / stage).is_dir(), stage
