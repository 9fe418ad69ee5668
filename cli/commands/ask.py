"""`peras ask KIND`: run a stage that has no command of its own; its options are its Parameters' fields.

A stage module names what a call takes in a dataclass (tasks/engine/asked.py); this group makes the command from it:
a `str`, `int`, `float` or `Path` field is an option taking one value, `bool` a --flag/--no-flag, `list[...]` a
repeatable option; a field without a default is a required option. `metadata={"option": "--word", "help": "..."}`
names the option and says what it is. Every such command also takes the endpoint and settings options and
--retry-failed, as every LLM command does.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any

import click

from cli import preflight
from cli.common import endpoint_options, retry_failed_option, run_asking_flow, settings_options
from peras.errors import UsageError
from peras.settings import Settings, load_settings

SCALARS: dict[Any, Any] = {str: click.STRING, int: click.INT, float: click.FLOAT, Path: click.Path(path_type=Path)}


class AskGroup(click.Group):
    """The stages `peras ask` knows, each a command made from its Parameters when it is called."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        from tasks.engine.asked import asked_stage_modules

        return sorted(asked_stage_modules(load_settings()))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command:
        from tasks.engine.asked import asked_stage

        return stage_command(cmd_name, asked_stage(load_settings(), cmd_name))


@click.group(cls=AskGroup)
def ask() -> None:
    """Run a stage that has no command of its own (docs/architecture.md, "Adding an LLM stage"): KIND is a stage
    declared with command = "ask", one named in the setting stage_modules (PERAS_STAGE_MODULES), or the dotted name
    of a stage module of your own. `peras ask KIND --help` lists its options.

    \b
    Examples:
        peras ask mypkg.letters --word cat --word horse --base-url http://gpu:8000/v1 --model qwen
        PERAS_STAGE_MODULES=mypkg.letters peras ask toy --help
    """


def stage_command(name: str, module: types.ModuleType) -> click.Command:
    """The command of one asked stage: its Parameters as options, then the flow, then its summary printed."""

    def run(settings: Settings, backend: str | None, retry_failed: bool, **given: Any) -> None:
        preflight.endpoint(settings)
        from flows.ask import ask as ask_flow  # Prefect: loaded once the checks above passed

        # a field left out keeps its default (None from an option not given); repeatable options give lists
        parameters = {key: list(v) if isinstance(v, tuple) else v for key, v in given.items() if v is not None}
        summary = run_asking_flow(
            ask_flow, name, settings, backend, kind=name, parameters=parameters, retry_failed=retry_failed
        )
        for key, value in (summary or {}).items():
            click.echo(f"{key}: {value}")

    command: Any = settings_options(run)
    command = endpoint_options(command)
    command = retry_failed_option("Ask again the answers this run stored as unreadable or refused.")(command)
    for option in reversed(parameter_options(module.Parameters)):
        command = option(command)
    help_text = (module.__doc__ or f"The {name} stage.").strip()
    return click.command(name, help=help_text)(command)


def parameter_options(parameters: type) -> list[Any]:
    """One click option per field of a Parameters dataclass, in field order."""
    hints = typing.get_type_hints(parameters)
    return [field_option(field, hints[field.name]) for field in dataclasses.fields(parameters)]


def field_option(field: dataclasses.Field[Any], hint: Any) -> Any:
    """The click option of one field: its name, type, repeatability, default and help."""
    flag = field.metadata.get("option", "--" + field.name.replace("_", "-"))
    help_text = field.metadata.get("help")
    has_default = field.default is not dataclasses.MISSING or field.default_factory is not dataclasses.MISSING
    default = field.default if field.default is not dataclasses.MISSING else None
    args = typing.get_args(hint)
    if typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in args:
        hint = next(arg for arg in args if arg is not type(None))
    if hint is bool:
        return click.option(f"{flag}/--no-{flag.removeprefix('--')}", field.name, default=bool(default), help=help_text)
    if typing.get_origin(hint) is list:
        (inner,) = typing.get_args(hint)
        return click.option(
            flag, field.name, type=scalar(inner), multiple=True, required=not has_default, help=help_text
        )
    return click.option(
        flag, field.name, type=scalar(hint), default=default, required=not has_default, show_default=has_default,
        help=help_text,
    )  # fmt: skip


def scalar(hint: Any) -> Any:
    """The click type of a field's (or a list field's item) type."""
    if hint not in SCALARS:
        raise UsageError(f"a stage's Parameters field of type {hint!r} is no option: use str, int, float or Path")
    return SCALARS[hint]


COMMANDS = [ask]
