"""Progress of long stages: one bar per stage with its count, elapsed time and estimated time left (rich), or
one plain line per finished stage when the output is not a terminal (a log file, a test)."""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

Advance = Callable[[int], None]


class StageProgress:
    """Reports stages as they run.

    Parameters
    ----------
    enabled : bool
        False: report nothing.
    bars : bool, optional
        Live bars; default: when standard error is a terminal.
    """

    def __init__(self, enabled: bool = True, bars: bool | None = None) -> None:
        self.enabled = enabled
        self.bars = sys.stderr.isatty() if bars is None else bars
        self._live = None
        #: Seconds each finished stage took, by description.
        self.times: dict[str, float] = {}

    def __enter__(self) -> StageProgress:
        if self.enabled and self.bars:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._live = Progress(TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
            self._live = None

    @contextlib.contextmanager
    def step(self, description: str, total: int | None) -> Iterator[Advance]:
        """A stage of ``total`` units (None: unknown); yields the function that advances it."""
        started = time.perf_counter()
        done = [0]
        if self._live is not None:
            task = self._live.add_task(description, total=total)

            def advance(n: int) -> None:
                done[0] += n
                self._live.update(task, advance=n)
        else:
            def advance(n: int) -> None:
                done[0] += n
        yield advance
        self.times[description] = round(time.perf_counter() - started, 2)
        if self._live is not None:
            self._live.update(task, completed=total if total is not None else done[0], total=total or done[0])
        elif self.enabled:
            print(f"{description}: {done[0]:,} in {self.times[description]:.1f} s", file=sys.stderr, flush=True)

    def note(self, message: str) -> None:
        """A line of its own (a skipped stage, a measured recall)."""
        if not self.enabled:
            return
        if self._live is not None:
            self._live.console.print(message)
        else:
            print(message, file=sys.stderr, flush=True)
