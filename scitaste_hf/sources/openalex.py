"""OpenAlex client: works one by one and in batches, citers and references with cursor paging, sources, topics
and the subfield candidate search of the dataset builder.

Listings use ``filter=openalex:|cites:|cited_by:`` with up to :data:`MAX_OR_VALUES` ids OR-ed in one filter (the
service's limit) and cursor paging, which follows ``next_cursor`` until ``meta.count`` records have come (so the
always-empty page after the last is not asked for), the cursor is null or a page is empty
(:mod:`~scitaste_hf.sources.paging`). A listing's paging is one object without I/O that the transport runs sync, or
concurrently with others in :meth:`OpenAlexClient.afetch_plan` (the builder's snowball), sending the same requests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from datetime import date

from scitaste_hf.constants import OPENALEX_API_KEY, OPENALEX_MAILTO
from scitaste_hf.sources.credentials import resolve_secret
from scitaste_hf.sources.endpoints import LIVE
from scitaste_hf.sources.entities import Authorship, Concept, Institution, Snowball, Source, Topic, Work, in_order
from scitaste_hf.sources.errors import InvalidIdentifierError, NotFoundError, SourceError
from scitaste_hf.sources.limits import RateLimitStatus
from scitaste_hf.sources.options import ClientOptions
from scitaste_hf.sources.paging import Tally
from scitaste_hf.sources.snowball import MAX_OR_VALUES, SnowballPlan, plan_snowball
from scitaste_hf.sources.transport import Call, Credential, Response, ServiceClient, Transport

DEFAULT_BASE_URL = LIVE["openalex"]
#: Top-level fields for ``select=``: a list, a comma-separated string, or None for all.
Select = Iterable[str] | str | None
_KINDS = {"W": "work", "S": "source", "T": "topic", "A": "author", "I": "institution", "C": "concept"}
_ID = re.compile(r"^(?:https?://(?:api\.)?openalex\.org/(?:\w+/)?)?([WSTAICPF])(\d+)$", re.IGNORECASE)


def openalex_id(value: str, kind: str = "W") -> str:
    """The short OpenAlex id (``W2741809807``) of an id or URL; raises on anything else.

    :param value: ``W123``, ``w123`` or ``https://openalex.org/W123``.
    :param kind: expected entity letter: W work, S source, T topic, A author, I institution, C concept.
    """
    m = _ID.match(value.strip()) if isinstance(value, str) else None
    if m is None or m.group(1).upper() != kind:
        raise InvalidIdentifierError(
            f"not an OpenAlex {_KINDS.get(kind, kind)} id: {value!r} (expected {kind} followed by digits, "
            f"e.g. {kind}2741809807, or its https://openalex.org/ URL)")
    return kind + m.group(2)


def _short(url: str | None) -> str | None:
    return url.rsplit("/", 1)[-1] if url else None


def _doi(url: str | None) -> str | None:
    return url.lower().removeprefix("https://doi.org/") if url else None


def _date(text: str | None) -> date | None:
    try:
        return date.fromisoformat(text) if text else None
    except ValueError:
        return None


def abstract_from_inverted_index(index: dict[str, list[int]] | None) -> str | None:
    """Rebuild an abstract from OpenAlex's ``abstract_inverted_index`` (word -> positions).

    :param index: the inverted index, or None.
    """
    if not index:
        return None
    slots: dict[int, str] = {}
    for word, positions in index.items():
        for p in positions:
            slots[p] = word
    return " ".join(slots[p] for p in sorted(slots))


def parse_topic(data: dict) -> Topic:
    """A :class:`Topic` from an OpenAlex topic object (inside a work or from ``/topics/T...``).

    :param data: the topic object.
    """
    # Positional and without helpers: a build parses some 4 x 10^4 topics.
    sub, fld, dom = data.get("subfield") or {}, data.get("field") or {}, data.get("domain") or {}
    sub_id, fld_id, dom_id = sub.get("id"), fld.get("id"), dom.get("id")
    return Topic(data["id"].rsplit("/", 1)[-1] if data["id"] else None, data.get("display_name", ""),
                 data.get("score"), sub_id.rsplit("/", 1)[-1] if sub_id else None, sub.get("display_name"),
                 fld_id.rsplit("/", 1)[-1] if fld_id else None, fld.get("display_name"),
                 dom_id.rsplit("/", 1)[-1] if dom_id else None, dom.get("display_name"))


def parse_work(data: dict) -> Work:
    """A :class:`Work` from an OpenAlex work object (full or reduced by ``select=``).

    :param data: the work object.
    :raises SourceError: when the object has neither ``id`` nor ``ids`` (a ``select=`` without them).
    """
    ids = data.get("ids") or {}
    work_id = data.get("id") or ids.get("openalex")
    if not work_id:
        raise SourceError('OpenAlex returned works without an id: include "id" in select=')
    source = ((data.get("primary_location") or {}).get("source")) or {}
    authorships = tuple(
        Authorship(author_id=_short((a.get("author") or {}).get("id")),
                   display_name=(a.get("author") or {}).get("display_name"),
                   institution_ids=tuple(_short(i["id"]) for i in a.get("institutions") or [] if i.get("id")),
                   countries=tuple(a.get("countries") or ()))
        for a in data.get("authorships") or [])
    primary = data.get("primary_topic")
    return Work(
        id=openalex_id(work_id),
        doi=_doi(data.get("doi") or ids.get("doi")),
        title=data.get("title") or data.get("display_name"),
        publication_year=data.get("publication_year"),
        publication_date=_date(data.get("publication_date")),
        type=data.get("type"),
        language=data.get("language"),
        cited_by_count=data.get("cited_by_count"),
        referenced_works=tuple([w.rsplit("/", 1)[-1] if w else None for w in data.get("referenced_works") or ()]),
        referenced_works_count=data.get("referenced_works_count"),
        source_id=_short(source.get("id")),
        source_name=source.get("display_name"),
        issn_l=source.get("issn_l"),
        issns=tuple(source.get("issn") or ()),
        authorships=authorships,
        countries=tuple(sorted({c for a in authorships for c in a.countries})),
        primary_topic=parse_topic(primary) if primary else None,
        topics=tuple(parse_topic(t) for t in data.get("topics") or ()),
        concepts=tuple(parse_concept(c) for c in data.get("concepts") or ()),
        abstract=abstract_from_inverted_index(data.get("abstract_inverted_index")),
        counts_by_year=tuple((c["year"], c.get("cited_by_count", 0)) for c in data.get("counts_by_year") or ()),
        pmid=_short(ids.get("pmid")),
    )


def parse_source(data: dict) -> Source:
    """A :class:`Source` from an OpenAlex source object.

    :param data: the source object.
    """
    stats = data.get("summary_stats") or {}
    return Source(id=_short(data["id"]), display_name=data.get("display_name", ""), issn_l=data.get("issn_l"),
                  issns=tuple(data.get("issn") or ()), type=data.get("type"),
                  host_organization_name=data.get("host_organization_name"),
                  works_count=data.get("works_count"), cited_by_count=data.get("cited_by_count"),
                  two_year_mean_citedness=stats.get("2yr_mean_citedness"), h_index=stats.get("h_index"))


def parse_concept(data: dict) -> Concept:
    """A :class:`Concept` from an OpenAlex concept object (in a work, or from ``/concepts/C...``).

    :param data: the concept object.
    """
    return Concept(_short(data["id"]), data.get("display_name", ""), data.get("level"), data.get("score"))


def parse_institution(data: dict) -> Institution:
    """An :class:`Institution` from an OpenAlex institution object.

    :param data: the institution object.
    """
    return Institution(id=_short(data["id"]), display_name=data.get("display_name", ""),
                       country_code=data.get("country_code"), type=data.get("type"), ror=data.get("ror"))


def _unique(ids: Iterable[str] | str) -> list[str]:
    if isinstance(ids, str):
        ids = [ids]
    return list(dict.fromkeys(openalex_id(i) for i in ids))


def _batches(ids: list[str]) -> Iterator[list[str]]:
    for i in range(0, len(ids), MAX_OR_VALUES):
        yield ids[i:i + MAX_OR_VALUES]


def _select(select: Select) -> str | None:
    if select is None:
        return None
    return select if isinstance(select, str) else ",".join(select)


def _and(filter: str, also: str | None) -> str:
    """``filter`` with the clauses of ``also`` ANDed to it (OpenAlex ANDs comma-separated clauses); unchanged
    without ``also``, so that a listing without one sends, and caches, the same request as before."""
    return f"{filter},{also}" if also else filter


def _split(plan: SnowballPlan, pages: list[list[Work]]) -> tuple[list[Work], list[Work]]:
    """References and citers, each once, from the works of each of the plan's listings."""
    out: dict[str, dict[str, Work]] = {"references": {}, "citers": {}}
    for (kind, _), works in zip(plan.filters(), pages, strict=True):
        for work in works:
            out[kind].setdefault(work.id, work)
    return list(out["references"].values()), list(out["citers"].values())


def _snowball(works: list[Work], references: list[Work], citers: list[Work]) -> Snowball:
    # Focal works cited by other focal works are not fetched again; they are references all the same.
    fetched = {w.id for w in references}
    cited = {r for w in works for r in w.referenced_works}
    references += [w for w in works if w.id in cited and w.id not in fetched]
    return Snowball(tuple(works), tuple(references), tuple(citers))


class _Listing:
    """Cursor paging of one ``/works`` listing (or of another entity's, ``path`` and ``parse``), to the end
    :class:`~scitaste_hf.sources.paging.Tally` decides.

    :param filter: the ``filter=`` value.
    :param select: top-level fields to ask for (None: all).
    :param search: ``search=`` terms, or None.
    :param sort: ``sort=`` value, or None.
    :param limit: most works wanted, or None.
    :param page_size: largest ``per-page``.
    :param path: the listing's endpoint.
    :param parse: a record from a result's JSON.
    """

    def __init__(self, filter: str, select: Select, search: str | None, sort: str | None, limit: int | None,
                 page_size: int, path: str = "/works", parse: Callable[[dict], object] = parse_work) -> None:
        per_page = page_size if limit is None else max(1, min(page_size, limit))
        self._params = {"filter": filter, "search": search, "sort": sort, "select": _select(select),
                        "per-page": per_page}
        self._tally = Tally(limit)
        self._cursor: str | None = "*"
        self._path, self._parse = path, parse

    def next_call(self) -> Call | None:
        """The request for the next page, or None after the last."""
        return None if self._cursor is None else Call("GET", self._path, {**self._params, "cursor": self._cursor})

    def feed(self, data: dict) -> list:
        """The records of a page, at most as many as ``limit`` still allows.

        :param data: the page's JSON.
        """
        results, meta = data.get("results") or [], data.get("meta") or {}
        works = [self._parse(item) for item in self._tally.take(results)]
        next_cursor = meta.get("next_cursor")
        more = bool(results) and next_cursor is not None and next_cursor != self._cursor
        self._cursor = None if self._tally.ends(meta.get("count"), more) else next_cursor
        return works

    def shortfall(self) -> tuple[int, int] | None:
        """``(works seen, count announced)`` if the listing has just ended short of ``meta.count``, else None."""
        return self._tally.shortfall


class _Union:
    """Listings of id batches one after another, each work once (works of one field share citers and references).

    :param listings: the batches' listings.
    """

    def __init__(self, listings: Iterable[_Listing]) -> None:
        self._listings = iter(listings)
        self._current = next(self._listings, None)
        self._seen: set[str] = set()

    def next_call(self) -> Call | None:
        """The request for the next page of the current batch, or of the next batch once it is done."""
        while self._current is not None:
            if (call := self._current.next_call()) is not None:
                return call
            self._current = next(self._listings, None)
        return None

    def feed(self, data: dict) -> list[Work]:
        """The works of a page that no earlier page had.

        :param data: the page's JSON.
        """
        fresh = []
        for work in self._current.feed(data):
            if work.id not in self._seen:
                self._seen.add(work.id)
                fresh.append(work)
        return fresh

    def shortfall(self) -> tuple[int, int] | None:
        """The shortfall of the batch's listing that the last page ended, if any."""
        return self._current.shortfall()


class OpenAlexClient(ServiceClient):
    """Client of the OpenAlex API.

    :param base_url: API root (the service, a mirror or a test server).
    :param api_key: OpenAlex API key; default ``$OPENALEX_API_KEY``; sent as ``api_key=``, never stored or logged.
    :param mailto: contact address for OpenAlex's polite pool; default ``$OPENALEX_MAILTO``; treated like a secret.
    :param cache_dir: directory of the response cache; None disables it.
    :param offline: answer from the cache only; a miss raises :class:`~scitaste_hf.sources.errors.OfflineCacheMiss`.
    :param record: always ask the service and (over)write the cache.
    :param rate_limit: ``(requests, seconds)`` allowed (OpenAlex caps everyone at 100/s).
    :param max_connections: most requests in flight.
    :param page_size: ``per-page`` of cursor listings (OpenAlex accepts up to 200).
    :param timeout: seconds per request.
    :param max_retries: retries after a failed attempt.
    :param backoff: ``(first step, longest wait)`` in seconds of the jittered exponential backoff between retries.
    """

    def __init__(self, *, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None, mailto: str | None = None,
                 cache_dir: str | None = None, offline: bool = False, record: bool = False,
                 rate_limit: tuple[int, float] = (10, 1.0), max_connections: int = 8, page_size: int = 200,
                 timeout: float = 30.0, max_retries: int = 5, backoff: tuple[float, float] = (0.5, 30.0)) -> None:
        creds = []
        if key := resolve_secret(api_key, OPENALEX_API_KEY):
            creds.append(Credential(key, query_param="api_key"))
        if mail := resolve_secret(mailto, OPENALEX_MAILTO):
            creds.append(Credential(mail, query_param="mailto"))
        self.page_size = page_size
        options = ClientOptions(base_url=base_url, cache_dir=cache_dir, offline=offline, record=record,
                                rate_limit=rate_limit, max_connections=max_connections, timeout=timeout,
                                max_retries=max_retries, backoff=backoff)
        self.transport = Transport("OpenAlex", options, expect="json", credentials=tuple(creds),
                                   credential_env=(OPENALEX_API_KEY,))

    @property
    def rate_limit_status(self) -> RateLimitStatus:
        """The last ``x-ratelimit-*`` state OpenAlex reported (limit, remaining, reset time)."""
        return self.transport.rate_limit_status

    # ------------------------------------------------------------------------------------------- works

    def get_work(self, work_id: str, select: Select = None) -> Work:
        """One work by id (``/works/W...``).

        :param work_id: OpenAlex work id or URL.
        :param select: top-level fields to ask for, including ``id`` (None: all).
        :raises NotFoundError: when OpenAlex has no such work.
        """
        wid = openalex_id(work_id)
        resp = self.transport.request("GET", f"/works/{wid}", {"select": _select(select)}, not_found_ok=True)
        return self._work(resp, wid)

    def _work(self, resp: Response, wid: str) -> Work:
        if resp.status == 404:
            raise NotFoundError(f"OpenAlex has no work {wid}")
        return parse_work(resp.data)

    def get_works(self, work_ids: Iterable[str], select: Select = None) -> list[Work]:
        """Many works, :data:`MAX_OR_VALUES` per request (``filter=openalex:W1|W2|...``).

        :param work_ids: work ids or URLs; duplicates are asked once.
        :param select: top-level fields to ask for (None: all).
        :returns: the works found, in the order of ``work_ids``; ids OpenAlex does not know are left out.
        """
        ids = _unique(work_ids)
        return in_order(ids, (w for listing in self._lookups(ids, select) for w in self.transport.records(listing)))

    def iter_citing(self, work_ids: Iterable[str] | str, select: Select = None) -> Iterator[Work]:
        """Works that cite any of the given works (``filter=cites:...``), each once.

        :param work_ids: one work id or many (OR-ed, :data:`MAX_OR_VALUES` per listing).
        :param select: top-level fields to ask for (None: all); keep ``referenced_works`` for a CD index.
        """
        yield from self.transport.records(self._union("cites", work_ids, select))

    def iter_references(self, work_ids: Iterable[str] | str,
                        select: Select = None) -> Iterator[Work]:
        """Works that the given works cite (``filter=cited_by:...``), as full records, each once.

        :param work_ids: one work id or many (OR-ed, :data:`MAX_OR_VALUES` per listing).
        :param select: top-level fields to ask for (None: all).
        """
        yield from self.transport.records(self._union("cited_by", work_ids, select))

    def snowball(self, work_ids: Iterable[str], select: Select = None) -> Snowball:
        """The builder's access pattern: focal works, their references and their citers, in few requests.

        Metadata comes in batches of :data:`MAX_OR_VALUES`; references and citers come from the listings that
        :func:`~scitaste_hf.sources.snowball.plan_snowball` chooses, which group works that share references so that
        a shared record is fetched once.

        :param work_ids: focal work ids or URLs.
        :param select: top-level fields of the references and citers (None: all); focal works come in full.
        """
        works = self.get_works(work_ids)
        return _snowball(works, *self.fetch_plan(self.snowball_plan(works), select))

    def snowball_plan(self, works: Iterable[Work]) -> SnowballPlan:
        """The listings that fetch the references and citers of works in hand (:func:`plan_snowball`), for this
        client's page size.

        :param works: focal works with ``referenced_works`` and ``cited_by_count``, grouped by field where known.
        """
        works = list(works)
        return plan_snowball([w.id for w in works], [w.referenced_works for w in works],
                             [w.cited_by_count or 0 for w in works], page_size=self.page_size)

    def fetch_plan(self, plan: SnowballPlan, select: Select = None, *,
                   progress: Callable[[int], None] | None = None,
                   also: str | None = None) -> tuple[list[Work], list[Work]]:
        """The references and the citers a plan asks for, each once, listing after listing.

        :param plan: a :class:`~scitaste_hf.sources.snowball.SnowballPlan`.
        :param select: top-level fields to ask for (None: all); keep ``referenced_works`` for a CD index.
        :param progress: called with 1 after each listing.
        :param also: a filter every listing must also meet (``to_publication_date:2019-12-31``), or None.
        :returns: ``(references, citers)`` in the plan's order.
        """
        pages = []
        for _, flt in plan.filters():
            pages.append(list(self._iter_filter(_and(flt, also), select)))
            if progress is not None:
                progress(1)
        return _split(plan, pages)

    async def afetch_plan(self, plan: SnowballPlan, select: Select = None, *,
                          progress: Callable[[int], None] | None = None,
                          also: str | None = None) -> tuple[list[Work], list[Work]]:
        """Async :meth:`fetch_plan`: the listings run concurrently within the client's connection limit and
        return the same works in the same order.

        :param plan: a :class:`~scitaste_hf.sources.snowball.SnowballPlan`.
        :param select: top-level fields to ask for (None: all).
        :param progress: called with 1 after each listing.
        :param also: a filter every listing must also meet, or None.
        """
        listings = [self._listing(_and(flt, also), select) for _, flt in plan.filters()]
        pages = await self.transport.agather(listings, None if progress is None else lambda: progress(1))
        return _split(plan, pages)

    def count_works(self, filter: str) -> int:
        """How many works match a filter, from one ``per-page=1`` request.

        :param filter: an OpenAlex ``filter=`` value, e.g. ``cites:W2741809807``.
        """
        return int(self.transport.request("GET", "/works", {"filter": filter, "per-page": 1}).data["meta"]["count"])

    def iter_works(self, filter: str, *, search: str | None = None, sort: str | None = None,
                   select: Select = None, limit: int | None = None) -> Iterator[Work]:
        """Any work listing, cursor-paged.

        :param filter: an OpenAlex ``filter=`` value.
        :param search: full-text ``search=`` terms, or None.
        :param sort: ``sort=`` value, e.g. ``cited_by_count:desc``, or None.
        :param select: top-level fields to ask for (None: all).
        :param limit: stop after this many works (and ask for no larger pages than needed).
        """
        return self._iter_filter(filter, select, search=search, sort=sort, limit=limit)

    def subfield_candidates(self, subfield_id: str | int, keywords: str, n: int, *,
                            select: Select = None, also: str | None = None) -> list[Work]:
        """The builder's candidate search: the ``n`` most-cited articles of a subfield matching keywords,
        back-filled with the subfield's most-cited articles when the keyword search finds fewer than ``n``.

        :param subfield_id: OpenAlex subfield id (``1804`` or ``https://openalex.org/subfields/1804``).
        :param keywords: ``search=`` terms.
        :param n: number of candidates wanted.
        :param select: top-level fields to ask for (None: all).
        :param also: a filter the candidates must also meet (``to_publication_date:2019-12-31``), or None.
        """
        sid = str(subfield_id).rstrip("/").rsplit("/", 1)[-1]
        if not sid.isdigit():
            raise InvalidIdentifierError(f"not an OpenAlex subfield id: {subfield_id!r} (expected digits, e.g. 1804)")
        base = _and(f"primary_topic.subfield.id:{sid},type:article", also)
        sort = "cited_by_count:desc"
        found = {w.id: w for w in self._iter_filter(base, select, search=keywords, sort=sort, limit=n)}
        if len(found) < n:
            for w in self._iter_filter(base, select, sort=sort, limit=n + len(found)):
                found.setdefault(w.id, w)
                if len(found) >= n:
                    break
        return list(found.values())[:n]

    # ------------------------------------------------------------------------------------------- entities

    def get_source(self, source_id: str) -> Source:
        """A source (journal) by id, with ``summary_stats``.

        :param source_id: ``S...`` id or URL.
        """
        sid = openalex_id(source_id, "S")
        return parse_source(self._entity(f"/sources/{sid}", f"source {sid}"))

    def get_sources(self, source_ids: Iterable[str]) -> list[Source]:
        """Many sources, :data:`MAX_OR_VALUES` per request (``/sources?filter=openalex:S1|S2|...``, the OR filter
        OpenAlex offers on every entity).

        :param source_ids: ``S...`` ids or URLs; duplicates are asked once.
        :returns: the sources found, in the order of ``source_ids``; ids OpenAlex does not know are left out.
        """
        ids = list(dict.fromkeys(openalex_id(i, "S") for i in source_ids))
        listings = [_Listing(self._or("openalex", batch), None, None, None, None, self.page_size, path="/sources",
                             parse=parse_source) for batch in _batches(ids)]
        return in_order(ids, (s for listing in listings for s in self.transport.records(listing)))

    def get_topic(self, topic_id: str) -> Topic:
        """A topic by id, with its subfield, field and domain.

        :param topic_id: ``T...`` id or URL.
        """
        tid = openalex_id(topic_id, "T")
        return parse_topic(self._entity(f"/topics/{tid}", f"topic {tid}"))

    def get_concept(self, concept_id: str) -> Concept:
        """A concept by id (``score`` is None outside a work).

        :param concept_id: ``C...`` id or URL.
        """
        cid = openalex_id(concept_id, "C")
        return parse_concept(self._entity(f"/concepts/{cid}", f"concept {cid}"))

    def get_institution(self, institution_id: str) -> Institution:
        """An institution by id, with its country.

        :param institution_id: ``I...`` id or URL.
        """
        iid = openalex_id(institution_id, "I")
        return parse_institution(self._entity(f"/institutions/{iid}", f"institution {iid}"))

    def _entity(self, path: str, what: str) -> dict:
        resp = self.transport.request("GET", path, not_found_ok=True)
        if resp.status == 404:
            raise NotFoundError(f"OpenAlex has no {what}")
        return resp.data

    # ------------------------------------------------------------------------------------------- paging

    @staticmethod
    def _or(kind: str, ids: list[str]) -> str:
        return f"{kind}:{'|'.join(ids)}"

    def _listing(self, filter: str, select: Select, *, search: str | None = None, sort: str | None = None,
                 limit: int | None = None) -> _Listing:
        return _Listing(filter, select, search, sort, limit, self.page_size)

    def _lookups(self, ids: list[str], select: Select) -> list[_Listing]:
        return [self._listing(self._or("openalex", batch), select) for batch in _batches(ids)]

    def _union(self, kind: str, work_ids: Iterable[str] | str, select: Select) -> _Union:
        return _Union(self._listing(self._or(kind, batch), select) for batch in _batches(_unique(work_ids)))

    def _iter_filter(self, filter: str, select: Select, *, search: str | None = None, sort: str | None = None,
                     limit: int | None = None) -> Iterator[Work]:
        return self.transport.records(self._listing(filter, select, search=search, sort=sort, limit=limit))
