"""`peras`: one command group; each pipeline command runs the Prefect flow of the same name."""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import inspect
import os
import signal
import sys
import types
from typing import NoReturn

# Flow-run logs still go to the Prefect API/UI; the terminal shows only peras' own lines.
# (PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL=INFO peras ... shows Prefect's run logs too.)
os.environ.setdefault("PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL", "CRITICAL")
# No Prefect flow-run heartbeats for the flows a command runs in its own process: Prefect's heartbeat thread sleeps in
# 1 s steps and every flow run waits for it to stop as it ends (0.5-0.9 s of every command that starts a flow). A
# killed command's run is found by PERAS's own lease (tasks/engine/lease.py: taken over once its pid is gone), and a
# deployment's flow runs are watched by their worker. A user's own PREFECT_FLOWS or PREFECT_FLOWS_HEARTBEAT_FREQUENCY
# wins (JSON: an environment variable cannot say None for heartbeat_frequency itself).
if not {"PREFECT_FLOWS", "PREFECT_FLOWS_HEARTBEAT_FREQUENCY"} & set(os.environ):
    os.environ["PREFECT_FLOWS"] = '{"heartbeat_frequency": null}'

import click

from cli import server_watch
from cli.commands import COMMAND_MODULES
from cli.server_watch import this_command
from peras.errors import PerasError, mask_secrets, one_line

ASYNC_CODE = inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE


class Commands(click.Group):
    """`peras`'s commands, each module imported when one of its commands runs or is listed (COMMAND_MODULES): a
    command does not import every other command's modules (~0.1 s of each)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMAND_MODULES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module = COMMAND_MODULES.get(cmd_name)
        if module is not None and cmd_name not in self.commands:
            for command in importlib.import_module(f"cli.commands.{module}").COMMANDS:
                self.add_command(command)
        return self.commands.get(cmd_name)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="peras")
def cli() -> None:
    """PERAS: LLM relevance assessors conditioned on Big-Five personalities, with confidence.

    \b
    Example:
        peras demo                      # the whole chain on the shipped sample
        peras ingest dl19               # a real collection from ../shared/data
    """


def main() -> None:
    """Entry point: user errors become one line and an exit code (0 ok, 1 failed check, 2 usage)."""
    from peras.progress import watch

    watch()
    # The interpreter's last collection walks every object the command made (pydantic, Prefect, DuckDB, pandas): ~0.5 s
    # of a 2-3 s command on a loaded 2-core machine. Frozen at exit (after the atexit handlers registered later, such as
    # Prefect's, ran; an error path collects first: release_frames), they are left to the process's end.
    atexit.unregister(gc.freeze)  # once, however often main() runs in one process (the tests)
    atexit.register(gc.freeze)
    signal.signal(signal.SIGTERM, stop_on_signal)
    try:
        cli.main(standalone_mode=False)
    except click.exceptions.Abort as exc:  # click turns KeyboardInterrupt (and so Stopped) into Abort
        stop_line(exc.__context__)
    except click.ClickException as exc:
        exc.show()
        sys.exit(2 if isinstance(exc, click.UsageError) else exc.exit_code)
    except PerasError as exc:
        fail(f"error: {exc}", exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except KeyboardInterrupt as exc:
        stop_line(exc)
    except Exception as exc:  # a bug, not a user error: one line, and the traceback on request
        if os.environ.get("PERAS_DEBUG"):
            raise
        from peras.warehouse import storage_failure

        problem = storage_failure(exc)  # a full disk or a read-only file is the machine's, not a bug
        message = problem or f"internal error {type(exc).__name__}: {exc} (PERAS_DEBUG=1 shows the traceback)"
        fail(f"error: {message}", 1)


class Stopped(KeyboardInterrupt):
    """The command was told to stop (SIGTERM): it unwinds like Ctrl-C (servers stopped, shards kept)."""


def stop_on_signal(signum: int, frame: types.FrameType | None) -> None:
    """SIGTERM (a scheduler, `kill`, a closed session) ends the command as Ctrl-C does, then says so."""
    signal.signal(signum, signal.SIG_IGN)  # once: a second signal must not interrupt the unwinding
    raise Stopped(signal.Signals(signum).name)


def stop_line(cause: BaseException | None) -> NoReturn:
    """How the command was stopped, and how to resume it, in one line."""
    resume = f"what was answered is kept; re-run `{this_command()}` to resume"
    if isinstance(cause, Stopped):
        fail(f"stopped by {cause.args[0]}: {resume}", 143)
    if isinstance(cause, KeyboardInterrupt):
        fail(f"interrupted (Ctrl-C): {resume}", 130)
    fail("aborted", 130)


def fail(message: str, code: int) -> NoReturn:
    """Print `message` as one capped line on stderr and exit with `code` (a command whose Prefect server went away:
    why, instead, and at once: cli/server_watch.py)."""
    if server_watch.gone_line() is not None:
        server_watch.end()
    release_frames()
    click.echo(one_line(mask_secrets(message)), err=True)
    sys.exit(code)


def release_frames() -> None:
    """Free the locals of the finished frames that tracebacks still hold, just before exiting on an error.

    Prefect keeps a failed run's exception (and copies of it) until the interpreter exits; through their
    tracebacks they keep the frames' DuckDB connections and relations, which are then freed after DuckDB's
    module, and nanobind prints a "leaked" report of them after our one line. Coroutine frames are left
    alone: Prefect's event loops may still resume them.
    """
    for obj in gc.get_objects():
        # type(), not isinstance(): isinstance asks a lazy proxy for its __class__, which imports what it stands
        # for (openai's proxies load its whole `beta` API, ~1-4 s, on the way out of a failed check)
        tb = obj if type(obj) is types.TracebackType else None
        while tb is not None:
            frame, tb = tb.tb_frame, tb.tb_next
            if frame.f_code.co_flags & ASYNC_CODE:
                continue
            with contextlib.suppress(RuntimeError):  # a frame still executing cannot be cleared
                frame.clear()
                _ = frame.f_locals  # re-syncs the dict a traceback printer may have made of the old locals
    gc.collect()


if __name__ == "__main__":
    main()
