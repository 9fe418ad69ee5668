"""batch-poll flow: a batch-mode study unattended. On a schedule, every live batch at a Batch API is collected; a
waiting run with no live batch of its own and answers collected since its last call is called again as it was last
called (its next round is submitted, or it is gated and published). See docs/batch.md."""

from __future__ import annotations

from typing import Any

from prefect import flow

from flows.ask import ask
from flows.fuse import fuse
from flows.judge import judge
from flows.pairwise import pairwise
from flows.personas import personas_check
from flows.priming import priming
from flows.recognize import recognize
from peras.settings import Settings, load_settings
from tasks.batch_poll.tasks import (
    call_settings,
    calls_to_make,
    collect_live_batches,
    outcome_line,
    summarize_poll,
    unique_calls,
)


@flow(name="batch-poll", flow_run_name="batch-poll", log_prints=True)
def batch_poll(settings: Settings | None = None) -> dict[str, Any]:
    """Collect every live batch (each Batch API polled once); call again each waiting run whose answers came in,
    with the poller's settings at the run's Batch API and model in batch mode (the key: settings.api_key_env)."""
    settings = settings or load_settings()
    # every flow a batch-mode run is asked under, by its name: a stage of its own's, or `ask` (any stage whose
    # declaration says command = "ask", and the stage modules of the setting stage_modules)
    stages: dict[str, Any] = {f.name: f for f in (judge, pairwise, priming, personas_check, fuse, recognize, ask)}
    n_polled = collect_live_batches(settings)
    outcomes = []
    for call in unique_calls(calls_to_make(settings)):
        stage = stages.get(call.flow_name)
        state = stage(**call.parameters, settings=call_settings(settings, call), return_state=True) if stage else None
        outcomes.append(outcome_line(call, state))
    for line in outcomes:
        print(line)
    return summarize_poll(n_polled, outcomes)
