"""A build's folders, made ready before its first request: the dataset's folder and the work directory both
writable, the work directory claimed by this build alone, and the temporaries of a build that was killed removed.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path

from scitaste_hf.builder.layout import stale_partials
from scitaste_hf.errors import ScitasteError
from scitaste_hf.output import check_writable, held_lock, leftover_temporaries

log = logging.getLogger("scitaste_hf.builder")

#: The file a running build holds locked in its work directory.
LOCK = ".lock"
#: The folders, relative to the work directory, whose ``*.json`` files (stage checkpoints, cache entries) are
#: written through :func:`scitaste_hf.output.write_bytes_atomic`.
_ATOMIC_FOLDERS = ("stages", "cache/*")


def check_folders(out: Path, work: Path) -> None:
    """Make the work directory and the folder that will hold ``out``, and refuse either if no file can be
    written there, so that a read-only disk stops the build before its first request rather than at its end.

    Parameters
    ----------
    out : Path
        The dataset folder (written at the end, through a temporary folder beside it).
    work : Path
        The work directory.

    Raises
    ------
    ScitasteError
        Naming the folder that cannot be written.
    """
    for folder in (out.parent, work):
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ScitasteError(f"cannot create folder {folder}: {exc.strerror or exc}") from None
    # The dataset is written in a temporary folder beside `out`, then renamed: its folder must take a new entry
    # (`out` itself may be the dataset folder that --overwrite replaces, which no file can be written as).
    check_writable(out.parent / f".{out.name}.check")
    check_writable(work / LOCK)


@contextlib.contextmanager
def claimed(work: Path) -> Iterator[None]:
    """Hold the work directory's lock for the block: a second build on the same work directory is refused, so
    that neither removes the other's temporaries nor overwrites its checkpoints.

    Parameters
    ----------
    work : Path
        The work directory (it exists).

    Raises
    ------
    ScitasteError
        When another build holds the lock.
    """
    with held_lock(work / LOCK, f"another build is using the work directory {work}; wait for it to end or give "
                                "this one another --work-dir"):
        yield


def remove_stale(out: Path, work: Path) -> None:
    """Remove what a killed build left half-written: its unfinished dataset folders beside ``out`` and the
    temporary files of its checkpoints and cache; call it holding :func:`claimed`.

    Parameters
    ----------
    out : Path
        The dataset folder.
    work : Path
        The work directory.
    """
    files = [p for pattern in _ATOMIC_FOLDERS for folder in work.glob(pattern) if folder.is_dir()
             for p in leftover_temporaries(folder, "*.json")]
    folders = stale_partials(out)
    for path in files:
        path.unlink(missing_ok=True)
    for path in folders:
        shutil.rmtree(path)
    if files or folders:
        log.warning("removed %d temporary files and %d unfinished dataset folders left by a build that was stopped",
                    len(files), len(folders))
