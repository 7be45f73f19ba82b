"""The source-independent input of the Academic Taste Index: a population of papers and the works around them.

The builder fills three Arrow tables from ADS, OpenAlex or arXiv; :meth:`Population.from_arrow` validates them
once and keeps everything columnar (Arrow lists, NumPy arrays, a sparse citation graph), so that the dimensions
are vectorised functions of the population.

``papers`` (one row per paper of the reference population, the candidate pool; required columns first):

============== ======================================== ==========================================================
id             string                                   unique work id (for example an OpenAlex W-id)
date           date32, or ISO ``YYYY-MM-DD`` strings    exact publication date
citation_count int                                      total citations (dimension A); may exceed the graph's edges
journal        string or null                           key into the journal table (ISSN or name); also the
                                                        paper's journal when another paper cites it
field          string or null                           the paper's field when another paper cites it
author_count   int or null                              number of authors
countries      list<string>                             author countries, repeats allowed
topics         list<struct<field, subfield, score>>     topics, primary topic first
concept_scores list<double>                             concept scores
text           string or null                           title and abstract, for the embedder
embedding      list<float> or null                      precomputed embedding; when this column exists, no
                                                        embedder runs and works need ``embedding`` too
============== ======================================== ==========================================================

``works`` (optional): the references and citers that are not papers, with ``id`` and optional ``date``,
``journal``, ``field``, ``text``, ``embedding`` as above. ``citations`` (optional): columns ``citing`` and
``cited`` of work ids; an id that is in neither table becomes a work without metadata.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from scitaste_hf.errors import ScitasteError
from scitaste_hf.index.cd import UNDATED, CitationGraph

TOPIC_TYPE = pa.list_(pa.struct([("field", pa.string()), ("subfield", pa.string()), ("score", pa.float64())]))

#: Column types of the ``papers`` table; the first three are required.
PAPER_COLUMNS: dict[str, pa.DataType] = {
    "id": pa.string(),
    "date": pa.date32(),
    "citation_count": pa.int64(),
    "journal": pa.string(),
    "field": pa.string(),
    "author_count": pa.int64(),
    "countries": pa.list_(pa.string()),
    "topics": TOPIC_TYPE,
    "concept_scores": pa.list_(pa.float64()),
    "text": pa.string(),
    "embedding": pa.list_(pa.float32()),
}
#: Column types of the ``works`` table; only ``id`` is required.
WORK_COLUMNS: dict[str, pa.DataType] = {k: PAPER_COLUMNS[k] for k in ("id", "date", "journal", "field", "text",
                                                                       "embedding")}
_REQUIRED_PAPER = ("id", "date", "citation_count")


@dataclass(frozen=True)
class Embeddings:
    """Document vectors of some of the works, stored compactly: only works that have one take memory.

    Attributes
    ----------
    row : ndarray of int64, shape (n_works,)
        Row of each work in ``vectors``, or -1 when the work has no embedding.
    vectors : ndarray of float32, shape (m, d)
        Unit-length vectors (a zero vector, which has no direction, counts as no embedding).
    """

    row: np.ndarray
    vectors: np.ndarray

    @classmethod
    def from_rows(cls, n_works: int, works: np.ndarray, vectors: np.ndarray) -> Embeddings:
        """Embeddings of ``works`` (work numbers) from their raw vectors; other works have none.

        Parameters
        ----------
        n_works : int
            Number of works of the population.
        works : ndarray of int, shape (m,)
            Distinct work numbers.
        vectors : ndarray of float, shape (m, d)
            Their vectors, of any length; non-finite or zero vectors are dropped.
        """
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(works):
            raise ValueError(f"expected one vector per work ({len(works)}), got an array of shape {vectors.shape}")
        norms = np.linalg.norm(vectors, axis=1)
        ok = np.isfinite(norms) & (norms > 0)
        row = np.full(n_works, -1, dtype=np.int64)
        row[np.asarray(works)[ok]] = np.arange(int(ok.sum()))
        # Dividing the selected copy in place holds one copy of the vectors beside the caller's, not two.
        unit = vectors[ok]
        unit /= norms[ok, None]
        return cls(row=row, vectors=unit)


def _conform(table: pa.Table, columns: dict[str, pa.DataType], required: tuple[str, ...], name: str) -> pa.Table:
    missing = [c for c in required if c not in table.column_names]
    if missing:
        raise ScitasteError(f"{name} table is missing required column(s) {', '.join(missing)}")
    arrays = {}
    for col, typ in columns.items():
        if col not in table.column_names:
            arrays[col] = pa.nulls(table.num_rows, typ)
            continue
        try:
            arrays[col] = table.column(col).combine_chunks().cast(typ)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise ScitasteError(f"{name} column {col!r} cannot be read as {typ}: {exc}") from None
    return pa.table(arrays)


def string_codes(values: pa.Array) -> tuple[np.ndarray, list[str]]:
    """Integer codes of a string array (-1 for null) and the distinct strings they index."""
    encoded = pc.dictionary_encode(values)
    codes = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    return np.where(encoded.indices.is_null().to_numpy(zero_copy_only=False), -1, codes), \
        encoded.dictionary.to_pylist()


def _days(dates: pa.Array) -> np.ndarray:
    days = dates.cast(pa.int32()).fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    return np.where(dates.is_null().to_numpy(zero_copy_only=False), UNDATED, days)


def _duplicates(ids: pa.Array) -> list[str]:
    counts = pc.value_counts(ids)
    return counts.field("values").filter(pc.greater(counts.field("counts"), 1)).to_pylist()


@dataclass(frozen=True)
class Population:
    """A validated population: ``n_papers`` papers (works 0..n_papers-1) and the works around them.

    Build it with :meth:`from_arrow`. Per-work arrays are indexed by work number, per-paper ones by paper
    number (the same number for works that are papers).

    Attributes
    ----------
    ids : pyarrow.StringArray
        Work ids, papers first.
    n_papers : int
        Size of the reference population.
    times : ndarray of int64
        Days since 1970-01-01 per work, :data:`~scitaste_hf.index.cd.UNDATED` when unknown.
    journal, field : ndarray of int64
        Per-work codes into ``journal_names`` / ``field_names``, -1 when unknown.
    texts : pyarrow.StringArray
        Per-work text to embed (may be null).
    embeddings : Embeddings or None
        The precomputed embeddings, or None to embed ``texts``.
    graph : CitationGraph
        The deduplicated citation graph over all works.
    papers : pyarrow.Table
        The conformed ``papers`` table (columns of :data:`PAPER_COLUMNS`).
    """

    ids: pa.Array
    n_papers: int
    times: np.ndarray
    journal: np.ndarray
    journal_names: list[str]
    field: np.ndarray
    field_names: list[str]
    texts: pa.Array
    embeddings: Embeddings | None
    graph: CitationGraph
    papers: pa.Table

    @classmethod
    def from_arrow(
        cls, papers: pa.Table, citations: pa.Table | None = None, works: pa.Table | None = None
    ) -> Population:
        """Validate the builder's tables and build the columnar population.

        Parameters
        ----------
        papers : pyarrow.Table
            One row per paper of the reference population (columns: see the module docstring).
        citations : pyarrow.Table, optional
            Columns ``citing`` and ``cited`` (work ids). Duplicate edges count once, self-citations are
            dropped, and a citation dated before the paper it cites stays in the graph but never counts for CD.
        works : pyarrow.Table, optional
            Metadata of the references and citers that are not papers.

        Returns
        -------
        Population

        Raises
        ------
        ScitasteError
            On an empty population, a missing column, a null or duplicate id, a paper without a date, or a
            negative or missing citation count or author count.
        """
        precomputed = "embedding" in papers.column_names
        papers = _conform(papers, PAPER_COLUMNS, _REQUIRED_PAPER, "papers")
        if papers.num_rows == 0:
            raise ScitasteError("the population has no papers")
        works = _conform(works if works is not None else pa.table({"id": pa.array([], pa.string())}),
                         WORK_COLUMNS, ("id",), "works")
        for name, table in (("papers", papers), ("works", works)):
            if table.column("id").null_count:
                raise ScitasteError(f"{name} table has a row with a null id")
        dup = _duplicates(papers.column("id"))
        if dup:
            raise ScitasteError(f"duplicate paper ids ({len(dup)}), first: {', '.join(map(str, dup[:5]))}")
        if papers.column("date").null_count:
            bad = papers.filter(pc.is_null(papers.column("date"))).column("id")[0].as_py()
            raise ScitasteError(f"paper {bad} has no date; CD needs the exact publication date of every paper")
        for col in ("citation_count", "author_count"):
            values = papers.column(col)
            if col == "citation_count" and values.null_count:
                raise ScitasteError("citation_count must be given for every paper (0 when uncited)")
            if pc.any(pc.less(values, 0)).as_py():
                raise ScitasteError(f"{col} must be >= 0")
        known = pa.concat_tables([papers.select(list(WORK_COLUMNS)), works])
        dup = _duplicates(known.column("id"))
        if dup:
            raise ScitasteError(f"work ids listed twice (papers and works together): {', '.join(dup[:5])}")
        ids = known.column("id").combine_chunks()
        if citations is None:
            citations = pa.table({"citing": pa.array([], pa.string()), "cited": pa.array([], pa.string())})
        citations = _conform(citations, {"citing": pa.string(), "cited": pa.string()}, ("citing", "cited"),
                             "citations")
        if citations.column("citing").null_count or citations.column("cited").null_count:
            raise ScitasteError("citations table has a null work id")
        endpoints = pa.concat_arrays([citations.column("citing").combine_chunks(),
                                      citations.column("cited").combine_chunks()])
        extra = pc.unique(endpoints.filter(pc.invert(pc.is_in(endpoints, value_set=ids))))
        all_ids = pa.concat_arrays([ids, extra])
        n_extra = len(extra)
        edge_index = pc.index_in(endpoints, value_set=all_ids).to_numpy(zero_copy_only=False).astype(np.int64)
        m = citations.num_rows

        def padded(column: str) -> pa.Array:
            arr = known.column(column).combine_chunks()
            return pa.concat_arrays([arr, pa.nulls(n_extra, arr.type)])

        times = _days(padded("date"))
        journal, journal_names = string_codes(padded("journal"))
        field, field_names = string_codes(padded("field"))
        embeddings = None
        if precomputed:
            vectors = padded("embedding")
            lengths = sorted(pc.unique(pc.list_value_length(vectors).drop_null()).to_pylist())
            if len(lengths) != 1 or lengths[0] == 0:
                raise ScitasteError(f"embeddings must all have one non-zero length, got lengths {lengths}")
            dim = lengths[0]
            present = np.flatnonzero(vectors.is_valid().to_numpy(zero_copy_only=False))
            flat = vectors.filter(vectors.is_valid()).flatten().to_numpy(zero_copy_only=False)
            embeddings = Embeddings.from_rows(len(all_ids), present, flat.reshape(-1, dim))
        return cls(
            ids=all_ids,
            n_papers=papers.num_rows,
            times=times,
            journal=journal,
            journal_names=journal_names,
            field=field,
            field_names=field_names,
            texts=padded("text"),
            embeddings=embeddings,
            graph=CitationGraph(edge_index[:m], edge_index[m:], times),
            papers=papers,
        )

    @property
    def paper_ids(self) -> list[str]:
        """Ids of the papers, in population order."""
        return self.papers.column("id").to_pylist()

    def references(self) -> tuple[np.ndarray, np.ndarray]:
        """All (paper number, referenced work number) pairs, as two arrays sorted by paper."""
        refs = self.graph.out[: self.n_papers]
        return np.repeat(np.arange(self.n_papers), np.diff(refs.indptr)), refs.indices.astype(np.int64)
