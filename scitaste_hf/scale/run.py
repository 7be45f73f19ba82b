"""One index run over a snapshot: the chosen engine, then ``OUT/index.parquet`` (the scores) and
``OUT/index.json`` (what was run, counts, the neighbour search's recall, seconds per stage), each written
atomically; for an ``OUT`` in a store, written in a local staging folder and uploaded once complete."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError, first_line
from scitaste_hf.output import check_writable, held_lock, write_bytes_atomic
from scitaste_hf.progress import StageProgress
from scitaste_hf.scale.options import IndexOptions

ENGINES = ("duckdb", "memory", "spark")
#: What a run writes, in the order a store gets them: index.json, which says that the run is complete, last.
OUTPUTS = ("index.parquet", "index.json")


def index_snapshot(works: str | Path, out: str | Path, engine: str, options: IndexOptions,
                   progress: StageProgress | None = None, stage_dir: str | Path | None = None) -> dict:
    """Score the focal papers of a snapshot and write the results.

    Parameters
    ----------
    works : str or path-like
        The snapshot: a local path or a URL of any fsspec file system
        (:func:`scitaste_hf.snapshot.layout.find_entity`).
    out : str or path-like
        Output folder (created): a local path, or a URL of any fsspec file system, which gets the outputs once they
        are complete (:func:`upload_outputs`). The DuckDB and Spark engines keep their resumable stages in
        ``out/stages``, or for a URL in the staging folder's (:func:`staging_folder`).
    engine : {"duckdb", "memory", "spark"}
    options : IndexOptions
    progress : StageProgress, optional
    stage_dir : str or path-like, optional
        For an ``out`` URL only: the local (for Spark on a cluster, shared) folder the run works in, kept after the
        upload for later runs to resume from; without it, a folder of the user's cache, emptied once the upload is
        done.

    Returns
    -------
    dict
        The summary written to ``index.json``.

    Raises
    ------
    ScitasteError
        On an unknown engine, a folder or store that cannot be written or that another run is using, a failed
        upload (the outputs stay in the staging folder, and a rerun uploads them), or bad input (see the engines).
    """
    from scitaste_hf.snapshot.layout import find_entity
    from scitaste_hf.snapshot.store import check_writable_folder, is_remote, location

    if engine not in ENGINES:
        raise ScitasteError(f"unknown engine {engine!r}; use one of {', '.join(ENGINES)}")
    target = location(out)
    remote = is_remote(target)
    if stage_dir is not None and not remote:
        raise ScitasteError(f"--stage-dir is for an --out URL; the local folder {out} holds its own stages")
    find_entity(works, "works", options.format)  # a missing snapshot is refused before anything is written
    if remote:
        check_writable_folder(target)  # as check_writable below: a store that cannot take the outputs, at once
    folder = staging_folder(target, stage_dir) if remote else target
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ScitasteError(f"cannot create folder {folder}: {exc.strerror or exc}") from None
    check_writable(folder / "index.json")
    progress = progress or StageProgress(enabled=False)
    # a second run on the same folder would overwrite the first one's stages (or upload them halfway through)
    with held_lock(folder / ".lock", f"another index run is using {folder}; wait for it to end or give this one "
                                     "another --out"):
        summary = _write_index(works, folder, engine, options, progress)
        if remote:
            upload_outputs(folder, target, progress)
            if stage_dir is None:
                _empty(folder, progress)
    return summary


def _empty(folder: Path, progress: StageProgress) -> None:
    """Remove what a run left in its staging folder in the user's cache, as large as the run's stages (the outputs
    are in the store now), but for the lock file that the run holds: a run that starts on the folder the moment this
    one ends must lock the same file."""
    import shutil

    for entry in folder.iterdir():
        if entry.name != ".lock":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    progress.note(f"emptied the staging folder {folder}")


def staging_folder(out: Any, stage_dir: str | Path | None = None) -> Path:
    """The local folder an index run whose ``out`` is a URL works in: ``stage_dir`` when given, else one under
    the user's cache (``$XDG_CACHE_HOME``, default ``~/.cache``) named by a hash of the URL, so that a rerun with
    the same ``out`` finds its stages. Spark's executors on a cluster write stages there too: it must then be a
    shared file system's.
    """
    if stage_dir is not None:
        return Path(stage_dir)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "scitaste" / "index" / hashlib.sha256(str(out).encode()).hexdigest()[:16]


def upload_outputs(folder: Path, target: Any, progress: StageProgress) -> None:
    """Copy a finished run's outputs from the local ``folder`` to the store folder ``target``, through the store's
    fsspec file system: ``index.parquet``, then ``index.json``, the file that says a run is complete. A previous
    run's ``index.json`` is removed first, so that at no moment does one stand beside another run's scores.

    Raises
    ------
    ScitasteError
        When the store refuses or fails; the outputs and stages stay in ``folder``.
    """
    from scitaste_hf.snapshot.store import remove, upload

    started = time.perf_counter()
    try:
        remove(target / OUTPUTS[-1])
        for name in OUTPUTS:
            upload(folder / name, target / name)
    except ScitasteError as exc:
        raise ScitasteError(f"{exc}; the outputs and stages are kept in {folder}: the same command again skips "
                            "the stages done there and uploads") from None
    progress.note(f"uploaded to {target} in {time.perf_counter() - started:.1f} s")


def _write_index(works: str | Path, folder: Path, engine: str, options: IndexOptions,
                 progress: StageProgress) -> dict:
    import pyarrow.parquet as pq

    started = time.perf_counter()
    if engine == "memory":
        from scitaste_hf.scale.memory import run_memory

        table, summary = run_memory(works, options, progress)
    elif engine == "spark":
        from scitaste_hf.scale.spark import run_spark

        table, summary = run_spark(works, folder, options, progress)
    else:
        import duckdb

        from scitaste_hf.scale.duck import run_duckdb

        try:
            table, summary = run_duckdb(works, folder, options, progress)
        except duckdb.Error as exc:  # what the record contract's check cannot see: the finished stages stay
            raise ScitasteError(f"reading the snapshot {works} failed: {first_line(exc)}; the stages finished "
                                f"before it are kept in {folder}") from None
    tmp = folder / ".index.parquet.tmp"
    pq.write_table(table, tmp)
    tmp.replace(folder / "index.parquet")
    summary.update({"snapshot": str(works), "focal": options.focal.spec, "cd_window_days": options.cd_window,
                    "seconds": round(time.perf_counter() - started, 2), "stage_seconds": dict(progress.times),
                    "journal_table": table.schema.metadata[b"journal_table"].decode()})
    write_bytes_atomic(folder / "index.json", (json.dumps(summary, indent=1) + "\n").encode())
    return summary
