"""Issue 48: stage modules of one's own (the setting stage_modules, `peras ask MODULE`) that cannot be used - they
raise when imported, have a syntax error, declare PERAS's tables or kinds, declare a kind another module declares,
or changed their columns under existing tables - are refused in one line naming the module (exit 2 for `peras ask`);
named by the setting they are skipped, and every other command works as if they were not named (`peras runs list`
says which it skipped). Throwaway modules are written in tmp_path."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from peras.errors import UsageError
from peras.paths import PROJECT_ROOT
from peras.settings import load_settings
from peras.sql import run_statements
from peras.warehouse import open_migrated
from tasks.engine import own_stages, stage
from tasks.engine.asked import asked_stage, asked_stage_modules
from tasks.engine.runs import RunClaim, claim_run, stored_probe
from tasks.engine.stage import declaration, declarations

pytestmark = pytest.mark.core

# A stage module that only declares its stage (what the setting needs): KIND, tables and values filled in.
DECLARING = """
from tasks.engine.stage import StageDeclaration, columns, declare

DECLARATION = declare(StageDeclaration(
    kind={kind!r}, label="own run", runs_table={runs!r}, run_id="own_run_id", fixed=columns({fixed!r}),
    answers_table={answers!r}, history_table="", keys=columns("word"), values=columns({values!r}),
    failure_group=(), failure_label="own",
))
"""


def declaring(kind: str = "own", runs: str = "own_runs", answers: str = "own_answers", fixed: str = "model",
              values: str = "n_letters integer") -> str:  # fmt: skip
    return DECLARING.format(kind=kind, runs=runs, answers=answers, fixed=fixed, values=values)


class Modules:
    """Throwaway modules in a package of this test's own (tmp_path on sys.path)."""

    def __init__(self, root: Path) -> None:
        self.package = "own_" + re.sub(r"\W", "_", root.name)
        self.folder = root / self.package
        self.folder.mkdir()
        (self.folder / "__init__.py").write_text("")

    def write(self, name: str, text: str) -> str:
        (self.folder / f"{name}.py").write_text(text)
        importlib.invalidate_caches()
        return f"{self.package}.{name}"


@pytest.fixture
def modules(tmp_path: Path, monkeypatch) -> Modules:
    """A package for throwaway modules; whatever they declare or import goes with the test."""
    monkeypatch.syspath_prepend(str(tmp_path))
    stage.discover_files()  # PERAS's own, read for good before the copy that goes with the test
    monkeypatch.setattr(stage, "_DECLARED", dict(stage._DECLARED))
    monkeypatch.setattr(own_stages, "_MODULE_OF", dict(own_stages._MODULE_OF))
    monkeypatch.setattr(own_stages, "_SKIPPED", {})
    made = Modules(tmp_path)
    yield made
    for name in [name for name in sys.modules if name.startswith(made.package)]:
        del sys.modules[name]


def refused(modules: Modules, name: str, text: str) -> tuple[str, str]:
    """The module's name, and the line the setting's loader skipped it with (it is left out of the kinds)."""
    module = modules.write(name, text)
    assert own_stages.configured_stage_modules([module]) == {}
    return module, own_stages.skipped_modules()[module].reason


def test_a_module_that_raises_or_does_not_parse_is_skipped_with_one_line_naming_it(modules):
    boom, why = refused(modules, "boom", "x = 1\nraise RuntimeError('no GPU here')\n")
    assert why == (
        f"stage module {boom!r} (setting stage_modules) cannot be imported: it raised RuntimeError at "
        f"{modules.folder / 'boom.py'}:2: no GPU here"
    )
    broken, why = refused(modules, "broken", "def f(:\n")
    assert why == (
        f"stage module {broken!r} (setting stage_modules) cannot be imported: it raised SyntaxError: invalid syntax "
        "(broken.py, line 1)"
    )
    # `peras ask` of it says the same line; asked without the setting, the same without naming the setting
    settings = load_settings(stage_modules=[boom, broken])
    with pytest.raises(UsageError) as raised:
        asked_stage(settings, boom)
    assert str(raised.value) == own_stages.skipped_modules()[boom].reason
    own_stages._SKIPPED.clear()  # another process, without the setting
    with pytest.raises(UsageError, match=rf"^stage module '{broken}' cannot be imported: it raised SyntaxError"):
        own_stages.import_stage_module(broken)


def test_a_module_that_declares_then_raises_leaves_no_kind_behind(modules):
    half = modules.write("half", declaring(kind="half") + "raise ImportError('a library is missing')\n")
    assert own_stages.configured_stage_modules([half]) == {}
    assert "half" not in {d.kind for d in declarations()}


@pytest.mark.parametrize(
    ("tables", "taken"),
    [
        ({"runs": "pairwise_runs"}, "pairwise_runs"),  # a PERAS stage's runs (the case: a constraint failed)
        ({"answers": "judgments"}, "judgments"),  # the judge's answers
        ({"answers": "llm_requests"}, "llm_requests"),  # no stage's, a migration's: every stage's answer cache
    ],
)
def test_a_module_declaring_a_table_of_peras_is_refused(modules, tables, taken):
    module, why = refused(modules, "tables", declaring(**tables))
    assert why == (
        f"stage module {module!r} (setting stage_modules) is refused: stage kind 'own' declares table(s) of PERAS's "
        f"own ({taken}): name your stage's tables after its kind (own_runs, own_answers, ...)"
    )
    assert "own" not in {d.kind for d in declarations()}


def test_a_module_declaring_a_kind_of_peras_is_skipped_not_fatal(modules):
    pairwise = declaration("pairwise")
    module, why = refused(modules, "judging", declaring(kind="pairwise"))
    assert why == (
        f"stage module {module!r} (setting stage_modules) is refused: stage kind 'pairwise' is one of PERAS's own: "
        "declare your stage under another"
    )
    assert declaration("pairwise") is pairwise


def test_two_modules_declaring_one_kind_the_second_is_refused_and_the_kind_is_not_asked(modules):
    first = modules.write("first", declaring())
    second = modules.write("second", declaring(values="n_letters integer, n_vowels integer"))
    assert own_stages.configured_stage_modules([first, second]) == {"own": first}
    why = (
        f"stage modules {first!r} and {second!r} (setting stage_modules) both declare kind 'own': give each stage "
        f"its own kind ({second!r} is not used)"
    )
    assert own_stages.skipped_modules()[second].reason == why
    assert [c.name for c in declaration("own").values] == ["n_letters"]  # the first's, not replaced by the second's
    settings = load_settings(stage_modules=[first, second])
    for name in ("own", second):  # the kind is ambiguous; the second module is not used
        with pytest.raises(UsageError) as raised:
            asked_stage(settings, name)
        assert str(raised.value) == why
    own_stages._SKIPPED.clear()  # asked by its name without the setting, the second module is refused the same way
    with pytest.raises(UsageError, match=rf"^stage modules '{first}' and '{second}' both declare kind 'own'"):
        own_stages.import_stage_module(second)


def test_every_other_command_reads_the_declarations_as_if_the_module_were_not_named(modules, monkeypatch):
    """What every command does first (`peras runs`, `peras pairwise`, ...): read the declarations. The setting's
    broken module is skipped there, not raised (it was: 'internal error RuntimeError')."""
    boom = modules.write("boom", "raise RuntimeError('no GPU here')\n")
    good = modules.write("good", declaring())
    monkeypatch.setenv("PERAS_STAGE_MODULES", f"{boom},{good}")
    monkeypatch.setattr(stage, "_CONFIGURED_READ", [])  # this process reads the setting again
    assert declaration("pairwise").runs_table == "pairwise_runs"
    assert {"judge", "pairwise", "own"} <= {d.kind for d in declarations()}
    assert list(own_stages.skipped_modules()) == [boom]
    assert asked_stage_modules(load_settings())["own"] == good


@pytest.mark.parametrize(
    ("changed", "added", "gone"),
    [
        ({"values": "n_letters integer, n_vowels integer"}, "n_vowels", "none"),  # an answer column added
        ({"values": "letters integer"}, "letters", "n_letters"),  # one renamed
        ({"fixed": "model, language"}, "language", "none"),  # what fixes a run: select_run read it (BinderException)
    ],
)
def test_a_module_whose_columns_changed_under_its_tables_is_refused_before_its_run_is_touched(
    modules, tmp_path, changed, added, gone
):
    settings = load_settings(warehouse=tmp_path / "w.duckdb")
    with open_migrated(settings.warehouse) as con:
        run_statements(con, _old_stage().sql("create_tables"))  # the tables as the module's first version made them
    module = modules.write("changed", declaring(**changed))
    own_stages.import_stage_module(module)
    now = declaration("own")
    table = "own_runs" if "fixed" in changed else "own_answers"
    why = (
        f"stage module {module!r} declares table {table} with other columns than the warehouse's (declared, not "
        f"stored: {added}; stored, not declared: {gone}): its runs were made by another version of the stage; "
        "declare new table names, or put the columns back"
    )
    with pytest.raises(UsageError) as raised:
        stored_probe(settings, now, "r")
    assert str(raised.value) == why
    claim = RunClaim(now, "r", {"scope": {}, "language": "en"}, {})
    with pytest.raises(UsageError) as raised:
        claim_run(settings, "w", claim, "m", "b", lease=False)
    assert str(raised.value) == why
    with open_migrated(settings.warehouse) as con:
        assert con.execute("select count(*) from own_runs").fetchone() == (0,)


def _old_stage() -> stage.StageDeclaration:
    """The module's first version: model fixes a run, an answer holds n_letters."""
    return stage.StageDeclaration(
        kind="own", label="own run", runs_table="own_runs", run_id="own_run_id", fixed=stage.columns("model"),
        answers_table="own_answers", history_table="", keys=stage.columns("word"),
        values=stage.columns("n_letters integer"), failure_group=(), failure_label="own",
    )  # fmt: skip


def peras(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "cli.main", *args], cwd=PROJECT_ROOT, env=env, capture_output=True, text=True,
        timeout=300,
    )  # fmt: skip


def test_peras_runs_list_says_what_it_skipped_and_peras_ask_of_it_exits_2(modules, tmp_path):
    """As a user types them: the setting names a module that raises, one that declares pairwise_runs and two that
    declare one kind. `peras runs list` lists the runs as before and says, one line each, what it skipped;
    `peras ask` of a skipped module, or of the ambiguous kind, exits 2 with its line."""
    boom = modules.write("boom", "raise RuntimeError('no GPU here')\n")
    tables = modules.write("tables", declaring(kind="mine", runs="pairwise_runs"))
    first, second = modules.write("first", declaring()), modules.write("second", declaring())
    warehouse = tmp_path / "w.duckdb"
    with open_migrated(warehouse):
        pass
    named = ",".join([boom, tables, first, second])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), str(tmp_path)]),
           "PERAS_STAGE_MODULES": named, "PERAS_WAREHOUSE": str(warehouse)}  # fmt: skip
    listed = peras("runs", "list", env=env)
    assert (listed.returncode, listed.stdout) == (
        0,
        "no judge runs yet: `peras judge sample` or `peras import-judgments` makes one\n",
    )
    assert listed.stderr.splitlines() == [
        f"note: skipped: stage module {boom!r} (setting stage_modules) cannot be imported: it raised RuntimeError at "
        f"{modules.folder / 'boom.py'}:1: no GPU here",
        f"note: skipped: stage module {tables!r} (setting stage_modules) is refused: stage kind 'mine' declares "
        "table(s) of PERAS's own (pairwise_runs): name your stage's tables after its kind (mine_runs, mine_answers, "
        "...)",
        f"note: skipped: stage modules {first!r} and {second!r} (setting stage_modules) both declare kind 'own': give "
        f"each stage its own kind ({second!r} is not used)",
    ]
    for name, line in ((boom, 0), (tables, 1), ("own", 2), (second, 2)):
        asked = peras("ask", name, "--help", env=env)
        assert (asked.returncode, asked.stdout, asked.stderr) == (
            2,
            "",
            "error: " + listed.stderr.splitlines()[line].removeprefix("note: skipped: ") + "\n",
        )
    # the first module of the kind is the one used: asked by name, it is found (and needs what `peras ask` needs)
    used = peras("ask", first, "--help", env=env)
    assert (used.returncode, used.stderr.splitlines()[-1]) == (
        2,
        f"error: stage module {first!r} cannot be asked: it needs a dataclass Parameters, recipe() and summarize() "
        "(missing: Parameters, recipe, summarize)",
    )
