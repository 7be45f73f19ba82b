"""arXiv client over the Atom API (``/api/query``): id lookups and queries, parsed with an XML parser.

arXiv asks for at most one request every 3 seconds on a single connection; that is the default here. Ids are not
checked locally: arXiv has several id schemes and is the authority on them, and its 400 answer ("incorrect id
format for ...") becomes a one-line error.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime

from scitaste_hf.sources.endpoints import LIVE
from scitaste_hf.sources.entities import ArxivEntry, in_order
from scitaste_hf.sources.errors import BadRequestError, InvalidIdentifierError
from scitaste_hf.sources.options import ClientOptions
from scitaste_hf.sources.paging import OffsetListing
from scitaste_hf.sources.transport import ATOM_NS, Call, ServiceClient, Transport

DEFAULT_BASE_URL = LIVE["arxiv"]
ARXIV_NS = "{http://arxiv.org/schemas/atom}"
OPENSEARCH_NS = "{http://a9.com/-/spec/opensearch/1.1/}"
_ABS = re.compile(r"^https?://arxiv\.org/abs/(.+?)(?:v(\d+))?$")
_VERSION = re.compile(r"^(.+?)(?:v(\d+))?$")
_WS = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class ArxivFeed:
    """One page of an Atom answer: the entries and the OpenSearch counters."""

    total_results: int
    start_index: int
    items_per_page: int
    entries: tuple[ArxivEntry, ...]


def _text(el: ET.Element, tag: str) -> str | None:
    child = el.find(tag)
    return _WS.sub(" ", child.text).strip() if child is not None and child.text else None


def _time(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text) if text else None


def _int(root: ET.Element, tag: str) -> int:
    return int(_text(root, OPENSEARCH_NS + tag) or 0)


def strip_version(arxiv_id: str) -> str:
    """An arXiv id without its version suffix (``2104.12255v1`` -> ``2104.12255``).

    :param arxiv_id: new-style or old-style arXiv id.
    """
    return _VERSION.match(arxiv_id.strip()).group(1)


def parse_feed(root: ET.Element) -> ArxivFeed:
    """The entries and counters of an arXiv Atom feed.

    :param root: the ``<feed>`` element.
    :raises BadRequestError: when the feed is arXiv's error feed (an entry whose id is an ``/api/errors`` URL),
        which arXiv also sends with status 200.
    """
    entries = []
    for entry in root.findall(ATOM_NS + "entry"):
        entry_id = _text(entry, ATOM_NS + "id") or ""
        if "/api/errors" in entry_id:
            raise BadRequestError(f"arXiv rejected the request: {_text(entry, ATOM_NS + 'summary')}")
        m = _ABS.match(entry_id)
        if m is None:
            continue
        primary = entry.find(ARXIV_NS + "primary_category")
        entries.append(ArxivEntry(
            id=m.group(1),
            version=int(m.group(2)) if m.group(2) else None,
            title=_text(entry, ATOM_NS + "title") or "",
            summary=_text(entry, ATOM_NS + "summary") or "",
            authors=tuple(_text(a, ATOM_NS + "name") or "" for a in entry.findall(ATOM_NS + "author")),
            published=_time(_text(entry, ATOM_NS + "published")),
            updated=_time(_text(entry, ATOM_NS + "updated")),
            primary_category=primary.get("term") if primary is not None else None,
            categories=tuple(c.get("term", "") for c in entry.findall(ATOM_NS + "category")),
            doi=_text(entry, ARXIV_NS + "doi"),
            journal_ref=_text(entry, ARXIV_NS + "journal_ref"),
            comment=_text(entry, ARXIV_NS + "comment"),
        ))
    return ArxivFeed(_int(root, "totalResults"), _int(root, "startIndex"), _int(root, "itemsPerPage"),
                     tuple(entries))


def _query(*, search_query: str = "", id_list: str = "", start: int = 0, max_results: int = 100,
           sort_by: str = "relevance", sort_order: str = "descending") -> Call:
    # The parameter set of arXiv's documented client, so recordings of it replay unchanged.
    return Call("GET", "/query", {"search_query": search_query, "id_list": id_list, "sortBy": sort_by,
                                  "sortOrder": sort_order, "start": start, "max_results": max_results})


def _page(root: ET.Element) -> tuple[tuple[ArxivEntry, ...], int]:
    feed = parse_feed(root)
    return feed.entries, feed.total_results


def _search(query: str, page_size: int, limit: int | None, sort_by: str,
            sort_order: str) -> OffsetListing[ArxivEntry]:
    """``start``/``max_results`` paging of a ``search_query``, each page no larger than ``limit`` still allows."""
    def call(start: int, size: int) -> Call:
        return _query(search_query=query, start=start, max_results=size, sort_by=sort_by, sort_order=sort_order)
    return OffsetListing(call, _page, page_size, limit)


def _lookup(ids: list[str]) -> OffsetListing[ArxivEntry]:
    """An ``id_list`` request for a batch of ids, paged on should arXiv answer fewer entries than it found."""
    def call(start: int, size: int) -> Call:
        return _query(id_list=",".join(ids), start=start, max_results=size)
    return OffsetListing(call, _page, max(100, len(ids)))


class ArxivClient(ServiceClient):
    """Client of the arXiv Atom API.

    :param base_url: API root (``.../api``; requests go to ``/query``).
    :param cache_dir: directory of the response cache; None disables it.
    :param offline: answer from the cache only.
    :param record: always ask the service and (over)write the cache.
    :param min_interval: seconds between two requests (arXiv asks for 3); 0 disables the limit (tests, mirror).
    :param batch_size: ids per ``id_list`` request.
    :param timeout: seconds per request.
    :param max_retries: retries after a failed attempt.
    :param backoff: ``(first step, longest wait)`` in seconds of the jittered exponential backoff between retries.
    """

    def __init__(self, *, base_url: str = DEFAULT_BASE_URL, cache_dir: str | None = None, offline: bool = False,
                 record: bool = False, min_interval: float = 3.0, batch_size: int = 100, timeout: float = 60.0,
                 max_retries: int = 5, backoff: tuple[float, float] = (0.5, 30.0)) -> None:
        self.batch_size = batch_size
        # arXiv asks for one request at a time, ``min_interval`` seconds apart.
        options = ClientOptions(base_url=base_url, cache_dir=cache_dir, offline=offline, record=record,
                                rate_limit=(1, min_interval) if min_interval > 0 else None, max_connections=1,
                                timeout=timeout, max_retries=max_retries, backoff=backoff)
        self.transport = Transport("arXiv", options, expect="atom")

    def get_entries(self, ids: Iterable[str]) -> list[ArxivEntry]:
        """E-prints by id, :attr:`batch_size` ids per request.

        :param ids: arXiv ids, new (``1707.08567``) or old style (``astro-ph/0601001``), with or without version.
        :returns: the entries found, in the order of ``ids``; unknown ids are left out.
        """
        wanted, lookups = self._lookups(ids)
        return in_order(map(strip_version, wanted), (e for lookup in lookups for e in self.transport.records(lookup)))

    def get_entry(self, arxiv_id: str) -> ArxivEntry | None:
        """One e-print by id, or None if arXiv has none.

        :param arxiv_id: arXiv id, with or without version.
        """
        entries = self.get_entries([arxiv_id])
        return entries[0] if entries else None

    def search(self, query: str, *, page_size: int = 100, limit: int | None = None,
               sort_by: str = "relevance", sort_order: str = "descending") -> Iterator[ArxivEntry]:
        """E-prints matching a query (``search_query=``), paged with ``start``/``max_results``.

        :param query: arXiv query, e.g. ``cat:hep-th AND ti:holography`` or ``testing``.
        :param page_size: ``max_results`` per request.
        :param limit: stop after this many entries.
        :param sort_by: ``relevance``, ``lastUpdatedDate`` or ``submittedDate``.
        :param sort_order: ``ascending`` or ``descending``.
        """
        yield from self.transport.records(_search(query, page_size, limit, sort_by, sort_order))

    def _lookups(self, ids: Iterable[str]) -> tuple[list[str], list[OffsetListing[ArxivEntry]]]:
        """The distinct ids, stripped, and one ``id_list`` listing per :attr:`batch_size` of them (one request,
        unless arXiv answers fewer entries than it found)."""
        wanted = list(dict.fromkeys(i.strip() for i in ids))
        if "" in wanted:
            raise InvalidIdentifierError("an arXiv id is empty; expected e.g. 1707.08567 or astro-ph/0601001")
        batches = (wanted[i:i + self.batch_size] for i in range(0, len(wanted), self.batch_size))
        return wanted, [_lookup(b) for b in batches]
