"""The options a client of OpenAlex, NASA ADS or arXiv takes: where the service is, how fast and how patiently to
ask it, and which cache answers first. Each client's constructor takes them as keyword arguments, with its
service's own defaults, and hands them to its :class:`~scitaste_hf.sources.transport.Transport` as one
:class:`ClientOptions`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ClientOptions:
    """How a client reaches its service.

    The defaults here are the transport's; each client passes its own (OpenAlex: 10 requests/s on 8 connections,
    30 s; ADS: 5 requests/s on 4 connections, 60 s; arXiv: one request every 3 s on one connection, 60 s).

    :param base_url: URL that request paths are appended to (a test server or the mirror can stand in).
    :param cache_dir: directory of the plain-file cache; None disables the cache.
    :param offline: serve only from the cache and fail on a miss.
    :param record: always send and (over)write the cache: refresh a cache or record fixtures.
    :param rate_limit: ``(requests, seconds)`` allowed to the host, or None for no limit.
    :param max_connections: most requests in flight at once (and the HTTP connection pool size).
    :param timeout: seconds for connect/read/write/pool.
    :param max_retries: retries after the first attempt.
    :param backoff: ``(first, longest)`` seconds between two attempts: the first step doubles each retry, with
        full jitter, up to the longest.
    :param max_retry_after: longest ``Retry-After`` honoured; a longer one fails at once instead of hanging.
    """

    base_url: str
    cache_dir: str | os.PathLike[str] | None = None
    offline: bool = False
    record: bool = False
    rate_limit: tuple[int, float] | None = None
    max_connections: int = 8
    timeout: float = 30.0
    max_retries: int = 5
    backoff: tuple[float, float] = (0.5, 30.0)
    max_retry_after: float = 120.0
