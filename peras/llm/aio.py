"""The event loop a run's asking runs on: uvloop where it is installed (a PERAS dependency on Linux and macOS),
else asyncio's own.

The asking engine's event-loop thread is what caps a run against a fast server (docs/scaling.md, issue 35): uvloop
runs the loop's own machinery (ready callbacks, timers, sockets, transports) in C. Setting `event_loop`
(PERAS_EVENT_LOOP) chooses: 'auto' (uvloop if it imports), 'uvloop' (refused with one line if it does not), or
'asyncio'. Only the engine's loop changes; Prefect keeps its own.
"""

from __future__ import annotations

import asyncio
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
    """`asyncio.run(coro)` on the loop `choice` names."""
    with asyncio.Runner(loop_factory=loop_factory(choice)) as runner:
        return runner.run(coro)
