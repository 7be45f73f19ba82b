"""What every HTTP client of the package shares about retrying: reading ``Retry-After`` and waiting at least that.

The source transport (:mod:`scitaste_hf.sources.transport`) and the chat client (:mod:`scitaste_hf.agent.chat`)
both retry through tenacity; each keeps its own backoff curve and its own answer to a wait longer than it allows
(the transport fails at once, the chat client waits its cap), but both read the header and floor the backoff alike.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import tenacity


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header value asks for, from delta-seconds or an HTTP date (RFC 9110 10.2.3).

    Parameters
    ----------
    value : str, optional
        The header value, or None when the header is absent.

    Returns
    -------
    float or None
        Zero or more seconds (a date in the past is zero; an infinite number stays infinite, for the caller's
        cap to judge), or None for an absent or unreadable value (``nan`` included).
    """
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds()
        except (TypeError, ValueError, OverflowError):
            return None
    return None if math.isnan(seconds) else max(0.0, seconds)


class AtLeastRetryAfter(tenacity.wait.wait_base):
    """A backoff never shorter than the ``retry_after`` seconds carried by the exception that failed the attempt.

    Parameters
    ----------
    backoff : tenacity.wait.wait_base
        The client's own curve (full jitter for the sources, plain doubling for the chat client).
    """

    def __init__(self, backoff: tenacity.wait.wait_base) -> None:
        self._backoff = backoff

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        """Seconds to wait before the next attempt."""
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        return max(self._backoff(retry_state), getattr(exc, "retry_after", None) or 0.0)
