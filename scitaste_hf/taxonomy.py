"""The disciplines and their second-level taxonomy, as data (``config/taxonomy*.yaml``), validated on load.

A taxonomy file is the one home of its disciplines: their order (the reporting order), each one's code (the
``STB.<CODE>.`` prefix of its internal ids), its citation culture (the simulated world's log-citation offset) and
its collection route (:data:`ROUTES`) and its sub-disciplines. A discipline of the ``ads`` route (physics in the
packaged files) is collected from NASA ADS with arXiv's metadata and labelled by the four-stage classification
cascade, so its sub-disciplines carry what the cascade matches (arXiv classes, journal bibstems, controlled
keywords, title terms); a discipline of the ``openalex`` route (the default) is collected from OpenAlex, its
sub-disciplines collection cells anchored to an OpenAlex subfield and a keyword set. Every cell names an OpenAlex
subfield. The dataset builder, the agent's tools, the offline mirror and the simulated worlds all read the route
from here.

Packaged taxonomies (:data:`PACKAGED`): ``default``, the paper's six disciplines (Table 2), and ``extended``, which
``extends: default`` with the four disciplines the paper names next. A file may extend either, or another file.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

from scitaste_hf.errors import ScitasteError, short_repr

#: Packaged taxonomies by name, for ``--taxonomy NAME`` and ``extends: NAME``.
PACKAGED = {"default": "config/taxonomy.yaml", "extended": "config/taxonomy_extended.yaml"}
#: The key under which every report (the leaderboard's summaries and scopes, a run's report) puts all disciplines
#: together beside each discipline's own: a discipline of that name would replace it.
OVERALL = "overall"
#: Names no discipline may take (:data:`OVERALL`).
RESERVED_NAMES = frozenset({OVERALL})
#: Most ``extends`` links followed from one file. The packaged ``extended`` is one link; a chain of 16 is far more
#: than layering needs, and stops a chain of thousands of files (each a frame of recursion and a file read) early.
MAX_EXTENDS = 16
#: A discipline collected from NASA ADS (with arXiv's metadata) and labelled by the classification cascade.
ADS_ROUTE = "ads"
#: A discipline collected from OpenAlex, cell by cell, and labelled by construction (the default route).
OPENALEX_ROUTE = "openalex"
#: The collection routes a discipline's ``route`` may name.
ROUTES = (OPENALEX_ROUTE, ADS_ROUTE)
#: The keys of a discipline's entry.
_ENTRY_KEYS = ("code", "citation_culture", "route", "ads_collections", "sub_disciplines")
#: The keys of a cell.
_CELL_KEYS = ("id", "name", "openalex_subfield", "keywords", "arxiv_classes", "bibstems", "title_terms")
# Discipline names become metric names (scheme2_<discipline>) and codes become id prefixes: both stay plain.
_NAME = re.compile(r"[a-z][a-z0-9_]*")
_CODE = re.compile(r"[A-Z]{2,8}")
_CELL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# OpenAlex's subfield ids have four digits (its field's two, then two); one more digit leaves room.
_SUBFIELDS = range(1, 100_000)


@dataclass(frozen=True)
class SubDiscipline:
    """One cell of the taxonomy."""

    id: str
    name: str
    discipline: str
    keywords: tuple[str, ...]
    arxiv_classes: tuple[str, ...] = ()
    bibstems: tuple[str, ...] = ()
    title_terms: tuple[str, ...] = ()
    openalex_subfield: int = 0

    @property
    def subfield_id(self) -> str:
        """The OpenAlex subfield as OpenAlex writes it in ``primary_topic.subfield.id``."""
        return f"https://openalex.org/subfields/{self.openalex_subfield}"


@dataclass(frozen=True)
class Discipline:
    """One discipline: its name, the code of its internal ids, its citation culture and its collection route
    (:data:`ROUTES`); a discipline of the ADS route also names the ADS collections its papers are filed in, the
    first of which its discipline-wide ADS query asks for."""

    name: str
    code: str
    citation_culture: float = 0.0
    route: str = OPENALEX_ROUTE
    ads_collections: tuple[str, ...] = ()

    @property
    def uses_ads(self) -> bool:
        """Whether the discipline is collected from NASA ADS and labelled by the cascade."""
        return self.route == ADS_ROUTE


@dataclass(frozen=True)
class Taxonomy:
    """All sub-disciplines, in file order, and the disciplines they belong to, in file order."""

    cells: tuple[SubDiscipline, ...]
    disciplines: tuple[Discipline, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """The disciplines' names, in reporting order."""
        return tuple(d.name for d in self.disciplines)

    def of(self, discipline: str) -> list[SubDiscipline]:
        """The sub-disciplines of one discipline."""
        return [c for c in self.cells if c.discipline == discipline]

    def get(self, cell_id: str) -> SubDiscipline:
        """One sub-discipline by id."""
        for cell in self.cells:
            if cell.id == cell_id:
                return cell
        raise ScitasteError(f"unknown sub-discipline {cell_id!r}")

    def discipline(self, name: str) -> Discipline:
        """One discipline by name."""
        for d in self.disciplines:
            if d.name == name:
                return d
        raise ScitasteError(f"unknown discipline {name!r}; this taxonomy has {', '.join(self.names)}")

    def by_route(self, route: str) -> tuple[Discipline, ...]:
        """The disciplines of one collection route, in reporting order."""
        return tuple(d for d in self.disciplines if d.route == route)

    def uses_ads(self, discipline: str) -> bool:
        """Whether the discipline of that name is collected from NASA ADS (False for one this taxonomy lacks)."""
        return any(d.name == discipline and d.uses_ads for d in self.disciplines)


def parse_taxonomy(data: object, source: str = "taxonomy") -> Taxonomy:
    """Validate a parsed taxonomy document (``extends`` already resolved) and build the :class:`Taxonomy`.

    Parameters
    ----------
    data : object
        Discipline name -> ``{code, citation_culture (optional, default 0), route (optional, default openalex),
        ads_collections (with route ads), sub_disciplines: [cell, ...]}``.
    source : str
        The file, for messages.

    Raises
    ------
    ScitasteError
        On a malformed discipline name or entry, a missing or duplicate code, an empty discipline, a duplicate
        sub-discipline id, an unknown route, an ADS-route discipline without ADS collections (or another with
        them), a cell of an ADS-route discipline without cascade data, or a cell without an OpenAlex subfield.
    """
    if not isinstance(data, dict) or not data:
        raise ScitasteError(f"{source}: expected a mapping of discipline to its code and sub-disciplines")
    cells, disciplines, seen = [], [], set()
    for discipline, entry in data.items():
        disciplines.append(_discipline(discipline, entry, source, {d.code for d in disciplines}))
        for raw in entry["sub_disciplines"]:
            cell = _cell(disciplines[-1], raw, source)
            if cell.id in seen:
                raise ScitasteError(f"{source}: duplicate sub-discipline id {cell.id!r}")
            seen.add(cell.id)
            cells.append(cell)
    return Taxonomy(tuple(cells), tuple(disciplines))


def _discipline(name: object, entry: object, source: str, codes: set[str]) -> Discipline:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ScitasteError(f"{source}: discipline name {name!r} must be lower-case letters, digits and _")
    if name in RESERVED_NAMES:
        raise ScitasteError(f"{source}: discipline name {name!r} is reserved: the leaderboard and the reports put "
                            "all disciplines together under it")
    if not isinstance(entry, dict):
        raise ScitasteError(f"{source}: discipline {name!r} needs a mapping of {', '.join(_ENTRY_KEYS)}")
    _known_keys(entry, _ENTRY_KEYS, f"discipline {name!r}", source)
    code = entry.get("code")
    if not isinstance(code, str) or not _CODE.fullmatch(code):
        raise ScitasteError(f"{source}: discipline {name!r} needs a code of 2-8 capital letters (its internal ids "
                            f"are STB.<code>.<OpenAlex id>), got {code!r}")
    if code in codes:
        raise ScitasteError(f"{source}: discipline {name!r} reuses the code {code!r}")
    culture = entry.get("citation_culture", 0.0)
    if isinstance(culture, bool) or not isinstance(culture, int | float) or not _finite(culture):
        raise ScitasteError(f"{source}: discipline {name!r} needs a numeric citation_culture, got "
                            f"{short_repr(culture)}")
    if not isinstance(entry.get("sub_disciplines"), list) or not entry["sub_disciplines"]:
        raise ScitasteError(f"{source}: discipline {name!r} has no sub_disciplines")
    route, collections = _route(name, entry, source)
    return Discipline(name, code, float(culture), route, collections)


def _route(name: str, entry: dict, source: str) -> tuple[str, tuple[str, ...]]:
    """A discipline's route and its ADS collections: named exactly when the route is ADS's."""
    route = entry.get("route", OPENALEX_ROUTE)
    if route not in ROUTES:
        raise ScitasteError(f"{source}: discipline {name!r}: route must be one of {', '.join(ROUTES)}, got "
                            f"{short_repr(route)}")
    collections = _strings(entry, "ads_collections", source, f"discipline {name!r}")
    if route == ADS_ROUTE and not collections:
        raise ScitasteError(f"{source}: discipline {name!r} of route {ADS_ROUTE} needs ads_collections (the ADS "
                            "collections its papers are filed in; its discipline-wide query asks for the first)")
    if route != ADS_ROUTE and collections:
        raise ScitasteError(f"{source}: discipline {name!r}: ads_collections are for a discipline of route "
                            f"{ADS_ROUTE}, not {route}")
    return route, collections


def _known_keys(entry: dict, allowed: tuple[str, ...], what: str, source: str) -> None:
    """Refuse the first key of ``entry`` (in text order, whatever its YAML type) that ``allowed`` does not name."""
    unknown = sorted(set(entry) - set(allowed), key=str)
    if unknown:
        raise ScitasteError(f"{source}: {what} has an unknown key {unknown[0]!r}; expected {', '.join(allowed)}")


def _finite(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer beyond any float
        return False


def _strings(entry: dict, key: str, source: str, what: str) -> tuple[str, ...]:
    """A list of terms of a cell or a discipline (``what``, for messages; absent: none); a string or a number
    there is refused, not read as its characters."""
    value = entry.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ScitasteError(f"{source}: {what}: {key} must be a list of non-empty strings, got {short_repr(value)}")
    return tuple(value)


def _cell(owner: Discipline, entry: object, source: str) -> SubDiscipline:
    discipline = owner.name
    if not isinstance(entry, dict):
        raise ScitasteError(f"{source}: every {discipline} sub-discipline needs a mapping of "
                            f"{', '.join(_CELL_KEYS)}, got {short_repr(entry)}")
    cell_id = entry.get("id")
    if not isinstance(cell_id, str) or not _CELL_ID.fullmatch(cell_id):
        raise ScitasteError(f"{source}: every {discipline} sub-discipline needs an id of letters, digits, '.', '_' "
                            f"and '-', got {short_repr(cell_id)}")
    _known_keys(entry, _CELL_KEYS, cell_id, source)
    name = entry.get("name")
    if not isinstance(name, str) or not name.strip():
        raise ScitasteError(f"{source}: {cell_id}: name must be a non-empty string, got {short_repr(name)}")
    keywords = tuple(k.lower() for k in _strings(entry, "keywords", source, cell_id))
    if not keywords:
        raise ScitasteError(f"{source}: {cell_id} has no keywords")
    arxiv_classes, bibstems = (_strings(entry, k, source, cell_id) for k in ("arxiv_classes", "bibstems"))
    title_terms = tuple(t.lower() for t in _strings(entry, "title_terms", source, cell_id))
    # The builder labels an ADS-route discipline by the cascade over ADS/arXiv metadata, every other by collection.
    if owner.uses_ads and not (arxiv_classes and bibstems and title_terms):
        raise ScitasteError(f"{source}: {cell_id} needs arxiv_classes, bibstems and title_terms (its discipline "
                            f"{discipline!r} is of route {ADS_ROUTE}, labelled by the cascade)")
    subfield = entry.get("openalex_subfield")
    if isinstance(subfield, bool) or not isinstance(subfield, int):
        raise ScitasteError(f"{source}: {cell_id} needs an integer openalex_subfield")
    if subfield not in _SUBFIELDS:
        raise ScitasteError(f"{source}: {cell_id}: openalex_subfield must be an OpenAlex subfield id "
                            f"({_SUBFIELDS.start} to {_SUBFIELDS.stop - 1}), got {short_repr(subfield)}")
    return SubDiscipline(id=cell_id, name=name, discipline=discipline, keywords=keywords, arxiv_classes=arxiv_classes,
                         bibstems=bibstems, title_terms=title_terms, openalex_subfield=subfield)


def load_taxonomy(taxonomy: str | Path | None = None) -> Taxonomy:
    """Load and validate a taxonomy: a packaged one by name (:data:`PACKAGED`) or a YAML file; the default (the
    paper's six disciplines, Table 2) when ``taxonomy`` is None.

    Raises
    ------
    ScitasteError
        On a name that is neither packaged nor a file, unreadable YAML, an ``extends`` of an unknown base or in a
        cycle, or a document :func:`parse_taxonomy` rejects.
    """
    if taxonomy is None or str(taxonomy) in PACKAGED:
        return _packaged(str(taxonomy or "default"))
    data, source = _document(Path(taxonomy))
    return parse_taxonomy(data, source)


def packaged_disciplines() -> tuple[str, ...]:
    """Every discipline of the packaged taxonomies, in reporting order: the paper's six, then the extended four."""
    return _packaged("extended").names


def discipline_order(present: Iterable[str]) -> list[str]:
    """``present`` in reporting order: the packaged taxonomies' order (:func:`packaged_disciplines`), then any
    other discipline alphabetically. What a release holds is read from its records; this orders it."""
    present = set(present)
    known = packaged_disciplines()
    return [d for d in known if d in present] + sorted(present - set(known))


@cache
def _packaged(name: str) -> Taxonomy:
    data, source = _document(name)
    return parse_taxonomy(data, source)


def _document(ref: str | Path, chain: tuple[str, ...] = ()) -> tuple[dict, str]:
    """The document ``ref`` names (a packaged name or a file) with its ``extends`` resolved: the base's
    disciplines in the base's order, each discipline of ``ref`` replacing the base's keys it sets (a new
    discipline goes last). ``chain``: the documents that extend ``ref``, the file given first."""
    from scitaste_hf.bounded_load import parse_yaml, read_text

    if isinstance(ref, str):
        source, folder = PACKAGED[ref], None
        text = resources.files("scitaste_hf").joinpath(source).read_text("utf-8")
    else:
        source, folder = str(ref), ref.parent
        if not ref.exists():
            raise ScitasteError(f"taxonomy {source!r} not found: neither a packaged one "
                                f"({', '.join(PACKAGED)}) nor a file")
        text = read_text(ref, "taxonomy file")
    data = parse_yaml(text, source)
    if not isinstance(data, dict):
        raise ScitasteError(f"{source}: expected a mapping of discipline to its code and sub-disciplines")
    data = dict(data)
    base = data.pop("extends", None)
    if base is None:
        return data, source
    if not isinstance(base, str) or not base:
        raise ScitasteError(f"{source}: extends must name a packaged taxonomy ({', '.join(PACKAGED)}) or a file")
    if base in PACKAGED:
        base_ref: str | Path = base
    elif folder is not None and (folder / base).exists():
        base_ref = folder / base
    else:
        raise ScitasteError(f"{source}: extends an unknown taxonomy {base!r}; expected a packaged one "
                            f"({', '.join(PACKAGED)}) or a file beside it")
    key = _key(ref)
    if _key(base_ref) in (*chain, key):
        raise ScitasteError(f"{source}: extends {base!r}, which extends it in turn")
    if len(chain) >= MAX_EXTENDS:
        raise ScitasteError(f"{chain[0] if chain else source}: a chain of more than {MAX_EXTENDS} extends "
                            f"(stopped at {source}, which extends {base!r})")
    merged, _ = _document(base_ref, (*chain, key))
    for name, entry in data.items():
        own = merged.get(name)
        merged[name] = {**own, **entry} if isinstance(own, dict) and isinstance(entry, dict) else entry
    return merged, source


def _key(ref: str | Path) -> str:
    """One name per document, however a path to it is written (for finding a cycle of ``extends``)."""
    return ref if isinstance(ref, str) else str(ref.resolve())
