"""OpenAlex's REST API over the simulated world: the subset our clients use, with OpenAlex's semantics.

``/works/{id}``, ``/works?filter=...&search=...&sort=...&select=...&per-page=...&cursor=...|page=...``,
``/sources?filter=openalex:S1|S2|...&select=...&per-page=...&cursor=...|page=...``, ``/sources/{id}``,
``/topics/{id}``, ``/concepts/{id}``, ``/institutions/{id}``. Filters of works (AND over commas, OR over ``|``):
``openalex``/``ids.openalex``, ``cites``, ``cited_by``, ``primary_topic.subfield.id``, ``type``, ``publication_year``,
``from_publication_date``, ``to_publication_date``, ``doi``, ``primary_location.source.id``, ``title.search``,
``title_and_abstract.search``, ``default.search``; of sources ``openalex``/``ids.openalex``.
``search=`` matches title and abstract: terms joined by ``OR``, each a word or a "quoted phrase" (all words of
an unquoted multi-word term must occur). Unknown filters, select fields and sorts answer 400 with OpenAlex's
error body; unknown ids 404.
"""

from __future__ import annotations

import base64
import re
from datetime import date
from functools import lru_cache

import numpy as np

from scitaste_hf.simworld.render import (
    WORK_FIELDS,
    openalex_concept,
    openalex_institution,
    openalex_source,
    openalex_topic,
    openalex_work,
)
from scitaste_hf.simworld.world import World

MAX_PER_PAGE = 200
BASIC_PAGING_LIMIT = 10_000
_FILTERS = ("openalex", "ids.openalex", "cites", "cited_by", "primary_topic.subfield.id", "type",
            "publication_year", "from_publication_date", "to_publication_date", "doi", "primary_location.source.id",
            "title.search", "title_and_abstract.search", "default.search")
_SOURCE_FILTERS = ("openalex", "ids.openalex")
_SORTS = ("cited_by_count", "publication_date", "publication_year", "relevance_score")
_BAD = "Invalid query parameters error."


class ApiError(Exception):
    """An answer other than 200: status and OpenAlex's error body."""

    def __init__(self, status: int, error: str, message: str) -> None:
        super().__init__(message)
        self.status, self.body = status, {"error": error, "message": message}


def _short(value: str) -> str:
    return value.strip().rstrip("/").rsplit("/", 1)[-1]


class OpenAlexApi:
    """Answers OpenAlex requests from a :class:`World`; with ``visible`` (a flag per work), only from the works it
    flags (the world as of a date, :class:`~scitaste_hf.mirror.server.WorldBackend`)."""

    def __init__(self, world: World, visible: np.ndarray | None = None) -> None:
        self.world = world
        self.visible = visible
        w = world
        n = w.n_works
        self.cited_by_count = np.diff(w.cite_ptr).astype(np.int64)
        # A work's subfield is its primary topic's.
        cell_subfield = np.array([c.openalex_subfield for c in w.taxonomy.cells])
        self.subfield = cell_subfield[np.array([t[2] for t in w.topic_table])[w.topics.first()]]
        self.types = np.array([w.work_type(i) for i in range(n)])
        self.year = w.year
        self._fields = (*WORK_FIELDS, "relevance_score")
        self._text = [f"{t} {a}".lower() for t, a in zip(w.titles, w.abstracts)]
        self._titles = [t.lower() for t in w.titles]
        self.work = lru_cache(maxsize=50_000)(self._work)

    def _work(self, i: int, fields: tuple[str, ...] | None) -> dict:
        """Work ``i`` rendered with ``fields`` only (None: all), kept per selection."""
        return openalex_work(self.world, i, fields)

    # -- entry point -----------------------------------------------------------------------------------

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, dict]:
        """Status and JSON body for a GET of ``path`` (below the OpenAlex root) with ``query``."""
        try:
            parts = [p for p in path.split("/") if p]
            if parts == ["works"]:
                return 200, self.list_works(query)
            if parts == ["sources"]:
                return 200, self.list_sources(query)
            if len(parts) == 2:
                return 200, self.entity(parts[0], parts[1], query)
            raise ApiError(404, "NotFoundError", f"{path} is not an endpoint of this mirror")
        except ApiError as exc:
            return exc.status, exc.body

    def entity(self, kind: str, key: str, query: dict[str, str]) -> dict:
        """A single work, source, topic, concept or institution."""
        w = self.world
        key = _short(key)
        if kind == "works":
            i = self._work_index(key)
            if self.visible is not None and not self.visible[i]:
                raise ApiError(404, "NotFoundError", f"work {key} does not exist")
            return self._selected(i, query.get("select"))
        tables = {
            "sources": ([s.id for s in w.journals], openalex_source),
            "topics": ([t[0] for t in w.topic_table], openalex_topic),
            "concepts": ([c[0] for c in w.concept_table], openalex_concept),
            "institutions": ([f"I9{k:08d}" for k in range(len(w.institutions))], openalex_institution),
        }
        if kind not in tables:
            raise ApiError(404, "NotFoundError", f"/{kind} is not an endpoint of this mirror")
        ids, render = tables[kind]
        if key not in ids:
            raise ApiError(404, "NotFoundError", f"{kind[:-1]} {key} does not exist")
        return render(w, ids.index(key))

    def _work_index(self, key: str) -> int:
        if key.lower().startswith("doi:") or key.startswith("10."):
            doi = key[4:] if key.lower().startswith("doi:") else key
            prefix = f"10.5555/simworld.{self.world.seed}."
            i = int(doi[len(prefix):]) if doi.startswith(prefix) and doi[len(prefix):].isdigit() else -1
        else:
            i = self.world.index_of(key)
        if not 0 <= i < self.world.n_works:
            raise ApiError(404, "NotFoundError", f"work {key} does not exist")
        return i

    def _selected(self, i: int, select: str | None) -> dict:
        """Work ``i`` with the fields of ``select`` in its order (all without one); 400 for an unknown field."""
        if not select:
            return self.work(i, None)
        fields = tuple(f.strip() for f in select.split(",") if f.strip())
        for f in fields:
            if f not in self._fields:
                raise ApiError(400, _BAD, f"{f} is not a valid select field. Valid fields for select are: "
                                          f"{', '.join(self._fields)}.")
        work = self.work(i, fields)
        return {f: work[f] for f in fields if f in work}

    # -- lists -----------------------------------------------------------------------------------------

    def list_works(self, query: dict[str, str]) -> dict:
        """``/works`` with filter, search, sort, select and paging."""
        mask = np.ones(self.world.n_works, dtype=bool) if self.visible is None else self.visible.copy()
        relevance = None
        for clause in self._clauses(query.get("filter", "")):
            mask &= self._apply(*clause)
        if query.get("search"):
            # Only the works the filters kept are searched: a full-text scan of the whole world per request would
            # make a filtered search as slow as an unfiltered one.
            relevance = self._search(query["search"], self._text, np.flatnonzero(mask))
            mask &= relevance > 0
        rows = np.flatnonzero(mask)
        rows = self._sort(rows, query.get("sort"), relevance)

        def render(i: int) -> dict:
            work = self._selected(i, query.get("select"))
            if relevance is not None and (not query.get("select") or "relevance_score" in query["select"]):
                work = {**work, "relevance_score": float(relevance[i])}
            return work

        return self._paged(rows, query, render)

    def list_sources(self, query: dict[str, str]) -> dict:
        """``/sources`` with the ``openalex`` (``ids.openalex``) filter, ``select=`` and paging, in the world's
        journal order; any ``sort=`` answers 400 (the mirror's subset has none for sources)."""
        journals = self.world.journals
        rows = list(range(len(journals)))
        for _, value in self._clauses(query.get("filter", ""), _SOURCE_FILTERS):
            wanted = {_short(v) for v in value.split("|") if v}
            rows = [j for j in rows if journals[j].id in wanted]
        if query.get("sort"):
            raise ApiError(400, _BAD, f"{query['sort']} is not a valid sort. Valid sort fields are: none")
        fields = tuple(f.strip() for f in query.get("select", "").split(",") if f.strip())
        known = tuple(openalex_source(self.world, 0)) if journals else ()
        for f in fields:
            if f not in known:
                raise ApiError(400, _BAD, f"{f} is not a valid select field. Valid fields for select are: "
                                          f"{', '.join(known)}.")

        def render(j: int) -> dict:
            source = openalex_source(self.world, j)
            return {f: source[f] for f in fields} if fields else source

        return self._paged(np.array(rows, dtype=np.int64), query, render)

    def _paged(self, rows: np.ndarray, query: dict[str, str], render) -> dict:
        """One page of ``rows`` (cursor or basic paging, OpenAlex's ``meta``), each row rendered."""
        per_page = self._int(query.get("per-page", query.get("per_page", "25")), "per-page", 1, MAX_PER_PAGE)
        meta = {"count": int(rows.shape[0]), "db_response_time_ms": 1, "page": None, "per_page": per_page,
                "groups_count": None}
        if "cursor" in query:
            offset = self._cursor(query["cursor"])
            page = rows[offset:offset + per_page]
            meta["next_cursor"] = (base64.urlsafe_b64encode(f"o{offset + per_page}".encode()).decode()
                                   if page.shape[0] else None)
        else:
            page_no = self._int(query.get("page", "1"), "page", 1, None)
            if page_no * per_page > BASIC_PAGING_LIMIT:
                raise ApiError(400, _BAD, "Maximum results size of 10,000 records is exceeded. Cursor pagination "
                                          "is required for records beyond 10,000.")
            meta["page"] = page_no
            page = rows[(page_no - 1) * per_page:page_no * per_page]
        return {"meta": meta, "results": [render(int(i)) for i in page], "group_by": []}

    @staticmethod
    def _int(text: str, name: str, low: int, high: int | None) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ApiError(400, _BAD, f"{name} must be a number") from None
        if value < low or (high is not None and value > high):
            raise ApiError(400, _BAD, f"{name} is {value}; it must be between {low} and {high or 'more'}")
        return value

    @staticmethod
    def _cursor(text: str) -> int:
        if text == "*":
            return 0
        try:
            decoded = base64.urlsafe_b64decode(text.encode()).decode()
            return int(decoded[1:]) if decoded.startswith("o") else int("x")
        except ValueError:
            raise ApiError(400, _BAD, f"cursor {text!r} is not valid") from None

    @staticmethod
    def _clauses(text: str, known: tuple[str, ...] = _FILTERS) -> list[tuple[str, str]]:
        out = []
        for clause in filter(None, text.split(",")):
            key, sep, value = clause.partition(":")
            key = key.strip().replace("-", "_").lower()
            if not sep or key not in known:
                raise ApiError(400, _BAD, f"{key} is not a valid field. Valid fields are underscore or hyphenated "
                                          f"versions of: {', '.join(known)}")
            out.append((key, value))
        return out

    def _apply(self, key: str, value: str) -> np.ndarray:
        w = self.world
        mask = np.zeros(w.n_works, dtype=bool)
        values = [v for v in value.split("|") if v]
        if key in ("openalex", "ids.openalex"):
            idx = [w.index_of(_short(v)) for v in values]
            mask[[i for i in idx if i >= 0]] = True
        elif key in ("cites", "cited_by"):
            for v in values:
                i = w.index_of(_short(v))
                if i >= 0:
                    mask[w.citers(i) if key == "cites" else w.references(i)] = True
        elif key == "primary_topic.subfield.id":
            mask = np.isin(self.subfield, [int(_short(v)) for v in values if _short(v).isdigit()])
        elif key == "type":
            mask = np.isin(self.types, values)
        elif key == "publication_year":
            for v in values:
                mask |= self._year_mask(v)
        elif key in ("from_publication_date", "to_publication_date"):
            try:
                day = (date.fromisoformat(value) - date(1970, 1, 1)).days
            except ValueError:
                raise ApiError(400, _BAD, f"{value} is not a valid date for {key}") from None
            mask = w.date >= day if key.startswith("from") else w.date <= day
        elif key == "doi":
            for v in values:
                try:
                    mask[self._work_index("doi:" + v.split("doi.org/")[-1])] = True
                except ApiError:
                    pass
        elif key == "primary_location.source.id":
            journals = [j for j, s in enumerate(w.journals) if s.id in {_short(v) for v in values}]
            mask = np.isin(w.journal, journals)
        else:  # the .search filters
            mask = self._search(value, self._titles if key == "title.search" else self._text) > 0
        return mask

    def _year_mask(self, value: str) -> np.ndarray:
        y = self.year
        m = re.fullmatch(r"(\d{4})?-(\d{4})?|([<>])(\d{4})|(\d{4})", value.strip())
        if not m:
            raise ApiError(400, _BAD, f"{value} is not a valid value for publication_year")
        if m.group(5):
            return y == int(m.group(5))
        if m.group(3):
            return y > int(m.group(4)) if m.group(3) == ">" else y < int(m.group(4))
        low, high = int(m.group(1) or 0), int(m.group(2) or 9999)
        return (y >= low) & (y <= high)

    @staticmethod
    def _search(text: str, corpus: list[str], rows: np.ndarray | None = None) -> np.ndarray:
        """Terms matched per work (0: no match) for ``a OR "b c" OR d e``; only ``rows`` are searched when given,
        the others count 0."""
        terms = [t.strip() for t in re.split(r"\s+OR\s+", text) if t.strip()]
        patterns = []
        for term in terms:
            words = [term.strip('"').lower()] if term.startswith('"') else term.lower().split()
            patterns.append([re.compile(r"(?<![a-z0-9])" + re.escape(word) + r"(?![a-z0-9])") for word in words])
        hits = np.zeros(len(corpus))
        for k in range(len(corpus)) if rows is None else rows:
            hits[k] = sum(all(p.search(corpus[k]) for p in group) for group in patterns)
        return hits

    def _sort(self, rows: np.ndarray, sort: str | None, relevance: np.ndarray | None) -> np.ndarray:
        if not sort:
            return rows if relevance is None else rows[np.argsort(-relevance[rows], kind="stable")]
        field, _, direction = sort.partition(":")
        if field not in _SORTS or direction not in ("", "asc", "desc"):
            raise ApiError(400, _BAD, f"{sort} is not a valid sort. Valid sort fields are: {', '.join(_SORTS)}")
        if field == "relevance_score" and relevance is None:
            raise ApiError(400, _BAD, "relevance_score sort requires a search")
        key = {"cited_by_count": self.cited_by_count, "publication_date": self.world.date,
               "publication_year": self.year, "relevance_score": relevance}[field][rows]
        order = np.lexsort((rows, -key if direction == "desc" else key))  # ties by id: stable across pages
        return rows[order]
