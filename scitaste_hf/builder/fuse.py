"""Fusing a candidate's ADS, OpenAlex and arXiv records into one paper (paper section 3.1), recording which
source each field came from.

Precedence, first source that has the field: title, year and citations ADS > OpenAlex > arXiv; abstract
ADS > OpenAlex > arXiv; DOI and journal ADS > OpenAlex. The publication date (which the CD index needs exactly)
comes from OpenAlex > arXiv > ADS, because ADS dates carry the month only. The label of an ADS-route discipline
follows the cascade of :mod:`scitaste_hf.builder.classify` (arXiv > journal > keywords > title), whose arXiv class
is arXiv's primary category, else the one ADS lists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from scitaste_hf.taxonomy import Discipline, Taxonomy

#: Sources asked for each field, in order of precedence.
PRECEDENCE: Mapping[str, tuple[str, ...]] = {
    "title": ("ads", "openalex", "arxiv"),
    "year": ("ads", "openalex", "arxiv"),
    "citation_count": ("ads", "openalex"),
    "abstract": ("ads", "openalex", "arxiv"),
    "doi": ("ads", "openalex", "arxiv"),
    "journal_name": ("ads", "openalex"),
    "date": ("openalex", "arxiv", "ads"),
    "arxiv_class": ("arxiv", "ads"),
}


def internal_id(discipline: Discipline, openalex_id: str) -> str:
    """The benchmark id of a paper without an ADS bibcode, ``STB.<DISC>.<OpenAlex id>`` (the dataset's
    ``openalex_bibcode_map`` resolves it; the paper assigns such ids to its non-ADS papers).

    Parameters
    ----------
    discipline : Discipline
        The paper's discipline, from the taxonomy that has its code.
    openalex_id : str
        Short OpenAlex work id (``W2741809807``).
    """
    return f"STB.{discipline.code}.{openalex_id}"


def _ads_date(pubdate: str | None) -> str | None:
    # ADS writes unknown month/day as 00 ("2004-05-00").
    if not pubdate or len(pubdate) < 7:
        return None
    year, month = pubdate[:4], pubdate[5:7]
    return f"{year}-{month if month != '00' else '01'}-01"


def _fields(source: str, rec: Mapping[str, Any]) -> dict[str, Any]:
    if source == "ads":
        return {"title": rec.get("title"), "year": rec.get("year"), "citation_count": rec.get("citation_count"),
                "abstract": rec.get("abstract"), "doi": rec.get("doi"), "journal_name": rec.get("pub"),
                "date": _ads_date(rec.get("pubdate")),
                "arxiv_class": (rec.get("arxiv_class") or [None])[0]}
    if source == "openalex":
        return {"title": rec.get("title"), "year": rec.get("year"), "citation_count": rec.get("cited_by_count"),
                "abstract": rec.get("abstract"), "doi": rec.get("doi"), "journal_name": rec.get("source_name"),
                "date": rec.get("date")}
    date = rec.get("date")
    return {"title": rec.get("title"), "year": int(date[:4]) if date else None, "abstract": rec.get("abstract"),
            "doi": (rec.get("doi") or "").lower() or None, "date": date, "arxiv_class": rec.get("primary_class")}


def fuse(records: Mapping[str, Mapping[str, Any] | None]) -> tuple[dict[str, Any], dict[str, str]]:
    """One paper from its source records.

    Parameters
    ----------
    records : mapping of source name to record or None
        ``ads`` (an ADS record as collected), ``openalex`` (:func:`~scitaste_hf.builder.collect.work_dict`) and
        ``arxiv`` (:func:`~scitaste_hf.builder.collect.arxiv_entries` values); missing sources are None or absent.

    Returns
    -------
    (dict, dict)
        The fused fields of :data:`PRECEDENCE` (None where no source has one) and, for each field that has a
        value, the source it came from.
    """
    fields = {name: _fields(name, rec) for name, rec in records.items() if rec}
    values: dict[str, Any] = {}
    provenance: dict[str, str] = {}
    for key, order in PRECEDENCE.items():
        values[key] = None
        for source in order:
            value = fields.get(source, {}).get(key)
            if value not in (None, ""):
                values[key], provenance[key] = value, source
                break
    return values, provenance


def fuse_candidates(ads: Mapping[str, Sequence[Mapping[str, Any]]], by_doi: Mapping[str, Mapping[str, Any]],
                    arxiv: Mapping[str, Mapping[str, Any]], cells: Mapping[str, list[Mapping[str, Any]]],
                    taxonomy: Taxonomy, ads_works: Mapping[str, Sequence[Mapping[str, Any]]] | None = None
                    ) -> list[dict[str, Any]]:
    """Every candidate once, fused, in bibcode order.

    Parameters
    ----------
    ads : mapping
        ADS-route discipline -> the ADS records of its candidates; a bibcode that two disciplines found is the
        first's (in the mapping's order).
    by_doi : mapping
        DOI -> OpenAlex record of the ADS candidates OpenAlex knows.
    arxiv : mapping
        arXiv id -> arXiv metadata.
    cells : mapping
        Cell id -> OpenAlex records collected for it (the by-construction disciplines).
    taxonomy : Taxonomy
        The cells' taxonomy: each cell's discipline and that discipline's code.
    ads_works : mapping, optional
        ADS-route discipline -> OpenAlex records of its candidates that have no ADS record (a build from a
        snapshot, :mod:`scitaste_hf.builder.snapshot_source`): each under its internal id, labelled by the cascade.

    Returns
    -------
    list of dict
        Per paper: ``bibcode``, ``discipline``, ``openalex_id``, ``arxiv_id``, ``bibstem``, ``cells`` (the
        collection cells that found it; empty for an ADS-route discipline), the fused fields, and ``sources``
        (field -> source).
    """
    papers: dict[str, dict[str, Any]] = {}
    for discipline, records in ads.items():
        for rec in records:
            if rec["bibcode"] in papers:
                continue
            work = by_doi.get(rec.get("doi") or "")
            entry = arxiv.get(rec.get("arxiv_id") or "")
            values, provenance = fuse({"ads": rec, "openalex": work, "arxiv": entry})
            papers[rec["bibcode"]] = {"bibcode": rec["bibcode"], "discipline": discipline,
                                      "openalex_id": work["id"] if work else None, "arxiv_id": rec.get("arxiv_id"),
                                      "bibstem": rec.get("bibstem"), "cells": [], **values, "sources": provenance}
    for discipline, works in (ads_works or {}).items():
        for work in works:
            values, provenance = fuse({"openalex": work})
            key = internal_id(taxonomy.discipline(discipline), work["id"])
            papers[key] = {"bibcode": key, "discipline": discipline, "openalex_id": work["id"], "arxiv_id": None,
                           "bibstem": None, "cells": [], **values, "sources": provenance}
    for cell_id, works in cells.items():
        discipline = taxonomy.discipline(taxonomy.get(cell_id).discipline)
        for work in works:
            key = internal_id(discipline, work["id"])
            if key in papers:
                papers[key]["cells"].append(cell_id)
                continue
            values, provenance = fuse({"openalex": work})
            papers[key] = {"bibcode": key, "discipline": discipline.name, "openalex_id": work["id"], "arxiv_id": None,
                           "bibstem": None, "cells": [cell_id], **values, "sources": provenance}
    return [papers[k] for k in sorted(papers)]
