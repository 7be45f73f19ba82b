"""Reading a snapshot's records in Python, one at a time (the in-memory engine's input, and the journals of every
engine), and the mapping from an OpenAlex work to the index's input that every engine shares."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError
from scitaste_hf.snapshot.layout import EntityFiles, find_entity
from scitaste_hf.snapshot.records import SOURCE_FIELDS, WORK_FIELDS, ReadCounts, read_part


def iter_records(files: EntityFiles, counts: ReadCounts | None = None) -> Iterator[dict]:
    """Every record of an entity's data files, as the JSON object OpenAlex publishes (a Parquet row's
    ``abstract_inverted_index`` is parsed back from its JSON text), each accepted by the record contract
    (:mod:`scitaste_hf.snapshot.records`: :data:`~scitaste_hf.snapshot.records.WORK_FIELDS` for works,
    :data:`~scitaste_hf.snapshot.records.SOURCE_FIELDS` for sources).

    Parameters
    ----------
    files : EntityFiles
    counts : ReadCounts, optional
        Incremented by what is skipped (blank lines).

    Raises
    ------
    ScitasteError
        At the first record the contract refuses, or a damaged data file (one line naming the file and line).
    """
    fields = SOURCE_FIELDS if files.entity == "sources" else WORK_FIELDS
    for part in files.parts:
        yield from read_part(part.path, files.format, fields, counts)


def paper_text(title: str | None, abstract: str | None) -> str:
    """What is embedded for a focal paper (the builder's convention): title and abstract."""
    return f"{title or ''}. {abstract or ''}"


def journal_key(issn_l: str | None, source_name: str | None) -> str | None:
    """A work's journal as the index keys it: the ISSN-L, else the source's name."""
    return issn_l or source_name


def read_journals(path: str | Path, table: str | None = None):
    """Dimension G's journal table: ``table`` (a CSV or Parquet file) when given, else the open proxy built from
    the snapshot's sources entity (each ISSN and name once, the first source keeping it), as the builder does.

    Parameters
    ----------
    path : str or path-like
        The snapshot (see :func:`~scitaste_hf.snapshot.layout.find_entity`).
    table : str, optional
        A journal table file (:meth:`~scitaste_hf.index.JournalTable.read`).

    Returns
    -------
    JournalTable
        Empty (every journal scores 0 on G) when the snapshot has no sources entity and no table is given.
    """
    from scitaste_hf.index import JournalTable

    if table:
        return JournalTable.read(table)
    try:
        files = find_entity(path, "sources", "jsonl")
    except ScitasteError:
        return JournalTable.from_openalex_sources([])
    return JournalTable.from_openalex_sources(unique_sources(list(iter_records(files))))


def unique_sources(sources: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sources with each ISSN-L and each name once (a journal table refuses a key twice); the first keeps it."""
    seen: set[str] = set()
    out = []
    for src in sources:
        keys = {" ".join(k.casefold().split()) for k in (src.get("issn_l"), src.get("display_name")) if k}
        if keys & seen:
            continue
        seen |= keys
        out.append(src)
    return out
