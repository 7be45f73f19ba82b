"""Reaching the Hugging Face Hub, or saying at once that it cannot be reached.

huggingface_hub and datasets retry a Hub they cannot reach for tens of seconds and then raise through a long
traceback. A command that needs the Hub asks :func:`require_hub` first: one short request, bounded by
:data:`PROBE_TIMEOUT`, and a one-line error naming what was tried and what to use instead.
"""

from __future__ import annotations

import os

from scitaste_hf.errors import ScitasteError

#: Seconds the reachability probe may take.
PROBE_TIMEOUT = 3.0


def endpoint() -> str:
    """The Hub endpoint huggingface_hub uses (``$HF_ENDPOINT``, else the public Hub)."""
    return os.environ.get("HF_ENDPOINT", "https://huggingface.co").rstrip("/")


def offline() -> bool:
    """Whether the environment asks for offline mode (``HF_HUB_OFFLINE``, as huggingface_hub reads it)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in ("1", "ON", "YES", "TRUE")


def require_hub(what: str, instead: str) -> None:
    """Raise a one-line :class:`ScitasteError` unless the Hub answers within :data:`PROBE_TIMEOUT` seconds.

    Parameters
    ----------
    what : str
        What the command wanted from the Hub (``"dataset ORG/NAME"``), for the message.
    instead : str
        What to use without the Hub, for the message.
    """
    import httpx

    from scitaste_hf.bounded import TooLarge, exchange

    if offline():
        raise ScitasteError(f"HF_HUB_OFFLINE is set, so {what} cannot be fetched from the Hub; {instead}")
    try:  # any answer at all means reachable; the whole exchange is bounded, a trickle included
        exchange("HEAD", f"{endpoint()}/api/whoami-v2", limit=PROBE_TIMEOUT, max_bytes=1 << 16)
    except (httpx.HTTPError, TooLarge) as exc:
        raise ScitasteError(f"cannot reach the Hugging Face Hub at {endpoint()} for {what} "
                            f"({type(exc).__name__}); {instead}") from None
