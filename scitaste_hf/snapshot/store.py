"""Where a snapshot lives: a local folder (or a shared file system's), or a URL of any file system fsspec reaches
(``s3://``, ``gs://``, ``az://``, ``hf://``, ...) through universal_pathlib's ``UPath``, which gives every one of
them the same path operations as :class:`pathlib.Path`. There is one code path for them all: the layout
(:mod:`scitaste_hf.snapshot.layout`) lists and opens files through these path objects, whatever the scheme, and an
index run whose output folder is such a URL checks and uploads through them (:func:`check_writable_folder`,
:func:`upload`; :func:`scitaste_hf.scale.run.upload_outputs`).

Credentials and endpoints are the file system's own configuration (for S3: the usual ``AWS_*`` variables, the
AWS config files, an instance role; fsspec's config files and ``FSSPEC_<PROTOCOL>_<OPTION>`` variables for any
protocol): this module reads none of them itself.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from scitaste_hf.errors import ScitasteError

#: Seconds the first contact with a store may take (listing the snapshot's root) before the run gives up with one
#: line: a client's own retries against an endpoint that never answers can last minutes.
CONTACT_SECONDS = 30.0
#: The slowest upload that still counts as progress: an upload of ``n`` bytes is given ``CONTACT_SECONDS + n /
#: UPLOAD_BYTES_PER_SECOND`` seconds, and a store that takes longer is treated as one that stopped answering.
UPLOAD_BYTES_PER_SECOND = 1 << 20
#: Protocols that name the local file system.
_LOCAL = ("", "file", "local")
T = TypeVar("T")


def location(text: str | Path) -> Any:
    """A snapshot path: a :class:`pathlib.Path` for a local path (or a ``file://`` URL), a ``UPath`` for a URL of
    another fsspec protocol.

    Raises
    ------
    ScitasteError
        On a protocol fsspec does not know, or one whose package is not installed (one line naming it).
    """
    if isinstance(text, Path):
        return text
    text = str(text)
    if "://" not in text:
        return Path(text)
    if text.startswith("file://"):
        return Path(text.removeprefix("file://"))
    from upath import UPath

    try:
        return UPath(text)
    except (ValueError, ImportError) as exc:
        raise ScitasteError(f"{text}: {exc}") from None


def is_remote(path: Any) -> bool:
    """Whether a path of :func:`location` is on another file system than the local one."""
    return not isinstance(path, Path) and getattr(path, "protocol", "") not in _LOCAL


def contact(path: Any) -> bool:
    """Whether ``path`` exists, asked within :data:`CONTACT_SECONDS` (a local path: at once).

    Raises
    ------
    ScitasteError
        When the store does not answer in time, refuses the credentials, or its client is missing: one line.
    """
    if not is_remote(path):
        return path.exists()
    return bounded(path, path.exists, "cannot reach the store")


def bounded(path: Any, ask: Callable[[], T], refused: str, *, seconds: float | None = None,
            what: str | None = None) -> T:
    """``ask()``, a call to the store of ``path``, given at most ``seconds`` (default :data:`CONTACT_SECONDS`).

    Raises
    ------
    ScitasteError
        When the store does not answer in time, or as ``WHAT: REFUSED: ERROR`` when ``ask`` raises (its own
        :class:`ScitasteError` passes unchanged), ``what`` being the path unless given: one line.
    """
    seconds = CONTACT_SECONDS if seconds is None else seconds
    what = str(path) if what is None else what
    answer: list = []

    def run() -> None:
        try:
            answer.append(ask())
        except Exception as exc:  # each client raises its own kinds; all end the run in one line
            answer.append(exc)

    # A daemon thread: a client stuck in its retries is left behind rather than waited for.
    asker = threading.Thread(target=run, daemon=True)
    asker.start()
    asker.join(seconds)
    if not answer:
        raise ScitasteError(f"{what}: the store did not answer within {seconds:.0f} s")
    if isinstance(answer[0], ScitasteError):
        raise answer[0]
    if isinstance(answer[0], Exception):
        raise ScitasteError(f"{what}: {refused}: {failure(answer[0])}")
    return answer[0]


def check_writable_folder(folder: Any) -> None:
    """Refuse a folder of a store that cannot take files, before the work that produces them: its root (the
    bucket) missing, a store that does not answer, or one that refuses the credentials or the write. Like
    :func:`scitaste_hf.output.check_writable` for a local folder, it writes a small file and removes it, the only
    sure test; each call to the store is bounded by :data:`CONTACT_SECONDS`. The folder is created where the
    store has folders.

    Raises
    ------
    ScitasteError
        Naming what is wrong, in one line.
    """
    if not folder.path.strip("/"):
        raise ScitasteError(f"{folder}: name the bucket, and a folder in it, that the outputs go to")
    if folder.protocol == "memory":  # fsspec's memory store is this process's own: the outputs would end with it
        raise ScitasteError(f"{folder}: a memory:// store ends with the process; give one that keeps the files")
    root = folder.parents[-1] if folder.parents else folder
    # the folder first: s3fs's answer for a bucket is "no" when the store does not answer at all
    if not contact(folder) and not contact(root):
        raise ScitasteError(f"{folder}: its root {root} does not exist; create it first")

    def write() -> None:
        # after the root is known to exist: s3fs's and gcsfs's makedirs would create a missing bucket
        folder.fs.makedirs(folder.path, exist_ok=True)
        probe = folder / f".scitaste-write-check-{uuid.uuid4().hex}"
        probe.write_bytes(b"")
        probe.unlink()

    bounded(folder, write, "cannot write to the store")


def upload(local: Path, path: Any) -> None:
    """Copy the local file ``local`` to ``path`` of a store, in one piece: an object store shows an object only once
    its upload is complete (s3fs aborts a multipart upload that fails). Given :data:`CONTACT_SECONDS` and a second
    for each :data:`UPLOAD_BYTES_PER_SECOND` of the file.

    Raises
    ------
    ScitasteError
        When the store refuses, fails or does not take the file in that time (one line).
    """
    seconds = CONTACT_SECONDS + local.stat().st_size / UPLOAD_BYTES_PER_SECOND
    bounded(path, lambda: path.fs.put_file(str(local), path.path), "the store failed", seconds=seconds,
            what=f"uploading {local} to {path}")


def remove(path: Any) -> None:
    """Remove the file ``path`` of a store, if it is there, within :data:`CONTACT_SECONDS`.

    Raises
    ------
    ScitasteError
        When the store refuses, fails or does not answer (one line).
    """
    bounded(path, lambda: path.unlink(missing_ok=True), "the store failed", what=f"removing {path}")


def failure(exc: BaseException) -> str:
    """An error of a file system's client as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def read_bounded(path: Any, max_bytes: int) -> bytes:
    """The bytes of a file of a remote store, refused beyond ``max_bytes`` (a local file is read by
    :func:`scitaste_hf.bounded_load.read_text`, which also refuses FIFOs and devices).

    Raises
    ------
    ScitasteError
        When it is missing, cannot be read, or is larger.
    """
    from scitaste_hf.errors import InvalidInput

    try:
        with path.open("rb") as handle:
            data = handle.read(max_bytes + 1)
    except FileNotFoundError:
        raise ScitasteError(f"{path} not found") from None
    except Exception as exc:  # as in bounded()
        raise ScitasteError(f"{path} cannot be read: {failure(exc)}") from None
    if len(data) > max_bytes:
        raise InvalidInput(f"{path} has more than the {max_bytes:,} bytes accepted")
    return data
