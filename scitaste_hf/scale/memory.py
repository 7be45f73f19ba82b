"""The in-memory engine fed from a snapshot: the snapshot's records become the three tables of
:meth:`scitaste_hf.index.Population.from_arrow` the way the dataset builder fills them from the APIs (focal papers
with all their features, the other works with date, journal, field and title, every citation), and
:func:`scitaste_hf.index.compute_index` scores them. For populations that fit in memory; the DuckDB engine gives
the same values beyond."""

from __future__ import annotations

from collections import Counter
from datetime import date
from pathlib import Path

import pyarrow as pa

from scitaste_hf.errors import ScitasteError
from scitaste_hf.progress import StageProgress
from scitaste_hf.scale.options import IndexOptions
from scitaste_hf.snapshot.focal import Focal
from scitaste_hf.snapshot.layout import find_entity
from scitaste_hf.snapshot.reader import iter_records, journal_key, paper_text, read_journals
from scitaste_hf.snapshot.records import ReadCounts, short_id
from scitaste_hf.sources.openalex import abstract_from_inverted_index


def _work(data: dict) -> dict:
    """The fields of a record the contract accepted (:data:`scitaste_hf.snapshot.records.WORK_FIELDS`) as the
    SQL engines flatten them (:func:`scitaste_hf.scale.sql.flatten_records`): the title falls back to the display
    name, the journal is the ISSN-L or else the source's name, no authorship means an unknown author count. The
    keys of :data:`scitaste_hf.snapshot.focal.FILTER_FIELDS` are among them."""
    source = (data.get("primary_location") or {}).get("source") or {}
    primary = data.get("primary_topic") or {}
    authorships = data.get("authorships") or []
    day = data.get("publication_date")
    return {"id": short_id(data["id"]), "title": data.get("title") or data.get("display_name"),
            "publication_date": date.fromisoformat(day) if day else None, "year": data.get("publication_year"),
            "citation_count": data.get("cited_by_count"), "type": data.get("type"),
            "issn_l": source.get("issn_l"), "journal": journal_key(source.get("issn_l"), source.get("display_name")),
            "field": (primary.get("field") or {}).get("display_name"),
            "field_id": short_id((primary.get("field") or {}).get("id")),
            "subfield_id": short_id((primary.get("subfield") or {}).get("id")),
            "author_count": len(authorships) or None,
            "countries": [c for a in authorships for c in a.get("countries") or ()],
            "topics": [{"field": (t.get("field") or {}).get("display_name"),
                        "subfield": (t.get("subfield") or {}).get("display_name"), "score": t.get("score")}
                       for t in data.get("topics") or ()],
            "concept_scores": [c["score"] for c in data.get("concepts") or () if c.get("score") is not None],
            "references": [short_id(r) for r in data.get("referenced_works") or ()],
            "abstract": abstract_from_inverted_index(data.get("abstract_inverted_index"))}


def population_tables(path: str | Path, focal: Focal, fmt: str = "auto", progress: StageProgress | None = None,
                      counts: ReadCounts | None = None) -> tuple[pa.Table, pa.Table, pa.Table, list[str | None]]:
    """The ``papers``, ``citations`` and ``works`` tables of a snapshot, papers and works each in id order, and
    each paper's primary-topic subfield id (None without one), in the papers' order; ``counts`` is incremented
    by what the reading skips.

    Raises
    ------
    ScitasteError
        When the record contract refuses a record (:mod:`scitaste_hf.snapshot.records`), the focal selection
        finds no work, an id of the focal file is not in the snapshot, or a focal
        paper has neither a publication date nor a year.
    """
    from scitaste_hf.index.population import PAPER_COLUMNS, WORK_COLUMNS

    files = find_entity(path, "works", fmt)
    progress = progress or StageProgress(enabled=False)
    papers, others, cites, cited = [], [], [], []
    with progress.step("reading the snapshot", files.records) as advance:
        for data in iter_records(files, counts):
            work = _work(data)
            for ref in work["references"]:
                cites.append(work["id"])
                cited.append(ref)
            if focal.matches(work):
                day = work["publication_date"] or (date(work["year"], 1, 1) if work["year"] else None)
                if day is None:
                    raise ScitasteError(f"focal work {work['id']} has no publication date or year; the CD index "
                                        "needs the date of every focal paper")
                papers.append({
                    "subfield_id": work["subfield_id"], "id": work["id"], "date": day,
                    "citation_count": work["citation_count"] or 0, "journal": work["journal"], "field": work["field"],
                    "author_count": work["author_count"], "countries": work["countries"], "topics": work["topics"],
                    "concept_scores": work["concept_scores"], "text": paper_text(work["title"], work["abstract"])})
            else:
                others.append({"id": work["id"], "date": work["publication_date"], "journal": work["journal"],
                               "field": work["field"], "text": work["title"]})
            advance(1)
    twice = sorted(i for i, n in Counter(w["id"] for w in (*papers, *others)).items() if n > 1)
    if twice:  # the DuckDB engine's refusal, in its words (scitaste_hf.scale.sql.DUPLICATE_IDS)
        raise ScitasteError(f"the snapshot lists works twice, first: {', '.join(twice[:5])}")
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
    counts = ReadCounts()
    papers, citations, works, subfields = population_tables(path, options.focal, options.format, progress, counts)
    disciplines = paper_disciplines(subfields, options.weights, options.taxonomy)
    journals = read_journals(path, options.journal_table)
    with progress.step("in-memory index", papers.num_rows) as advance:
        population = Population.from_arrow(papers, citations, works)
        table = compute_index(population, journals, embedder=options.embedder, weights=options.weights,
                              cd_window_days=options.cd_window, disciplines=disciplines)
        advance(papers.num_rows)
    summary = {"engine": "memory", "papers": papers.num_rows, "works": len(population.ids),
               "citations": int(population.graph.out.nnz), "blank_lines": counts.blank_lines,
               "neighbours": {"method": "exact"}}
    return table, summary
