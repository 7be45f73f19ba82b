"""A build's population read from an OpenAlex snapshot instead of the services (``scitaste build --source snapshot
PATH``), for releases larger than the services' daily budgets allow. No request is sent; the stages are the API
build's except where a snapshot cannot give what the services do (docs/guide-build.md#build-from-a-snapshot):

- **collect**: the index engine's read stage (:meth:`scitaste_hf.scale.duck.DuckIndex.read`) flattens the snapshot
  once, out of core, and the index stage reuses what it wrote. A by-construction cell gets what
  :meth:`~scitaste_hf.sources.OpenAlexClient.subfield_candidates` would return: the most-cited articles of its
  subfield whose title or abstract holds one of its keywords, back-filled from the subfield. A discipline of the
  ADS route (physics, in the packaged taxonomies) has no ADS here: its population is the articles of the
  collection years whose primary topic lies in one of its cells' subfields, and its candidates are what the ADS
  queries find there by text (per cell the most cited with one of its keywords in title or abstract or one of its
  title terms in the title, and the discipline's most cited).
- **label**: an OpenAlex work carries neither an arXiv class nor an ADS bibstem, so only the cascade's keyword and
  title stages can label a paper of an ADS-route discipline; a paper that neither labels is unclassified, in
  neither split, and counted with the failures.
- **no snowball**: the index reads every reference and citer from the snapshot itself.
- **index**: ``scitaste index``'s DuckDB engine with the checked pool as its focal set, so a record's dimensions are
  that command's for the same works in the same snapshot.
- **ids**: every paper, of either route, carries the internal id ``STB.<CODE>.<OpenAlex id>``.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scitaste_hf.builder.classify import keyword_hits
from scitaste_hf.builder.collect import CANDIDATE_MARGIN, cell_limit, work_dict
from scitaste_hf.errors import ScitasteError, first_line
from scitaste_hf.snapshot.layout import EntityFiles
from scitaste_hf.taxonomy import ADS_ROUTE, SubDiscipline, Taxonomy
from scitaste_hf.weights import Weights

#: The index engine's folder inside the build's work directory (its own resumable stages).
INDEX_FOLDER = "snapshot-index"
#: How the papers of an ADS-route discipline are labelled in a build from a snapshot, for its summary and card.
CASCADE_LABELS = ("the cascade's keyword and title stages only (a snapshot carries no arXiv class or ADS bibstem; "
                  "a paper neither stage labels is in no split)")
#: Rows fetched from DuckDB at a time while scanning a listing.
_FETCH = 2048
#: A listing's works, most cited first (ties by id), with the text its matching reads.
_SCAN = """
SELECT id, COALESCE(title, '') AS title, abstract_json FROM read_parquet(?)
WHERE type = 'article' AND list_contains(?, subfield_id) AND (? OR year BETWEEN ? AND ?)
ORDER BY citation_count DESC NULLS LAST, id"""

Tick = Callable[[int], None]


@dataclass(frozen=True)
class Snapshot:
    """The OpenAlex snapshot a build reads.

    Attributes
    ----------
    path : Path
        Its root, or its works folder, as :func:`~scitaste_hf.snapshot.layout.find_entity` takes it.
    works : EntityFiles
        Its works' data files.
    """

    path: Path
    works: EntityFiles

    @property
    def date(self) -> str | None:
        """The newest ``updated_date`` partition of its works: the day of the newest change it holds."""
        days = [p.path.parent.name.partition("=")[2] for p in self.works.parts
                if p.path.parent.name.startswith("updated_date=")]
        return max(days, default=None)

    @property
    def synthetic(self) -> bool:
        """Whether ``scitaste mirror snapshot`` wrote it (its ``snapshot.json`` says so)."""
        from scitaste_hf.snapshot.writer import INFO_FILE

        for folder in [self.path, *self.works.folder.parents][:4]:
            info = folder / INFO_FILE
            if info.is_file():
                try:
                    return bool(json.loads(info.read_text()).get("synthetic"))
                except (ValueError, AttributeError):
                    return False
        return False

    def fingerprint(self) -> str:
        """SHA-256 of its works' files (path below the works folder and size): the same snapshot wherever it
        lies, another one when a file changed."""
        parts = [(p.path.relative_to(self.works.folder).as_posix(), p.path.stat().st_size) for p in self.works.parts]
        return hashlib.sha256(json.dumps(parts).encode()).hexdigest()

    def describe(self) -> dict[str, Any]:
        """What the build's card and summary record about it: the folder's name, not its local path (a published
        card would show the builder's file system; the files' digest identifies the snapshot)."""
        return {"kind": "openalex-snapshot", "path": self.path.name, "date": self.date,
                "works": self.works.records, "format": self.works.format, "sha256": self.fingerprint(),
                "synthetic": self.synthetic}


def open_snapshot(path: str | Path) -> Snapshot:
    """The snapshot at ``path``, checked before any stage runs.

    Raises
    ------
    ScitasteError
        When ``path`` holds no OpenAlex works snapshot, its manifest lists a missing file, or a data file does not
        open with a work record (one line).
    """
    from scitaste_hf.snapshot.layout import find_entity
    from scitaste_hf.snapshot.reader import iter_records

    path = Path(path).resolve()
    works = find_entity(path, "works", "auto")
    # A file that is not the format it is named for stops the build here, before any stage, rather than in the
    # middle of the collection: a JSON file's first record, a Parquet file's footer.
    for part in works.parts:
        try:
            if works.format == "parquet":
                import pyarrow.parquet as pq

                named = "id" in pq.ParquetFile(part.path).schema_arrow.names
            else:
                first = next(iter_records(EntityFiles(works.entity, works.format, works.folder, (part,))), None)
                named = first is None or (isinstance(first, dict) and bool(first.get("id")))
        except (OSError, ValueError, ScitasteError) as exc:  # a Parquet footer, or the reader's error on a JSON part
            raise ScitasteError(f"{part.path} is not an OpenAlex works file ({works.format}): "
                                f"{first_line(exc)}") from None
        if not named:
            raise ScitasteError(f"{part.path} is not an OpenAlex works file: its records have no id")
    return Snapshot(path, works)


def _flatten(snapshot: Snapshot, index_dir: Path) -> Path:
    """Run the index engine's read stage (skipped when done before); the glob of the flat records it wrote."""
    import duckdb

    from scitaste_hf.progress import StageProgress
    from scitaste_hf.scale.duck import DuckIndex
    from scitaste_hf.scale.options import IndexOptions
    from scitaste_hf.snapshot.focal import Focal

    engine = DuckIndex(snapshot.path, index_dir, IndexOptions(focal=Focal("all")), StageProgress(enabled=False))
    try:
        engine.read()
    except duckdb.Error as exc:
        raise ScitasteError(f"cannot read the snapshot at {snapshot.path}: {first_line(exc)}") from None
    finally:
        engine.close()
    return engine.stages.path("raw") / "*.parquet"


@dataclass
class _Listing:
    """What one service listing would return, taken from a scan most cited first: the first ``limit`` works that
    ``matches``, then (``backfill``) the first others; a listing without back-fill is done at its limit."""

    matches: Callable[[str, str], bool]
    limit: int
    backfill: bool = False
    found: list[str] = field(default_factory=list)
    others: list[str] = field(default_factory=list)

    @property
    def done(self) -> bool:
        """Whether no later work of the scan can change the result."""
        return len(self.found) >= self.limit

    def offer(self, wid: str, title: str, text: str) -> None:
        """The next work of the scan."""
        if self.done:
            return
        if self.matches(title, text):
            self.found.append(wid)
        elif self.backfill and len(self.others) < self.limit:
            self.others.append(wid)

    def result(self) -> list[str]:
        """The works the listing returns, in its order."""
        return (self.found + self.others)[:self.limit]


def _scan(con, raw: Path, subfields: Sequence[int], years: tuple[int, int] | None, listings: Sequence[_Listing]
          ) -> None:
    """Offer the articles of ``subfields`` (of ``years``, when given) to every listing, most cited first, until
    none can change."""
    import orjson

    from scitaste_hf.sources.openalex import abstract_from_inverted_index

    low, high = years or (0, 0)
    cursor = con.execute(_SCAN, [str(raw), [str(s) for s in subfields], years is None, low, high])
    while not all(listing.done for listing in listings):
        rows = cursor.fetchmany(_FETCH)
        if not rows:
            break
        for wid, title, abstract_json in rows:
            abstract = abstract_from_inverted_index(orjson.loads(abstract_json)) if abstract_json else None
            text = f"{title} {abstract or ''}"
            for listing in listings:
                listing.offer(wid, title, text)


def _cell_listing(cell: SubDiscipline, limit: int) -> _Listing:
    """A by-construction cell: :meth:`~scitaste_hf.sources.OpenAlexClient.subfield_candidates`."""
    return _Listing(lambda title, text: keyword_hits(text, cell.keywords) > 0, limit, backfill=True)


def _cascade_listing(cell: SubDiscipline, limit: int) -> _Listing:
    """A cell of an ADS-route discipline: the parts of :func:`~scitaste_hf.builder.collect.ads_cell_query` a
    snapshot can answer."""
    return _Listing(lambda title, text: keyword_hits(text, cell.keywords) > 0
                    or keyword_hits(title, cell.title_terms) > 0, limit)


def _full_records(snapshot: Snapshot, wanted: set[str]) -> dict[str, dict[str, Any]]:
    """The candidates' records as the API build keeps them (:func:`~scitaste_hf.builder.collect.work_dict`)."""
    from scitaste_hf.snapshot.focal import short_id
    from scitaste_hf.snapshot.reader import iter_records
    from scitaste_hf.sources.openalex import parse_work

    found: dict[str, dict[str, Any]] = {}
    for data in iter_records(snapshot.works):
        wid = short_id(str(data.get("id") or ""))
        if wid in wanted and wid not in found:
            try:
                found[wid] = work_dict(parse_work(data))
            except (AttributeError, KeyError, TypeError, ValueError, ScitasteError) as exc:
                # a field the index does not read (the record contract does not look at it) but a build keeps; an
                # id that parse_work refuses is its SourceError
                raise ScitasteError(f"the snapshot's record of {wid} is not an OpenAlex work as a build reads it: "
                                    f"{type(exc).__name__}: {first_line(exc)}") from None
            if len(found) == len(wanted):
                break
    return found


def collect_steps(taxonomy: Taxonomy) -> int:
    """Units of progress of :func:`collect`."""
    others = {c.openalex_subfield for c in taxonomy.cells if not taxonomy.uses_ads(c.discipline)}
    return 2 + len(taxonomy.by_route(ADS_ROUTE)) + len(others)


def collect(snapshot: Snapshot, taxonomy: Taxonomy, quotas: Mapping[str, int], per_discipline: int,
            years: tuple[int, int], work: Path, tick: Tick) -> dict[str, Any]:
    """The candidate pool from the snapshot, in the shape of the API build's collect stage.

    Parameters
    ----------
    snapshot : Snapshot
    taxonomy : Taxonomy
    quotas : mapping of cell id to int
        Papers each cell keeps.
    per_discipline : int
        Papers an ADS-route discipline keeps; its discipline-wide listing asks for
        :data:`~scitaste_hf.builder.collect.CANDIDATE_MARGIN` times as many.
    years : (int, int)
        Collection window of the ADS-route disciplines (the services' other listings have none; the quality check
        applies it).
    work : Path
        The build's work directory (the index engine's stages go in :data:`INDEX_FOLDER`).
    tick : callable
        Called with 1 per step (:func:`collect_steps` in all).

    Returns
    -------
    dict
        ``ads_works`` (ADS-route discipline -> its candidates' records, by id), ``cells`` (cell id -> records,
        most cited first), and ``ads`` (every ADS-route discipline with no record), ``by_doi``, ``arxiv`` empty (no
        ADS or arXiv), ``short_listings`` 0.

    Raises
    ------
    ScitasteError
        When the snapshot cannot be read, or holds no candidate.
    """
    import duckdb

    raw = _flatten(snapshot, work / INDEX_FOLDER)
    tick(1)
    by_subfield: dict[int, list[SubDiscipline]] = {}
    for cell in taxonomy.cells:
        if not taxonomy.uses_ads(cell.discipline):
            by_subfield.setdefault(cell.openalex_subfield, []).append(cell)
    cells: dict[str, _Listing] = {}
    ads_listings: dict[str, list[_Listing]] = {}
    con = duckdb.connect()
    try:
        for discipline in taxonomy.by_route(ADS_ROUTE):
            mine = taxonomy.of(discipline.name)
            # the discipline-wide listing, then one per cell
            ads_listings[discipline.name] = [_Listing(lambda title, text: True,
                                                      math.ceil(per_discipline * CANDIDATE_MARGIN)),
                                             *(_cascade_listing(c, cell_limit(quotas[c.id])) for c in mine)]
            _scan(con, raw, sorted({c.openalex_subfield for c in mine}), years, ads_listings[discipline.name])
            tick(1)
        for subfield, group in by_subfield.items():
            # Cells sharing a subfield share its back-fill, so each reaches deep enough for all of them.
            mine = {c.id: _cell_listing(c, cell_limit(quotas[c.id], len(group))) for c in group}
            _scan(con, raw, [subfield], None, list(mine.values()))
            cells.update(mine)
            tick(1)
    finally:
        con.close()
    ads_ids = {d: sorted({w for listing in listings for w in listing.result()}) for d, listings in ads_listings.items()}
    chosen = {cell_id: listing.result() for cell_id, listing in cells.items()}
    wanted = {w for ids in [*ads_ids.values(), *chosen.values()] for w in ids}
    if not wanted:
        raise ScitasteError(f"the snapshot at {snapshot.path} holds no article in the subfields of the taxonomy's "
                            "sub-disciplines: there is nothing to build")
    records = _full_records(snapshot, wanted)
    tick(1)
    return {"ads": {d: [] for d in ads_ids}, "ads_works": {d: [records[w] for w in ids] for d, ids in ads_ids.items()},
            "cells": {cell_id: [records[w] for w in ids] for cell_id, ids in chosen.items()},
            "by_doi": {}, "arxiv": {}, "short_listings": 0}


def index(snapshot: Snapshot, papers: Sequence[Mapping[str, Any]], works: Mapping[str, Mapping[str, Any]], table,
          journal_table: Path | None, work: Path, weights: Weights | None = None) -> dict[str, Any]:
    """The records of the checked pool, scored by ``scitaste index`` (DuckDB engine) with the pool as focal set.

    Parameters
    ----------
    snapshot : Snapshot
    papers : sequence of dict
        The labelled, checked papers, each with an ``openalex_id``.
    works : mapping
        OpenAlex id -> candidate record (:func:`~scitaste_hf.builder.collect.work_dict`), for the journal tiers.
    table : JournalTable
        The journal table the index uses (the licensed one, else the snapshot's open proxy).
    journal_table : Path, optional
        The licensed table's file, which the index engine reads itself.
    work : Path
        The build's work directory.
    weights : mapping or DisciplineWeights, optional
        The composite's weights (:func:`~scitaste_hf.builder.score.records`); the packaged default when None.

    Returns
    -------
    dict
        ``records`` (:func:`scitaste_hf.builder.score.records`) and ``graph`` (papers scored, the other works of
        the index's population, citations of the papers).
    """
    import pyarrow.parquet as pq

    from scitaste_hf.builder.score import journal_tiers, records
    from scitaste_hf.scale.options import IndexOptions
    from scitaste_hf.scale.run import index_snapshot
    from scitaste_hf.snapshot.focal import Focal

    ids = [p["openalex_id"] for p in papers]
    options = IndexOptions(focal=Focal("the build's checked pool", ids=frozenset(ids)),
                           journal_table=str(journal_table) if journal_table else None)
    summary = index_snapshot(snapshot.path, work / INDEX_FOLDER, "duckdb", options)
    scores = pq.read_table(work / INDEX_FOLDER / "index.parquet")
    out = records(papers, ids, scores, journal_tiers(papers, works, table), weights)
    return {"records": out, "graph": {"papers": len(out), "works_around": summary["works"] - summary["papers"],
                                      "citations": sum(r["citation_count"] for r in out)}}


def source_rows(source: Mapping[str, Any], taxonomy: Taxonomy) -> list[tuple[str, Any]]:
    """The summary's and the card's account of a snapshot build's source (:meth:`Snapshot.describe`), with how
    the taxonomy's ADS-route disciplines are labelled without ADS."""
    return [("read from", f"OpenAlex snapshot {source['path']}" + (" (synthetic)" if source["synthetic"] else "")),
            ("snapshot date (newest updated_date partition)", source["date"] or "unknown"),
            ("works in the snapshot", source["works"] if source["works"] is not None else "unknown (no manifest)"),
            ("files (SHA-256 of names and sizes)", source["sha256"][:16]),
            ("requests sent", 0),
            *((f"{d.name} labels", CASCADE_LABELS) for d in taxonomy.by_route(ADS_ROUTE))]

