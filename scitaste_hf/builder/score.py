"""The index stage: the Academic Taste Index of every paper of the pool (docs/index-dimensions.md), over the pool as
reference population, and the records of the benchmark schema (docs/dataset.md#record-schema).

A paper with an OpenAlex record enters the population under its OpenAlex id, so that the snowball's citation
links reach it; a physics paper that OpenAlex does not know enters under its bibcode with what ADS gave (date,
citations, journal), its other features imputed by the index.

``journal_tier`` is a proxy as well: JCR quartiles are proprietary, so a journal's tier is the quartile of its
OpenAlex ``2yr_mean_citedness`` among the pool's journals of the same discipline (Q1 the highest).

A build as of a date scores the graph as it stood then (:func:`as_of_graph`): only works published by the date, and
each paper's citation count is the number of them that cite it, not the count the services report today.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import date
from typing import Any

from scitaste_hf.schema import DIMENSIONS, JOURNAL_TIERS
from scitaste_hf.weights import Weights, composite


def journal_table(sources: Sequence[Mapping[str, Any]]):
    """The open journal table (impact proxy) of :meth:`JournalTable.from_openalex_sources`, each ISSN and name
    once (the first source keeps it)."""
    from scitaste_hf.index import JournalTable

    seen: set[str] = set()
    unique = []
    for src in sources:
        keys = {" ".join(k.casefold().split()) for k in (src.get("issn_l"), src.get("display_name")) if k}
        if keys & seen:
            continue
        seen |= keys
        unique.append(src)
    return JournalTable.from_openalex_sources(unique)


def as_of_graph(works: Mapping[str, Mapping[str, Any]], around: Sequence[Mapping[str, Any]], as_of: date
                ) -> tuple[dict[str, Mapping[str, Any]], list[Mapping[str, Any]], Counter[str]]:
    """The candidates and the snowball as they stood at ``as_of``, and every work's citation count then.

    Parameters
    ----------
    works : mapping
        OpenAlex id -> candidate record (:func:`scitaste_hf.builder.collect.work_dict`).
    around : sequence of dict
        The snowball (:func:`scitaste_hf.builder.collect.snowball`).
    as_of : date

    Returns
    -------
    (dict, list, Counter)
        The candidates and the snowball works dated on or before ``as_of`` (an undated work cannot be shown to
        be, and is left out), and per OpenAlex id the number of those works that cite it. The snowball holds
        every citer of every candidate, so the count is the paper's citation count at ``as_of``.
    """
    day = as_of.isoformat()
    works = {k: w for k, w in works.items() if w.get("date") and w["date"] <= day}
    around = [w for w in around if w.get("date") and w["date"] <= day]
    cited: Counter[str] = Counter()
    for w in [*works.values(), *around]:
        cited.update(set(w["referenced_works"]))
    return works, around, cited


def _date(text: str | None) -> date | None:
    return date.fromisoformat(text) if text else None


def _journal_key(paper: Mapping[str, Any], work: Mapping[str, Any] | None) -> str | None:
    if work:
        return work.get("issn_l") or work.get("source_name")
    return paper.get("journal_name")


def population(papers: Sequence[Mapping[str, Any]], works: Mapping[str, Mapping[str, Any]],
               around: Sequence[Mapping[str, Any]]):
    """The index population of the pool.

    Parameters
    ----------
    papers : sequence of dict
        The labelled, checked papers (``bibcode``, ``openalex_id``, ``date``, ``year``, ``citation_count``,
        ``journal_name``, ``title``, ``abstract``).
    works : mapping
        OpenAlex id -> the candidate's OpenAlex record (:func:`scitaste_hf.builder.collect.work_dict`).
    around : sequence of dict
        The snowball (:func:`scitaste_hf.builder.collect.snowball`).

    Returns
    -------
    (Population, list of str)
        The population and the population id of each paper, in the order of ``papers``.
    """
    import pyarrow as pa

    from scitaste_hf.index import Population
    from scitaste_hf.index.population import PAPER_COLUMNS, WORK_COLUMNS

    rows, ids, cites, cited = [], [], [], []
    for p in papers:
        work = works.get(p.get("openalex_id") or "")
        pid = work["id"] if work else p["bibcode"]
        ids.append(pid)
        features = {k: (work or {}).get(k) for k in ("field", "author_count", "countries", "topics", "concept_scores")}
        rows.append({"id": pid, "date": _date(p.get("date") or f"{p['year']}-01-01"),
                     "citation_count": p.get("citation_count") or 0, "journal": _journal_key(p, work), **features,
                     "text": f"{p.get('title') or ''}. {p.get('abstract') or ''}"})
        for ref in (work or {}).get("referenced_works") or ():
            cites.append(pid)
            cited.append(ref)
    known = set(ids) | {w["id"] for w in around}
    for w in around:
        # A surrounding work's links matter only between known works: citer -> paper or paper's reference.
        for ref in w["referenced_works"]:
            if ref in known:
                cites.append(w["id"])
                cited.append(ref)
    paper_schema = pa.schema([(k, v) for k, v in PAPER_COLUMNS.items() if k != "embedding"])
    papers_table = pa.Table.from_pylist(rows, schema=paper_schema)
    in_pool = set(ids)
    work_rows = [{"id": w["id"], "date": _date(w["date"]), "journal": w["journal"], "field": w["field"],
                  "text": w["title"]} for w in around if w["id"] not in in_pool]
    work_schema = pa.schema([(k, v) for k, v in WORK_COLUMNS.items() if k != "embedding"])
    edges = pa.table({"citing": pa.array(cites, pa.string()), "cited": pa.array(cited, pa.string())})
    return Population.from_arrow(papers_table, edges, pa.Table.from_pylist(work_rows, schema=work_schema)), ids


def journal_tiers(papers: Sequence[Mapping[str, Any]], works: Mapping[str, Mapping[str, Any]], table
                  ) -> list[str | None]:
    """Each paper's journal tier: its journal's JCR quartile when the table has quartiles, else the quartile of
    the journal's impact proxy among the journals of its discipline in the pool (Q1 the top quarter); None when
    the journal or its figure is unknown.

    Parameters
    ----------
    papers : sequence of dict
    works : mapping
        OpenAlex id -> candidate record.
    table : JournalTable
    """
    entries = [table.lookup(_journal_key(p, works.get(p.get("openalex_id") or ""))) for p in papers]
    if any(e is not None and e.jcr_quartile for e in entries):
        return [e.jcr_quartile if e is not None else None for e in entries]
    impact = [e.impact_factor if e is not None else None for e in entries]
    tiers: list[str | None] = [None] * len(papers)
    for discipline in {p["discipline"] for p in papers}:
        values = sorted({v for p, v in zip(papers, impact) if p["discipline"] == discipline and v is not None},
                        reverse=True)
        rank = {v: k for k, v in enumerate(values)}
        for i, (p, v) in enumerate(zip(papers, impact)):
            if p["discipline"] == discipline and v is not None:
                tiers[i] = JOURNAL_TIERS[len(JOURNAL_TIERS) * rank[v] // len(values)]
    return tiers


def score(papers: Sequence[Mapping[str, Any]], works: Mapping[str, Mapping[str, Any]],
          around: Sequence[Mapping[str, Any]], sources: Sequence[Mapping[str, Any]],
          weights: Weights | None = None, table=None) -> list[dict[str, Any]]:
    """Benchmark records of the whole pool, each with the citation count its dimension A was computed from
    (``citation_count``, beyond the benchmark schema: the release writes it beside the splits).

    Parameters
    ----------
    papers : sequence of dict
        The labelled, checked papers.
    works : mapping
        OpenAlex id -> candidate record.
    around : sequence of dict
        The snowball.
    sources : sequence of dict
        OpenAlex source objects of the candidates' journals.
    weights : mapping or DisciplineWeights, optional
        The composite's weights (:func:`records`); the packaged default when None.
    table : JournalTable, optional
        The journal data of dimension G; the open OpenAlex proxy of ``sources`` when None.

    Returns
    -------
    list of dict
        One record per paper (the fields of :func:`scitaste_hf.schema.record_features` and ``citation_count``),
        in the order of ``papers``.
    """
    from scitaste_hf.index import compute_index

    table = journal_table(sources) if table is None else table
    pop, ids = population(papers, works, around)
    return records(papers, ids, compute_index(pop, table), journal_tiers(papers, works, table), weights)


def records(papers: Sequence[Mapping[str, Any]], ids: Sequence[str], scores, tiers: Sequence[str | None],
            weights: Weights | None = None) -> list[dict[str, Any]]:
    """Benchmark records from an index table (the columns of :func:`scitaste_hf.index.compute_index`), whichever
    engine computed it.

    Parameters
    ----------
    papers : sequence of dict
        The labelled, checked papers.
    ids : sequence of str
        Each paper's id in ``scores``, in the order of ``papers``.
    scores : pyarrow.Table
        One row per paper: ``id``, the seven dimensions and ``innovation_score``.
    tiers : sequence of str or None
        Each paper's journal tier (:func:`journal_tiers`).
    weights : mapping or DisciplineWeights, optional
        The composite's weights, each record's vector picked by the discipline it is labelled with (the engines
        would pick it by its primary topic's subfield); None keeps the table's ``innovation_score`` (the packaged
        weights).

    Returns
    -------
    list of dict
        As :func:`score`.
    """
    row = {pid: k for k, pid in enumerate(scores.column("id").to_pylist())}
    columns = {k: scores.column(k).to_pylist() for k in (*DIMENSIONS, "innovation_score")}
    out = []
    for p, pid, tier in zip(papers, ids, tiers):
        k = row[pid]
        out.append({
            "bibcode": p["bibcode"], "doi": p.get("doi"), "openalex_id": p.get("openalex_id"),
            "arxiv_id": p.get("arxiv_id"), "title": p["title"], "abstract": p["abstract"], "year": int(p["year"]),
            "discipline": p["discipline"], "subcategory_id": p.get("subcategory_id"),
            "subcategory_name": p.get("subcategory_name"), "journal_name": p.get("journal_name"),
            "journal_tier": tier, "citation_count": int(p.get("citation_count") or 0),
            "innovation_score": float(columns["innovation_score"][k]),
            "dimension_scores": {d: float(columns[d][k]) for d in DIMENSIONS}})
        if weights is not None:
            out[-1]["innovation_score"] = composite(out[-1]["dimension_scores"], weights, p["discipline"])
    return out
