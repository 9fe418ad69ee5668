"""Prefect's own cost of a command (bench/bench_fixed_cost.py): import Prefect, run an empty @flow against the API.

Run exactly as `peras` runs a flow (cli/common.py run_flow: the flow run created with tags, then run in this
process); prints `import S flow S` (seconds); the process's exit (Prefect's services stopping) is the rest of its
wall time.
"""

from __future__ import annotations

import os
import time

STARTED = time.perf_counter()
# As `peras` runs a flow (cli/main.py): no flow-run heartbeat thread to wait for as the run ends.
if not {"PREFECT_FLOWS", "PREFECT_FLOWS_HEARTBEAT_FREQUENCY"} & set(os.environ):
    os.environ["PREFECT_FLOWS"] = '{"heartbeat_frequency": null}'

from prefect import flow  # noqa: E402
from prefect.client.orchestration import get_client  # noqa: E402
from prefect.flow_engine import run_flow  # noqa: E402
from prefect.states import Pending  # noqa: E402

IMPORTED = time.perf_counter()


@flow(name="empty")
def empty() -> int:
    """Nothing: what any flow run costs."""
    return 0


if __name__ == "__main__":
    with get_client(sync_client=True) as client:
        flow_run = client.create_flow_run(flow=empty, parameters={}, state=Pending(), tags=["bench"])
    run_flow(empty, flow_run=flow_run, parameters={})
    print(f"import {IMPORTED - STARTED:.3f} flow {time.perf_counter() - IMPORTED:.3f}")
