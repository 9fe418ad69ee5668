"""Stop a child server when the process that started it dies, however it dies (kill -9 included).

`python -m peras.local_model.watchdog PARENT_PID CHILD_PID` polls once a second: when the parent is gone it sends
the child SIGTERM, then SIGKILL after a grace period; when the child is gone it exits. `guard(child)` starts one
for a child of this process. A SIGTERM'd or killed `peras judge` otherwise left its llama-server running, busy
with the requests it had queued, slowing everything else on the machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

POLL_S = 1.0
GRACE_S = 10.0


def guard(child_pid: int) -> subprocess.Popen[bytes]:
    """Start a watchdog for `child_pid` on behalf of this process (it ends by itself with the child)."""
    return subprocess.Popen(
        [sys.executable, "-m", "peras.local_model.watchdog", str(os.getpid()), str(child_pid)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C in the terminal reaches the parent, which stops the child itself
    )


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True  # no /proc (not Linux): os.kill said it exists


def watch(parent_pid: int, child_pid: int) -> None:
    """Wait until the parent or the child is gone; if the parent went first, stop the child."""
    while alive(child_pid):
        if not alive(parent_pid):
            _stop(child_pid)
            return
        time.sleep(POLL_S)


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + GRACE_S
    while time.monotonic() < deadline:
        if not alive(pid):
            return
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)


if __name__ == "__main__":
    watch(int(sys.argv[1]), int(sys.argv[2]))
