"""The in-memory engine fed from a snapshot: the snapshot's records become the three tables of
:meth:`scitaste_hf.index.Population.from_arrow` the way the dataset builder fills them from the APIs (focal papers
with all their features, the other works with date, journal, field and title, every citation), and
:func:`scitaste_hf.index.compute_index` scores them. For populations that fit in memory; the DuckDB engine gives
the same values beyond."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pyarrow as pa

from scitaste_hf.errors import ScitasteError
from scitaste_hf.scale.options import IndexOptions
from scitaste_hf.scale.progress import StageProgress
from scitaste_hf.snapshot.focal import Focal
from scitaste_hf.snapshot.layout import find_entity
from scitaste_hf.snapshot.reader import iter_records, journal_key, paper_text, read_journals


def _flat(work) -> dict:
    """A work's fields that the focal filter reads (:data:`scitaste_hf.snapshot.focal.FILTER_FIELDS`)."""
    primary = work.primary_topic
    return {"id": work.id, "year": work.publication_year, "publication_date": work.publication_date,
            "citation_count": work.cited_by_count, "type": work.type,
            "field_id": primary.field_id if primary else None,
            "subfield_id": primary.subfield_id if primary else None, "issn_l": work.issn_l}


def population_tables(path: str | Path, focal: Focal, fmt: str = "auto", progress: StageProgress | None = None
                      ) -> tuple[pa.Table, pa.Table, pa.Table, list[str | None]]:
    """The ``papers``, ``citations`` and ``works`` tables of a snapshot, papers and works each in id order, and
    each paper's primary-topic subfield id (None without one), in the papers' order.

    Raises
    ------
    ScitasteError
        When the focal selection finds no work, an id of the focal file is not in the snapshot, or a focal
        paper has neither a publication date nor a year.
    """
    from scitaste_hf.index.population import PAPER_COLUMNS, WORK_COLUMNS
    from scitaste_hf.sources.openalex import parse_work

    files = find_entity(path, "works", fmt)
    progress = progress or StageProgress(enabled=False)
    papers, others, cites, cited = [], [], [], []
    with progress.step("reading the snapshot", files.records) as advance:
        for data in iter_records(files):
            work = parse_work(data)
            journal = journal_key(work.issn_l, work.source_name)
            field = work.primary_topic.field_name if work.primary_topic else None
            for ref in work.referenced_works:
                cites.append(work.id)
                cited.append(ref)
            if focal.matches(_flat(work)):
                day = work.publication_date or (date(work.publication_year, 1, 1) if work.publication_year else None)
                if day is None:
                    raise ScitasteError(f"focal work {work.id} has no publication date or year; the CD index needs "
                                        "the date of every focal paper")
                papers.append({
                    "subfield_id": work.primary_topic.subfield_id if work.primary_topic else None,
                    "id": work.id, "date": day, "citation_count": work.cited_by_count or 0, "journal": journal,
                    "field": field, "author_count": len(work.authorships) if work.authorships else None,
                    "countries": [c for a in work.authorships for c in a.countries],
                    "topics": [{"field": t.field_name, "subfield": t.subfield_name, "score": t.score}
                               for t in work.topics],
                    "concept_scores": [c.score for c in work.concepts if c.score is not None],
                    "text": paper_text(work.title, work.abstract)})
            else:
                others.append({"id": work.id, "date": work.publication_date, "journal": journal, "field": field,
                               "text": work.title})
            advance(1)
    if focal.ids is not None:
        missing = sorted(focal.ids - {p["id"] for p in papers})
        if missing:
            raise ScitasteError(f"{len(missing)} focal id(s) are not in the snapshot, first: {', '.join(missing[:5])}")
    if not papers:
        raise ScitasteError(f"--focal {focal.spec!r} selects no work of the snapshot")
    papers.sort(key=lambda p: p["id"])
    others.sort(key=lambda w: w["id"])
    paper_schema = pa.schema([(k, v) for k, v in PAPER_COLUMNS.items() if k != "embedding"])
    work_schema = pa.schema([(k, v) for k, v in WORK_COLUMNS.items() if k != "embedding"])
    subfields = [p.pop("subfield_id") for p in papers]
    return (pa.Table.from_pylist(papers, schema=paper_schema),
            pa.table({"citing": pa.array(cites, pa.string()), "cited": pa.array(cited, pa.string())}),
            pa.Table.from_pylist(others, schema=work_schema), subfields)


def run_memory(path: str | Path, options: IndexOptions, progress: StageProgress | None = None) -> tuple[pa.Table, dict]:
    """Score the focal papers of a snapshot with the in-memory engine.

    Returns
    -------
    (pyarrow.Table, dict)
        :func:`~scitaste_hf.index.compute_index`'s table, and a summary of the run (counts, neighbour search).
    """
    from scitaste_hf.index import Population, compute_index
    from scitaste_hf.scale.disciplines import paper_disciplines

    progress = progress or StageProgress(enabled=False)
    papers, citations, works, subfields = population_tables(path, options.focal, options.format, progress)
    disciplines = paper_disciplines(subfields, options.weights, options.taxonomy)
    journals = read_journals(path, options.journal_table)
    with progress.step("in-memory index", papers.num_rows) as advance:
        population = Population.from_arrow(papers, citations, works)
        table = compute_index(population, journals, embedder=options.embedder, weights=options.weights,
                              cd_window_days=options.cd_window, disciplines=disciplines)
        advance(papers.num_rows)
    summary = {"engine": "memory", "papers": papers.num_rows, "works": len(population.ids),
               "citations": int(population.graph.out.nnz), "neighbours": {"method": "exact"}}
    return table, summary
