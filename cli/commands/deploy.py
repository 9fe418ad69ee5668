"""`peras deploy`: register the Prefect deployments of deploy/prefect.yaml on a running Prefect server."""

from __future__ import annotations

import click


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
def deploy(names: tuple[str, ...], pool: str | None, verbose: bool) -> None:
    """Create the process work pool if missing and register every deployment of deploy/prefect.yaml.

    Needs a Prefect server (PREFECT_API_URL). Runs then need a worker on the pool; each run reads its
    settings from the worker's PERAS_* environment (see docs/operations.md). Re-deploying updates the
    deployments in place.

    \b
    Examples:
        peras deploy                                  # all of them, on pool peras-process
        peras deploy --name judge/dl19-llama --name metrics/nightly
        prefect worker start --pool peras-process     # then, in another terminal:
        prefect deployment run 'judge/dl19-llama'
    """
    from cli.deployments import api_url, check_entrypoints, ensure_work_pool, load_specs, register, select

    specs = load_specs()
    chosen = select(specs, list(names))
    check_entrypoints(chosen)
    url = api_url()
    pools = sorted({pool} if pool else {s.pool for s in chosen})
    for one in pools:
        state = "created" if ensure_work_pool(one) else "exists"
        click.echo(f"work pool {one} (process): {state}")
    register(chosen, pool, all_chosen=not names, echo=click.echo if verbose else None)
    width = max(len(s.full_name) for s in chosen)
    for spec in chosen:
        click.echo(f"deployed {spec.full_name:<{width}}  {spec.when}")
    noun = "deployment" if len(chosen) == 1 else "deployments"
    click.echo(f"{len(chosen)} {noun} on {url}; start a worker: prefect worker start --pool {pools[0]}")


COMMANDS = [deploy]
