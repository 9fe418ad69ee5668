"""Ask flow: a stage with no flow of its own (tasks/engine/asked.py), run on the one flow body.

`kind` is a kind whose declaration says `command = "ask"`, one of the setting `stage_modules`, or a stage module's
dotted name; `parameters` are its Parameters' fields (`peras ask KIND --help` lists them).
"""

from __future__ import annotations

from typing import Any

from prefect import flow

from peras.settings import Settings, load_settings
from tasks.engine.asked import asked_parameters, asked_stage
from tasks.engine.running import run_stage
from tasks.publish.tasks import publish_analyst_snapshot


@flow(name="ask", flow_run_name="ask-{kind}", log_prints=True)
def ask(
    kind: str,
    parameters: dict[str, Any] | None = None,
    chunk_size: int = 256,
    backend: str | None = None,
    retry_failed: bool = False,
    settings: Settings | None = None,
) -> dict[str, Any]:
    """Ask every item the stage plans from its parameters; gate, publish; the stage's summary."""
    settings = settings or load_settings()
    module = asked_stage(settings, kind)
    chosen = asked_parameters(module, parameters or {})
    recipe = module.recipe(settings, chosen)
    outcome = run_stage(settings, recipe, backend, chunk_size, retry_failed)
    if outcome.n_waiting:  # batch mode: answers still out (docs/batch.md); this command again goes on
        return outcome.waiting(len(recipe.planned))
    publish_analyst_snapshot(settings)
    summary: dict[str, Any] = module.summarize(outcome, chosen)
    return summary
