"""Labelling candidates with a sub-discipline (paper section 3.2).

A discipline of the ADS route (physics, in the packaged taxonomies): a four-stage cascade over ADS/arXiv metadata;
the first stage that fires decides:
1. the arXiv primary class, 2. the journal's bibstem, 3. two or more controlled keywords in title + abstract,
4. a characteristic term in the title. A paper that no stage labels stays unclassified (in neither split).

The disciplines of the OpenAlex route are labelled by construction (the collection cell a paper came from); a
paper collected by two cells is kept once, in the cell whose keywords it matches most (ties: the first cell in
taxonomy order).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

from scitaste_hf.taxonomy import SubDiscipline, Taxonomy

STAGES = ("arxiv", "journal", "keywords", "title")
#: Controlled-keyword hits in title + abstract that the keyword stage needs (paper: "two or more").
MIN_KEYWORD_HITS = 2


@cache
def _pattern(term: str) -> re.Pattern[str]:
    return re.compile(r"(?<![a-z0-9])" + re.escape(term.lower()) + r"(?![a-z0-9])")


def keyword_hits(text: str, keywords: Iterable[str]) -> int:
    """How many distinct keywords occur in ``text`` as whole words or phrases (case-insensitive)."""
    lowered = text.lower()
    return sum(1 for k in keywords if _pattern(k).search(lowered))


@dataclass(frozen=True)
class Label:
    """A sub-discipline label and the stage that decided it (``None`` and ``"unclassified"`` if none did)."""

    cell: str | None
    stage: str


def cascade(cells: Sequence[SubDiscipline], *, arxiv_class: str | None, bibstem: str | None, title: str,
            abstract: str) -> Label:
    """Run the four-stage cascade for one paper of an ADS-route discipline.

    Parameters
    ----------
    cells : sequence of SubDiscipline
        The discipline's sub-disciplines, in taxonomy order (ties go to the earlier one).
    arxiv_class : str or None
        The arXiv primary class (``quant-ph``, ``cond-mat.supr-con``; an old-style archive without a subject
        class, such as ``astro-ph``, matches the sub-discipline that owns that archive's classes).
    bibstem : str or None
        The ADS bibstem of the journal (``PhRvB``).
    title, abstract : str
        Text for the keyword and title stages.
    """
    if arxiv_class:
        for cell in cells:
            if arxiv_class in cell.arxiv_classes:
                return Label(cell.id, "arxiv")
        archive = arxiv_class.split(".")[0]
        for cell in cells:
            if any(c.split(".")[0] == archive for c in cell.arxiv_classes):
                return Label(cell.id, "arxiv")
    if bibstem:
        for cell in cells:
            if bibstem in cell.bibstems:
                return Label(cell.id, "journal")
    text = f"{title} {abstract}"
    hits = [keyword_hits(text, cell.keywords) for cell in cells]
    best = max(hits, default=0)
    if best >= MIN_KEYWORD_HITS:
        return Label(cells[hits.index(best)].id, "keywords")
    for cell in cells:
        if keyword_hits(title, cell.title_terms):
            return Label(cell.id, "title")
    return Label(None, "unclassified")


def deduplicate(collected: Mapping[str, Sequence[str]], texts: Mapping[str, str], taxonomy: Taxonomy
                ) -> dict[str, str]:
    """One cell per work for the by-construction disciplines.

    Parameters
    ----------
    collected : mapping of cell id to work ids
        What each collection cell returned, a work possibly in several cells.
    texts : mapping of work id to title + abstract
    taxonomy : Taxonomy

    Returns
    -------
    dict
        Work id -> the cell that keeps it: the most keyword hits, ties to the earlier cell in taxonomy order.
    """
    order = {c.id: k for k, c in enumerate(taxonomy.cells)}
    best: dict[str, tuple[int, int, str]] = {}
    for cell_id in sorted(collected, key=order.__getitem__):
        keywords = taxonomy.get(cell_id).keywords
        for work in collected[cell_id]:
            score = (-keyword_hits(texts.get(work, ""), keywords), order[cell_id])
            if work not in best or score < best[work][:2]:
                best[work] = (*score, cell_id)
    return {work: cell for work, (_, _, cell) in best.items()}


def label(papers: Sequence[dict], taxonomy: Taxonomy) -> list[dict]:
    """Give every fused paper its sub-discipline: the cascade for an ADS-route discipline, the de-duplicated
    collection cell for the others.

    Parameters
    ----------
    papers : sequence of dict
        Fused papers (:func:`scitaste_hf.builder.fuse.fuse_candidates`): ``bibcode``, ``discipline``, ``cells``,
        ``title``, ``abstract``, ``arxiv_class``, ``bibstem``.
    taxonomy : Taxonomy

    Returns
    -------
    list of dict
        The papers with ``subcategory_id``, ``subcategory_name`` (None when unclassified) and ``label_stage``
        (a cascade stage, ``construction`` or ``unclassified``).
    """
    collected: dict[str, list[str]] = {}
    for p in papers:
        for cell in p["cells"]:
            collected.setdefault(cell, []).append(p["bibcode"])
    texts = {p["bibcode"]: f"{p.get('title') or ''} {p.get('abstract') or ''}" for p in papers if p["cells"]}
    owner = deduplicate(collected, texts, taxonomy)
    out = []
    for p in papers:
        if taxonomy.uses_ads(p["discipline"]):
            found = cascade(taxonomy.of(p["discipline"]), arxiv_class=p.get("arxiv_class"), bibstem=p.get("bibstem"),
                            title=p.get("title") or "", abstract=p.get("abstract") or "")
            cell, stage = found.cell, found.stage
        else:
            cell, stage = owner[p["bibcode"]], "construction"
        out.append({**p, "subcategory_id": cell, "subcategory_name": taxonomy.get(cell).name if cell else None,
                    "label_stage": stage})
    return out
