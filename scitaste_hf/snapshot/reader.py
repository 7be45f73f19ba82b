"""Reading a snapshot's records in Python, one at a time (the in-memory engine's input, and the journals of every
engine), and the mapping from an OpenAlex work to the index's input that every engine shares."""

from __future__ import annotations

import gzip
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError
from scitaste_hf.snapshot.layout import EntityFiles, find_entity


def iter_records(files: EntityFiles) -> Iterator[dict]:
    """Every record of an entity's data files, as the JSON object OpenAlex publishes (a Parquet row's
    ``abstract_inverted_index`` is parsed back from its JSON text).

    Raises
    ------
    ScitasteError
        When a gzip JSON lines part is truncated or not JSON lines (one line naming the file).
    """
    import orjson

    for part in files.parts:
        if files.format == "jsonl":
            try:
                with gzip.open(part.path, "rb") as fh:
                    for line in fh:
                        if line.strip():
                            yield orjson.loads(line)
            except (OSError, EOFError, orjson.JSONDecodeError) as exc:  # a truncated or corrupt part
                raise ScitasteError(f"reading the snapshot failed: {part.path}: {exc}") from None
        else:
            import pyarrow.parquet as pq

            for batch in pq.ParquetFile(part.path).iter_batches(batch_size=4096):
                for row in batch.to_pylist():
                    if isinstance(row.get("abstract_inverted_index"), str):
                        row["abstract_inverted_index"] = orjson.loads(row["abstract_inverted_index"])
                    yield row


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
