"""The command line: every command documented with an example; usage errors exit 2 with one line."""

from __future__ import annotations

import pytest

from cli.main import cli
from tests.helpers import run_cli


@pytest.mark.core
@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_command_has_help_with_an_example(capsys, name):
    result = run_cli(capsys, name, "--help")
    assert result.exit_code == 0
    assert "Example" in result.out, f"`peras {name} --help` shows no example"


@pytest.mark.core
def test_group_help_lists_every_command(capsys):
    result = run_cli(capsys, "--help")
    assert result.exit_code == 0
    for name in cli.commands:
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
