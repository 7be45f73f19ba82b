"""Reaching the Hugging Face Hub, or saying at once that it cannot be reached.

huggingface_hub and datasets retry a Hub they cannot reach for tens of seconds and then raise through a long
traceback. A command that needs the Hub asks :func:`require_hub` first: one short request, bounded by
:data:`PROBE_TIMEOUT`, and a one-line error naming what was tried and what to use instead.

huggingface_hub's own HTTP client has no timeout at all, so a Hub that takes a connection and never answers holds
a call for good; a process that writes to the Hub calls :func:`bound_hub_calls` first.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from scitaste_hf.constants import hf_endpoint, hf_hub_offline
from scitaste_hf.errors import ScitasteError, first_line

#: A Hub repo id (``org/name``): what a source that is no local path must look like to be fetched from the Hub.
HUB_ID = re.compile(r"^[\w.-]+/[\w.-]+$")

#: Seconds the reachability probe may take.
PROBE_TIMEOUT = 3.0
#: Seconds one network operation of a Hub call may take (connecting, each read, each write, waiting for a place in
#: the connection pool): long enough for a slow upload's every chunk, short enough that a silent Hub ends the call.
HUB_TIMEOUT = 30.0
#: Largest answer read from the Hub's API (``/api/...``: a repo's info, a commit's outcome), in bytes. Those answers
#: are read whole into memory: a repo's info lists its files, some 100 bytes each, so 64 MiB holds far more than the
#: copies' repos ever do, while an answer of gigabytes (measured: 4.4 GB of memory for a 3 GiB body) would take the
#: Space down. File downloads (``/<repo>/resolve/...``) are streamed to disk and not bounded here.
HUB_MAX_ANSWER = 64 * 2**20


def is_hub_id(source: str | Path) -> bool:
    """Whether ``source`` reads as a Hub repo id (:data:`HUB_ID`); a local path that exists is read as a path
    first by the loaders."""
    return bool(HUB_ID.match(str(source)))


def in_local_cache(repo_id: str) -> bool:
    """Whether the Hub dataset ``repo_id`` has a copy in the local Hugging Face cache (loadable offline)."""
    from huggingface_hub import scan_cache_dir
    from huggingface_hub.errors import CacheNotFound

    try:
        return any(r.repo_id == repo_id and r.repo_type == "dataset" for r in scan_cache_dir().repos)
    except CacheNotFound:
        return False


def load_dataset(source: str | Path, *args: Any, what: str, instead: str, **kwargs: Any):
    """:func:`datasets.load_dataset` of a dataset folder or Hub id, with the Hub's failures as one line.

    A Hub id without a cached copy is first checked with :func:`require_hub` (one bounded probe instead of the
    libraries' long retries). A dataset that is not there, a Hub out of reach (offline, nothing cached) and a Hub
    that refuses (a private or gated dataset, a bad token) are a :class:`ScitasteError` that names ``source`` and
    says what to use ``instead``. A :class:`ValueError` of ``datasets`` (a split or config the dataset does not
    have) is left to the caller, to whom it may mean "none".

    Parameters
    ----------
    source : path or Hub id
        The dataset.
    *args, **kwargs
        The rest of :func:`datasets.load_dataset`'s arguments (the config, ``split=``).
    what : str
        What is fetched, for the message of an unreachable Hub (``"dataset ORG/NAME"``).
    instead : str
        What to use without the Hub, for the message.
    """
    import datasets
    from huggingface_hub.errors import HfHubHTTPError

    if not Path(source).exists() and not in_local_cache(str(source)):
        require_hub(what, instead)
    try:
        return datasets.load_dataset(str(source), *args, **kwargs)
    except (FileNotFoundError, datasets.exceptions.DatasetNotFoundError) as exc:
        raise ScitasteError(f"no dataset at {source}: {first_line(exc)}") from None
    except ConnectionError as exc:  # offline, and no cached copy
        raise ScitasteError(f"{first_line(exc)}; {instead}") from None
    except HfHubHTTPError as exc:  # the Hub answered, and refused
        raise ScitasteError(f"the Hub refused dataset {source}: {first_line(exc)}; {instead}") from None


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

    from scitaste_hf.net.bounded import TooLarge, exchange

    if hf_hub_offline():
        raise ScitasteError(f"HF_HUB_OFFLINE is set, so {what} cannot be fetched from the Hub; {instead}")
    try:  # any answer at all means reachable; the whole exchange is bounded, a trickle included
        exchange("HEAD", f"{hf_endpoint()}/api/whoami-v2", limit=PROBE_TIMEOUT, max_bytes=1 << 16)
    except (httpx.HTTPError, TooLarge) as exc:
        raise ScitasteError(f"cannot reach the Hugging Face Hub at {hf_endpoint()} for {what} "
                            f"({type(exc).__name__}); {instead}") from None


def bound_hub_calls(seconds: float | None = None, max_answer: int = HUB_MAX_ANSWER) -> None:
    """Give every request that huggingface_hub sends from this process a timeout of ``seconds`` per network
    operation (:data:`HUB_TIMEOUT` when not given), and every answer of the Hub's API at most ``max_answer`` bytes
    (:data:`HUB_MAX_ANSWER`).

    huggingface_hub shares one HTTP client per process, made by a client factory, and builds it again after a
    connection error: the factory in use is wrapped, so that each client it makes carries the bounds, and whatever
    else that factory configures (a proxy, certificates) is kept. Calling it again only changes the bounds. An
    answer beyond the bound ends its call with the HTTP library's ``ReadError`` (one of :func:`hub_errors`) once
    ``max_answer`` bytes have arrived; the API is asked not to compress (a compressed answer is refused), so that
    the bytes counted are the bytes held.
    """
    import huggingface_hub
    from huggingface_hub.utils import _http  # the factory in use has no public getter

    seconds = HUB_TIMEOUT if seconds is None else seconds
    current = _http._GLOBAL_CLIENT_FACTORY
    if getattr(current, "scitaste_bounds", None) == (seconds, max_answer):
        return  # already so: setting the factory again would close the shared client under a call in flight
    base = getattr(current, "scitaste_base", current)

    def factory():
        client = base()
        client.timeout = seconds
        client.event_hooks["request"].append(_plain_api_answers)
        client.event_hooks["response"].append(lambda response: _bound_answer(response, max_answer))
        return client

    factory.scitaste_base, factory.scitaste_bounds = base, (seconds, max_answer)
    huggingface_hub.set_client_factory(factory)


def _api(url) -> bool:
    return url.path.startswith("/api/")


def _plain_api_answers(request) -> None:
    if _api(request.url):
        request.headers["Accept-Encoding"] = "identity"


def _bound_answer(response, max_answer: int) -> None:
    """Refuse, or stop reading at ``max_answer`` bytes, an answer of the Hub's API (a response hook: called once
    the headers are in, before the body is read)."""
    import importlib

    if not _api(response.request.url):
        return
    http = importlib.import_module(type(response).__module__.split(".")[0])  # httpx or httpx2, as the client's
    where = f"the Hub's answer to {response.request.method} {response.request.url.path}"
    encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding != "identity":
        raise http.ReadError(f"{where} is compressed ({encoding}), which was not asked for", request=response.request)
    declared = response.headers.get("Content-Length", "")
    if declared.isdigit() and int(declared) > max_answer:
        raise http.ReadError(f"{where} has {int(declared):,} bytes, more than the {max_answer:,} read",
                             request=response.request)
    raw = response.stream

    class Bounded(http.SyncByteStream):
        def __iter__(self):
            read = 0
            for chunk in raw:
                read += len(chunk)
                if read > max_answer:
                    raise http.ReadError(f"{where} is larger than the {max_answer:,} bytes read",
                                         request=response.request)
                yield chunk

        def close(self):
            raw.close()

    response.stream = Bounded()


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
