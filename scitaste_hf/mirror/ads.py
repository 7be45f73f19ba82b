"""NASA ADS's search API over the works of the simulated world's ADS-route disciplines (those with a bibcode).

``/v1/search/query?q=...&fl=...&rows=...&start=...&sort=...&cursorMark=...`` and ``POST /v1/search/bigquery``
(a ``bibcode`` list in the body). The query language is the part of ADS/Solr syntax our clients use: fielded
terms ``field:value``, ``field:"a phrase"``, ``field:(a OR b)``, ``field:[1995 TO 2024]``, the operators
``citations(...)`` and ``references(...)``, ``AND``/``OR``/``NOT``, parentheses, and implicit AND. Fields:
``bibcode``, ``bibstem``, ``arxiv_class``, ``year``, ``doctype``, ``collection``, ``abs``, ``title``, ``doi``,
``identifier``. A syntax error or an unknown field answers 400 with ADS's error body.
"""

from __future__ import annotations

import base64
import re

import numpy as np

from scitaste_hf.simworld.render import ADS_DOCTYPES, ads_doc
from scitaste_hf.simworld.world import World

MAX_ROWS = 2000
_FIELDS = ("bibcode", "bibstem", "arxiv_class", "year", "doctype", "collection", "abs", "title", "doi", "identifier")


class AdsError(Exception):
    """A 400 answer with ADS's error body."""


class _Parser:
    """Recursive descent over the tokens of a query; evaluates to a boolean mask over the world's works."""

    def __init__(self, api: AdsApi, text: str) -> None:
        self.api = api
        self.tokens = self._tokenize(text)
        self.pos = 0

    @staticmethod
    def _tokenize(text: str) -> list[str]:
        # field:(...), field:[...] and operator(...) start a group or range: split off "field:" / "citations".
        spaced = re.sub(r"(\w+(?:\.\w+)?):([(\[])", r"\1: \2", text)
        spaced = re.sub(r"\b(citations|references)\(", r"\1 (", spaced)
        return re.findall(r'"[^"]*"|\[[^\]]*\]|\(|\)|[^\s()]+', spaced)

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self) -> str:
        if self.pos >= len(self.tokens):
            raise AdsError("unexpected end of query")
        self.pos += 1
        return self.tokens[self.pos - 1]

    def parse(self) -> np.ndarray:
        mask = self.expr()
        if self.peek() is not None:
            raise AdsError(f"unexpected {self.peek()!r} in query")
        return mask

    def expr(self, field: str | None = None) -> np.ndarray:
        mask = self.term(field)
        while self.peek() == "OR":
            self.take()
            mask = mask | self.term(field)
        return mask

    def term(self, field: str | None) -> np.ndarray:
        mask = self.factor(field)
        while self.peek() not in (None, ")", "OR"):
            if self.peek() == "AND":
                self.take()
            mask = mask & self.factor(field)
        return mask

    def factor(self, field: str | None) -> np.ndarray:
        token = self.take()
        if token == "NOT":
            return ~self.factor(field)
        if token in ("citations", "references"):
            if self.take() != "(":
                raise AdsError(f"{token} needs parentheses")
            inner = self.expr()
            if self.take() != ")":
                raise AdsError("missing )")
            return self.api.neighbours(inner, token)
        if token == "(":
            inner = self.expr(field)
            if self.take() != ")":
                raise AdsError("missing )")
            return inner
        if token.endswith(":") and token[:-1]:
            name = token[:-1]
            if name not in _FIELDS:
                raise AdsError(f"undefined field {name}")
            if self.peek() == "(":
                self.take()
                inner = self.expr(name)
                if self.take() != ")":
                    raise AdsError("missing )")
                return inner
            return self.api.match(name, self.take())
        if ":" in token:
            name, _, value = token.partition(":")
            if name == "*" and value == "*":
                return np.ones(self.api.world.n_works, dtype=bool) & self.api.has_bibcode
            if name not in _FIELDS:
                raise AdsError(f"undefined field {name}")
            return self.api.match(name, value)
        if field is None:
            raise AdsError(f"a bare term {token!r} needs a field")
        return self.api.match(field, token)


#: A word of the search fields: a run of the characters that the match's boundaries (``(?<![a-z0-9])``) exclude.
_WORD = re.compile(r"[a-z0-9]+")


class AdsApi:
    """Answers ADS requests from a :class:`World` (its works with a bibcode; with ``visible``, a flag per work, only
    those it flags: the world as of a date)."""

    def __init__(self, world: World, visible: np.ndarray | None = None) -> None:
        self.world = world
        self.visible = visible
        n = world.n_works
        self.has_bibcode = np.zeros(n, dtype=bool)
        self.has_bibcode[list(world.bibcode)] = True
        self.by_bibcode = {b: i for i, b in world.bibcode.items()}
        self.year = world.year
        self.citations = np.diff(world.cite_ptr)
        # a work is in its discipline's ADS collections
        self.collections = [world.taxonomy.discipline(c.discipline).ads_collections for c in world.taxonomy.cells]
        # Indexed once, so that a query looks its terms up instead of scanning every work: each exact-valued
        # field's works per value and the first work (in bibcode order) with each DOI or arXiv identifier; each
        # text field's lower-cased text and its works per word when a query first searches that field (a mirror
        # that answers no ADS search, as most tests', does not pay for it).
        self._exact: dict[str, dict[str, list[int]]] = {f: {} for f in ("bibstem", "arxiv_class", "doctype",
                                                                         "collection")}
        self._ids: dict[str, int] = {}
        for i in world.bibcode:
            values = {"bibstem": (world.journals[int(world.journal[i])].bibstem,),
                      "arxiv_class": (world.arxiv_class.get(i),), "doctype": (ADS_DOCTYPES[world.work_type(i)],),
                      "collection": self.collections[int(world.cell[i])]}
            for name, keys in values.items():
                for key in dict.fromkeys(keys):
                    self._exact[name].setdefault(key, []).append(i)
            for key in (world.doi(i), f"arXiv:{world.arxiv_id.get(i)}"):
                self._ids.setdefault(key, i)
        self._texts: dict[str, tuple[dict[int, str], dict[str, list[int]]]] = {}

    def _text_index(self, name: str) -> tuple[dict[int, str], dict[str, list[int]]]:
        """The lower-cased ``title`` or ``abs`` (title and abstract) text of each work, and the works of each word."""
        if name not in self._texts:
            w = self.world
            texts: dict[int, str] = {}
            words: dict[str, list[int]] = {}
            for i in w.bibcode:
                texts[i] = text = (w.titles[i] if name == "title" else f"{w.titles[i]} {w.abstracts[i]}").lower()
                for word in set(_WORD.findall(text)):
                    words.setdefault(word, []).append(i)
            self._texts[name] = texts, words
        return self._texts[name]

    def match(self, field: str, value: str) -> np.ndarray:
        """Works whose ``field`` matches ``value`` (a word, a "phrase" or a [low TO high] range)."""
        w = self.world
        value = value.strip()
        mask = np.zeros(w.n_works, dtype=bool)
        if field == "year":
            m = re.fullmatch(r"\[(\d{4}) TO (\d{4})\]|(\d{4})-(\d{4})|(\d{4})", value)
            if not m:
                raise AdsError(f"bad year {value!r}")
            low, high = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4)) if m.group(3) else \
                (m.group(5), m.group(5))
            return self.has_bibcode & (self.year >= int(low)) & (self.year <= int(high))
        text = value.strip('"')
        if field in ("bibcode", "identifier", "doi"):
            i = self.by_bibcode.get(text)
            if i is None and text.startswith(("10.5555/", "arXiv:")):
                i = self._ids.get(text)
            if i is not None:
                mask[i] = True
            return mask
        if field in self._exact:
            mask[self._exact[field].get(text, [])] = True
            return mask
        texts, index = self._text_index("title" if field == "title" else "abs")
        needle = text.lower()
        # Each word of the needle is a whole word of any text it matches (the match's boundaries and the needle's
        # own non-word characters end it), so only the works holding all of them are searched.
        words = _WORD.findall(needle)
        candidates = set.intersection(*(set(index.get(word, ())) for word in words)) if words else texts
        pattern = re.compile(r"(?<![a-z0-9])" + re.escape(needle) + r"(?![a-z0-9])")
        mask[[i for i in candidates if pattern.search(texts[i])]] = True
        return mask

    def neighbours(self, inner: np.ndarray, operator: str) -> np.ndarray:
        """``citations(q)``: works citing the matches of ``q``; ``references(q)``: works they cite."""
        out = np.zeros(self.world.n_works, dtype=bool)
        for i in np.flatnonzero(inner):
            out[self.world.citers(int(i)) if operator == "citations" else self.world.references(int(i))] = True
        return out & self.has_bibcode

    def answer(self, path: str, query: dict[str, str], body: bytes = b"") -> tuple[int, dict]:
        """Status and JSON body for ``/v1/search/query`` (GET) or ``/v1/search/bigquery`` (POST)."""
        parts = [p for p in path.split("/") if p]
        if parts not in (["v1", "search", "query"], ["v1", "search", "bigquery"]):
            return 404, {"error": f"{path} is not an endpoint of this mirror"}
        try:
            mask = _Parser(self, query.get("q", "")).parse() if query.get("q") else None
            if mask is None:
                raise AdsError("no query given (q=)")
            if self.visible is not None:
                mask &= self.visible
            if parts[-1] == "bigquery":
                wanted = [line.strip() for line in body.decode("utf-8", "replace").splitlines()[1:] if line.strip()]
                subset = np.zeros_like(mask)
                subset[[self.by_bibcode[b] for b in wanted if b in self.by_bibcode]] = True
                mask &= subset
            rows = int(query.get("rows", 10))
            start = int(query.get("start", 0))
            if not 0 <= rows <= MAX_ROWS or start < 0:
                raise AdsError(f"rows must be between 0 and {MAX_ROWS}")
            found = self._sort(np.flatnonzero(mask), query.get("sort", "score desc"))
        except (AdsError, ValueError) as exc:
            return 400, {"responseHeader": {"status": 400, "QTime": 1, "params": dict(query)},
                         "error": {"msg": str(exc), "code": 400}}
        out: dict = {"responseHeader": {"status": 0, "QTime": 1, "params": {**query, "wt": "json"}}}
        if "cursorMark" in query:
            offset = 0 if query["cursorMark"] == "*" else int(base64.urlsafe_b64decode(query["cursorMark"]).decode())
            page = found[offset:offset + rows]
            out["nextCursorMark"] = base64.urlsafe_b64encode(str(offset + len(page)).encode()).decode()
        else:
            page = found[start:start + rows]
        fields = [f for f in query.get("fl", "id,bibcode").split(",") if f]
        docs = []
        for i in page:
            doc = ads_doc(self.world, int(i))
            docs.append({f: doc[f] for f in fields if f in doc})
        out["response"] = {"numFound": int(found.shape[0]), "start": start, "docs": docs}
        return 200, out

    def _sort(self, rows: np.ndarray, sort: str) -> np.ndarray:
        keys = []
        for part in reversed([p.strip() for p in sort.split(",") if p.strip()]):
            name, _, direction = part.partition(" ")
            values = {"citation_count": self.citations, "date": self.world.date, "year": self.year,
                      "score": self.citations}.get(name)
            if name == "bibcode":
                order = np.argsort(np.array([self.world.bibcode[int(i)] for i in rows]), kind="stable")
                values = np.empty(self.world.n_works, dtype=np.int64)
                values[rows[order]] = np.arange(rows.shape[0])
            if values is None or direction not in ("asc", "desc"):
                raise AdsError(f"bad sort {part!r}")
            keys.append(values[rows] if direction == "asc" else -values[rows])
        return rows[np.lexsort(keys)] if keys else rows

