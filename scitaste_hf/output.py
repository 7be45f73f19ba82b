"""Writing output files so that a crash or an error never leaves a file that looks complete."""

from __future__ import annotations

import contextlib
import functools
import json
import math
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError


@functools.cache
def _umask() -> int:
    # Python reads the umask only by setting it; done once, and set straight back.
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def temporary_dir(parent: str | Path, prefix: str) -> Path:
    """A new empty folder in ``parent`` (created if missing) to be renamed into place once complete; unlike
    :func:`tempfile.mkdtemp`'s private 0700, it gets the permissions a plain ``mkdir`` would (the umask's).

    :param parent: folder that will hold the final output (a rename does not cross file systems).
    :param prefix: start of the temporary name.
    """
    Path(parent).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    tmp.chmod(0o777 & ~_umask())
    return tmp


#: The suffix of :func:`write_bytes_atomic`'s temporary files (``.NAME.RANDOM.tmp`` beside ``NAME``).
_TEMPORARY = ".tmp"


def leftover_temporaries(folder: str | Path, names: str = "*") -> list[Path]:
    """The temporary files that :func:`write_bytes_atomic` left in ``folder`` for files matching the glob
    ``names`` when its process was killed before the rename (plain files only, never links)."""
    return sorted(p for p in Path(folder).glob(f".{names}.*{_TEMPORARY}") if p.is_file() and not p.is_symlink())


def write_bytes_atomic(path: str | Path, data: bytes, *, fsync: bool = False) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and an atomic rename, so that a
    reader sees the old file or the whole new one, never a part; ``fsync`` also forces it to disk first. The file
    gets the permissions a plain ``open`` would give it (the umask's), not the temporary file's private 0600."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=_TEMPORARY, dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if fsync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _check_destination(path: Path) -> None:
    if path.is_dir():
        raise ScitasteError(f"{path} is a folder; give a file name for the JSON output")
    if not path.parent.is_dir():
        raise ScitasteError(f"folder {path.parent} does not exist")


def check_writable(path: str | Path) -> None:
    """Refuse a user-given output file that cannot be written, before the work that produces it, so that no work
    is lost: a folder, a missing folder, or a folder where no file can be created.

    :param path: the output file.
    :raises ScitasteError: naming what is wrong.
    """
    path = Path(path)
    _check_destination(path)
    try:
        # Creating a file is the only sure test: os.access says yes to root on any folder, even a read-only
        # mount or an immutable one. An unnamed temporary file leaves nothing behind.
        with tempfile.TemporaryFile(dir=path.parent, prefix=f".{path.name}."):
            pass
    except OSError as exc:
        raise ScitasteError(f"cannot write to folder {path.parent}: {exc.strerror or exc}") from None


def finite_json(value: Any) -> Any:
    """``value`` with every NaN and infinity made None: strict JSON (what :func:`write_json_atomic` writes) has
    neither, so an undefined statistic is written as null."""
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def write_json_atomic(path: str | Path, data: Any) -> None:
    """Write ``data`` as JSON to a user-given ``path`` atomically (see :func:`write_bytes_atomic`)."""
    path = Path(path)
    _check_destination(path)
    write_bytes_atomic(path, (json.dumps(data, indent=2, allow_nan=False) + "\n").encode("utf-8"))


@contextlib.contextmanager
def held_lock(path: str | Path, busy: str) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing) for the block, without waiting.

    Raises
    ------
    ScitasteError
        ``busy``, when another process holds the lock.
    """
    import fcntl

    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise ScitasteError(busy) from None
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
