"""Write a simulated world (:mod:`scitaste_hf.simworld.stream`) in OpenAlex's snapshot layout
(:mod:`scitaste_hf.snapshot.layout`): the works as gzip JSON Lines and optionally as Parquet, and the journals as
the sources entity, streamed chunk by chunk so that memory stays that of the world's graph."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

from scitaste_hf.errors import ScitasteError
from scitaste_hf.progress import StageProgress
from scitaste_hf.simworld.stream import UPDATED_DATES, generate, records, source_record, updated_date
from scitaste_hf.snapshot.layout import partition_file, write_manifest

#: Records per data file (OpenAlex keeps each file under 2 GB; a tenth of that here).
DEFAULT_PART_RECORDS = 50_000
#: Works rendered at a time.
RENDER_CHUNK = 4096
#: The file at the snapshot's root that says what it is.
INFO_FILE = "snapshot.json"


def _topic_type():
    import pyarrow as pa

    ref = pa.struct([("id", pa.string()), ("display_name", pa.string())])
    return pa.struct([("id", pa.string()), ("display_name", pa.string()), ("score", pa.float64()),
                      ("subfield", ref), ("field", ref), ("domain", ref)])


def parquet_schema():
    """The Arrow schema of the works as Parquet: the JSON records' fields as nested columns, except
    ``abstract_inverted_index``, whose keys are the abstract's words, kept as its JSON text."""
    import pyarrow as pa

    ref = pa.struct([("id", pa.string()), ("display_name", pa.string())])
    source = pa.struct([("id", pa.string()), ("display_name", pa.string()), ("issn_l", pa.string()),
                        ("issn", pa.list_(pa.string())), ("type", pa.string())])
    institution = pa.struct([("id", pa.string()), ("display_name", pa.string()), ("country_code", pa.string()),
                             ("type", pa.string())])
    authorship = pa.struct([("author_position", pa.string()), ("author", ref),
                            ("institutions", pa.list_(institution)), ("countries", pa.list_(pa.string())),
                            ("is_corresponding", pa.bool_()), ("raw_author_name", pa.string())])
    concept = pa.struct([("id", pa.string()), ("display_name", pa.string()), ("level", pa.int32()),
                         ("score", pa.float64())])
    return pa.schema([
        ("id", pa.string()), ("doi", pa.string()), ("title", pa.string()), ("display_name", pa.string()),
        ("publication_year", pa.int32()), ("publication_date", pa.string()), ("language", pa.string()),
        ("type", pa.string()),
        ("primary_location", pa.struct([("landing_page_url", pa.string()), ("source", source)])),
        ("authorships", pa.list_(authorship)), ("cited_by_count", pa.int64()),
        ("primary_topic", _topic_type()), ("topics", pa.list_(_topic_type())), ("concepts", pa.list_(concept)),
        ("referenced_works_count", pa.int64()), ("referenced_works", pa.list_(pa.string())),
        ("abstract_inverted_index", pa.string()), ("updated_date", pa.string()), ("created_date", pa.string()),
    ])


class _Parts:
    """The data files of one partition of an entity: a new file every ``part_records`` records."""

    def __init__(self, folder: Path, date: str, fmt: str, part_records: int) -> None:
        self.folder, self.date, self.fmt, self.part_records = folder, date, fmt, part_records
        self.done: list[tuple[Path, int]] = []
        self._handle = self._raw = None
        self._count = 0

    def _open(self) -> None:
        path = partition_file(self.folder, self.date, len(self.done), self.fmt)
        path.parent.mkdir(parents=True, exist_ok=True)
        if self.fmt == "jsonl":
            # Level 5: within a few percent of 9's size at twice the speed. No name and a zero time in the gzip
            # header, so that the same seed writes the same bytes (gzip.open stores the file's name and the clock).
            self._raw = path.open("wb")
            self._handle = gzip.GzipFile(filename="", mode="wb", compresslevel=5, fileobj=self._raw, mtime=0)
        else:
            import pyarrow.parquet as pq

            self._handle = pq.ParquetWriter(path, parquet_schema(), compression="snappy")
        self._path = path
        self._count = 0

    def _close(self) -> None:
        self._handle.close()
        if self.fmt == "jsonl":
            self._raw.close()  # GzipFile leaves a file object it was given open
        self.done.append((self._path, self._count))
        self._handle = None

    def add(self, rows: list) -> None:
        """Append encoded rows: JSON lines (bytes), or record dicts for Parquet."""
        while rows:
            if self._handle is None:
                self._open()
            take = rows[: self.part_records - self._count]
            rows = rows[len(take):]
            if self.fmt == "jsonl":
                self._handle.write(b"".join(take))
            else:
                import pyarrow as pa

                self._handle.write_table(pa.Table.from_pylist(take, schema=parquet_schema()))
            self._count += len(take)
            if self._count >= self.part_records:
                self._close()

    def close(self) -> list[tuple[Path, int]]:
        """Close the open file; the files written, with their record counts."""
        if self._handle is not None:
            self._close()
        return self.done


def write_snapshot(out: str | Path, works: int, *, seed: int = 0, parquet: bool = False,
                   part_records: int = DEFAULT_PART_RECORDS, progress: StageProgress | None = None) -> dict:
    """Generate a closed simulated world of ``works`` works and write it as an OpenAlex snapshot under ``out``.

    The snapshot appears whole or not at all: it is written in a temporary folder inside ``out`` and moved to
    ``out/data`` at the end.

    Parameters
    ----------
    out : str or path-like
        The snapshot's root; must not hold a ``data`` folder yet.
    works : int
        Number of works (at least 1).
    seed : int
        Seed of the world.
    parquet : bool
        Also write the works as Parquet (``data/parquet/works``).
    part_records : int
        Records per data file.
    progress : StageProgress, optional
        Where to report progress.

    Returns
    -------
    dict
        What ``out/snapshot.json`` records: seed, works, citations, formats, files.

    Raises
    ------
    ScitasteError
        When ``out`` already holds a snapshot, or on a bad size.
    """
    import orjson

    if works < 1 or part_records < 1:
        raise ScitasteError("--works and the records per file must be at least 1")
    out = Path(out)
    if (out / "data").exists():
        raise ScitasteError(f"{out} already holds a snapshot (data/); choose an empty folder")
    out.mkdir(parents=True, exist_ok=True)
    progress = progress or StageProgress(enabled=False)
    tmp = out / ".snapshot.partial"
    shutil.rmtree(tmp, ignore_errors=True)  # what a killed run left
    try:
        with progress.step("linking the world", works) as advance:
            world = generate(works, seed, progress=advance)
        formats = ("jsonl", "parquet") if parquet else ("jsonl",)
        folders = {"jsonl": tmp / "data" / "works", "parquet": tmp / "data" / "parquet" / "works"}
        parts = {(fmt, d): _Parts(folders[fmt], d, fmt, part_records) for fmt in formats for d in UPDATED_DATES}
        with progress.step("writing works", works) as advance:
            for start in range(0, works, RENDER_CHUNK):
                stop = min(works, start + RENDER_CHUNK)
                batch = list(records(world, start, stop))
                for d in UPDATED_DATES:
                    mine = [r for i, r in zip(range(start, stop), batch) if updated_date(i) == d]
                    parts["jsonl", d].add([orjson.dumps(r) + b"\n" for r in mine])
                    if parquet:
                        for r in mine:
                            r["abstract_inverted_index"] = orjson.dumps(r["abstract_inverted_index"]).decode()
                        parts["parquet", d].add(mine)
                advance(stop - start)
        files = {}
        for fmt in formats:
            written = [f for d in UPDATED_DATES for f in parts[fmt, d].close()]
            write_manifest(folders[fmt], tmp, written)
            files[fmt] = len(written)
        sources = tmp / "data" / "sources"
        counts = [0] * len(world.journals)
        for j in world.journal.tolist():
            counts[j] += 1
        source_parts = _Parts(sources, UPDATED_DATES[-1], "jsonl", part_records)
        source_parts.add([orjson.dumps(source_record(j, c)) + b"\n" for j, c in zip(world.journals, counts)])
        write_manifest(sources, tmp, source_parts.close())
        info = {"synthetic": True, "note": "SYNTHETIC snapshot of scitaste-hf's simulated world; not real data",
                "generator": "scitaste mirror snapshot", "seed": seed, "works": world.n_works,
                "citations": world.n_citations, "sources": len(world.journals), "formats": list(formats),
                "files": files}
        (tmp / "data").rename(out / "data")
        (out / INFO_FILE).write_text(json.dumps(info, indent=1) + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return info
