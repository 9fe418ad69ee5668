"""Tables that fit the terminal: a wide one is printed as several tables of the same rows, its key columns repeated.

120 columns by default (what a laptop's terminal, a CI log and a pasted issue show whole); `--wide` prints one
table however wide. Cells are strings already formatted by the command.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console
from rich.markup import escape
from rich.table import Table

WIDTH = 120
CELL_COST = 3  # rich's box: one space of padding either side and a rule between columns


@dataclass
class TextTable:
    """Headers, rows of formatted cells, how many leading columns say what a row is (repeated in every part)."""

    headers: list[str]
    rows: list[list[str]]
    n_keys: int = 1
    right: set[str] = field(default_factory=set)  # headers of the columns aligned right (numbers)
    title: str | None = None
    caption: str | None = None

    def widths(self) -> list[int]:
        """Each column's widest cell or header."""
        return [max([len(h), *(len(row[i]) for row in self.rows)]) for i, h in enumerate(self.headers)]


def column_groups(widths: list[int], n_keys: int, width: int) -> list[list[int]]:
    """The columns of each part: the keys, then as many of the others, in order, as fit in `width` (at least one)."""
    keys = list(range(n_keys))
    base = 1 + sum(widths[i] + CELL_COST for i in keys)
    groups: list[list[int]] = []
    current: list[int] = []
    used = base
    for i in range(n_keys, len(widths)):
        cost = widths[i] + CELL_COST
        if current and used + cost > width:
            groups.append(current)
            current, used = [], base
        current.append(i)
        used += cost
    groups.append(current)
    return [keys + group for group in groups]


def print_text_table(table: TextTable, wide: bool = False, console: Console | None = None) -> None:
    """The table in parts that each fit WIDTH columns (one with `wide`); title above the first, caption below all."""
    widths = table.widths()
    full = 1 + sum(w + CELL_COST for w in widths)
    console = console or Console(width=max(full, WIDTH) if wide else WIDTH)
    groups = [list(range(len(widths)))] if wide else column_groups(widths, table.n_keys, WIDTH)
    for number, group in enumerate(groups):
        part = Table(
            title=escape(table.title) if table.title and number == 0 else None,
            title_justify="left",
        )
        for i in group:
            header = table.headers[i]
            part.add_column(escape(header), justify="right" if header in table.right else "left", no_wrap=True)
        for row in table.rows:
            part.add_row(*(escape(row[i]) for i in group))
        console.print(part)
    if table.caption:  # under the last part, on one line (a narrow last part would wrap it)
        console.print(escape(table.caption), soft_wrap=True)
