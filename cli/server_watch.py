"""A command whose Prefect server goes away ends in seconds, in one line, instead of in Prefect's minutes of retries.

Prefect's client retries a server it has reached once for about a minute per call (and its log and event workers
for every item still queued as the process exits): a run whose server was stopped (`peras server stop`) kept
asking and publishing, then hung at every Prefect call that followed. While a command runs its flows, a thread
here knocks on the server's port every second; when nothing listens there GONE_AFTER times in a row (a slow or
busy server still accepts connections: only a server that is gone refuses them), the command is interrupted as
Ctrl-C does (what was answered is kept) and, once unwound or GRACE_S later, ends with `gone_line()`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shlex
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from urllib.parse import urlsplit

from peras.errors import mask_secrets

INTERVAL_S = 1.0
GONE_AFTER = 3  # refusals in a row
GRACE_S = 10.0  # for the command to unwind before it is ended (Prefect's own calls to the gone server retry)

_gone: list[str] = []  # the line to end with, once the server is gone
_ended = threading.Lock()


@contextlib.contextmanager
def watching(url: str, restart: str) -> Iterator[None]:
    """Watch the Prefect server at `url` while the block runs; `restart` says how to start it again."""
    stop = threading.Event()
    thread = threading.Thread(target=_watch, args=(url, restart, stop), name="peras-prefect-watch", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()


def _watch(url: str, restart: str, stop: threading.Event) -> None:
    refused = 0
    while not stop.wait(INTERVAL_S):
        refused = refused + 1 if nothing_listens(url) else 0
        if refused >= GONE_AFTER:
            _gone.append(
                f"error: the Prefect server at {url} went away during the command (nothing listens there now): "
                f"what was answered is kept in the warehouse (`peras runs list` says whether the run was published); "
                f"{restart}, then re-run `{this_command()}` to resume"
            )
            logging.raiseExceptions = False  # Prefect's log worker would print "Error logging to API" at each send
            # as Ctrl-C: to the main thread itself, so that a call it waits in is interrupted too
            signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)
            if not stop.wait(GRACE_S):
                end()  # still running: held by Prefect's retries
            return


def nothing_listens(url: str) -> bool:
    """The server's port refuses a connection (a timeout or an unreachable network is not taken for gone)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((parts.hostname or "127.0.0.1", port), timeout=2.0):
            return False
    except ConnectionRefusedError:
        return True
    except OSError:
        return False


def gone_line() -> str | None:
    """The line a command whose Prefect server went away ends with, if it did."""
    return _gone[0] if _gone else None


def end() -> None:
    """Say why and end the process now: Prefect's exit handlers would retry the gone server for minutes."""
    if not _ended.acquire(blocking=False):
        return  # the other thread is ending it
    from peras.errors import mask_secrets, one_line

    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.write(one_line(mask_secrets(gone_line() or "")) + "\n")
        sys.stderr.flush()
    os._exit(1)


def this_command() -> str:
    """The command line as typed, to run again, its passwords masked (a lake's `password=`; a URL's, with every other
    secret, by `mask_secrets`)."""
    from peras.lake import redacted  # imports DuckDB: only when a command stops

    return mask_secrets(shlex.join(["peras", *(redacted(arg) for arg in sys.argv[1:])]))
