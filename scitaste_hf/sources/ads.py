"""NASA ADS client: ``/search/query`` with ``fl``, ``rows`` and ``cursorMark`` paging, the ``citations()`` and
``references()`` operators, and bibcode batches through ``/search/bigquery``.

ADS allows 5,000 search requests a day by default and says how many are left in ``X-RateLimit-*`` headers; the
transport keeps one budget per endpoint and refuses to send once it is spent, instead of collecting 429s. Pages
are as large as ADS allows (``rows`` up to 2,000) because the daily budget, not time, is what runs out.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Iterator

from scitaste_hf.constants import ADS_API_TOKEN
from scitaste_hf.sources.credentials import missing_secret, resolve_secret
from scitaste_hf.sources.endpoints import LIVE
from scitaste_hf.sources.entities import ADSRecord, in_order
from scitaste_hf.sources.errors import InvalidIdentifierError
from scitaste_hf.sources.limits import RateLimitStatus
from scitaste_hf.sources.options import ClientOptions
from scitaste_hf.sources.paging import OffsetListing, Tally
from scitaste_hf.sources.transport import Call, Credential, ServiceClient, Transport

DEFAULT_BASE_URL = LIVE["ads"]
#: Fields asked for by default: what the classifier, the index and the tools read.
DEFAULT_FIELDS = ("bibcode", "title", "year", "pubdate", "doi", "identifier", "bibstem", "pub", "author", "aff",
                  "citation_count", "reference", "keyword", "arxiv_class", "abstract", "doctype", "property")
MAX_ROWS = 2000
_BIBCODE = re.compile(r"^\d{4}[A-Za-z0-9&.]{5}[A-Za-z0-9.]{4}[A-Za-z0-9.:]{5}[A-Z.]$")
_ARXIV_PREFIX = "arxiv:"
_BIBCODE_OF = operator.attrgetter("bibcode")


def bibcode(value: str) -> str:
    """A validated 19-character ADS bibcode; raises on anything else.

    :param value: the bibcode, e.g. ``1998PhRvA..58.3983S``.
    """
    text = value.strip() if isinstance(value, str) else ""
    if not _BIBCODE.match(text):
        raise InvalidIdentifierError(
            f"not an ADS bibcode: {value!r} (expected 19 characters: year, journal, volume, page, initial, "
            "e.g. 1998PhRvA..58.3983S)")
    return text


def _first(value: object) -> str | None:
    if isinstance(value, list):
        return str(value[0]) if value else None
    return None if value is None else str(value)


def _tuple(value: object) -> tuple[str, ...]:
    if value is None:
        return ()
    return tuple(str(v) for v in value) if isinstance(value, list) else (str(value),)


def parse_doc(doc: dict) -> ADSRecord:
    """An :class:`ADSRecord` from one document of an ADS search response.

    :param doc: the document (any subset of fields; ``bibcode`` is required).
    """
    arxiv_id = next((i[len(_ARXIV_PREFIX):] for i in doc.get("identifier") or []
                     if i.lower().startswith(_ARXIV_PREFIX)), None)
    year = doc.get("year")
    return ADSRecord(
        bibcode=doc["bibcode"],
        title=_first(doc.get("title")),
        year=int(year) if year not in (None, "") else None,
        pubdate=doc.get("pubdate"),
        doi=(_first(doc.get("doi")) or "").lower() or None,
        arxiv_id=arxiv_id,
        bibstem=_first(doc.get("bibstem")),
        pub=doc.get("pub"),
        authors=_tuple(doc.get("author")),
        affiliations=_tuple(doc.get("aff")),
        citation_count=doc.get("citation_count"),
        references=_tuple(doc.get("reference")),
        citations=_tuple(doc.get("citation")),
        keywords=_tuple(doc.get("keyword")),
        arxiv_class=_tuple(doc.get("arxiv_class")),
        abstract=doc.get("abstract"),
        doctype=doc.get("doctype"),
        properties=_tuple(doc.get("property")),
    )


def _fields(fl: Iterable[str]) -> str:
    return ",".join(dict.fromkeys(["bibcode", *fl]))


def _page(data: dict) -> tuple[list[dict], int | None]:
    """The documents of a search answer and the ``numFound`` it announced."""
    body = data.get("response") or {}
    return body.get("docs") or [], body.get("numFound")


def _records(data: dict) -> tuple[list[ADSRecord], int | None]:
    docs, found = _page(data)
    return [parse_doc(doc) for doc in docs], found


class _CursorListing:
    """``cursorMark`` paging of one ``/search/query``, to the end :class:`~scitaste_hf.sources.paging.Tally`
    decides; a cursor that does not move offers no further page.

    :param q: the ADS query.
    :param fields: the ``fl=`` value.
    :param rows: page size.
    :param sort: sort order, ending on a unique field.
    :param limit: most documents wanted, or None.
    """

    def __init__(self, q: str, fields: str, rows: int, sort: str, limit: int | None) -> None:
        self._params = {"q": q, "fl": fields, "rows": rows, "sort": sort}
        self._tally = Tally(limit)
        self._cursor: str | None = "*"

    def next_call(self) -> Call | None:
        """The request for the next page, or None after the last."""
        return None if self._cursor is None else Call("GET", "/search/query",
                                                      {**self._params, "cursorMark": self._cursor})

    def feed(self, data: dict) -> list[ADSRecord]:
        """The documents of a page, at most as many as ``limit`` still allows.

        :param data: the page's JSON.
        """
        docs, found = _page(data)
        records = [parse_doc(doc) for doc in self._tally.take(docs)]
        next_cursor = data.get("nextCursorMark")
        more = bool(docs) and bool(next_cursor) and next_cursor != self._cursor
        # Ending as soon as the limit is reached saves the daily budget a request whose documents would all be
        # dropped.
        self._cursor = None if self._tally.ends(found, more) else next_cursor
        return records

    def shortfall(self) -> tuple[int, int] | None:
        """``(documents seen, numFound)`` if the listing has just ended short of ``numFound``, else None."""
        return self._tally.shortfall


class ADSClient(ServiceClient):
    """Client of the NASA ADS API.

    :param base_url: API root including the version (``.../v1``).
    :param token: ADS API token; default ``$ADS_API_TOKEN``; sent as ``Authorization: Bearer``, never stored or
        logged. Needed only when a request has to be sent (not for cache hits).
    :param cache_dir: directory of the response cache; None disables it.
    :param offline: answer from the cache only.
    :param record: always ask the service and (over)write the cache.
    :param rate_limit: ``(requests, seconds)`` allowed.
    :param max_connections: most requests in flight.
    :param rows: page size of searches (at most 2,000).
    :param timeout: seconds per request.
    :param max_retries: retries after a failed attempt.
    :param backoff: ``(first step, longest wait)`` in seconds of the jittered exponential backoff between retries.
    """

    def __init__(self, *, base_url: str = DEFAULT_BASE_URL, token: str | None = None, cache_dir: str | None = None,
                 offline: bool = False, record: bool = False, rate_limit: tuple[int, float] = (5, 1.0),
                 max_connections: int = 4, rows: int = MAX_ROWS, timeout: float = 60.0,
                 max_retries: int = 5, backoff: tuple[float, float] = (0.5, 30.0)) -> None:
        creds = []
        if tok := resolve_secret(token, ADS_API_TOKEN):
            creds.append(Credential(tok, header="Authorization", prefix="Bearer "))
        self.rows = max(1, min(rows, MAX_ROWS))
        options = ClientOptions(base_url=base_url, cache_dir=cache_dir, offline=offline, record=record,
                                rate_limit=rate_limit, max_connections=max_connections, timeout=timeout,
                                max_retries=max_retries, backoff=backoff)
        self.transport = Transport(
            "NASA ADS", options, expect="json", credentials=tuple(creds),
            credential_env=(ADS_API_TOKEN,), budget_scope="path",
            required_credential=missing_secret(ADS_API_TOKEN, "NASA ADS needs the API token of your ADS account "
                                                              "(its settings page; or pass token=)"))

    def budget(self, endpoint: str = "/search/query") -> RateLimitStatus:
        """The daily budget ADS last reported for an endpoint (limit, remaining, reset time).

        :param endpoint: endpoint path below the base URL.
        """
        return self.transport.budget_status(endpoint)

    def search(self, q: str, *, fl: Iterable[str] = DEFAULT_FIELDS, sort: str = "bibcode asc",
               limit: int | None = None) -> Iterator[ADSRecord]:
        """Documents matching a query, cursor-paged (``cursorMark``) with ``rows`` per request.

        :param q: ADS query, e.g. ``first_author:"Sudilovsky"`` or ``citations(bibcode:...)``.
        :param fl: fields to return (``bibcode`` is always added).
        :param sort: sort order; it must end on a unique field for ``cursorMark`` paging (``bibcode``).
        :param limit: stop after this many documents.
        """
        yield from self.transport.records(self._listing(q, fl, sort, limit))

    def citations(self, code: str, *, fl: Iterable[str] = DEFAULT_FIELDS) -> Iterator[ADSRecord]:
        """Documents citing a bibcode (``citations(bibcode:...)``).

        :param code: the cited document's bibcode.
        :param fl: fields to return.
        """
        return self.search(f"citations(bibcode:{bibcode(code)})", fl=fl)

    def references(self, code: str, *, fl: Iterable[str] = DEFAULT_FIELDS) -> Iterator[ADSRecord]:
        """Documents a bibcode cites (``references(bibcode:...)``).

        :param code: the citing document's bibcode.
        :param fl: fields to return.
        """
        return self.search(f"references(bibcode:{bibcode(code)})", fl=fl)

    def get_records(self, bibcodes: Iterable[str], *, fl: Iterable[str] = DEFAULT_FIELDS) -> list[ADSRecord]:
        """Many documents by bibcode through ``/search/bigquery``, ``rows`` bibcodes per request.

        :param bibcodes: bibcodes; duplicates are asked once.
        :param fl: fields to return.
        :returns: the documents found, in the order of ``bibcodes``.
        """
        codes, lookups = self._lookups(bibcodes, fl)
        return in_order(codes, (rec for lookup in lookups for rec in self.transport.records(lookup)), _BIBCODE_OF)

    def _listing(self, q: str, fl: Iterable[str], sort: str, limit: int | None) -> _CursorListing:
        rows = self.rows if limit is None else max(1, min(self.rows, limit))
        return _CursorListing(q, _fields(fl), rows, sort, limit)

    def _lookups(self, bibcodes: Iterable[str],
                 fl: Iterable[str]) -> tuple[list[str], list[OffsetListing[ADSRecord]]]:
        """The distinct bibcodes, checked, and one ``/search/bigquery`` listing per ``rows`` of them (one request,
        unless the service answers fewer documents than it found)."""
        codes = list(dict.fromkeys(bibcode(b) for b in bibcodes))
        fields = _fields(fl)
        return codes, [OffsetListing(self._bigquery(codes[i:i + self.rows], fields), _records,
                                     min(self.rows, len(codes) - i)) for i in range(0, len(codes), self.rows)]

    @staticmethod
    def _bigquery(batch: list[str], fields: str) -> Callable[[int, int], Call]:
        content = ("bibcode\n" + "\n".join(batch)).encode()

        def call(start: int, rows: int) -> Call:
            # start=0 is left out, so the first request is the same as a lookup that needs only one.
            return Call("POST", "/search/bigquery", {"q": "*:*", "fl": fields, "rows": rows, "start": start or None},
                        content=content, headers={"Content-Type": "big-query/csv"})
        return call
