"""Where a snapshot's files are: OpenAlex's layout on S3, mirrored on a local disk.

OpenAlex publishes each entity as gzip-compressed JSON Lines partitioned by the date a record last changed::

    data/works/manifest
    data/works/updated_date=2025-12-31/part_000.gz
    data/works/updated_date=2025-12-31/part_001.gz
    data/sources/manifest
    data/sources/updated_date=.../part_000.gz

``manifest`` is a Redshift manifest: ``{"entries": [{"url": ..., "meta": {"content_length": bytes,
"record_count": records}}, ...], "meta": {...totals}}``. The same records as Parquet live under
``data/parquet/works/`` (OpenAlex's newer releases put the JSON under ``data/jsonl/`` beside it; both are read).
A manifest's URLs point at S3 in a real snapshot and are relative to the snapshot's root in a written one; a file
is found by the part of its URL from ``data/`` on.

The snapshot may be a local folder or a URL of any fsspec file system (:mod:`scitaste_hf.snapshot.store`): the
paths of :class:`PartFile` are then ``UPath`` objects, which the readers open the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError
from scitaste_hf.snapshot.store import contact, failure, is_remote, location, read_bounded

FORMATS = ("jsonl", "parquet")
_SUFFIX = {"jsonl": ".gz", "parquet": ".parquet"}
#: Entity folders of each format, relative to the snapshot root, in the order they are looked for.
_ENTITY_FOLDERS = {"jsonl": ("data/{entity}", "data/jsonl/{entity}"), "parquet": ("data/parquet/{entity}",)}


@dataclass(frozen=True)
class PartFile:
    """One data file of an entity, with what its manifest says of it (None without a manifest); ``path`` is a
    :class:`pathlib.Path`, or a ``UPath`` in a remote store (:func:`scitaste_hf.snapshot.store.location`)."""

    path: Any
    records: int | None


@dataclass(frozen=True)
class EntityFiles:
    """The data files of one entity in one format."""

    entity: str
    format: str
    folder: Any
    parts: tuple[PartFile, ...]

    @property
    def records(self) -> int | None:
        """Total records per the manifest, or None when some file has no count."""
        counts = [p.records for p in self.parts]
        return None if any(c is None for c in counts) else sum(counts)


def partition_file(folder: Path, updated_date: str, part: int, fmt: str) -> Path:
    """The path of data file ``part`` of the ``updated_date`` partition of an entity folder."""
    return folder / f"updated_date={updated_date}" / f"part_{part:03d}{_SUFFIX[fmt]}"


def write_manifest(folder: Path, root: Path, parts: list[tuple[Path, int]]) -> None:
    """Write an entity folder's Redshift manifest listing ``parts`` ((path, record count)), URLs relative to
    ``root``."""
    entries = [{"url": path.relative_to(root).as_posix(),
                "meta": {"content_length": path.stat().st_size, "record_count": count}} for path, count in parts]
    total = {"content_length": sum(e["meta"]["content_length"] for e in entries),
             "record_count": sum(count for _, count in parts)}
    (folder / "manifest").write_text(json.dumps({"entries": entries, "meta": total}, indent=1) + "\n")


def _manifest_entries(manifest: Path) -> list[tuple[str, int | None]]:
    """A manifest's entries as (url, record count or None), each checked; one line naming the manifest when it is
    not a Redshift manifest (or not a JSON file within :mod:`scitaste_hf.bounded_load`'s bounds)."""
    from scitaste_hf.bounded_load import MAX_BYTES, load_json, parse_json

    def refuse(why: str) -> ScitasteError:
        return ScitasteError(f"snapshot manifest {manifest} is not a Redshift manifest: {why} (expected an "
                             "'entries' list of {'url': ..., 'meta': {'record_count': N}})")

    if is_remote(manifest):
        raw = read_bounded(manifest, MAX_BYTES)
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise refuse("it is not UTF-8 text") from None
        data = parse_json(text, f"snapshot manifest {manifest}")
    else:
        data = load_json(manifest, "snapshot manifest")
    entries = data.get("entries") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise refuse("it has no 'entries' list")
    out = []
    for k, entry in enumerate(entries):
        url = entry.get("url") if isinstance(entry, dict) else None
        meta = entry.get("meta") if isinstance(entry, dict) else None
        count = meta.get("record_count") if isinstance(meta, dict) else None
        if not isinstance(url, str) or "\0" in url:
            raise refuse(f"entry {k} has no 'url' string")
        if not (meta is None or isinstance(meta, dict)) or not (
                count is None or (type(count) is int and count >= 0)):
            raise refuse(f"entry {k}'s meta.record_count is not a count of records")
        out.append((url, count))
    return out


def _from_manifest(folder: Any, manifest: Any) -> list[PartFile]:
    root = folder.resolve()
    # a store is listed once rather than asked of each file (a request each)
    listed = {str(p) for p in folder.glob("updated_date=*/*")} if is_remote(folder) else None
    parts = []
    for url, count in _manifest_entries(manifest):
        # The part from the partition folder on names the file below the entity folder, wherever the URL points.
        at = url.find("updated_date=")
        if at < 0:
            raise ScitasteError(f"{manifest} lists {url!r}, which is not in an updated_date= partition")
        path = folder / url[at:]
        # ``..`` or a link must not lead a manifest entry out of the entity folder
        if not path.resolve().is_relative_to(root):
            raise ScitasteError(f"{manifest} lists {url!r}, which leads outside the snapshot's folder {folder}")
        if not (path.is_file() if listed is None else str(path) in listed):
            raise ScitasteError(f"{manifest} lists {url}, which is not at {path}: the snapshot is incomplete")
        parts.append(PartFile(path, count))
    return parts


def _entity_files(folder: Any, entity: str, fmt: str) -> EntityFiles:
    manifest = folder / "manifest"
    if manifest.is_file():
        parts = _from_manifest(folder, manifest)
    else:
        # a FIFO or a folder of that name is not a data file (reading a FIFO would wait for ever)
        found = sorted(folder.glob(f"updated_date=*/*{_SUFFIX[fmt]}"), key=lambda p: p.parts)
        parts = [PartFile(p, None) for p in found if p.is_file()]
    parts = [p for p in parts if p.path.suffix == _SUFFIX[fmt]]
    if not parts:
        raise ScitasteError(f"{folder} holds no {fmt} data files (updated_date=*/*{_SUFFIX[fmt]})")
    return EntityFiles(entity, fmt, folder, tuple(parts))


def _has(folder: Any, fmt: str) -> bool:
    """Whether an entity folder holds data files of a format, or a manifest that lists some."""
    if not folder.is_dir():
        return False
    if any(folder.glob(f"updated_date=*/*{_SUFFIX[fmt]}")):
        return True
    manifest = folder / "manifest"
    return manifest.is_file() and any(url.endswith(_SUFFIX[fmt]) for url, _ in _manifest_entries(manifest))


def _is_entity_folder(path: Any) -> bool:
    return (path / "manifest").is_file() or any(path.glob("updated_date=*"))


def find_entity(path: str | Path, entity: str = "works", fmt: str = "auto") -> EntityFiles:
    """The data files of ``entity`` in a snapshot.

    Parameters
    ----------
    path : str or path-like
        The snapshot's root (the folder holding ``data/``), or an entity folder itself (one holding
        ``manifest`` or ``updated_date=*`` folders); a local path or a URL of any fsspec file system
        (:func:`scitaste_hf.snapshot.store.location`).
    entity : str
        ``works`` or ``sources``; with an entity folder as ``path``, ``sources`` is looked for beside it.
    fmt : {"auto", "jsonl", "parquet"}
        ``auto``: JSON Lines when the snapshot has them, else Parquet.

    Returns
    -------
    EntityFiles

    Raises
    ------
    ScitasteError
        When nothing of the kind is there, a manifest lists a file that is missing, or a store cannot be
        reached (:func:`scitaste_hf.snapshot.store.contact`).
    """
    path = location(path)
    if not contact(path):
        raise ScitasteError(f"no snapshot at {path}: the path does not exist")
    if fmt not in ("auto", *FORMATS):
        raise ScitasteError(f"unknown snapshot format {fmt!r}; use one of auto, {', '.join(FORMATS)}")
    try:
        return _find(path, entity, FORMATS if fmt == "auto" else (fmt,))
    except ScitasteError:
        raise
    except Exception as exc:  # a store's client raises its own kinds (a local path's errors stay as they are)
        if not is_remote(path):
            raise
        raise ScitasteError(f"{path}: reading the store failed: {failure(exc)}") from None


def _find(path: Any, entity: str, formats: tuple[str, ...]) -> EntityFiles:
    if _is_entity_folder(path):
        folder = path if entity == "works" else path.parent / entity
        for f in formats:
            if _has(folder, f):
                return _entity_files(folder, entity, f)
        raise ScitasteError(f"no {entity} data files ({' or '.join(formats)}) at {folder}")
    for f in formats:
        for pattern in _ENTITY_FOLDERS[f]:
            folder = path / pattern.format(entity=entity)
            if _has(folder, f):
                return _entity_files(folder, entity, f)
    raise ScitasteError(f"no OpenAlex {entity} snapshot at {path}: expected data/{entity}/updated_date=*/*.gz "
                        f"(or data/parquet/{entity}/...), or an entity folder holding updated_date=* folders")
