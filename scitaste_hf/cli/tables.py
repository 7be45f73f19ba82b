"""Tables that stay readable in a narrow terminal: a table too wide to show every number whole is shown as a stack
of narrower tables, each with the row's key columns, instead of numbers cut to ``+0.…``."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence


def console(piped_width: int):
    """A rich console as wide as the terminal, or as ``$COLUMNS`` when set; piped output (CI logs, files) without
    ``$COLUMNS`` gets ``piped_width`` instead of rich's 80 columns."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() or os.environ.get("COLUMNS") else piped_width)


def fitted(console, table, key: Sequence[int], groups: Sequence[Sequence[int]]):
    """``table`` as it is when it fits ``console`` with no word of a cell cut, else its columns stacked: one table
    per group of column indices in ``groups``, each led by the ``key`` columns (what names a row), the title on
    the first and the caption under the last. Cells fold rather than end in an ellipsis, even in a terminal too
    narrow for one group.

    Returns
    -------
    rich renderable
        The table, or a ``Group`` of the stacked tables.
    """
    from rich.console import Group
    from rich.measure import Measurement
    from rich.table import Table

    for column in table.columns:
        column.overflow = "fold"
    # measured as if the terminal were unbounded: a measurement within it is clamped to its width
    if Measurement.get(console, console.options.update_width(10**6), table).minimum <= console.width:
        return table
    cells = [list(column.cells) for column in table.columns]
    parts = []
    for k, group in enumerate(groups):
        chosen = [*key, *group]
        part = Table(title=table.title if k == 0 else None, title_justify=table.title_justify,
                     caption=table.caption if k == len(groups) - 1 else None, caption_justify=table.caption_justify)
        for i in chosen:
            part.add_column(table.columns[i].header, justify=table.columns[i].justify, overflow="fold")
        for r, row in enumerate(table.rows):
            part.add_row(*(cells[i][r] for i in chosen), end_section=row.end_section)
        parts.append(part)
    return Group(*parts)
