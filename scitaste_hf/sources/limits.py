"""Per-host politeness: request rate, ``Retry-After`` pauses and the daily budget of ``X-RateLimit-*`` headers.

The state lives in process-wide registries keyed on the service's origin, so two clients of one service (or a
sync and an async caller) share one allowance instead of each taking the full rate.

The rate itself is enforced by pyrate-limiter's default sliding-window log, which guarantees that no window of
``period`` seconds ever holds more than ``limit`` requests (what a server that counts per window checks), in
both threads and asyncio tasks. Its GCRA algorithm was not used: with ``burst=1`` it measured half the configured
rate.
"""

from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime

from scitaste_hf.sources.errors import BudgetExhausted

# Reset headers are either epoch seconds (ADS) or seconds from now (OpenAlex); no relative reset is a decade.
_EPOCH_THRESHOLD = 315_360_000


class HostThrottle:
    """Rate limit and server-requested pause of one host."""

    def __init__(self, limit: int | None, period_s: float) -> None:
        """:param limit: requests allowed per ``period_s`` (None: no limit).
        :param period_s: length of the window in seconds.
        """
        self._limiter = None
        if limit is not None:
            from pyrate_limiter import Limiter, Rate

            self._limiter = Limiter(Rate(limit, round(period_s * 1000)))
        self._pause_until = 0.0
        self._lock = threading.Lock()

    def pause(self, seconds: float) -> None:
        """Hold every request to this host for ``seconds`` (a ``Retry-After`` applies to all callers).

        :param seconds: pause length from now.
        """
        with self._lock:
            self._pause_until = max(self._pause_until, time.monotonic() + seconds)

    def _pause_left(self) -> float:
        return self._pause_until - time.monotonic()

    def acquire(self) -> None:
        """Block until a request may be sent."""
        while (left := self._pause_left()) > 0:
            time.sleep(left)
        if self._limiter is not None:
            self._limiter.try_acquire("host")

    async def aacquire(self) -> None:
        """Wait, without blocking the event loop, until a request may be sent."""
        while (left := self._pause_left()) > 0:
            await asyncio.sleep(left)
        if self._limiter is not None:
            await self._limiter.try_acquire_async("host")


@dataclass(frozen=True, slots=True)
class RateLimitStatus:
    """The last ``X-RateLimit-*`` state a service reported.

    ``reset_at`` is in epoch seconds; any field is None when the service did not send it.
    """

    limit: int | None = None
    remaining: int | None = None
    reset_at: float | None = None


class Budget:
    """A request budget read from ``X-RateLimit-Limit/Remaining/Reset`` (the ADS daily quota, OpenAlex credits)."""

    def __init__(self) -> None:
        self.status = RateLimitStatus()
        self._lock = threading.Lock()

    def update(self, headers: dict[str, str]) -> None:
        """Take the budget from a response's headers; a response without them changes nothing.

        :param headers: response headers with lower-case names.
        """
        remaining = _int_header(headers, "x-ratelimit-remaining")
        if remaining is None:
            return
        reset = _int_header(headers, "x-ratelimit-reset")
        if reset is not None and reset < _EPOCH_THRESHOLD:
            reset = time.time() + reset
        with self._lock:
            self.status = RateLimitStatus(_int_header(headers, "x-ratelimit-limit"), remaining, reset)

    def exhausted(self) -> bool:
        """Whether the budget is known to be spent and its reset time has not come yet."""
        status = self.status
        if status.remaining is None or status.remaining > 0:
            return False
        return status.reset_at is None or time.time() < status.reset_at

    def check(self, service: str) -> None:
        """Raise :class:`BudgetExhausted` rather than send a request the service would refuse.

        :param service: service name for the message.
        """
        if self.exhausted():
            raise BudgetExhausted(self.message(service))

    def message(self, service: str) -> str:
        """One-line explanation of an exhausted budget.

        :param service: service name for the message.
        """
        status = self.status
        when = "an unknown time"
        if status.reset_at is not None:
            when = datetime.fromtimestamp(status.reset_at, UTC).strftime("%Y-%m-%d %H:%M UTC")
        of = f" of {status.limit}" if status.limit is not None else ""
        return (f"{service} request budget exhausted: 0{of} requests left until {when}; "
                "wait for the reset or rerun with --offline from a filled cache")


def _int_header(headers: dict[str, str], name: str) -> int | None:
    value = headers.get(name)
    if value is None:
        return None
    try:
        return int(float(value))
    except ValueError:
        return None


_THROTTLES: dict[tuple[str, int | None, float], HostThrottle] = {}
_BUDGETS: dict[tuple[str, str], Budget] = {}
_REGISTRY_LOCK = threading.Lock()


def throttle_for(origin: str, limit: int | None, period_s: float) -> HostThrottle:
    """The shared :class:`HostThrottle` of a host and rate.

    :param origin: ``scheme://host:port`` of the service.
    :param limit: requests per window, or None for no limit.
    :param period_s: window length in seconds.
    """
    with _REGISTRY_LOCK:
        key = (origin, limit, period_s)
        if key not in _THROTTLES:
            _THROTTLES[key] = HostThrottle(limit, period_s)
        return _THROTTLES[key]


def budget_for(origin: str, scope: str) -> Budget:
    """The shared :class:`Budget` of a host and scope (ADS counts each endpoint separately).

    :param origin: ``scheme://host:port`` of the service.
    :param scope: budget scope within the host, e.g. an endpoint path or ``""`` for the whole host.
    """
    with _REGISTRY_LOCK:
        key = (origin, scope)
        if key not in _BUDGETS:
            _BUDGETS[key] = Budget()
        return _BUDGETS[key]
