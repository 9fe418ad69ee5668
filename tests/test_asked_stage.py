"""`peras ask`: a stage module's Parameters become its command's options, and where a stage to ask is found."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from cli.commands.ask import parameter_options
from peras.errors import UsageError
from peras.settings import load_settings
from tasks.engine import stage
from tasks.engine.asked import asked_parameters, asked_stage, asked_stage_modules
from tasks.engine.stage import declare
from tests import toy_stage

pytestmark = pytest.mark.core


@dataclass(frozen=True)
class Every:
    """A field of every type an option can have."""

    names: list[str] = field(metadata={"option": "--name", "help": "A name (repeatable)."})
    count: int = 3
    share: float | None = None
    where: Path | None = None
    strict: bool = False
    label: str = field(default="x", metadata={"help": "A label."})


def parsed(*args: str) -> dict:
    """What the options of `Every` make of ARGS."""
    seen: dict = {}
    command = click.command()(lambda **given: seen.update(given))
    for option in reversed(parameter_options(Every)):
        command = option(command)
    result = CliRunner().invoke(command, list(args), catch_exceptions=False)
    return {"exit": result.exit_code, "output": result.output, **seen}


def test_each_field_type_becomes_an_option_with_its_default():
    assert parsed("--name", "a", "--name", "b") == {
        "exit": 0, "output": "", "names": ("a", "b"), "count": 3, "share": None, "where": None, "strict": False,
        "label": "x",
    }  # fmt: skip
    given = parsed("--name", "a", "--count", "5", "--share", "0.5", "--where", "w.txt", "--strict", "--label", "y")
    assert (given["count"], given["share"], given["where"], given["strict"], given["label"]) == (
        5, 0.5, Path("w.txt"), True, "y",
    )  # fmt: skip


def test_a_field_without_a_default_is_a_required_option_and_a_bad_value_is_refused():
    assert parsed()["exit"] == 2 and "Missing option '--name'" in parsed()["output"]
    bad = parsed("--name", "a", "--count", "many")
    assert bad["exit"] == 2 and "'many' is not a valid integer" in bad["output"]


def test_a_field_of_another_type_cannot_be_an_option():
    @dataclass
    class Odd:
        when: dict[str, int]

    with pytest.raises(UsageError, match=r"field of type dict\[str, int\] is no option"):
        parameter_options(Odd)


def test_a_stage_is_found_by_kind_or_module_and_its_parameters_checked():
    settings = load_settings(stage_modules=["tests.toy_stage"])
    assert asked_stage_modules(settings)["toy"] == "tests.toy_stage"
    assert asked_stage(settings, "toy") is toy_stage
    assert asked_stage(load_settings(), "tests.toy_stage") is toy_stage
    assert asked_parameters(toy_stage, {"words": ["ant"]}) == toy_stage.Parameters(["ant"], "toy", 0)
    with pytest.raises(UsageError, match=r"takes no parameter colour \(it takes \['run_name', 'seed', 'words'\]\)"):
        asked_parameters(toy_stage, {"words": ["ant"], "colour": "red"})
    with pytest.raises(UsageError, match=r"missing 1 required positional argument: 'words'"):
        asked_parameters(toy_stage, {})
    with pytest.raises(UsageError, match=r"stage module 'tests.nothing_here' cannot be imported"):
        asked_stage(settings, "tests.nothing_here")
    with pytest.raises(UsageError, match=r"cannot be asked: it needs a dataclass Parameters"):
        asked_stage(settings, "tests.helpers")


def test_a_declared_kind_with_command_ask_is_its_tasks_module(monkeypatch):
    monkeypatch.setattr(stage, "_DECLARED", dict(stage._DECLARED))  # the made-up kind goes with the test
    declare(dataclasses.replace(toy_stage.TOY, kind="letters", command="ask"))
    assert asked_stage_modules(load_settings())["letters"] == "tasks.letters.tasks"
    with pytest.raises(UsageError, match=r"stage module 'tasks.letters.tasks' cannot be imported"):
        asked_stage(load_settings(), "letters")
    with pytest.raises(ValueError, match="command may only be 'ask'"):
        dataclasses.replace(toy_stage.TOY, command="judge")


def test_a_stage_of_your_own_may_not_stand_in_for_one_of_peras(monkeypatch):
    monkeypatch.setattr(stage, "_DECLARED", dict(stage._DECLARED))
    judge = stage.declaration("judge")
    with pytest.raises(ValueError, match=r"stage kind 'judge' is one of PERAS's own: declare your stage under another"):
        declare(dataclasses.replace(toy_stage.TOY, kind="judge"))
    assert stage.declaration("judge") is judge
