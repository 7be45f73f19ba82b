"""What a visitor of the Space may do, shared by the leaderboard and the ratings: a bounded number of attempts per
window, and names that are plain text.
"""

from __future__ import annotations

import re
import threading
import time
from collections import deque

from scitaste_hf.errors import ScitasteError

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 ._:/+()@-]{0,99}$")


class SubmissionError(ScitasteError):
    """A submission that is rejected; the message says why, in one line."""


class SlidingWindow:
    """The times of the events of the last ``period_s`` seconds: the one sliding-window log behind every rate limit
    of the package (the clients' :class:`HostThrottle`, the mirror's 429s, the leaderboard's submissions).

    It takes no lock: each caller already holds its own around the check and the :meth:`add` that follows.
    """

    def __init__(self, period_s: float) -> None:
        """:param period_s: length of the window in seconds."""
        self.period_s = period_s
        self._times: deque[float] = deque()

    def count(self, now: float) -> int:
        """Events in the window that ends at ``now``; older ones are forgotten.

        :param now: the current time on the clock the events were stamped with.
        """
        while self._times and self._times[0] <= now - self.period_s:
            self._times.popleft()
        return len(self._times)

    def add(self, now: float) -> None:
        """Record an event.

        :param now: its time on the window's clock.
        """
        self._times.append(now)

    def wait(self, now: float) -> float:
        """Seconds from ``now`` until the oldest event leaves the window; 0 when the window is empty.

        :param now: the current time, after a :meth:`count` at that time.
        """
        return self._times[0] + self.period_s - now if self._times else 0.0

    def clear(self) -> None:
        """Forget every event."""
        self._times.clear()


class RateLimit:
    """At most ``limit`` events per key (a submitter, a rater) in any ``window`` seconds; thread-safe. What counts
    as an event is the caller's: every attempt, or only what was accepted (:meth:`check` with ``record=False``
    first, then with ``record=True`` once accepted).

    Parameters
    ----------
    limit, window : int, float
        Attempts allowed per window, and the window in seconds.
    what : str
        What is attempted, for the message ("submissions", "ratings").
    """

    def __init__(self, limit: int, window: float, what: str) -> None:
        self.limit, self.window, self.what = limit, window, what
        self._attempts: dict[str, SlidingWindow] = {}
        self._lock = threading.Lock()

    def check(self, key: str, *, record: bool = True) -> None:
        """Raise :class:`SubmissionError` (with the wait) when ``key`` is at the limit; else count an event by it
        (with ``record``), in the same step, so that concurrent callers never pass the limit together."""
        now = time.monotonic()
        with self._lock:
            attempts = self._attempts.setdefault(key, SlidingWindow(self.window))
            if attempts.count(now) >= self.limit:
                wait = int(attempts.wait(now)) + 1
                raise SubmissionError(f"too many {self.what}: at most {self.limit} per {int(self.window)} s; try "
                                      f"again in {wait} s")
            if record:
                attempts.add(now)


def check_name(value: str, what: str, *, required: bool = True) -> str:
    """A name typed into the Space (a model, an organisation, a rater), stripped: plain text of 1-100 letters,
    digits, spaces and ``._:/+()@-``, so that no markup reaches a page; ``required=False`` allows it empty."""
    value = (value or "").strip() if isinstance(value, str) else value
    if not isinstance(value, str) or ((value or required) and not _NAME.match(value)):
        size = "1-100" if required else "up to 100"
        raise SubmissionError(f"{what}: {size} letters, digits, spaces and ._:/+()@- only (no markup)")
    return value
