"""The event loop a run's asking runs on: uvloop where it is installed (a PERAS dependency on Linux and macOS),
else asyncio's own.

The asking engine's event-loop thread is what caps a run against a fast server (docs/scaling.md, issue 35): uvloop
runs the loop's own machinery (ready callbacks, timers, sockets, transports) in C. Setting `event_loop`
(PERAS_EVENT_LOOP) chooses: 'auto' (uvloop if it imports), 'uvloop' (refused with one line if it does not), or
'asyncio'. Only the engine's loop changes; Prefect keeps its own.

Signals: a Python handler raising from inside uvloop's C loop is not seen by the run (uvloop reports the exception and
goes on), so `peras`'s SIGTERM handler (cli/main.py: stop as Ctrl-C does) would be lost. While a loop runs in the main
thread, SIGTERM is therefore taken by the loop: the run's task is cancelled (its journal closed, what was answered
loaded, as when Ctrl-C stops it; asyncio.Runner does the same for SIGINT) and, once it has unwound, the handler that
was installed before runs, in plain Python. A second SIGTERM meanwhile changes nothing.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Coroutine
from typing import Any, Literal, TypeVar

from peras.errors import UsageError

EventLoop = Literal["auto", "uvloop", "asyncio"]
T = TypeVar("T")


def loop_factory(choice: EventLoop = "auto") -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The factory of the loop `choice` names (None: asyncio's default)."""
    if choice == "asyncio":
        return None
    try:
        import uvloop
    except ImportError as exc:
        if choice == "uvloop":
            raise UsageError(
                "event_loop is 'uvloop' but uvloop is not installed: `pip install uvloop`, or set"
                " PERAS_EVENT_LOOP=asyncio"
            ) from exc
        return None
    return uvloop.new_event_loop


def run(coro: Coroutine[Any, Any, T], choice: EventLoop = "auto") -> T:
    """`asyncio.run(coro)` on the loop `choice` names; SIGTERM as the module docstring says."""
    previous = signal.getsignal(signal.SIGTERM)
    takes_sigterm = callable(previous) and threading.current_thread() is threading.main_thread()
    received: list[int] = []

    async def main() -> T:
        if takes_sigterm:
            task = asyncio.current_task()
            assert task is not None

            def stop() -> None:
                if not received:
                    received.append(signal.SIGTERM)
                    task.cancel()

            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop)
        return await coro

    try:
        with asyncio.Runner(loop_factory=loop_factory(choice)) as runner:
            try:
                return runner.run(main())
            except asyncio.CancelledError:
                if not received:
                    raise
    finally:
        if takes_sigterm:  # closing the loop set SIGTERM back to its default: the handler from before, again
            signal.signal(signal.SIGTERM, previous)
    assert callable(previous)
    previous(signal.SIGTERM, None)  # raises (cli/main.py: Stopped), now outside the loop
    raise asyncio.CancelledError  # a handler that returned: the run was stopped all the same
