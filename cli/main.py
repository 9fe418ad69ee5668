"""`peras`: one command group; each pipeline command runs the Prefect flow of the same name."""

from __future__ import annotations

import importlib
import os
import sys

# Flow-run logs still go to the Prefect API/UI; the terminal shows only peras' own lines.
# (PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL=INFO peras ... shows Prefect's run logs too.)
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")

import click

from cli.commands import COMMAND_MODULES
from peras.errors import PerasError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="peras")
def cli() -> None:
    """PERAS: LLM relevance assessors conditioned on Big-Five personalities, with confidence.

    \b
    Example:
        peras demo                      # the whole chain on the shipped sample
        peras ingest dl19               # a real collection from ../shared/data
    """


for module_name in COMMAND_MODULES:
    for command in importlib.import_module(f"cli.commands.{module_name}").COMMANDS:
        cli.add_command(command)


def main() -> None:
    """Entry point: user errors become one line and an exit code (0 ok, 1 failed check, 2 usage)."""
    from peras.progress import enable_if_terminal

    enable_if_terminal()
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except PerasError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        click.echo("interrupted: re-run the same command to resume", err=True)
        sys.exit(130)
    except Exception as exc:  # a bug, not a user error: one line, and the traceback on request
        if os.environ.get("PERAS_DEBUG"):
            raise
        click.echo(
            f"error: internal error {type(exc).__name__}: {exc} (PERAS_DEBUG=1 shows the traceback)", err=True
        )
        sys.exit(1)


if __name__ == "__main__":
    main()
