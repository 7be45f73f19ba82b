"""Typed records returned by the bibliographic clients.

They hold what the index (docs/index-dimensions.md) and the agent tools need: identifiers, dates, citation links,
venue, topics/concepts, authors with countries, and the abstract. Identifiers are short and canonical: OpenAlex
``W2741809807`` (not the URL), DOIs lower-case without the ``https://doi.org/`` prefix, arXiv ids without version.
A field that the response did not carry (for example because of ``select=``) is None or an empty tuple.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import date, datetime
from typing import TypeVar

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Topic:
    """An OpenAlex topic with its place in the domain > field > subfield > topic hierarchy.

    ``score`` is the topic's score for a work (None for a topic fetched on its own); the ``*_id`` fields are short
    ids (``T10102``, subfield ``1804``, field ``18``, domain ``2``).
    """

    id: str
    display_name: str
    score: float | None
    subfield_id: str | None
    subfield_name: str | None
    field_id: str | None
    field_name: str | None
    domain_id: str | None
    domain_name: str | None


@dataclass(frozen=True, slots=True)
class Concept:
    """An OpenAlex concept attached to a work (legacy taxonomy, still used for the core-concept score)."""

    id: str
    display_name: str
    level: int | None
    score: float | None


@dataclass(frozen=True, slots=True)
class Authorship:
    """One author of a work: OpenAlex author id, name, institution ids and country codes."""

    author_id: str | None
    display_name: str | None
    institution_ids: tuple[str, ...]
    countries: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Institution:
    """An OpenAlex institution: the country feeds the team-collaboration dimension."""

    id: str
    display_name: str
    country_code: str | None
    type: str | None
    ror: str | None


@dataclass(frozen=True, slots=True)
class Work:
    """An OpenAlex work.

    ``referenced_works`` are short work ids; ``countries`` is the sorted set of the authors' countries;
    ``counts_by_year`` is ``((year, cited_by_count), ...)`` as OpenAlex reports it (recent years only).
    """

    id: str
    doi: str | None
    title: str | None
    publication_year: int | None
    publication_date: date | None
    type: str | None
    language: str | None
    cited_by_count: int | None
    referenced_works: tuple[str, ...]
    referenced_works_count: int | None
    source_id: str | None
    source_name: str | None
    issn_l: str | None
    issns: tuple[str, ...]
    authorships: tuple[Authorship, ...]
    countries: tuple[str, ...]
    primary_topic: Topic | None
    topics: tuple[Topic, ...]
    concepts: tuple[Concept, ...]
    abstract: str | None
    counts_by_year: tuple[tuple[int, int], ...]
    pmid: str | None


@dataclass(frozen=True, slots=True)
class Snowball:
    """Focal works with their references and citers, each work once (what a CD index and the breadth features
    need: a citer's ``referenced_works`` tells which focal works and which of their references it cites)."""

    works: tuple[Work, ...]
    references: tuple[Work, ...]
    citers: tuple[Work, ...]


@dataclass(frozen=True, slots=True)
class Source:
    """An OpenAlex source (journal, repository, ...) with the citedness the open journal-impact proxy uses."""

    id: str
    display_name: str
    issn_l: str | None
    issns: tuple[str, ...]
    type: str | None
    host_organization_name: str | None
    works_count: int | None
    cited_by_count: int | None
    two_year_mean_citedness: float | None
    h_index: int | None


@dataclass(frozen=True, slots=True)
class ADSRecord:
    """A NASA ADS document.

    ``bibstem`` is the journal abbreviation (``ApJ``); ``references``/``citations`` are bibcodes and are only filled
    when the query asked for those fields; ``arxiv_id`` comes from the ``identifier`` list (``arXiv:...``).
    """

    bibcode: str
    title: str | None
    year: int | None
    pubdate: str | None
    doi: str | None
    arxiv_id: str | None
    bibstem: str | None
    pub: str | None
    authors: tuple[str, ...]
    affiliations: tuple[str, ...]
    citation_count: int | None
    references: tuple[str, ...]
    citations: tuple[str, ...]
    keywords: tuple[str, ...]
    arxiv_class: tuple[str, ...]
    abstract: str | None
    doctype: str | None
    properties: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ArxivEntry:
    """An arXiv e-print from the Atom API: ``id`` without version, ``version`` as an int (None if not given)."""

    id: str
    version: int | None
    title: str
    summary: str
    authors: tuple[str, ...]
    published: datetime | None
    updated: datetime | None
    primary_category: str | None
    categories: tuple[str, ...]
    doi: str | None
    journal_ref: str | None
    comment: str | None


def in_order(wanted: Iterable[str], records: Iterable[R],
             key: Callable[[R], str] = operator.attrgetter("id")) -> list[R]:
    """The records answering a batch lookup, in the order they were asked for; ids without a record are left out.

    :param wanted: the ids asked for, in order.
    :param records: the records that came, in any order.
    :param key: a record's id.
    """
    found = {key(r): r for r in records}
    return [found[k] for k in wanted if k in found]
