"""Collecting the candidate pool and what the index needs around it (paper sections 3.1 and 4).

A discipline of the ADS route (physics, in the packaged taxonomies) comes from NASA ADS: one query per
sub-discipline (its arXiv classes, journals, keywords and title terms) and one discipline-wide query over its ADS
collection, so that papers no stage of the cascade can label still reach the pool (they go to the backup split).
The disciplines of the OpenAlex route come from OpenAlex: per sub-discipline the most-cited articles of its
subfield matching its keywords, back-filled from the subfield. arXiv adds the metadata of the ADS papers'
preprints; OpenAlex gives ADS papers (matched by DOI) the topics, authorships and citation links that ADS
lacks. The snowball is the references and the citers of every candidate, with their own references and dates.

A build as of a date (``--as-of``) asks the services only for what was published by then: ADS for the years up to
the date's (the papers of that year published after it are dropped by the quality check, from their exact date),
OpenAlex with ``to_publication_date`` on the candidates and on every listing of the snowball (:func:`published_by`).
The services sort by today's citation counts, so the candidates of a cell are the most cited today among those
published by the date.

Every collecting function returns plain JSON-ready dicts, so that a stage's result can be checkpointed as it is.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date
from typing import Any

from scitaste_hf.sources.snowball import MAX_OR_VALUES, SnowballPlan, plan_snowball
from scitaste_hf.taxonomy import Discipline, SubDiscipline, Taxonomy

#: Candidates asked for per sub-discipline, relative to its quota: room for the cross-cell de-duplication and
#: the quality check.
CANDIDATE_MARGIN = 1.2
#: Publication years of the candidate pool (the paper's collection window).
YEARS = (1995, 2024)
ADS_FIELDS = ("bibcode", "title", "year", "pubdate", "doi", "identifier", "bibstem", "pub", "author", "aff",
              "citation_count", "keyword", "arxiv_class", "abstract", "doctype")
#: What the index reads of a candidate's OpenAlex record.
WORK_SELECT = ("id", "ids", "doi", "title", "publication_year", "publication_date", "type", "cited_by_count",
               "referenced_works", "referenced_works_count", "primary_location", "authorships", "primary_topic",
               "topics", "concepts", "abstract_inverted_index")
#: What the index reads of a reference or a citer: date, venue, field, text, and its own references (CD index).
SNOWBALL_SELECT = ("id", "title", "publication_date", "primary_location", "primary_topic", "referenced_works",
                   "referenced_works_count", "cited_by_count")

Tick = Callable[[int], None]


def _noop(_: int) -> None:
    return None


def cell_limit(quota: int, sharing: int = 1) -> int:
    """Candidates asked for in one cell: :data:`CANDIDATE_MARGIN` x its quota, times the number of cells that share
    its OpenAlex subfield (their back-fill draws on the same articles, so each must reach deep enough for all).

    Parameters
    ----------
    quota : int
        Papers the cell keeps.
    sharing : int
        Cells of the discipline with the same subfield (1 when it is the cell's own).
    """
    return math.ceil(quota * CANDIDATE_MARGIN) * sharing


def _quoted(terms: Iterable[str]) -> str:
    return " OR ".join(f'"{t}"' for t in terms)


def ads_cell_query(cell: SubDiscipline, years: tuple[int, int] = YEARS) -> str:
    """The ADS query of one sub-discipline of an ADS-route discipline: any of its arXiv classes, journals, keywords
    or title terms, restricted to refereed-journal articles of the collection window.

    Parameters
    ----------
    cell : SubDiscipline
        A cell of an ADS-route discipline.
    years : (int, int)
        First and last publication year.
    """
    parts = [f"arxiv_class:({' OR '.join(cell.arxiv_classes)})", f"bibstem:({' OR '.join(cell.bibstems)})",
             f"abs:({_quoted(cell.keywords)})", f"title:({_quoted(cell.title_terms)})"]
    return f"doctype:article AND year:[{years[0]} TO {years[1]}] AND ({' OR '.join(parts)})"


def ads_sweep_query(discipline: Discipline, years: tuple[int, int] = YEARS) -> str:
    """The discipline-wide ADS query: the most-cited articles of the discipline's (first) ADS collection, whatever
    their sub-discipline."""
    return f"collection:{discipline.ads_collections[0]} AND doctype:article AND year:[{years[0]} TO {years[1]}]"


def published_by(as_of: date | None) -> str | None:
    """The OpenAlex filter that keeps a listing to the works published on or before ``as_of`` (inclusive, as
    OpenAlex's ``to_publication_date``); None without a date, so that a listing sends the request it always did."""
    return f"to_publication_date:{as_of.isoformat()}" if as_of else None


def _plain(record: Any) -> dict[str, Any]:
    out = dataclasses.asdict(record)
    return {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}


def collect_ads(ads, discipline: Discipline, cells: Sequence[SubDiscipline], quotas: Mapping[str, int],
                per_discipline: int, *, years: tuple[int, int] = YEARS, tick: Tick = _noop) -> list[dict[str, Any]]:
    """The candidates of an ADS-route discipline from ADS, most cited first, each bibcode once.

    Parameters
    ----------
    ads : ADSClient
    discipline : Discipline
        An ADS-route discipline (its discipline-wide query asks for its ADS collection).
    cells : sequence of SubDiscipline
        Its cells.
    quotas : mapping of cell id to int
        Papers each cell keeps.
    per_discipline : int
        Papers the discipline keeps; the discipline-wide query asks for :data:`CANDIDATE_MARGIN` times as many.
    years : (int, int)
        Collection window.
    tick : callable
        Called with 1 after each query.

    Returns
    -------
    list of dict
        ADS records (the fields of :class:`~scitaste_hf.sources.entities.ADSRecord`), in bibcode order.
    """
    found: dict[str, dict[str, Any]] = {}
    sort = "citation_count desc, bibcode asc"
    queries = [(ads_cell_query(c, years), cell_limit(quotas[c.id])) for c in cells]
    queries.append((ads_sweep_query(discipline, years), math.ceil(per_discipline * CANDIDATE_MARGIN)))
    for q, limit in queries:
        for rec in ads.search(q, fl=ADS_FIELDS, sort=sort, limit=limit):
            found.setdefault(rec.bibcode, _plain(rec))
        tick(1)
    return [found[b] for b in sorted(found)]


def work_dict(work: Any) -> dict[str, Any]:
    """The part of an OpenAlex :class:`~scitaste_hf.sources.entities.Work` the builder keeps, as plain JSON."""
    primary = work.primary_topic
    return {
        "id": work.id, "doi": work.doi, "title": work.title, "abstract": work.abstract,
        "year": work.publication_year,
        "date": work.publication_date.isoformat() if work.publication_date else None,
        "type": work.type, "cited_by_count": work.cited_by_count,
        "referenced_works": list(work.referenced_works),
        "source_id": work.source_id, "source_name": work.source_name, "issn_l": work.issn_l,
        "author_count": len(work.authorships) if work.authorships else None,
        "countries": [c for a in work.authorships for c in a.countries],
        "field": primary.field_name if primary else None,
        "subfield": primary.subfield_id if primary else None,
        "topics": [{"field": t.field_name, "subfield": t.subfield_name, "score": t.score} for t in work.topics],
        "concept_scores": [c.score for c in work.concepts if c.score is not None],
    }


def collect_openalex(openalex, taxonomy: Taxonomy, quotas: Mapping[str, int], *,
                     disciplines: Iterable[str], also: str | None = None,
                     tick: Tick = _noop) -> dict[str, list[dict[str, Any]]]:
    """Candidates of the by-construction disciplines from OpenAlex, per collection cell.

    Parameters
    ----------
    openalex : OpenAlexClient
    taxonomy : Taxonomy
    quotas : mapping of cell id to int
        Papers each cell keeps.
    disciplines : iterable of str
        The disciplines collected from OpenAlex.
    also : str, optional
        A filter the candidates must also meet (:func:`published_by`).
    tick : callable
        Called with 1 after each cell.

    Returns
    -------
    dict
        Cell id -> its candidates (:func:`work_dict`), most cited first; a work may be in several cells.
    """
    out: dict[str, list[dict[str, Any]]] = {}
    for discipline in disciplines:
        cells = taxonomy.of(discipline)
        for cell in cells:
            sharing = sum(c.openalex_subfield == cell.openalex_subfield for c in cells)
            works = openalex.subfield_candidates(cell.openalex_subfield, _quoted(cell.keywords),
                                                 cell_limit(quotas[cell.id], sharing), select=WORK_SELECT,
                                                 also=also)
            out[cell.id] = [work_dict(w) for w in works]
            tick(1)
    return out


def _batches(items: Sequence[str], size: int = MAX_OR_VALUES) -> Iterable[list[str]]:
    for i in range(0, len(items), size):
        yield list(items[i:i + size])


def openalex_by_doi(openalex, dois: Iterable[str], *, tick: Tick = _noop) -> dict[str, dict[str, Any]]:
    """OpenAlex records of the ADS candidates, matched by DOI.

    Parameters
    ----------
    openalex : OpenAlexClient
    dois : iterable of str
        Lower-case DOIs; one that would break OpenAlex's filter syntax (a comma or a bar) is not asked.
    tick : callable
        Called with the number of DOIs of each batch.

    Returns
    -------
    dict
        DOI -> :func:`work_dict`, for the DOIs OpenAlex knows.
    """
    wanted = sorted({d for d in dois if d and "," not in d and "|" not in d})
    found: dict[str, dict[str, Any]] = {}
    for batch in _batches(wanted):
        for work in openalex.iter_works("doi:" + "|".join(batch), select=WORK_SELECT):
            if work.doi in batch:
                found.setdefault(work.doi, work_dict(work))
        tick(len(batch))
    return found


def arxiv_entries(arxiv, ids: Iterable[str], *, tick: Tick = _noop) -> dict[str, dict[str, Any]]:
    """arXiv metadata of the ADS candidates' preprints.

    Parameters
    ----------
    arxiv : ArxivClient
    ids : iterable of str
        arXiv ids without version.
    tick : callable
        Called with the number of ids of each batch.

    Returns
    -------
    dict
        arXiv id -> title, abstract, primary class, categories, DOI and first-version date.
    """
    wanted = sorted(set(ids))
    out: dict[str, dict[str, Any]] = {}
    for batch in _batches(wanted, arxiv.batch_size):
        for e in arxiv.get_entries(batch):
            out[e.id] = {"id": e.id, "title": e.title, "abstract": e.summary, "primary_class": e.primary_category,
                         "categories": list(e.categories), "doi": e.doi,
                         "date": e.published.date().isoformat() if e.published else None}
        tick(len(batch))
    return out


def snowball_plan(focal: Sequence[Mapping[str, Any]]) -> SnowballPlan:
    """The OpenAlex listings that fetch the candidates' references and citers
    (:func:`~scitaste_hf.sources.snowball.plan_snowball`).

    Parameters
    ----------
    focal : sequence of dict
        The candidates' OpenAlex records (:func:`work_dict`), grouped by field.
    """
    return plan_snowball([w["id"] for w in focal], [w["referenced_works"] for w in focal],
                         [w["cited_by_count"] or 0 for w in focal])


def snowball(openalex, focal: Sequence[Mapping[str, Any]], plan: SnowballPlan, *, also: str | None = None,
             tick: Tick = _noop) -> list[dict[str, Any]]:
    """The works around the candidates: their references and their citers, each once, with the fields of
    :data:`SNOWBALL_SELECT` (a citer's references tell which of a paper's references it also cites: the CD index).

    Parameters
    ----------
    openalex : OpenAlexClient
    focal : sequence of dict
        The candidates' OpenAlex records (:func:`work_dict`).
    plan : SnowballPlan
        :func:`snowball_plan` of ``focal``.
    also : str, optional
        A filter every listing must also meet (:func:`published_by`).
    tick : callable
        Called with 1 per listing of the plan done.

    Returns
    -------
    list of dict
        ``id``, ``date``, ``journal``, ``field``, ``title`` and ``referenced_works`` of each surrounding work,
        in id order; the candidates themselves are left out.
    """
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    focal_ids = {w["id"] for w in focal}
    fetch = openalex.afetch_plan(plan, select=SNOWBALL_SELECT, progress=tick, also=also)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        references, citers = asyncio.run(fetch)
    else:
        # Called from a running event loop (a notebook): the listings get a loop of their own in a worker thread.
        with ThreadPoolExecutor(max_workers=1) as worker:
            references, citers = worker.submit(asyncio.run, fetch).result()
    found: dict[str, dict[str, Any]] = {}
    for work in [*references, *citers]:
        if work.id not in focal_ids and work.id not in found:
            found[work.id] = {
                "id": work.id, "title": work.title,
                "date": work.publication_date.isoformat() if work.publication_date else None,
                "journal": work.issn_l or work.source_name,
                "field": work.primary_topic.field_name if work.primary_topic else None,
                "referenced_works": list(work.referenced_works)}
    return [found[k] for k in sorted(found)]


def journal_sources(openalex, source_ids: Iterable[str], *, tick: Tick = _noop) -> list[dict[str, Any]]:
    """The candidates' journals as OpenAlex source objects (``issn_l``, ``display_name``, ``summary_stats``),
    what :meth:`~scitaste_hf.index.JournalTable.from_openalex_sources` reads, asked for in batches
    (:meth:`~scitaste_hf.sources.openalex.OpenAlexClient.get_sources`).

    Parameters
    ----------
    openalex : OpenAlexClient
    source_ids : iterable of str
        OpenAlex source ids (``S...``).
    tick : callable
        Called with the number of sources of each batch.

    Raises
    ------
    NotFoundError
        When OpenAlex has no source of that id (a candidate's venue).
    """
    from scitaste_hf.sources.errors import NotFoundError

    wanted = sorted(set(source_ids))
    out = []
    for batch in _batches(wanted):
        found = {src.id: src for src in openalex.get_sources(batch)}
        for sid in batch:
            if sid not in found:
                raise NotFoundError(f"OpenAlex has no source {sid}")
            src = found[sid]
            out.append({"id": src.id, "issn_l": src.issn_l, "display_name": src.display_name,
                        "summary_stats": {"2yr_mean_citedness": src.two_year_mean_citedness}})
        tick(len(batch))
    return out
