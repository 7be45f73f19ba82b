"""Replay of recorded interactions: the ``{"request": ..., "response": ...}`` files of the fixtures and of the
client cache, served under the mirror prefix of their host (:mod:`scitaste_hf.sources.endpoints`).

A request is matched on method, path and query parameters, order-insensitive, credentials ignored, ``per_page`` =
``per-page``; when no recording matches exactly, the recording whose query parameters are all in the request and
that has the most of them answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from scitaste_hf.sources.endpoints import mirror_path

_CREDENTIAL_PARAMS = {"api_key", "mailto"}
_PARAM_ALIASES = {"per_page": "per-page"}


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
