"""The command line: every command documented with an example; usage errors exit 2 with one line."""

from __future__ import annotations

import json
import subprocess
import sys

import click
import pytest

from cli.main import cli
from tests.helpers import run_cli


@pytest.mark.core
@pytest.mark.parametrize("name", cli.list_commands(click.Context(cli)))
def test_every_command_has_help_with_an_example(capsys, name):
    result = run_cli(capsys, name, "--help")
    assert result.exit_code == 0
    assert "Example" in result.out, f"`peras {name} --help` shows no example"


@pytest.mark.core
def test_group_help_lists_every_command(capsys):
    result = run_cli(capsys, "--help")
    assert result.exit_code == 0
    for name in cli.list_commands(click.Context(cli)):
        assert name in result.out


@pytest.mark.core
def test_unknown_flag_is_a_usage_error(capsys):
    result = run_cli(capsys, "ingest", "--no-such-flag")
    assert result.exit_code == 2
    assert "Error: No such option '--no-such-flag'." in result.err


@pytest.mark.core
def test_bad_setting_is_a_usage_error(capsys, monkeypatch):
    monkeypatch.setenv("PERAS_CONCURRENCY", "many")
    result = run_cli(capsys, "ingest", "sample")
    assert result.exit_code == 2
    assert result.err.strip() == (
        "error: bad setting concurrency: Input should be a valid integer, unable to parse string as an integer"
    )


@pytest.mark.core
def test_missing_config_file_is_a_usage_error(capsys, tmp_path):
    result = run_cli(capsys, "ingest", "sample", "--config", str(tmp_path / "nope.toml"))
    assert result.exit_code == 2
    assert result.err.strip() == f"error: config file {tmp_path / 'nope.toml'} does not exist"


@pytest.mark.integration
def test_config_file_sets_the_warehouse(capsys, tmp_path):
    config = tmp_path / "peras.toml"
    config.write_text(f'[peras]\nwarehouse = "{tmp_path / "from-config.duckdb"}"\n')
    result = run_cli(capsys, "ingest", "sample", "--config", str(config))
    assert result.exit_code == 0, result.err
    assert (tmp_path / "from-config.duckdb").exists()


def integer_params() -> list[tuple[str, str, object]]:
    """(command path, flag, its type) of every integer flag of every command and subcommand."""
    import click

    found = []

    def walk(command: click.Command, path: str) -> None:
        for param in command.params:
            if isinstance(param.type, click.types._NumberParamTypeBase) and param.type.name.startswith("integer"):
                found.append((path, param.opts[0], param.type))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}".strip())

    walk(cli, "")
    return found


def test_every_integer_flag_stays_within_64_bits():
    import click

    unbounded = [
        f"peras {path} {flag}"
        for path, flag, kind in integer_params()
        if not isinstance(kind, click.IntRange) or kind.max is None or kind.max > 2**63 - 1
    ]
    assert len(integer_params()) > 30 and unbounded == []


# Numbers past 64 bits: refused while the flags are read, before any flow run exists (issue 36, items 8 and 14)
HUGE = [
    (["pairwise", "sample", "--seed", "99999999999999999999"], "--seed", "99999999999999999999", 0),
    (["fuse", "--runs", "r", "--seed", "99999999999999999999"], "--seed", "99999999999999999999", 0),
    (["build-runs", "--collection", "sample", "--depth", str(10**30)], "--depth", str(10**30), 1),
    (["judge", "sample", "--limit-pairs", str(2**63)], "--limit-pairs", str(2**63), 1),
]


@pytest.mark.parametrize(("args", "flag", "value", "low"), HUGE)
def test_a_number_past_64_bits_is_a_usage_error_before_any_flow_run(capsys, args, flag, value, low):
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        before = client.count_flow_runs()
    result = run_cli(capsys, *args)
    assert result.exit_code == 2
    assert result.err.splitlines()[-1] == (
        f"Error: Invalid value for '{flag}': {value} is not in the range {low}<=x<=9223372036854775807."
    )
    with get_client(sync_client=True) as client:
        assert client.count_flow_runs() == before


@pytest.mark.core
def test_a_flow_run_records_its_parameters_as_prefect_would_without_importing_fastapi(monkeypatch, tmp_path):
    """cli.common.recorded_parameters: what Flow.serialize_parameters (FastAPI's jsonable_encoder) records, for the
    types commands pass, settings included (an API key is never a field: only the name of its variable)."""
    from pathlib import Path

    from cli.common import recorded_parameters
    from flows.judge import judge
    from peras.settings import load_settings

    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-recorded")
    settings = load_settings(warehouse=tmp_path / "w.duckdb", base_urls=["http://a:1/v1", "http://b:2/v1"])
    parameters = {
        "collection": "dl19", "subset": None, "personalities": ["default", "O+"], "cot": [False, True],
        "limit_pairs": 400, "n_samples": 10, "retry_failed": False, "settings": settings, "lost_after_s": 60.0,
        "pool": Path("/x/y"), "tags": {"stage": "judge", "n": [1, 2.5, None]},
    }  # fmt: skip
    recorded = recorded_parameters(judge, parameters)
    assert recorded == judge.serialize_parameters(parameters)
    assert recorded["settings"]["warehouse"] == str(tmp_path / "w.duckdb")
    assert "sk-not-recorded" not in repr(recorded)
    assert recorded_parameters(judge, {"odd": {1: "a"}}) == judge.serialize_parameters({"odd": {1: "a"}})
    imports = "from cli.common import recorded_parameters\nfrom flows.judge import judge\n"
    imports += "from peras.settings import load_settings"
    run = "recorded_parameters(judge, {'settings': load_settings(), 'cot': [True], 'pool': None})"
    assert imported_in_a_new_process(f"{imports}\n{run}", "fastapi") == []


@pytest.mark.core
def test_each_command_is_found_in_the_module_that_names_it_and_only_its_module_is_imported():
    """cli.commands.COMMAND_MODULES is every command of every command module, exactly; `peras judge` imports
    cli.commands.judge and no other command's module."""
    import importlib
    import pkgutil

    import cli.commands
    from cli.commands import COMMAND_MODULES

    found = {}
    for module in pkgutil.iter_modules(cli.commands.__path__):
        for command in importlib.import_module(f"cli.commands.{module.name}").COMMANDS:
            found[command.name] = module.name
    assert found == COMMAND_MODULES
    code = "from cli.main import cli\nimport click\ncli.get_command(click.Context(cli), 'judge')"
    names = [f"cli.commands.{module}" for module in sorted(set(COMMAND_MODULES.values()))]
    assert imported_in_a_new_process(code, *names) == ["cli.commands.judge"]


@pytest.mark.core
def test_the_judge_command_s_modules_import_neither_polars_nor_jinja():
    """What `peras judge` imports to run a flow (its command, the settled check, the flow and its tasks) leaves Polars
    (~0.1 s) to the stages that analyse; Jinja2 is imported only to render a template not rendered before."""
    code = "import cli.main, cli.commands.judge, cli.preflight, tasks.judge.settled, flows.judge"
    assert imported_in_a_new_process(code, "polars", "jinja2", "fastapi") == []


def imported_in_a_new_process(code: str, *modules: str) -> list[str]:
    """Which of `modules` a fresh interpreter has imported after running `code`."""
    check = f"import sys\n{code}\nprint(json.dumps([m for m in {list(modules)!r} if m in sys.modules]))"
    done = subprocess.run([sys.executable, "-c", "import json\n" + check], capture_output=True, text=True, check=True)
    return list(json.loads(done.stdout))
