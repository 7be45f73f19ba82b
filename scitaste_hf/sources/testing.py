"""A local stand-in for OpenAlex, NASA ADS and arXiv: replay of recorded responses, fault injection, limits.

It is a real ASGI server (Starlette on uvicorn) bound to 127.0.0.1, started in its own process so that tests and
benchmarks exercise the clients over real HTTP::

    python -m scitaste_hf.sources.testing --fixtures scitaste_hf/data/recorded --port 0

or, from Python, ``with ServerProcess(fixtures=[...]) as server: ...``. The services sit where the offline
mirror has them (:mod:`scitaste_hf.sources.endpoints`: ``/openalex/works``, ``/ads/v1/search/query``,
``/arxiv/api/query``).

What it serves:

- **Replay**: every recorded interaction (``{"request": ..., "response": ...}`` files, the layout of the fixtures and
  of the client cache) under the prefix of its host, matched on path and query parameters (order-insensitive,
  credentials ignored, ``per_page`` = ``per-page``); when no recording matches exactly, the recording whose query
  parameters are all in the request and that has the most of them.
- **Synthetic works** (``--synthetic N``): a deterministic OpenAlex citation graph of N focal works with their
  references and citers, answering ``/works/W...`` and ``/works?filter=openalex:|cites:|cited_by:`` with cursor
  paging like OpenAlex (a full page carries a ``next_cursor``; the page after the last is empty).
- **Limits**: ``--rate-limit N`` answers 429 (``Retry-After: 1``) to a request that would make more than N in the
  last second; ``--daily-limit N`` counts down ``X-RateLimit-Remaining`` and answers 429 at zero;
  ``--latency S`` delays every answer; ``--require-token T`` answers 401 unless ``Authorization: Bearer T`` or
  ``api_key=T`` comes with the request; ``--max-page N`` answers at most N records a page, whatever
  ``per-page``, ``rows`` or ``max_results`` asked (a service that caps its page size; recordings are replayed as
  they are).
- **Faults**: ``POST /_control/faults`` with a JSON list queues answers for the next requests, each
  ``{"status": 429, "headers": {"Retry-After": "1"}, "body": "..."}`` (a canned answer) or ``{"delay": 2.0}``
  (a slow answer). ``GET /_control/log`` lists the requests seen and counters; ``POST /_control/reset`` clears.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import random
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self
from urllib.parse import parse_qsl, urlsplit

from scitaste_hf.sources.endpoints import mirror_path, mirror_route

_CREDENTIAL_PARAMS = {"api_key", "mailto"}
_PARAM_ALIASES = {"per_page": "per-page"}
#: The page-size parameters of the three services, which ``max_page`` caps.
_PAGE_PARAMS = ("per-page", "per_page", "rows", "max_results")


def _normal_params(pairs: Iterable[tuple[str, str]]) -> frozenset[tuple[str, str]]:
    return frozenset((_PARAM_ALIASES.get(k, k), v) for k, v in pairs if k not in _CREDENTIAL_PARAMS)


@dataclass
class Recording:
    """One recorded answer: status, headers and the body as bytes."""

    status: int
    headers: dict[str, str]
    body: bytes


class ReplayStore:
    """Recorded interactions indexed by method, served path and normalised query."""

    def __init__(self, dirs: Sequence[str | Path]) -> None:
        """:param dirs: directories searched recursively for ``*.json`` interaction files."""
        self._exact: dict[tuple[str, str, frozenset], Recording] = {}
        self._by_path: dict[tuple[str, str], list[tuple[frozenset, Recording]]] = {}
        for d in dirs:
            for path in sorted(Path(d).rglob("*.json")):
                self._add(json.loads(path.read_text(encoding="utf-8")))

    def __len__(self) -> int:
        return len(self._exact)

    def _add(self, entry: dict) -> None:
        if not isinstance(entry, dict) or "request" not in entry or "response" not in entry:
            return
        parts = urlsplit(entry["request"]["url"])
        served = mirror_path(entry["request"]["url"])
        params = _normal_params(parse_qsl(parts.query, keep_blank_values=True))
        resp = entry["response"]
        body = resp["body"]
        raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        headers = {k: v for k, v in resp.get("headers", {}).items() if k.lower() not in ("content-length",)}
        rec = Recording(resp["status"], headers, raw)
        method = entry["request"].get("method", "GET").upper()
        # The first recording of a request wins, so a directory's sort order decides between duplicates.
        self._exact.setdefault((method, served, params), rec)
        self._by_path.setdefault((method, served), []).append((params, rec))

    def find(self, method: str, path: str, query: Iterable[tuple[str, str]]) -> Recording | None:
        """The recording that answers a request, or None.

        :param method: HTTP method.
        :param path: request path as served (with the service prefix).
        :param query: decoded query parameters.
        """
        params = _normal_params(query)
        hit = self._exact.get((method, path, params))
        if hit is not None:
            return hit
        best = None
        for rec_params, rec in self._by_path.get((method, path), []):
            if rec_params <= params and (best is None or len(rec_params) > len(best[0])):
                best = (rec_params, rec)
        return best[1] if best else None


class SyntheticWorks:
    """A small deterministic OpenAlex citation graph: focal works, their references and their citers.

    Focal works are ``W1..Wn``, in sub-disciplines of ``field_size`` consecutive ids (the builder collects about
    125 candidates per sub-discipline). Each sub-discipline draws references and citers from its own pools, so
    works of one field share references and citers and works of different fields do not. References are numbered
    from 10,000,000 and citers from 20,000,000; citer counts are heavy-tailed and some works have none.
    """

    def __init__(self, n_focal: int, seed: int = 0, field_size: int = 125, refs: tuple[int, int] = (10, 60),
                 max_citers: int = 400, ref_pool: int = 40, citer_pool: int = 80) -> None:
        """:param n_focal: number of focal works.
        :param seed: random seed.
        :param field_size: focal works per sub-discipline.
        :param refs: range of reference counts per focal work.
        :param max_citers: most citers of one focal work.
        :param ref_pool: works a field's references are drawn from, per focal work (smaller: more sharing).
        :param citer_pool: works a field's citers are drawn from, per focal work (smaller: more sharing).
        """
        rng = random.Random(seed)
        self.n_focal = n_focal
        self.references: dict[int, list[int]] = {}
        self.citers: dict[int, list[int]] = {}
        self._cites: dict[int, set[int]] = {}
        for f in range(1, n_focal + 1):
            field = (f - 1) // field_size
            r0, c0 = field * ref_pool * field_size, field * citer_pool * field_size
            self.references[f] = sorted(rng.sample(range(r0, r0 + ref_pool * field_size), rng.randint(*refs)))
            n_cit = 0 if rng.random() < 0.1 else min(max_citers, int(rng.paretovariate(1.2) * 8))
            self.citers[f] = sorted(rng.sample(range(c0, c0 + citer_pool * field_size), n_cit))
            self.references[f] = [10_000_000 + r for r in self.references[f]]
            self.citers[f] = [20_000_000 + c for c in self.citers[f]]
            for c in self.citers[f]:
                self._cites.setdefault(c, set()).add(f)

    def record(self, k: int) -> dict | None:
        """The OpenAlex work record of ``W{k}``, or None if the graph has no such work.

        :param k: numeric part of the work id.
        """
        if 1 <= k <= self.n_focal:
            refs, cited_by = self.references[k], len(self.citers[k])
        elif k in self._cites:
            focal = sorted(self._cites[k])
            refs, cited_by = focal + self.references[focal[0]][:3], 0
        elif k >= 10_000_000:
            refs, cited_by = [], 1
        else:
            return None
        year = 1995 + k % 30
        return {
            "id": f"https://openalex.org/W{k}", "display_name": f"Synthetic work {k}",
            "publication_year": year, "publication_date": f"{year}-0{1 + k % 9}-1{k % 10}",
            "type": "article", "cited_by_count": cited_by, "referenced_works_count": len(refs),
            "referenced_works": [f"https://openalex.org/W{r}" for r in refs],
        }

    def listing(self, kind: str, ids: list[int]) -> list[int]:
        """Ids a ``filter=kind:W1|W2`` listing returns, sorted.

        :param kind: ``openalex``, ``cites`` or ``cited_by``.
        :param ids: numeric ids in the filter.
        """
        if kind == "openalex":
            return sorted(k for k in set(ids) if self.record(k) is not None)
        source = self.citers if kind == "cites" else self.references
        return sorted({w for k in ids for w in source.get(k, [])})


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
    window: deque = field(default_factory=deque)
    answered: int = 0
    rejected_429: int = 0

    def reset(self) -> None:
        """Forget faults, log, counters and the rate window."""
        self.faults.clear()
        self.log.clear()
        self.window.clear()
        self.answered = 0
        self.rejected_429 = 0


#: Kinds of random fault that ``fault_rates`` may ask for.
FAULT_KINDS = ("429", "500", "empty", "truncated", "slow")
#: Seconds a "slow" random fault waits before answering.
SLOW_SECONDS = 2.0


def build_app(fixtures: Sequence[str | Path] = (), *, synthetic: int = 0, pools: tuple[int, int] = (40, 80),
              rate_limit: int | None = None, daily_limit: int | None = None, latency: float = 0.0,
              require_token: str | None = None, max_page: int | None = None, backend=None,
              fault_rates: dict[str, float] | None = None, seed: int = 0):
    """The Starlette application of the replay/fault server.

    :param fixtures: directories of recorded interactions to replay.
    :param synthetic: number of focal works of the synthetic OpenAlex graph (0: none).
    :param pools: ``(ref_pool, citer_pool)`` of :class:`SyntheticWorks` (how much works of a field share).
    :param rate_limit: requests allowed in any one-second window, or None.
    :param daily_limit: requests allowed before ``X-RateLimit-Remaining`` hits zero, or None.
    :param latency: seconds added to every answer.
    :param require_token: credential the server insists on, or None.
    :param max_page: most records a page of the backend or the synthetic graph holds, whatever was asked; None: as
        asked.
    :param backend: answers what no recording matches: a callable ``(method, path, query, body)`` returning
        ``(status, content, media_type)`` or None (the offline mirror passes its simulated world here).
    :param fault_rates: share of requests answered with each random fault of :data:`FAULT_KINDS` (429 with
        ``Retry-After``, 500, an empty 200, a truncated 200, a slow answer), drawn from a generator seeded
        with ``seed``.
    """
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    store = ReplayStore(fixtures)
    graph = SyntheticWorks(synthetic, ref_pool=pools[0], citer_pool=pools[1]) if synthetic else None
    state = ServerState(rate_limit, daily_limit, latency, require_token, max_page)
    unknown = sorted(set(fault_rates or {}) - set(FAULT_KINDS))
    if unknown or sum((fault_rates or {}).values()) > 1:
        raise ValueError(f"fault rates must be kinds of {FAULT_KINDS} summing to at most 1, got {fault_rates}")
    chance = random.Random(seed)
    reset_at = int(time.time()) + 86_400

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "recordings": len(store)})

    async def control_faults(request: Request) -> Response:
        state.faults.extend(await request.json())
        return JSONResponse({"queued": len(state.faults)})

    async def control_log(request: Request) -> Response:
        return JSONResponse({"requests": list(state.log), "answered": state.answered,
                             "rejected_429": state.rejected_429})

    async def control_reset(request: Request) -> Response:
        state.reset()
        return JSONResponse({"ok": True})

    def budget_headers() -> dict[str, str]:
        if state.daily_limit is None:
            return {}
        remaining = max(0, state.daily_limit - state.answered)
        return {"X-RateLimit-Limit": str(state.daily_limit), "X-RateLimit-Remaining": str(remaining),
                "X-RateLimit-Reset": str(reset_at)}

    async def serve(request: Request) -> Response:
        query = list(parse_qsl(request.url.query, keep_blank_values=True))
        auth = request.headers.get("authorization", "")
        token_ok = state.require_token is None or auth == f"Bearer {state.require_token}" or (
            ("api_key", state.require_token) in query)
        # Requests are counted when they arrive, as a service's front end does, not when they are answered.
        now = time.monotonic()
        state.log.append({"method": request.method, "path": request.url.path, "query": request.url.query,
                          "authorization": bool(auth), "t": now})
        if state.rate_limit is not None:
            while state.window and state.window[0] <= now - 1.0:
                state.window.popleft()
            if len(state.window) >= state.rate_limit:
                state.rejected_429 += 1
                return JSONResponse({"error": "Too many requests"}, 429, headers={"Retry-After": "1"})
            state.window.append(now)
        if state.latency:
            await asyncio.sleep(state.latency)
        if state.faults:
            fault = state.faults.popleft()
            if "status" in fault:
                return Response(fault.get("body", ""), fault["status"], headers=fault.get("headers"))
            await asyncio.sleep(fault.get("delay", 0.0))
        if state.daily_limit is not None and state.answered >= state.daily_limit:
            state.rejected_429 += 1
            return JSONResponse({"error": "Too many requests"}, 429, headers=budget_headers())
        if not token_ok:
            return JSONResponse({"error": "Invalid or missing API key", "message": "API key not found"}, 401)
        state.answered += 1
        headers = budget_headers()
        fault = _draw(chance, fault_rates)
        if fault == "429":
            state.rejected_429 += 1
            return JSONResponse({"error": "Too many requests"}, 429, headers={"Retry-After": "1"})
        if fault == "500":
            return JSONResponse({"error": "Internal server error"}, 500)
        if fault == "slow":
            await asyncio.sleep(SLOW_SECONDS)
        response = await answer(request, query, headers)
        if fault == "empty":
            return Response(b"", 200, media_type=response.media_type)
        if fault == "truncated":
            return Response(response.body[: len(response.body) // 2], 200, media_type=response.media_type)
        return response

    async def answer(request: Request, query: list[tuple[str, str]], headers: dict[str, str]) -> Response:
        rec = store.find(request.method, request.url.path, query)
        if rec is not None:
            return Response(rec.body, rec.status, headers={**rec.headers, **headers})
        query = _capped(query, state.max_page)
        if backend is not None:
            found = backend(request.method, request.url.path, dict(query), await request.body())
            if found is not None:
                status, content, media_type = found
                if not isinstance(content, str | bytes):
                    return JSONResponse(content, status, headers=headers)
                return Response(content, status, headers=headers, media_type=media_type)
        service, path = mirror_route(request.url.path) or ("", "")
        if graph is not None and service == "openalex" and path.startswith("/works"):
            status, body = _synthetic_answer(graph, path, dict(query))
            return JSONResponse(body, status, headers=headers)
        return JSONResponse({"error": "Not found", "message": "no recording for this request"}, 404, headers=headers)

    routes = [
        Route("/health", health),
        Route("/_control/faults", control_faults, methods=["POST"]),
        Route("/_control/log", control_log),
        Route("/_control/reset", control_reset, methods=["POST"]),
        Route("/{path:path}", serve, methods=["GET", "POST"]),
    ]
    return Starlette(routes=routes)


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


def _synthetic_answer(graph: SyntheticWorks, path: str, query: dict[str, str]) -> tuple[int, dict]:
    rest = path.removeprefix("/works").strip("/")
    if rest:
        rec = graph.record(int(rest[1:])) if rest[:1] == "W" and rest[1:].isdigit() else None
        return (200, rec) if rec else (404, {"error": "Not found"})
    kind, _, values = query.get("filter", "").partition(":")
    if kind not in ("openalex", "cites", "cited_by"):
        return 400, {"error": "Invalid query parameters error.", "message": f"{kind} is not a valid field."}
    ids = [int(v.removeprefix("https://openalex.org/")[1:]) for v in values.split("|") if v]
    matches = graph.listing(kind, ids)
    per_page = int(query.get("per-page") or query.get("per_page") or 25)
    cursor = query.get("cursor")
    offset = 0 if cursor in (None, "*") else int(base64.b64decode(cursor))
    page = matches[offset:offset + per_page]
    next_cursor = base64.b64encode(str(offset + per_page).encode()).decode() if cursor and page else None
    meta = {"count": len(matches), "per_page": per_page, "next_cursor": next_cursor,
            "page": None if cursor else 1}
    return 200, {"meta": meta, "results": [graph.record(k) for k in page], "group_by": []}


def write_recordings(folder: str | Path, entries: Iterable[tuple[str, str, int, object]]) -> Path:
    """Write interactions as recording files (the layout the server replays) and return the folder.

    :param folder: directory to write into; created if missing.
    :param entries: ``(method, url, status, body)`` each; ``body`` is JSON-serialisable or raw text, ``url`` is the
        service's real URL (its host picks the prefix it is served under).
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    for i, (method, url, status, body) in enumerate(entries):
        kind = "application/atom+xml" if isinstance(body, str) else "application/json"
        entry = {"request": {"method": method, "url": url},
                 "response": {"status": status, "headers": {"content-type": kind}, "body": body}}
        (folder / f"recording_{i:04d}.json").write_text(json.dumps(entry), encoding="utf-8")
    return folder


class ServerProcess:
    """The server in a child process on 127.0.0.1, for tests and benchmarks (a context manager).

    :param fixtures: directories of recorded interactions to replay.
    :param synthetic: focal works of the synthetic OpenAlex graph (0: none).
    :param pools: ``(ref_pool, citer_pool)`` of the synthetic graph.
    :param rate_limit: requests allowed in any one-second window, or None.
    :param daily_limit: requests allowed before the budget runs out, or None.
    :param latency: seconds added to every answer.
    :param require_token: credential the server insists on, or None.
    :param max_page: most records a page holds, whatever was asked, or None.
    :param port: port to bind; 0 picks a free one.
    """

    def __init__(self, fixtures: Sequence[str | Path] = (), *, synthetic: int = 0, pools: tuple[int, int] = (40, 80),
                 rate_limit: int | None = None, daily_limit: int | None = None, latency: float = 0.0,
                 require_token: str | None = None, max_page: int | None = None, port: int = 0) -> None:
        self.args = [sys.executable, "-m", "scitaste_hf.sources.testing", "--port", str(port),
                     "--latency", str(latency), "--synthetic", str(synthetic), "--pools", f"{pools[0]},{pools[1]}"]
        for d in fixtures:
            self.args += ["--fixtures", str(d)]
        if rate_limit is not None:
            self.args += ["--rate-limit", str(rate_limit)]
        if daily_limit is not None:
            self.args += ["--daily-limit", str(daily_limit)]
        if require_token is not None:
            self.args += ["--require-token", require_token]
        if max_page is not None:
            self.args += ["--max-page", str(max_page)]
        self.proc: subprocess.Popen | None = None
        self.url = ""

    def __enter__(self) -> Self:
        self.proc = subprocess.Popen(self.args, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("READY "):
            self.stop()
            raise RuntimeError(f"test server did not start: {line!r}")
        self.url = line.split()[1]
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        """Terminate the server process and wait for it."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def _control(self, method: str, name: str, payload: object = None) -> dict:
        import httpx

        resp = httpx.request(method, f"{self.url}/_control/{name}", json=payload, timeout=10)
        resp.raise_for_status()
        return resp.json()

    def add_faults(self, *faults: dict) -> None:
        """Queue canned answers (or delays) for the next requests.

        :param faults: ``{"status": ..., "headers": ..., "body": ...}`` or ``{"delay": seconds}`` each.
        """
        self._control("POST", "faults", list(faults))

    def requests_log(self) -> dict:
        """The requests the server saw and its counters (``answered``, ``rejected_429``)."""
        return self._control("GET", "log")

    def reset(self) -> None:
        """Clear queued faults, the request log, counters and the rate window."""
        self._control("POST", "reset")


def main(argv: list[str] | None = None) -> None:
    """Run the server in the foreground; prints ``READY <url>`` once it accepts connections.

    :param argv: command-line arguments (see ``--help``).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", action="append", default=[], help="directory of recordings (repeatable)")
    parser.add_argument("--synthetic", type=int, default=0, help="focal works of the synthetic OpenAlex graph")
    parser.add_argument("--pools", default="40,80",
                        help="works per focal work that a field's references,citers are drawn from")
    parser.add_argument("--rate-limit", type=int, default=None, help="requests allowed per second")
    parser.add_argument("--daily-limit", type=int, default=None, help="requests before the budget is spent")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every answer")
    parser.add_argument("--require-token", default=None, help="credential the server insists on")
    parser.add_argument("--max-page", type=int, default=None, help="most records a page holds, whatever was asked")
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: any free port)")
    args = parser.parse_args(argv)

    import uvicorn

    pools = tuple(int(p) for p in args.pools.split(","))
    app = build_app(args.fixtures, synthetic=args.synthetic, pools=pools, rate_limit=args.rate_limit,
                    daily_limit=args.daily_limit, latency=args.latency, require_token=args.require_token,
                    max_page=args.max_page)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    # Listening before READY is printed: connections made right after it queue in the backlog.
    sock.listen(1024)
    print(f"READY http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                                           timeout_keep_alive=30))
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
