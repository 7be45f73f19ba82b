"""Reaching the Hugging Face Hub, or saying at once that it cannot be reached.

huggingface_hub and datasets retry a Hub they cannot reach for tens of seconds and then raise through a long
traceback. A command that needs the Hub asks :func:`require_hub` first: one short request, bounded by
:data:`PROBE_TIMEOUT`, and a one-line error naming what was tried and what to use instead.

huggingface_hub's own HTTP client has no timeout at all, so a Hub that takes a connection and never answers holds
a call for good; a process that writes to the Hub calls :func:`bound_hub_calls` first.
"""

from __future__ import annotations

import os

from scitaste_hf.errors import ScitasteError

#: Seconds the reachability probe may take.
PROBE_TIMEOUT = 3.0
#: Seconds one network operation of a Hub call may take (connecting, each read, each write, waiting for a place in
#: the connection pool): long enough for a slow upload's every chunk, short enough that a silent Hub ends the call.
HUB_TIMEOUT = 30.0


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


def bound_hub_calls(seconds: float | None = None) -> None:
    """Give every request that huggingface_hub sends from this process a timeout of ``seconds`` per network
    operation (:data:`HUB_TIMEOUT` when not given).

    huggingface_hub shares one HTTP client per process, made by a client factory, and builds it again after a
    connection error: the factory in use is wrapped, so that each client it makes carries the timeout, and whatever
    else that factory configures (a proxy, certificates) is kept. Calling it again only changes the timeout.
    """
    import huggingface_hub
    from huggingface_hub.utils import _http  # the factory in use has no public getter

    seconds = HUB_TIMEOUT if seconds is None else seconds
    current = _http._GLOBAL_CLIENT_FACTORY
    if getattr(current, "scitaste_timeout", None) == seconds:
        return  # already so: setting the factory again would close the shared client under a call in flight
    base = getattr(current, "scitaste_base", current)

    def factory():
        client = base()
        client.timeout = seconds
        return client

    factory.scitaste_base, factory.scitaste_timeout = base, seconds
    huggingface_hub.set_client_factory(factory)


def hub_errors() -> tuple[type[Exception], ...]:
    """The exceptions a huggingface_hub call raises when the Hub refuses, fails or does not answer in time.

    Besides huggingface_hub's own :class:`~huggingface_hub.errors.HfHubHTTPError`, a timeout or a dropped connection
    comes up as the HTTP library's error, and that library changed between huggingface_hub releases (``httpx``,
    then ``httpx2``): both are named where installed.
    """
    import importlib

    from huggingface_hub.errors import HfHubHTTPError

    errors: list[type[Exception]] = [HfHubHTTPError]
    for name in ("httpx2", "httpx"):
        try:
            errors.append(importlib.import_module(name).HTTPError)
        except ImportError:
            continue
    return tuple(errors)
