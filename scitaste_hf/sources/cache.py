"""Persistent response cache: one plain JSON file per request.

A file has the layout of the recorded fixtures (``scitaste_hf/data/recorded/``)::

    {"request": {"method": "GET", "url": "..."},
     "response": {"status": 200, "headers": {...}, "body": <parsed JSON or raw text>}}

so that a cache filled by a real run can be read by a person, diffed, committed as a fixture, and served by the
mirror's replay (:mod:`scitaste_hf.mirror.replay`). The key is the request without credentials (the transport
never hands them to the cache), with the query parameters sorted, so the same question always maps to the same
file whatever the parameter order or the key used.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import orjson

from scitaste_hf.output import write_bytes_atomic

log = logging.getLogger("scitaste_hf.sources")

# Headers worth keeping: what tells the content type and the rate-limit state. Anything else (cookies, tracing
# ids) is noise at best and personal at worst.
_KEPT_HEADERS = ("content-type", "date", "retry-after")
_KEPT_PREFIXES = ("x-ratelimit-", "ratelimit-")
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass(frozen=True, slots=True)
class CachedResponse:
    """A response read back from the cache."""

    status: int
    headers: dict[str, str]
    body: object


def canonical_request(method: str, url: str, content: bytes | None = None) -> str:
    """The text a request is keyed on: method, URL with sorted query parameters, and a digest of the body.

    :param method: HTTP method, any case.
    :param url: absolute URL without credentials.
    :param content: request body (for POST), or None.
    """
    parts = urlsplit(url)
    query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    text = f"{method.upper()} {parts.scheme}://{parts.netloc}{parts.path}?{query}"
    if content:
        text += " body-sha256=" + hashlib.sha256(content).hexdigest()
    return text


def loads(data: bytes) -> object:
    """A JSON text parsed at orjson's speed (a build parses some 10^3 pages of up to 200 works), as
    :func:`json.loads` parses it: what orjson refuses and the standard library accepts (NaN, a lone surrogate) goes
    to the standard library. One difference is left, as a check would cost more than the parse: an integer beyond
    64 bits, which none of the three services sends, comes back as a float.

    :param data: the JSON text (UTF-8).
    :raises ValueError: when it is not JSON.
    """
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def _dumps(entry: dict) -> bytes:
    try:
        return orjson.dumps(entry)
    except TypeError:  # orjson.JSONEncodeError: an integer beyond 64 bits, which only the standard library writes
        return json.dumps(entry, ensure_ascii=False).encode("utf-8")


def keep_headers(headers: dict[str, str]) -> dict[str, str]:
    """The subset of response headers that the cache stores (content type, date, rate-limit headers).

    :param headers: response headers with lower-case names.
    """
    return {k: v for k, v in headers.items() if k in _KEPT_HEADERS or k.startswith(_KEPT_PREFIXES)}


@lru_cache(maxsize=256)
def _entry_name(method: str, url: str, content: bytes | None) -> str:
    # Kept: a request that misses is looked up, then stored, and a batched URL's canonical form is some 10^3
    # characters quoted one by one.
    canonical = canonical_request(method, url, content)
    digest = hashlib.sha256(canonical.encode()).hexdigest()[:20]
    parts = urlsplit(url)
    slug = _UNSAFE.sub("_", f"{parts.path}_{parts.query}").strip("_")[:80]
    host = _UNSAFE.sub("_", parts.netloc) or "local"
    return f"{host}/{slug}_{digest}.json"


class ResponseCache:
    """Plain-file response cache under ``root/<host>/``."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        """:param root: cache directory; created on the first write."""
        self.root = Path(root)

    def path_for(self, method: str, url: str, content: bytes | None = None) -> Path:
        """The file that holds (or would hold) the response to a request.

        The name starts with a readable slug of the path and query, so a person can find an entry with ``ls``;
        the digest of the canonical request makes it unique.

        :param method: HTTP method.
        :param url: absolute URL without credentials.
        :param content: request body, or None.
        """
        return self.root / _entry_name(method, url, content)

    def load(self, method: str, url: str, content: bytes | None = None) -> CachedResponse | None:
        """The cached response to a request, or None on a miss.

        :param method: HTTP method.
        :param url: absolute URL without credentials.
        :param content: request body, or None.
        """
        path = self.path_for(method, url, content)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        try:
            entry = loads(raw)["response"]
            return CachedResponse(status=int(entry["status"]), headers=dict(entry["headers"]), body=entry["body"])
        except (ValueError, KeyError, TypeError) as exc:
            # A truncated or edited entry (a crash before the disk had it all): a miss, fetched and rewritten again.
            log.warning("ignoring the unreadable cache entry %s (%s: %s)", path, type(exc).__name__, exc)
            return None

    def store(self, method: str, url: str, content: bytes | None, status: int, headers: dict[str, str],
              body: object) -> Path:
        """Write a response atomically (a reader never sees half a file) and return its path.

        :param method: HTTP method.
        :param url: absolute URL without credentials; stored as the entry's ``request.url``.
        :param content: request body, or None; only its digest takes part in the key.
        :param status: HTTP status.
        :param headers: response headers, lower-case names; filtered by :func:`keep_headers`.
        :param body: parsed JSON or raw text.
        """
        path = self.path_for(method, url, content)
        path.parent.mkdir(parents=True, exist_ok=True)
        entry = {
            "request": {"method": method.upper(), "url": url},
            "response": {"status": status, "headers": keep_headers(headers), "body": body},
        }
        return write_bytes_atomic(path, _dumps(entry))
