"""The arXiv API (``/api/query``) over the e-prints of the simulated world, answering Atom feeds.

``id_list`` (comma-separated ids, with or without version) and ``search_query`` (``prefix:term`` clauses with
``cat``, ``ti``, ``abs``, ``au``, ``all`` joined by ``AND``, ``OR`` and ``ANDNOT``; quoted phrases allowed),
paged by ``start`` and ``max_results``. A malformed id answers 400 with arXiv's error feed, as the service does.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from xml.sax.saxutils import escape

from scitaste_hf.simworld.render import arxiv_entry
from scitaste_hf.simworld.world import World

_ID = re.compile(r"^(\d{4}\.\d{4,5}|[a-z-]+(\.[A-Z]{2})?/\d{7})(v\d+)?$")
_CLAUSE = re.compile(r'(cat|ti|abs|au|all|id):("[^"]*"|\S+)')
MAX_RESULTS = 2000


def _feed(entries: list[str], total: int, start: int, title: str) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return ("<?xml version='1.0' encoding='UTF-8'?>\n"
            '<feed xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
            'xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns="http://www.w3.org/2005/Atom">\n'
            f"  <id>https://arxiv.org/api/simworld</id>\n  <title>{escape(title)}</title>\n"
            f"  <updated>{now}</updated>\n"
            f"  <opensearch:itemsPerPage>{len(entries)}</opensearch:itemsPerPage>\n"
            f"  <opensearch:totalResults>{total}</opensearch:totalResults>\n"
            f"  <opensearch:startIndex>{start}</opensearch:startIndex>\n" + "".join(entries) + "</feed>\n")


def _error(message: str, start: int) -> str:
    entry = (f"  <entry>\n    <id>https://arxiv.org/api/errors#{escape(message.replace(' ', '_'))}</id>\n"
             f"    <title>Error</title>\n    <summary>{escape(message)}</summary>\n  </entry>\n")
    return _feed([entry], 1, start, "Error")


class ArxivApi:
    """Answers arXiv API requests from a :class:`World` (with ``visible``, a flag per work, only from the works it
    flags: the world as of a date)."""

    def __init__(self, world: World, visible=None) -> None:
        self.world = world
        shown = [i for i in world.arxiv_id if visible is None or visible[i]]
        self.by_id = {world.arxiv_id[i]: i for i in shown}
        self.order = sorted(shown, key=lambda i: -int(world.date[i]))  # newest first, like the API

    def _matches(self, i: int, prefix: str, term: str) -> bool:
        w = self.world
        term = term.strip('"').lower()
        if prefix == "cat":
            return w.arxiv_class[i].lower() == term
        if prefix == "id":
            return w.arxiv_id[i].lower() == term
        first, last = int(w.author_ptr[i]), int(w.author_ptr[i + 1])
        texts = {"ti": w.titles[i], "abs": w.abstracts[i],
                 "au": " ".join(w.authors[int(w.author_idx[k])] for k in range(first, last))}
        haystack = texts.get(prefix) or " ".join(texts.values())
        return re.search(r"(?<![a-z0-9])" + re.escape(term) + r"(?![a-z0-9])", haystack.lower()) is not None

    def _search(self, query: str) -> list[int]:
        tokens = re.findall(r'\bANDNOT\b|\bAND\b|\bOR\b|\w+:"[^"]*"|\S+', query)
        result: set[int] | None = None
        op = "AND"
        for token in tokens:
            if token in ("AND", "OR", "ANDNOT"):
                op = token
                continue
            m = _CLAUSE.fullmatch(token)
            if not m:
                raise ValueError(f"cannot parse {token!r}")
            found = {i for i in self.order if self._matches(i, m.group(1), m.group(2))}
            if result is None:
                result = found
            elif op == "AND":
                result &= found
            elif op == "OR":
                result |= found
            else:
                result -= found
        return [i for i in self.order if result and i in result]

    def answer(self, path: str, query: dict[str, str]) -> tuple[int, str]:
        """Status and Atom XML for ``/api/query``."""
        if [p for p in path.split("/") if p] != ["api", "query"]:
            return 404, _error(f"{path} is not an endpoint of this mirror", 0)
        try:
            start = int(query.get("start", 0))
            size = int(query.get("max_results", 10))
        except ValueError:
            return 400, _error("start and max_results must be integers", 0)
        if start < 0 or not 0 <= size <= MAX_RESULTS:
            return 400, _error(f"max_results must be between 0 and {MAX_RESULTS}", start)
        ids = [x.strip() for x in query.get("id_list", "").split(",") if x.strip()]
        bad = [x for x in ids if not _ID.match(x)]
        if bad:
            return 400, _error(f"incorrect id format for {bad[0]}", start)
        try:
            found = self._search(query["search_query"]) if query.get("search_query") else list(self.order)
        except ValueError as exc:
            return 400, _error(str(exc), start)
        if ids:
            wanted = [self.by_id.get(re.sub(r"v\d+$", "", x)) for x in ids]
            found = [i for i in wanted if i is not None and i in set(found)]
        elif not query.get("search_query"):
            found = []
        page = found[start:start + size]
        title = f"arXiv Query: search_query={query.get('search_query', '')}&id_list={query.get('id_list', '')}"
        return 200, _feed([arxiv_entry(self.world, i) for i in page], len(found), start, title)
