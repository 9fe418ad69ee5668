"""What a person watching a command sees while it works: stage lines, live asking counts, bars.

The CLI calls `watch()` once. From then on:
- `stage_line(text)`: a stage finished; one line on stderr (and in the flow run's log, deployments included);
- `asking(...)`: the engine's counts while it asks (requests sent / answered / failed, items done, rate, ETA),
  redrawn in place on a terminal (rich) and printed as a line every `progress_interval_s` otherwise (logs, CI);
- `track(...)`: a plain bar for other long loops, on a terminal only.
Outside the CLI (a flow called in a test, a deployment run) nothing is printed and reporting costs an attribute
check; the flow log still gets the stage lines.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_enabled = False  # bars, drawn in place: stderr is a terminal
_watched = False  # a `peras` command: stage and progress lines on stderr
_lock = threading.Lock()


def watch() -> None:
    """A command is running for a person: lines on stderr, and bars drawn in place when it is a terminal."""
    global _enabled, _watched
    _watched = True
    _enabled = sys.stderr.isatty()


def enable_if_terminal() -> None:
    """Turn bars on when stderr is a terminal (what `watch` does for bars alone)."""
    global _enabled
    _enabled = sys.stderr.isatty()


def minutes_in(started: float) -> str:
    """Time since `started` (time.monotonic()), as a stage line shows it."""
    return f"{(time.monotonic() - started) / 60:.1f} min in"


def stage_line(text: str) -> None:
    """A stage finished: say so now, not when the whole command returns."""
    if _watched:
        with _lock:  # not print(): a flow with log_prints sends prints to its log instead of the terminal
            sys.stderr.write(text + "\n")
            sys.stderr.flush()
    with contextlib.suppress(Exception):  # no Prefect run here (a test calling a task): nothing to log to
        from prefect.logging import get_run_logger

        get_run_logger().info(text)


class Counts:
    """Requests and items of one asking stage, as they happen; read by the display and the Prefect artifact."""

    def __init__(self, description: str, n_items: int) -> None:
        self.description = description
        self.n_items = n_items
        self.sent = self.answered = self.failed = self.items = 0
        self.tokens = 0  # evaluated by the server: prompt tokens not served from its cache, plus the answers'
        self.started = time.monotonic()
        self.estimated = False
        # After a no, the estimate is considered again at a sixteenth more items or a second later, whichever first.
        self._check_at = 0
        self._check_by = 0.0

    def request_sent(self) -> None:
        self.sent += 1

    def request_answered(self, result: Any = None) -> None:
        self.answered += 1
        if result is not None:  # per request: attributes read directly
            prompt, cached = result.prompt_tokens or 0, result.cached_tokens or 0
            self.tokens += (prompt - cached if prompt > cached else 0) + (result.completion_tokens or 0)

    def request_failed(self) -> None:
        self.failed += 1

    def item_done(self) -> None:
        self.items += 1
        if self.estimated or not _watched:
            return
        now = time.monotonic()
        if self.items < self._check_at and now < self._check_by:
            return  # per item: a fast run that says nothing would work out the rate at every item
        if self.due_for_estimate():
            self.estimated = True
            stage_line(self.estimate_line())
        else:
            self._check_at, self._check_by = self.items + max(1, self.items // 16), now + 1.0

    def due_for_estimate(self) -> bool:
        """Enough measured to say how long it will take: 5% of the items and 10 answers, or a minute of asking."""
        measured = self.items * 20 >= self.n_items and self.answered >= ESTIMATE_AFTER_ANSWERS
        due = self.items < self.n_items and (measured or time.monotonic() - self.started >= ESTIMATE_AFTER_S)
        # Worth a line only when what is left takes a while: "the 38 items left take about 1 s" tells nobody anything.
        left_s = (self.n_items - self.items) / max(self.rate(), 1e-9)
        return due and self.items > 0 and left_s >= ESTIMATE_AFTER_S

    def estimate_line(self) -> str:
        """This machine's (and server's) speed so far, and what it means for the whole stage."""
        seconds = max(time.monotonic() - self.started, 1e-9)
        speed = f"{self.tokens / seconds:,.0f} tokens/s, " if self.tokens else ""
        return (
            f"{self.description}: at the speed measured so far ({speed}{self.rate() * 60:,.1f} items/min over "
            f"{self.items:,} items), the {self.n_items - self.items:,} items left take about {self.eta()}"
        )

    def rate(self) -> float:
        """Items per second since asking began."""
        return self.items / max(time.monotonic() - self.started, 1e-9)

    def eta(self) -> str:
        """Time left at the rate so far; before the first item, at least what the items left take at one request
        each at the rate requests are answered ('>= 77 min'); '?' before the first answer."""
        rate = self.rate()
        if self.items > 0 and rate > 0:
            return duration(max(self.n_items - self.items, 0) / rate)
        answered_rate = self.answered / max(time.monotonic() - self.started, 1e-9)
        if self.answered == 0 or self.n_items <= self.answered:
            return "?"
        return f">= {duration((self.n_items - self.answered) / answered_rate)}"

    def requests_text(self) -> str:
        # asked: handed to the client, in flight or waiting for one of the endpoint's slots
        return f"requests {self.sent:,} asked, {self.answered:,} answered, {self.failed:,} failed"

    def line(self) -> str:
        """One line: what is done, how fast, how long it will take."""
        return (
            f"{self.description}: {self.items:,}/{self.n_items:,} items; {self.requests_text()}; "
            f"{self.rate() * 60:,.1f} items/min, ETA {self.eta()}"
        )


def duration(seconds: float) -> str:
    """42 s, 7 min, 2 h 05 min."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


ESTIMATE_AFTER_ANSWERS = 10
ESTIMATE_AFTER_S = 60.0


@contextmanager
def asking(
    description: str, n_items: int, interval_s: float, on_tick: Callable[[Counts], None] | None = None
) -> Iterator[Counts]:
    """Counts for the block, shown while it runs: in place on a terminal, else a line every `interval_s` (0: none).
    `on_tick(counts)` runs every `interval_s` too, from a thread of its own (the Prefect artifact: its client is
    synchronous there, never on the engine's event loop) that runs in the caller's context (contextvars).

    A watched run that ends (or is stopped) prints its last line, so a log always holds the final counts.
    """
    counts = Counts(description, n_items)
    lines = _watched and not _enabled and interval_s > 0

    def tick() -> None:
        if on_tick is not None:
            with contextlib.suppress(Exception):  # the artifact is a nicety: never the reason a run stops
                on_tick(counts)
        if lines:
            stage_line(counts.line())

    stop = threading.Event()
    thread = None
    if interval_s > 0 and (lines or on_tick is not None):
        # In the caller's context: a plain thread does not see the command's Prefect settings (its server), and a
        # Prefect client there would start a temporary server of its own that outlives the command.
        context = contextvars.copy_context()
        thread = threading.Thread(
            target=context.run, args=(_every, stop, interval_s, tick), name="peras-progress", daemon=True
        )
        thread.start()
    try:
        if _watched and _enabled:
            with _live_bar(counts):
                yield counts
        else:
            yield counts
    finally:
        stop.set()
        if thread is not None:
            thread.join()
        if lines:
            stage_line(counts.line())


def _every(stop: threading.Event, interval_s: float, action: Callable[[], None]) -> None:
    while not stop.wait(interval_s):
        action()


@contextmanager
def _live_bar(counts: Counts) -> Iterator[None]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
    from rich.table import Column

    columns = (
        TextColumn("{task.description}", table_column=Column(max_width=32, no_wrap=True, overflow="ellipsis")),
        BarColumn(bar_width=20),
        MofNCompleteColumn(table_column=Column(no_wrap=True)),
        TextColumn("{task.fields[detail]}", table_column=Column(no_wrap=True, overflow="ellipsis")),
    )
    # on stderr, the terminal watched: stdout may be a file the command's result goes to
    with Progress(*columns, console=Console(stderr=True), transient=False, refresh_per_second=2) as progress:
        task = progress.add_task(counts.description, total=counts.n_items, detail="")
        done = threading.Event()

        def refresh() -> None:  # the counts change on the event loop's thread: read them from here
            while not done.wait(0.5):
                progress.update(task, completed=counts.items, detail=_detail(counts))

        thread = threading.Thread(target=refresh, name="peras-progress-bar", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()
            progress.update(task, completed=counts.items, detail=_detail(counts))


def _detail(counts: Counts) -> str:
    return f"{counts.requests_text()}; {counts.rate() * 60:,.1f}/min; ETA {counts.eta()}"


class _Bar:
    def __init__(self, progress: Any, task_id: Any) -> None:
        self._progress, self._task_id = progress, task_id

    def advance(self, n: int = 1) -> None:
        with _lock:
            self._progress.advance(self._task_id, n)


class _NoBar:
    def advance(self, n: int = 1) -> None:
        """Nothing to draw."""


@contextmanager
def track(description: str, total: int) -> Iterator[_Bar | _NoBar]:
    """A bar of `total` steps while the block runs (a no-op unless enabled)."""
    if not _enabled or total <= 0:
        yield _NoBar()
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    from rich.table import Column

    # On an 80-column terminal the counts and the time left must stay whole: the description gives way first.
    columns = (
        TextColumn("{task.description}", table_column=Column(max_width=32, no_wrap=True, overflow="ellipsis")),
        BarColumn(bar_width=20),
        MofNCompleteColumn(table_column=Column(no_wrap=True)),
        TimeRemainingColumn(),
    )
    with Progress(*columns, transient=True) as progress:
        yield _Bar(progress, progress.add_task(description, total=total))
