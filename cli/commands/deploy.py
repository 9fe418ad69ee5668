"""`peras deploy`: register the Prefect deployments of deploy/prefect.yaml on a running Prefect server."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from cli.deployments import DeploymentSpec


@click.command()
@click.option(
    "--name",
    "names",
    multiple=True,
    metavar="FLOW/NAME",
    help="Only this deployment (repeatable); a bare NAME picks every flow's NAME [all].",
)
@click.option("--pool", help="Work pool for every deployment [the file's: peras-process].")
@click.option("--verbose", is_flag=True, help="Show Prefect's own output.")
@click.option("--list", "list_only", is_flag=True, help="Print what would be registered (a Markdown table) and stop.")
def deploy(names: tuple[str, ...], pool: str | None, verbose: bool, list_only: bool) -> None:
    """Create the process work pool if missing and register every deployment of deploy/prefect.yaml.

    On the same Prefect server as every other command: PREFECT_API_URL, else the local server (started if
    needed; `peras server status`). Runs then need a worker on the pool; each run reads its
    settings from the worker's PERAS_* environment (see docs/operations.md). Re-deploying updates the
    deployments in place.

    \b
    Examples:
        peras deploy                                  # all of them, on pool peras-process
        peras deploy --name judge/dl19-llama --name metrics/nightly
        peras deploy --list                           # what it registers, nothing started
        prefect worker start --pool peras-process     # then, in another terminal:
        prefect deployment run 'judge/dl19-llama'
    """
    from cli.common import note
    from cli.deployments import check_entrypoints, load_specs, markdown_table, select
    from cli.prefect_server import prefect_api

    specs = load_specs()
    chosen = select(specs, list(names))
    if list_only:
        click.echo("\n".join(markdown_table(chosen)))
        return
    check_entrypoints(chosen)
    with prefect_api(echo=note):  # `prefect deploy` (a child process) inherits the server's PREFECT_API_URL
        register_on_server(chosen, pool, all_chosen=not names, verbose=verbose)


def register_on_server(chosen: list[DeploymentSpec], pool: str | None, all_chosen: bool, verbose: bool) -> None:
    """Create the pools, register the deployments, say what was registered where."""
    from cli.deployments import api_url, ensure_work_pool, register

    url = api_url()
    pools = sorted({pool} if pool else {s.pool for s in chosen})
    for one in pools:
        state = "created" if ensure_work_pool(one) else "exists"
        click.echo(f"work pool {one} (process): {state}")
    register(chosen, pool, all_chosen=all_chosen, echo=click.echo if verbose else None)
    width = max(len(s.full_name) for s in chosen)
    for spec in chosen:
        click.echo(f"deployed {spec.full_name:<{width}}  {spec.when}")
    noun = "deployment" if len(chosen) == 1 else "deployments"
    click.echo(
        f"{len(chosen)} {noun} on {url}; start a worker: PREFECT_API_URL={url} prefect worker start --pool {pools[0]}"
    )


COMMANDS = [deploy]
