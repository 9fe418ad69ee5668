"""Progress bars for long work, shown only when a person is watching (the CLI on a terminal).

Flows and tasks report through `track(...)`; the CLI turns the bars on. In a deployment or a test nothing is
drawn, and reporting costs one attribute check.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_enabled = False
_lock = threading.Lock()


def enable_if_terminal() -> None:
    """Turn bars on when stderr is a terminal."""
    global _enabled
    _enabled = sys.stderr.isatty()


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
