"""The HTTP layer shared by the OpenAlex, ADS and arXiv clients (on httpx).

One request goes: cache lookup (``offline`` stops here on a miss) -> a connection slot (bounded concurrency) ->
the host's rate limit -> the ``X-RateLimit`` budget check -> send -> classify. Connection errors, timeouts, 429,
5xx and 200s whose body is empty or not the expected JSON/Atom are retried by tenacity with full-jitter exponential
backoff, waiting at least what ``Retry-After`` asks; 400/401/403/404 become one-line errors. 200 and 404 answers are
written to the cache.

A listing's paging is a :class:`Pager`, an object without I/O that says which request comes next and what an
answer yields. :meth:`Transport.records` runs one listing with :meth:`Transport.request`; :meth:`Transport.agather`
runs several concurrently on an async connection pool of its own (what the builder's snowball uses), sending the
same requests with the same limits, retries, cache and errors. A listing that ends with fewer records than the
server announced is logged and counted (:attr:`TransportStats.short_listings`).

Credentials are added to the request only at send time: the cache key, the stored URL, logs and error messages
are built from the URL without them, and every message is passed through :meth:`Transport.redact` as well.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeVar

import httpx
import tenacity

from scitaste_hf import __version__
from scitaste_hf.net.retry import AtLeastRetryAfter, retry_after_seconds
from scitaste_hf.net.tls import ssl_context
from scitaste_hf.sources.cache import CachedResponse, ResponseCache, loads
from scitaste_hf.sources.errors import (
    AuthError,
    BadRequestError,
    BudgetExhausted,
    NotFoundError,
    OfflineCacheMiss,
    ServiceUnavailable,
    SourceError,
)
from scitaste_hf.sources.limits import RateLimitStatus, budget_for, throttle_for
from scitaste_hf.sources.options import ClientOptions

log = logging.getLogger("scitaste_hf.sources")

Expect = Literal["json", "atom", "text"]
ATOM_NS = "{http://www.w3.org/2005/Atom}"
_CACHED_STATUSES = (200, 404)
_USER_AGENT = f"scitaste-hf/{__version__}"
_WS = re.compile(r"\s+")
T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)


@dataclass(frozen=True, slots=True)
class Credential:
    """A secret and where the request carries it.

    :param value: the secret itself.
    :param query_param: name of the query parameter that carries it, or None.
    :param header: name of the header that carries it, or None.
    :param prefix: text before the value in the header (``"Bearer "``).
    """

    value: str
    query_param: str | None = None
    header: str | None = None
    prefix: str = ""


@dataclass(frozen=True, slots=True)
class Response:
    """A classified response.

    :param status: HTTP status (200 or 404; other statuses raise).
    :param headers: response headers, lower-case names.
    :param data: parsed JSON, or the Atom feed's root element; None for a 404 without a parsable body.
    :param url: the request URL without credentials.
    :param from_cache: True when no request was sent.
    """

    status: int
    headers: dict[str, str]
    data: object
    url: str
    from_cache: bool


@dataclass(frozen=True, slots=True)
class Call:
    """One request as a pager asks for it: the arguments of :meth:`Transport.request`.

    :param method: HTTP method.
    :param path: path below the base URL.
    :param params: query parameters without credentials.
    :param content: request body, or None.
    :param headers: extra request headers.
    """

    method: str
    path: str
    params: dict[str, object] | None = None
    content: bytes | None = None
    headers: dict[str, str] | None = None


class Pager(Protocol[T_co]):
    """The paging of one listing without I/O: which request comes next, and what its answer yields.

    :meth:`Transport.records` and :meth:`Transport.agather` run it, so a listing pages the same way sync and async.
    """

    def next_call(self) -> Call | None:
        """The next request to send, or None when the listing is complete."""

    def feed(self, data: Any) -> list[T_co]:
        """The records of the answer to the last :meth:`next_call`, and the state moved on to the next request.

        :param data: the answer's parsed body (:attr:`Response.data`).
        """

    def shortfall(self) -> tuple[int, int] | None:
        """``(records seen, count announced)`` when the last :meth:`feed` ended a listing short of the count the
        server announced, else None."""


@dataclass
class TransportStats:
    """Counters of what a transport did; ``sent`` counts HTTP requests that left the process."""

    sent: int = 0
    cache_hits: int = 0
    retries: int = 0
    statuses: Counter = field(default_factory=Counter)
    #: Listings that ended with fewer records than the server announced.
    short_listings: int = 0


class _Retryable(Exception):
    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class Transport:
    """HTTP access to one service, with rate limit, budget, retries and cache.

    :param service: display name used in messages (``"OpenAlex"``).
    :param options: where the service is, its rate limit, connections, timeout, retries and cache.
    :param expect: body kind a 200 must carry: ``"json"``, ``"atom"`` or ``"text"`` (any body but an empty one,
        as a string: a file the mirror serves).
    :param credentials: secrets to attach at send time.
    :param credential_env: environment variables that provide the service's key, named in 401/403 messages.
    :param required_credential: message of the :class:`AuthError` raised when a request must be sent but no
        credential is set (None: credentials are optional).
    :param budget_scope: ``"path"`` to keep one ``X-RateLimit`` budget per endpoint path (ADS), ``"host"`` for one
        per host (OpenAlex).
    """

    def __init__(self, service: str, options: ClientOptions, *, expect: Expect = "json",
                 credentials: tuple[Credential, ...] = (), credential_env: tuple[str, ...] = (),
                 required_credential: str | None = None, budget_scope: Literal["host", "path"] = "host") -> None:
        if options.offline and options.cache_dir is None:
            raise SourceError(f"{service}: offline mode needs a cache directory (cache_dir=...)")
        if options.offline and options.record:
            raise SourceError(f"{service}: record mode sends requests, so it cannot be combined with offline")
        parsed = httpx.URL(options.base_url)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise SourceError(f"{service}: base URL {options.base_url!r} is not an http(s) URL with a host")
        if options.max_retries < 0:
            raise SourceError(f"{service}: max_retries must be 0 or more, got {options.max_retries}")
        self.service = service
        self.options = options
        self.base_url = options.base_url.rstrip("/")
        self.expect: Expect = expect
        self.offline = options.offline
        self.record = options.record
        self.cache = ResponseCache(options.cache_dir) if options.cache_dir is not None else None
        self.stats = TransportStats()
        self._max_connections = options.max_connections
        self._timeout = httpx.Timeout(options.timeout)
        self._max_retries = options.max_retries
        self._backoff = options.backoff
        self._max_retry_after = options.max_retry_after
        self._credentials = tuple(c for c in credentials if c.value)
        self._env_vars = credential_env
        self._required_credential = required_credential
        self._budget_scope = budget_scope
        self._origin = str(httpx.URL(self.base_url).copy_with(path="/", query=None)).rstrip("/")
        self._throttle = throttle_for(self._origin, *(options.rate_limit or (None, 1.0)))
        self._stats_lock = threading.Lock()
        self._sync_slots = threading.BoundedSemaphore(options.max_connections)
        self._sync_client: httpx.Client | None = None

    # ----------------------------------------------------------------------------------------- public API

    def url(self, path: str, params: dict[str, object] | None = None) -> str:
        """The request URL without credentials (what the cache, logs and messages show).

        :param path: path below the base URL, starting with ``/``.
        :param params: query parameters; None values are dropped.
        """
        return str(self._target(path, params))

    def _target(self, path: str, params: dict[str, object] | None) -> httpx.URL:
        # Parsed once per request and sent as it is: httpx checks every character of a URL each time it parses
        # one, and the OpenAlex client's batched filters run to some 1,500 characters.
        clean = {k: str(v) for k, v in (params or {}).items() if v is not None}
        return httpx.URL(self.base_url + path, params=clean)

    def request(self, method: str, path: str, params: dict[str, object] | None = None, *,
                content: bytes | None = None, headers: dict[str, str] | None = None,
                not_found_ok: bool = False) -> Response:
        """Send (or serve from the cache) one request and return the classified response.

        :param method: HTTP method.
        :param path: path below the base URL.
        :param params: query parameters without credentials.
        :param content: request body, or None.
        :param headers: extra request headers (never credentials: those come from the transport).
        :param not_found_ok: return a 404 response instead of raising :class:`NotFoundError`.
        :raises SourceError: on a 400/401/403/404, an offline miss, an exhausted budget or when retries run out.
        """
        target = self._target(path, params)
        url = str(target)
        response = self._cached(method, url, content)
        if response is None:
            try:
                for attempt in tenacity.Retrying(**self._retry_policy()):
                    with attempt:
                        sent = self._send_sync(method, url, target, content, headers)
            except _Retryable as exc:
                raise ServiceUnavailable(self._gave_up(method, url, exc)) from None
            response = self._finish(method, url, content, sent)
        return self._found(method, response, not_found_ok)

    def records(self, pager: Pager[T]) -> Iterator[T]:
        """The records of a listing; each page is asked for only once the records before it have been consumed.

        :param pager: the listing's paging state.
        """
        while (call := pager.next_call()) is not None:
            records = pager.feed(self.request(call.method, call.path, call.params, content=call.content,
                                              headers=call.headers).data)
            self._check_count(pager, call)
            yield from records

    async def agather(self, pagers: Iterable[Pager[T]], done: Callable[[], None] | None = None) -> list[list[T]]:
        """The records of several listings, run concurrently within the connection limit, each listing sending the
        requests :meth:`records` would; the async connection pool lives as long as the call.

        :param pagers: the listings' paging states.
        :param done: called each time a listing is complete (progress).
        :returns: one list of records per pager, in the order of ``pagers``.
        :raises SourceError: the first listing's error; the listings still running are cancelled and awaited, not
            left to send requests in the background.
        """
        async with self._new_client(httpx.AsyncClient) as client:
            slots = asyncio.Semaphore(self._max_connections)
            tasks = [asyncio.ensure_future(self._acollect(client, slots, p, done)) for p in pagers]
            try:
                return list(await asyncio.gather(*tasks))
            except BaseException:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

    async def _acollect(self, client: httpx.AsyncClient, slots: asyncio.Semaphore, pager: Pager[T],
                        done: Callable[[], None] | None) -> list[T]:
        records: list[T] = []
        while (call := pager.next_call()) is not None:
            records += pager.feed((await self._arequest(client, slots, call)).data)
            self._check_count(pager, call)
        if done is not None:
            done()
        return records

    async def _arequest(self, client: httpx.AsyncClient, slots: asyncio.Semaphore, call: Call) -> Response:
        """:meth:`request` of a pager's call on :meth:`agather`'s pool: the same cache, limits, retries and errors."""
        target = self._target(call.path, call.params)
        url = str(target)
        response = self._cached(call.method, url, call.content)
        if response is None:
            try:
                async for attempt in tenacity.AsyncRetrying(**self._retry_policy()):
                    with attempt:
                        sent = await self._send_async(client, slots, call.method, url, target, call.content,
                                                      call.headers)
            except _Retryable as exc:
                raise ServiceUnavailable(self._gave_up(call.method, url, exc)) from None
            response = self._finish(call.method, url, call.content, sent)
        return self._found(call.method, response, not_found_ok=False)

    @property
    def rate_limit(self) -> tuple[int, float] | None:
        """The ``(requests, seconds)`` this transport allows the host, or None for no limit."""
        return None if self._throttle.limit is None else (self._throttle.limit, self._throttle.period_s)

    @property
    def rate_limit_status(self) -> RateLimitStatus:
        """The ``X-RateLimit-*`` state last reported by the service, whatever the endpoint."""
        return budget_for(self._origin, "").status

    def budget_status(self, path: str) -> RateLimitStatus:
        """The ``X-RateLimit-*`` state of the budget that a request to ``path`` draws on.

        :param path: path below the base URL.
        """
        return budget_for(self._origin, self._scope(self.url(path))).status

    def redact(self, text: str) -> str:
        """``text`` with every credential value replaced by ``***``.

        :param text: any message, URL or log line.
        """
        for cred in self._credentials:
            text = text.replace(cred.value, "***")
        return text

    def close(self) -> None:
        """Close the sync connection pool (:meth:`agather` closes its own)."""
        if self._sync_client is not None:
            self._sync_client.close()
            self._sync_client = None

    # ----------------------------------------------------------------------------------------- internals

    def _check_count(self, pager: Pager[object], call: Call) -> None:
        if (short := pager.shortfall()) is None:
            return
        with self._stats_lock:
            self.stats.short_listings += 1
        log.warning("%s: a listing ended after %d of the %d records the service announced; the rest are missing "
                    "[%s %s]", self.service, *short, call.method, self.url(call.path, call.params))

    def _cached(self, method: str, url: str, content: bytes | None) -> Response | None:
        if self.cache is None or self.record:
            return None
        entry = self.cache.load(method, url, content)
        if entry is None:
            if self.offline:
                raise OfflineCacheMiss(
                    f"{self.service}: {method} {url} is not in the cache at {self.cache.root} and offline mode "
                    "is on; run once without --offline to fill the cache")
            return None
        with self._stats_lock:
            self.stats.cache_hits += 1
        return Response(entry.status, entry.headers, self._decode_cached(entry), url, from_cache=True)

    def _found(self, method: str, response: Response, not_found_ok: bool) -> Response:
        if response.status == 404 and not not_found_ok:
            raise NotFoundError(f"{self.service} answered HTTP 404 (not found) [{method} {response.url}]; "
                                "check the identifier and base_url")
        return response

    def _decode_cached(self, entry: CachedResponse) -> object:
        if entry.status == 200 and self.expect == "text":
            return entry.body
        if entry.status == 200 and self.expect == "atom":
            return _parse_atom(entry.body)
        return _parse_any(entry.body) if isinstance(entry.body, str) else entry.body

    def _retry_policy(self) -> dict[str, object]:
        base, cap = self._backoff
        return {
            "stop": tenacity.stop_after_attempt(self._max_retries + 1),
            # full-jitter exponential backoff, but never shorter than the server's Retry-After
            "wait": AtLeastRetryAfter(tenacity.wait_random_exponential(multiplier=base, max=cap)),
            "retry": tenacity.retry_if_exception_type(_Retryable),
            "before_sleep": self._log_retry,
            "reraise": True,
        }

    def _log_retry(self, retry_state: tenacity.RetryCallState) -> None:
        with self._stats_lock:
            self.stats.retries += 1
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        wait = retry_state.next_action.sleep if retry_state.next_action else 0.0
        log.warning("%s: %s; retry %d in %.1f s", self.service, self.redact(str(exc)),
                    retry_state.attempt_number, wait)

    def _gave_up(self, method: str, url: str, exc: _Retryable) -> str:
        return self.redact(f"{self.service} kept failing: {exc} after {self._max_retries + 1} attempts "
                           f"[{method} {url}]; try again later")

    def _prepare(self, target: httpx.URL, headers: dict[str, str] | None) -> tuple[httpx.URL, dict[str, str]]:
        if self._required_credential and not self._credentials:
            raise AuthError(self._required_credential)
        send_headers = {"User-Agent": _USER_AGENT, **(headers or {})}
        query = {}
        for cred in self._credentials:
            if cred.query_param:
                query[cred.query_param] = cred.value
            if cred.header:
                send_headers[cred.header] = cred.prefix + cred.value
        return (target.copy_merge_params(query) if query else target), send_headers

    def _scope(self, url: str) -> str:
        return httpx.URL(url).path if self._budget_scope == "path" else ""

    def _send_sync(self, method: str, url: str, target: httpx.URL, content: bytes | None,
                   headers: dict[str, str] | None) -> tuple[httpx.Response, object]:
        send_url, send_headers = self._prepare(target, headers)
        with self._stats_lock:
            if self._sync_client is None:
                self._sync_client = self._new_client(httpx.Client)
        # The connection slot is taken first, so that no request holds a place in the rate window while it
        # queues for a connection.
        with self._sync_slots, self._throttle.slot():
            self._spend(url)
            try:
                raw = self._sync_client.request(method, send_url, content=content, headers=send_headers)
            except httpx.HTTPError as exc:
                raise self._http_error(method, url, exc) from None
        return raw, self._classify(method, url, raw)

    async def _send_async(self, client: httpx.AsyncClient, slots: asyncio.Semaphore, method: str, url: str,
                          target: httpx.URL, content: bytes | None,
                          headers: dict[str, str] | None) -> tuple[httpx.Response, object]:
        send_url, send_headers = self._prepare(target, headers)
        # As in _send_sync: the connection slot first, then the place in the rate window.
        async with slots, self._throttle.aslot():
            self._spend(url)
            try:
                raw = await client.request(method, send_url, content=content, headers=send_headers)
            except httpx.HTTPError as exc:
                raise self._http_error(method, url, exc) from None
        return raw, self._classify(method, url, raw)

    def _http_error(self, method: str, url: str, exc: httpx.HTTPError) -> Exception:
        # httpx messages can carry the URL as sent, credentials included: only the redacted text goes on.
        reason = self.redact(f"{type(exc).__name__}: {exc}")
        if isinstance(exc, httpx.TransportError | httpx.DecodingError):
            return _Retryable(reason)
        return SourceError(f"{self.service}: {reason} [{method} {url}]")

    def _new_client(self, cls: type[httpx.Client | httpx.AsyncClient]) -> httpx.Client | httpx.AsyncClient:
        limits = httpx.Limits(max_connections=self._max_connections, max_keepalive_connections=self._max_connections)
        return cls(timeout=self._timeout, limits=limits, follow_redirects=True, verify=ssl_context())

    def _spend(self, url: str) -> None:
        # Checked at the last moment, once the request has its turn: callers that were queued behind the one
        # that saw the budget reach zero must not send.
        budget_for(self._origin, self._scope(url)).check(self.service)
        with self._stats_lock:
            self.stats.sent += 1

    def _classify(self, method: str, url: str, raw: httpx.Response) -> object:
        """The parsed body of an acceptable response; raises for anything else."""
        status = raw.status_code
        headers = {k.lower(): v for k, v in raw.headers.items()}
        with self._stats_lock:
            self.stats.statuses[status] += 1
        budget = budget_for(self._origin, self._scope(url))
        budget.update(headers)
        if self._scope(url):
            budget_for(self._origin, "").update(headers)
        where = f"[{method} {url}]"
        if status == 200:
            return self._validated_body(raw)
        if status == 404:
            return _parse_any(raw.text)
        detail = self.redact(error_detail(raw.text))
        if status == 429 and budget.exhausted():
            raise BudgetExhausted(budget.message(self.service))
        if status == 429 or status >= 500:
            retry_after = _retry_after(headers)
            if retry_after is not None and retry_after > self._max_retry_after:
                raise ServiceUnavailable(
                    f"{self.service} asked to wait {retry_after:.0f} s before retrying (HTTP {status}), more than "
                    f"the {self._max_retry_after:.0f} s allowed {where}; try again later")
            if retry_after:
                self._throttle.pause(retry_after)
            raise _Retryable(f"HTTP {status}", retry_after)
        if status == 400:
            raise BadRequestError(f"{self.service} rejected the request (HTTP 400: {detail}) {where}")
        if status in (401, 403):
            sent = "the credential was refused" if self._credentials else "no credential was sent"
            env = " or ".join(self._env_vars) or "the service's API key"
            raise AuthError(f"{self.service} refused the request (HTTP {status}: {detail}): {sent}; "
                            f"set {env} to a valid key {where}")
        raise SourceError(f"{self.service} answered HTTP {status}: {detail} {where}")

    def _validated_body(self, raw: httpx.Response) -> object:
        if not raw.content.strip():
            raise _Retryable("HTTP 200 with an empty body")
        if self.expect == "text":
            return raw.text
        if self.expect == "atom":
            try:
                return _parse_atom(raw.text)
            except (ET.ParseError, ValueError) as exc:
                raise _Retryable(f"HTTP 200 whose body is not an Atom feed ({exc})") from None
        try:
            # JSON is UTF-8 (RFC 8259); a body in another charset the response names is decoded as httpx does.
            data = loads(raw.content) if (raw.charset_encoding or "utf-8").lower() in ("utf-8", "utf8") \
                else json.loads(raw.text)
        except ValueError as exc:
            raise _Retryable(f"HTTP 200 whose body is not JSON ({exc})") from None
        if not isinstance(data, dict):
            raise _Retryable("HTTP 200 whose body is not a JSON object")
        return data

    def _finish(self, method: str, url: str, content: bytes | None,
                sent: tuple[httpx.Response, object]) -> Response:
        raw, data = sent
        headers = {k.lower(): v for k, v in raw.headers.items()}
        if self.cache is not None and raw.status_code in _CACHED_STATUSES:
            body = raw.text if self.expect != "json" or not isinstance(data, dict) else data
            self.cache.store(method, url, content, raw.status_code, headers, body)
        log.debug("%s %s -> %d", method, url, raw.status_code)
        return Response(raw.status_code, headers, data, url, from_cache=False)


def _parse_atom(text: str) -> ET.Element:
    # The stdlib parser does not fetch external entities and bounds entity expansion (expat >= 2.4.1).
    root = ET.fromstring(text)
    if root.tag != ATOM_NS + "feed":
        raise ValueError(f"root element is {root.tag}, not an Atom feed")
    return root


def _parse_any(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None


def error_detail(text: str, limit: int = 300) -> str:
    """One line saying what the service objected to, from a JSON or Atom error body.

    :param text: the response body.
    :param limit: longest detail returned; longer ones are cut with ``...``.
    """
    detail = ""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        err = data.get("error")
        parts = [err.get("msg", "") if isinstance(err, dict) else err, data.get("message")]
        detail = ": ".join(str(p) for p in parts if p)
    elif text.lstrip().startswith("<"):
        try:
            root = ET.fromstring(text)
            detail = "; ".join(s.text or "" for s in root.iter(ATOM_NS + "summary"))
        except ET.ParseError:
            detail = ""
    detail = _WS.sub(" ", detail or text or "no details").strip()
    return detail if len(detail) <= limit else detail[: limit - 3] + "..."


def _retry_after(headers: dict[str, str]) -> float | None:
    return retry_after_seconds(headers.get("retry-after"))


class ServiceClient:
    """What the three clients share: a :class:`Transport`, its counters, and closing (also as a context manager)."""

    transport: Transport

    @property
    def stats(self) -> TransportStats:
        """Requests sent, cache hits, retries and statuses seen by this client."""
        return self.transport.stats

    def close(self) -> None:
        """Close the sync connection pool."""
        self.transport.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

