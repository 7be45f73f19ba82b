"""The mirror's HTTP front: one Starlette application that answers from recordings or a backend, and imposes a
service's limits and faults on the way.

For each request, in this order:

- **Limits**: ``rate_limit`` answers 429 (``Retry-After: 1``) to a request that would make more than that many in
  the last second; ``latency`` delays every answer; ``daily_limit`` counts down ``X-RateLimit-Remaining`` and
  answers 429 at zero; ``require_token`` answers 401 unless ``Authorization: Bearer T`` or ``api_key=T`` comes
  with the request.
- **Faults**: ``POST /_control/faults`` with a JSON list queues answers for the next requests, each
  ``{"status": 429, "headers": {"Retry-After": "1"}, "body": "..."}`` (a canned answer) or ``{"delay": 2.0}``
  (a slow answer); ``fault_rates`` adds random ones (:data:`FAULT_KINDS`).
- **Answers**: a recording (:mod:`scitaste_hf.mirror.replay`, replayed as recorded), else the backend (the
  simulated world of :mod:`scitaste_hf.mirror.server`), whose pages ``max_page`` caps, else 404.

``GET /health`` answers once the application exists; ``GET /_control/log`` lists the requests seen and counters;
``POST /_control/reset`` clears them. ``GET /_control/clock`` says the date a backend with a clock answers as of
(:class:`~scitaste_hf.mirror.server.WorldBackend`), ``POST /_control/clock`` with ``{"as_of": "YYYY-MM-DD"}`` (or
``null``, the world's present) moves it; 404 for a backend without one (the recorded responses).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from scitaste_hf.mirror.replay import ReplayStore
from scitaste_hf.net.guard import SlidingWindow

#: Kinds of random fault that ``fault_rates`` may ask for.
FAULT_KINDS = ("429", "500", "empty", "truncated", "slow")
#: Seconds a "slow" random fault waits before answering.
SLOW_SECONDS = 2.0
#: The page-size parameters of the three services, which ``max_page`` caps.
_PAGE_PARAMS = ("per-page", "per_page", "rows", "max_results")

#: Answers what no recording matches: ``(method, path, query, body)`` to ``(status, content, media_type)`` or None;
#: content that is not text or bytes is sent as JSON.
Backend = Callable[[str, str, dict[str, str], bytes], tuple | None]


@dataclass
class ServerState:
    """Mutable state of a running server: queued faults, request log, limits."""

    rate_limit: int | None = None
    daily_limit: int | None = None
    latency: float = 0.0
    require_token: str | None = None
    max_page: int | None = None
    faults: deque = field(default_factory=deque)
    log: deque = field(default_factory=lambda: deque(maxlen=100_000))  # bounded: a mirror runs for hours
    window: SlidingWindow = field(default_factory=lambda: SlidingWindow(1.0))
    answered: int = 0
    rejected_429: int = 0

    def reset(self) -> None:
        """Forget faults, log, counters and the rate window."""
        self.faults.clear()
        self.log.clear()
        self.window.clear()
        self.answered = 0
        self.rejected_429 = 0


def build_app(fixtures: Sequence[str | Path] = (), *, rate_limit: int | None = None, daily_limit: int | None = None,
              latency: float = 0.0, require_token: str | None = None, max_page: int | None = None,
              backend: Backend | None = None, fault_rates: dict[str, float] | None = None,
              seed: int = 0) -> Starlette:
    """The Starlette application of the mirror.

    :param fixtures: directories of recorded interactions to replay.
    :param rate_limit: requests allowed in any one-second window, or None.
    :param daily_limit: requests allowed before ``X-RateLimit-Remaining`` hits zero, or None.
    :param latency: seconds added to every answer.
    :param require_token: credential the server insists on, or None.
    :param max_page: most records a page of the backend holds, whatever was asked; None: as asked.
    :param backend: answers what no recording matches (see :data:`Backend`); the mirror passes its simulated
        world here.
    :param fault_rates: share of requests answered with each random fault of :data:`FAULT_KINDS` (429 with
        ``Retry-After``, 500, an empty 200, a truncated 200, a slow answer), drawn from a generator seeded
        with ``seed``.
    """
    store = ReplayStore(fixtures)
    unknown = sorted(set(fault_rates or {}) - set(FAULT_KINDS))
    if unknown or sum((fault_rates or {}).values()) > 1:
        raise ValueError(f"fault rates must be kinds of {FAULT_KINDS} summing to at most 1, got {fault_rates}")
    state = ServerState(rate_limit, daily_limit, latency, require_token, max_page)
    return Starlette(routes=_Mirror(store, state, backend, fault_rates, random.Random(seed)).routes())


class _Mirror:
    """The request handlers of one application, over its recordings, backend and state."""

    def __init__(self, store: ReplayStore, state: ServerState, backend: Backend | None,
                 fault_rates: dict[str, float] | None, chance: random.Random) -> None:
        self.store, self.state, self.backend = store, state, backend
        self.fault_rates, self.chance = fault_rates, chance
        self.reset_at = int(time.time()) + 86_400

    def routes(self) -> list[Route]:
        """The health and control routes, and every other path answered as a service request."""
        return [
            Route("/health", self.health),
            Route("/_control/faults", self.control_faults, methods=["POST"]),
            Route("/_control/log", self.control_log),
            Route("/_control/reset", self.control_reset, methods=["POST"]),
            Route("/_control/clock", self.control_clock, methods=["GET", "POST"]),
            Route("/{path:path}", self.serve, methods=["GET", "POST"]),
        ]

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok", "recordings": len(self.store)})

    async def control_faults(self, request: Request) -> Response:
        self.state.faults.extend(await request.json())
        return JSONResponse({"queued": len(self.state.faults)})

    async def control_log(self, request: Request) -> Response:
        return JSONResponse({"requests": list(self.state.log), "answered": self.state.answered,
                             "rejected_429": self.state.rejected_429})

    async def control_reset(self, request: Request) -> Response:
        self.state.reset()
        return JSONResponse({"ok": True})

    async def control_clock(self, request: Request) -> Response:
        """The backend's clock, moved first by a POST of ``{"as_of": "YYYY-MM-DD" | null}``."""
        if not hasattr(self.backend, "clock"):
            return JSONResponse({"error": "this mirror has no clock (it replays recorded responses)"}, 404)
        if request.method == "POST":
            try:
                value = (await request.json()).get("as_of")
                self.backend.clock = date.fromisoformat(value) if value is not None else None
            except (ValueError, TypeError, AttributeError):
                return JSONResponse({"error": 'send {"as_of": "YYYY-MM-DD"} or {"as_of": null}'}, 400)
        clock = self.backend.clock
        return JSONResponse({"as_of": clock.isoformat() if clock else None})

    async def serve(self, request: Request) -> Response:
        """A service request: refused by a limit or a queued fault, or answered, perhaps spoilt by a random fault."""
        query = list(parse_qsl(request.url.query, keep_blank_values=True))
        refusal = await self._refusal(request, query)
        if refusal is not None:
            return refusal
        self.state.answered += 1
        return await self._answer_with_fault(request, query, self._budget_headers())

    async def _refusal(self, request: Request, query: list[tuple[str, str]]) -> Response | None:
        """What answers the request instead of the service: a limit or a queued fault; None to serve it."""
        state = self.state
        auth = request.headers.get("authorization", "")
        # Requests are counted when they arrive, as a service's front end does, not when they are answered.
        now = time.monotonic()
        state.log.append({"method": request.method, "path": request.url.path, "query": request.url.query,
                          "authorization": bool(auth), "t": now})
        if not self._admitted(now):
            return self._too_many({"Retry-After": "1"})
        if state.latency:
            await asyncio.sleep(state.latency)
        queued = await self._queued_fault()
        if queued is not None:
            return queued
        if state.daily_limit is not None and state.answered >= state.daily_limit:
            return self._too_many(self._budget_headers())
        if not self._token_ok(auth, query):
            return JSONResponse({"error": "Invalid or missing API key", "message": "API key not found"}, 401)
        return None

    def _admitted(self, now: float) -> bool:
        """Whether the rate limit lets a request that arrives at ``now`` in (and counts it if so)."""
        state = self.state
        if state.rate_limit is None:
            return True
        if state.window.count(now) >= state.rate_limit:
            return False
        state.window.add(now)
        return True

    def _token_ok(self, auth: str, query: list[tuple[str, str]]) -> bool:
        token = self.state.require_token
        return token is None or auth == f"Bearer {token}" or ("api_key", token) in query

    async def _queued_fault(self) -> Response | None:
        """The next queued canned answer, or None (after waiting out a queued delay, if that is next)."""
        if not self.state.faults:
            return None
        fault = self.state.faults.popleft()
        if "status" in fault:
            return Response(fault.get("body", ""), fault["status"], headers=fault.get("headers"))
        await asyncio.sleep(fault.get("delay", 0.0))
        return None

    def _too_many(self, headers: dict[str, str]) -> Response:
        self.state.rejected_429 += 1
        return JSONResponse({"error": "Too many requests"}, 429, headers=headers)

    def _budget_headers(self) -> dict[str, str]:
        if self.state.daily_limit is None:
            return {}
        remaining = max(0, self.state.daily_limit - self.state.answered)
        return {"X-RateLimit-Limit": str(self.state.daily_limit), "X-RateLimit-Remaining": str(remaining),
                "X-RateLimit-Reset": str(self.reset_at)}

    async def _answer_with_fault(self, request: Request, query: list[tuple[str, str]],
                                 headers: dict[str, str]) -> Response:
        fault = _draw(self.chance, self.fault_rates)
        if fault == "429":
            return self._too_many({"Retry-After": "1"})
        if fault == "500":
            return JSONResponse({"error": "Internal server error"}, 500)
        if fault == "slow":
            await asyncio.sleep(SLOW_SECONDS)
        return _spoilt(await self._answer(request, query, headers), fault)

    async def _answer(self, request: Request, query: list[tuple[str, str]], headers: dict[str, str]) -> Response:
        """The recording that matches, else the backend's answer, else 404."""
        rec = self.store.find(request.method, request.url.path, query)
        if rec is not None:
            return Response(rec.body, rec.status, headers={**rec.headers, **headers})
        if self.backend is not None:
            capped = dict(_capped(query, self.state.max_page))
            found = self.backend(request.method, request.url.path, capped, await request.body())
            if found is not None:
                return _backend_response(found, headers)
        return JSONResponse({"error": "Not found", "message": "no recording for this request"}, 404, headers=headers)


def _backend_response(found: tuple, headers: dict[str, str]) -> Response:
    status, content, media_type = found
    if not isinstance(content, str | bytes):
        return JSONResponse(content, status, headers=headers)
    return Response(content, status, headers=headers, media_type=media_type)


def _spoilt(response: Response, fault: str | None) -> Response:
    """The answer as an ``empty`` or ``truncated`` random fault leaves it."""
    if fault == "empty":
        return Response(b"", 200, media_type=response.media_type)
    if fault == "truncated":
        return Response(response.body[: len(response.body) // 2], 200, media_type=response.media_type)
    return response


def _draw(chance: random.Random, rates: dict[str, float] | None) -> str | None:
    """The random fault for one request, or None."""
    if not rates:
        return None
    x, total = chance.random(), 0.0
    for kind, rate in rates.items():
        total += rate
        if x < total:
            return kind
    return None


def _capped(query: list[tuple[str, str]], max_page: int | None) -> list[tuple[str, str]]:
    """The query with its page size cut to ``max_page``."""
    if max_page is None:
        return query
    return [(k, str(min(int(v), max_page)) if k in _PAGE_PARAMS and v.isdigit() else v) for k, v in query]
