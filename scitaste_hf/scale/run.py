"""One index run over a snapshot: the chosen engine, then ``OUT/index.parquet`` (the scores) and
``OUT/index.json`` (what was run, counts, the neighbour search's recall, seconds per stage), each written
atomically."""

from __future__ import annotations

import json
import time
from pathlib import Path

from scitaste_hf.errors import ScitasteError, first_line
from scitaste_hf.output import check_writable, held_lock, write_bytes_atomic
from scitaste_hf.progress import StageProgress
from scitaste_hf.scale.options import IndexOptions

ENGINES = ("duckdb", "memory", "spark")


def index_snapshot(works: str | Path, out: str | Path, engine: str, options: IndexOptions,
                   progress: StageProgress | None = None) -> dict:
    """Score the focal papers of a snapshot and write the results.

    Parameters
    ----------
    works : str or path-like
        The snapshot: a local path or a URL of any fsspec file system
        (:func:`scitaste_hf.snapshot.layout.find_entity`).
    out : str or path-like
        Output folder (created); the DuckDB and Spark engines keep their resumable stages in ``out/stages``.
    engine : {"duckdb", "memory", "spark"}
    options : IndexOptions
    progress : StageProgress, optional

    Returns
    -------
    dict
        The summary written to ``index.json``.

    Raises
    ------
    ScitasteError
        On an unknown engine, a folder that cannot be written or that another run is using, an ``out`` that is a
        URL, or bad input (see the engines).
    """
    import pyarrow.parquet as pq

    from scitaste_hf.snapshot.layout import find_entity

    if engine not in ENGINES:
        raise ScitasteError(f"unknown engine {engine!r}; use one of {', '.join(ENGINES)}")
    if "://" in str(out):
        # the stages are files the engines rename, memory-map and hand DuckDB; a store has none of that
        raise ScitasteError(f"--out {out}: the output must be a local folder or a shared file system's (an object "
                            "store's URL is supported for the snapshot only; copy the folder to the store after)")
    find_entity(works, "works", options.format)  # a missing snapshot is refused before anything is written
    out = Path(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ScitasteError(f"cannot create folder {out}: {exc.strerror or exc}") from None
    check_writable(out / "index.json")
    progress = progress or StageProgress(enabled=False)
    started = time.perf_counter()
    # a second run on the same folder would overwrite the first one's stages
    with held_lock(out / ".lock", f"another index run is using {out}; wait for it to end or give this one "
                                  "another --out"):
        if engine == "memory":
            from scitaste_hf.scale.memory import run_memory

            table, summary = run_memory(works, options, progress)
        elif engine == "spark":
            from scitaste_hf.scale.spark import run_spark

            table, summary = run_spark(works, out, options, progress)
        else:
            import duckdb

            from scitaste_hf.scale.duck import run_duckdb

            try:
                table, summary = run_duckdb(works, out, options, progress)
            except duckdb.Error as exc:  # what the record contract's check cannot see: the finished stages stay
                raise ScitasteError(f"reading the snapshot {works} failed: {first_line(exc)}; the stages finished "
                                    f"before it are kept in {out}") from None
        tmp = out / ".index.parquet.tmp"
        pq.write_table(table, tmp)
        tmp.replace(out / "index.parquet")
        summary.update({"snapshot": str(works), "focal": options.focal.spec, "cd_window_days": options.cd_window,
                        "seconds": round(time.perf_counter() - started, 2), "stage_seconds": dict(progress.times),
                        "journal_table": table.schema.metadata[b"journal_table"].decode()})
        write_bytes_atomic(out / "index.json", (json.dumps(summary, indent=1) + "\n").encode())
    return summary
