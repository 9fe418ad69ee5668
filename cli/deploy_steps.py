"""Prefect deployment steps of our own, named in deploy/prefect.yaml (`cli.deploy_steps.<name>`)."""

from __future__ import annotations

import logging
import os

logger = logging.getLogger("peras.deploy")


def export_secret(block: str, env: str) -> dict[str, str]:
    """Pull step: the value of Secret block `block` becomes environment variable `env` of this flow run.

    Pull steps run in the flow-run process just before the flow is loaded, so the key is read at run time,
    lives only in that process's memory, and is never stored in the deployment, the run's parameters or its
    logs. Without such a block the run keeps whatever `env` holds in the worker's environment.
    """
    from prefect.blocks.system import Secret

    try:
        value = Secret.load(block).get()  # type: ignore[union-attr]  # sync context: not a coroutine
    except ValueError:  # Prefect's "Unable to find block document named ..."
        source = "the worker's environment" if os.environ.get(env) else "nowhere (unset)"
        logger.info("no Secret block %r: %s comes from %s", block, env, source)
        return {"secret_source": "environment"}
    if not isinstance(value, str) or not value:
        raise ValueError(f"Secret block {block!r} must hold a non-empty string (an API key)")
    os.environ[env] = value
    logger.info("%s set from Secret block %r", env, block)
    return {"secret_source": f"block:{block}"}


def tag_run_model() -> dict[str, str]:
    """Pull step: this flow run's `model:` tag names the model the run will ask, as a `peras` command's would.

    The deployment's own tag comes from its configured PERAS_MODEL; a run given another model (an `env` job
    variable) would otherwise carry the wrong one. Runs in the flow-run process after the pull steps before it,
    so it sees the run's environment and the repository's peras.toml.
    """
    from uuid import UUID

    from prefect.client.orchestration import get_client

    from cli.common import endpoint_tags
    from peras.settings import load_settings

    flow_run_id = os.environ.get("PREFECT__FLOW_RUN_ID")
    model = endpoint_tags(load_settings(), None)["model"]
    if not flow_run_id or not model:
        return {"model_tag": ""}
    tag = f"model:{model}"
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(UUID(flow_run_id))
        tags = [t for t in run.tags if not t.startswith("model:")] + [tag]
        if tags != run.tags:
            client.update_flow_run(run.id, tags=tags)
    logger.info("flow run tagged %s", tag)
    return {"model_tag": tag}
