"""Something done every few seconds while a block runs, on a thread the block's event loop cannot delay.

Fan-out parts write their beats this way (tasks/judge/fan_out.py) and run leases are renewed this way
(tasks/engine/lease.py). A failed call is skipped: the next one comes an interval later.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator


@contextlib.contextmanager
def periodically(interval_s: float, call: Callable[[], object], name: str, *, at_start: bool) -> Iterator[None]:
    """Call `call` every `interval_s` (first at once if `at_start`) until the block ends; then wait for the thread."""
    stop = threading.Event()

    def loop() -> None:
        if not at_start and stop.wait(interval_s):
            return
        while True:
            with contextlib.suppress(Exception):  # one missed call is one missed call
                call()
            if stop.wait(interval_s):
                return

    thread = threading.Thread(target=loop, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=max(30.0, interval_s))
