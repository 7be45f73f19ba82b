"""The quality check of the candidate pool (paper section 4): a paper without a title or an abstract, with a year
outside the collection window, or a duplicate of a paper already kept (same DOI, or same normalised title) is
dropped, with its reason. It runs before the index, so that the reference population holds each paper once.

A build as of a date also drops a paper published after it (ADS is asked by year, so the rest of that year comes
back) and a paper OpenAlex does not know: its citations are counted from their OpenAlex dates, and ADS gives no
dated count.

A title alone does not make a duplicate: short, formulaic titles recur ("Editorial", and in the simulated world
titles are drawn from a small vocabulary), so two papers are the same paper when their normalised titles, years
and journals all agree.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date
from typing import Any

_NON_WORD = re.compile(r"[^0-9a-z]+")


def normalised_title(title: str) -> str:
    """A title reduced to lower-case letters and digits separated by single spaces."""
    return _NON_WORD.sub(" ", title.casefold()).strip()


def _title_key(p: dict[str, Any]) -> tuple[str, Any, str]:
    return normalised_title(p.get("title") or ""), p.get("year"), normalised_title(p.get("journal_name") or "")


def check(papers: Sequence[dict[str, Any]], years: tuple[int, int], as_of: date | None = None
          ) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Split the pool into the papers kept and the failures.

    Parameters
    ----------
    papers : sequence of dict
        Fused papers with ``bibcode``, ``title``, ``abstract``, ``year``, ``date``, ``doi``, ``openalex_id``,
        ``journal_name`` and ``citation_count``.
    years : (int, int)
        First and last publication year allowed.
    as_of : date, optional
        The build's as-of date: a paper dated after it, or without an OpenAlex record, is dropped.

    Returns
    -------
    (list of dict, list of dict)
        The papers kept, in bibcode order, and one ``{"bibcode", "reason", "detail"}`` per dropped paper. Of
        duplicates, the most cited is kept (ties: the smaller bibcode).
    """
    kept, failures = [], []
    dois: dict[str, str] = {}
    titles: dict[tuple[str, Any, str], str] = {}
    for p in sorted(papers, key=lambda p: (-(p.get("citation_count") or 0), p["bibcode"])):
        title = (p.get("title") or "").strip()
        year = p.get("year")
        reason, detail = None, ""
        if not title:
            reason = "missing_title"
        elif not (p.get("abstract") or "").strip():
            reason = "missing_abstract"
        elif year is None or not years[0] <= int(year) <= years[1]:
            reason, detail = "year_out_of_range", f"year {year} outside {years[0]}-{years[1]}"
        elif as_of and p.get("date") and p["date"] > as_of.isoformat():
            reason, detail = "after_as_of", f"published {p['date']}, after the as-of date {as_of.isoformat()}"
        elif as_of and not p.get("openalex_id"):
            reason, detail = "no_dated_citations", "not in OpenAlex, whose citer dates an as-of build counts"
        elif p.get("doi") and p["doi"] in dois:
            reason, detail = "duplicate_doi", f"same DOI as {dois[p['doi']]}"
        elif _title_key(p) in titles:
            reason, detail = "duplicate_title", f"same title, year and journal as {titles[_title_key(p)]}"
        if reason:
            failures.append({"bibcode": p["bibcode"], "reason": reason, "detail": detail})
            continue
        if p.get("doi"):
            dois[p["doi"]] = p["bibcode"]
        titles[_title_key(p)] = p["bibcode"]
        kept.append(p)
    kept.sort(key=lambda p: p["bibcode"])
    failures.sort(key=lambda f: f["bibcode"])
    return kept, failures
