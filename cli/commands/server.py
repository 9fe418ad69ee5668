"""`peras server`: the local Prefect server peras starts once and reuses for every command."""

from __future__ import annotations

import os

import click

from cli.prefect_server import LocalServer, probe


def note(line: str) -> None:
    """A remark beside the command's answer, on stderr."""
    click.echo(line, err=True)


@click.group()
def server() -> None:
    """Start, stop or look at the local Prefect server that `peras` commands run their flows on.

    Without PREFECT_API_URL, the first command that runs a flow starts it in the background (~20 s, once)
    and later commands reuse it: the UI at http://127.0.0.1:4200 shows every run. Its home is
    ~/.cache/peras/prefect (PERAS_PREFECT_HOME), its port 4200 (PERAS_PREFECT_PORT), its log server.log in
    the home. With PREFECT_API_URL set, commands use that server instead; PERAS_PREFECT_SERVER=ephemeral
    makes each command start Prefect's own temporary server (slower, nothing left running).

    \b
    Examples:
        peras server status
        peras server start        # now, instead of on first use
        peras server stop
    """


@server.command()
def status() -> None:
    """Say whether the local Prefect server answers, and where its files are.

    \b
    Example:
        peras server status
    """
    local = LocalServer.configured()
    local.forget_stale(note)
    pid = local.pid()
    found = probe(local.url, trust_env=False)
    if found == "prefect":
        who = f"pid {pid}" if pid is not None else "not started by peras"
        click.echo(f"running: {local.url} ({who}; UI {local.ui_url}; home {local.home}; log {local.log})")
        if pid is None:
            click.echo(
                "peras does not use it: the next command that runs a flow starts peras' own on the next free port"
            )
    elif pid is not None:
        click.echo(f"starting or not answering: {local.url} (pid {pid}; log {local.log})")
    elif found is not None:
        click.echo(
            f"not running: port {local.port} answers, but not as a Prefect server (another program): the next "
            "command that runs a flow starts peras' own on the next free port"
        )
    else:
        click.echo(f"not running: the next command that runs a flow starts it on {local.url} (home {local.home})")
    if os.environ.get("PREFECT_API_URL"):
        click.echo(f"PREFECT_API_URL is set: commands run their flows on {os.environ['PREFECT_API_URL']} instead")


@server.command()
def start() -> None:
    """Start the local Prefect server now (a no-op if it already answers) and say how to point Prefect at it.

    \b
    Example:
        peras server start
        export PREFECT_API_URL=http://127.0.0.1:4200/api     # for `prefect` commands and workers
    """
    local, started = LocalServer.configured().ensure(echo=note)
    click.echo(f"{'started' if started else 'already running'}: {local.url} (UI {local.ui_url}; log {local.log})")
    click.echo(f"for prefect commands and workers: export PREFECT_API_URL={local.url}")


@server.command()
def stop() -> None:
    """Stop the local Prefect server peras started (runs and deployments stay in its home for next time).

    Only the process recorded in server.pid, checked against the start time and command line recorded with it: a
    stale file (the server died, the machine rebooted) is removed, and no other process is ever signalled.

    \b
    Example:
        peras server stop
    """
    local = LocalServer.configured()
    local.forget_stale(note)
    if local.stop():
        click.echo(f"stopped: {local.url}")
    elif local.healthy():
        click.echo(f"not stopped: the server on {local.url} was not started by peras (stop it where it runs)")
    else:
        click.echo(f"not running: {local.url}")


COMMANDS = [server]
