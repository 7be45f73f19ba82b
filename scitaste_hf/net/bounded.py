"""One HTTP exchange bounded in time and size as a whole, whatever the server does.

httpx's timeouts bound each network operation, not the exchange: a server that trickles its headers or its body
one byte at a time, or sends ``100 Continue`` forever, holds a request indefinitely; and a small compressed body
can decode to gigabytes. :func:`exchange` runs the request on an event loop under one deadline (cancellation
interrupts any pending read), asks for an uncompressed reply and refuses a compressed one, and stops reading at
``max_bytes``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any

import httpx

from scitaste_hf.net.tls import ssl_context


class TooLarge(Exception):
    """A reply body longer than the exchange allows, or one compressed although an uncompressed one was asked."""


async def _exchange(method: str, url: str, *, headers: dict[str, str], json: Any, limit: float, max_bytes: int,
                    transport: httpx.AsyncBaseTransport | None) -> tuple[int, httpx.Headers, bytes]:
    async with httpx.AsyncClient(timeout=limit, transport=transport, verify=ssl_context()) as client:
        request_headers = {**headers, "Accept-Encoding": "identity"}
        async with client.stream(method, url, headers=request_headers, json=json) as response:
            encoding = response.headers.get("Content-Encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                raise TooLarge(f"a reply compressed with {encoding!r} although an uncompressed one was asked for")
            chunks, size = [], 0
            async for chunk in response.aiter_raw():
                size += len(chunk)
                if size > max_bytes:
                    raise TooLarge(f"a reply of more than {max_bytes:,} bytes")
                chunks.append(chunk)
            return response.status_code, response.headers, b"".join(chunks)


def _run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coroutine`` to its end from synchronous code, also where this thread already runs an event loop
    (a notebook): then on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coroutine)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


def exchange(method: str, url: str, *, limit: float, max_bytes: int, headers: dict[str, str] | None = None,
             json: Any = None, transport: httpx.AsyncBaseTransport | None = None
             ) -> tuple[int, httpx.Headers, bytes]:
    """Status, headers and body of one request, all within ``limit`` seconds.

    Parameters
    ----------
    method, url : str
    limit : float
        Seconds for the whole exchange, from connecting to the last byte of the body.
    max_bytes : int
        Longest body read.
    headers : dict, optional
    json : object, optional
        The request body, sent as JSON.
    transport : httpx.AsyncBaseTransport, optional
        For tests and special networking, as httpx allows.

    Raises
    ------
    httpx.TimeoutException
        When the exchange takes longer than ``limit``.
    httpx.HTTPError
        On a connection or protocol error.
    TooLarge
        On a body over ``max_bytes`` or a compressed one.
    """

    async def bounded() -> tuple[int, httpx.Headers, bytes]:
        try:
            return await asyncio.wait_for(_exchange(method, url, headers=headers or {}, json=json, limit=limit,
                                                    max_bytes=max_bytes, transport=transport), limit)
        except TimeoutError:
            raise httpx.ReadTimeout(f"no whole reply from {url} in {limit:g} s") from None

    return _run(bounded())
