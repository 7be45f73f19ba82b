"""Resumable stages: each stage's output is written atomically under ``OUT/stages`` and stamped with a key of
everything it was computed from (the snapshot's files, the focal selection, the options, the upstream stages'
keys). A rerun skips a stage whose stamp carries the same key; any other stamp is cleared first, and the stages
after it follow because their keys include its key."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

from scitaste_hf.output import write_json_atomic

#: Bump when a stage's output changes meaning, so that outputs of an older version are recomputed.
VERSION = 3  # 2: nearest papers in lists of a fixed size; 3: their training samples chosen by a hash of the id


def key_of(*parts: Any) -> str:
    """A stable key of JSON-able parts."""
    return hashlib.sha256(json.dumps([VERSION, *parts], sort_keys=True, default=str).encode()).hexdigest()[:32]


def replace(tmp: Path, final: Path) -> Path:
    """Move a finished temporary file or folder into place (atomic for a file; a folder is moved whole)."""
    if final.is_dir():
        shutil.rmtree(final)
    os.replace(tmp, final)
    return final


class Stages:
    """The stage folder of an index run.

    Parameters
    ----------
    out : Path
        The run's output folder; stages live in ``out/stages``.
    """

    def __init__(self, out: Path) -> None:
        self.folder = out / "stages"
        self.folder.mkdir(parents=True, exist_ok=True)

    def path(self, name: str) -> Path:
        """Where a stage output named ``name`` lives."""
        return self.folder / name

    def _stamp(self, stage: str) -> Path:
        return self.folder / f"{stage}.done.json"

    def done(self, stage: str, key: str) -> dict | None:
        """The stamp's information when ``stage`` is done with ``key``; None otherwise (after clearing a stale
        stamp, so that a crash in the rerun cannot leave an old stamp beside new partial outputs)."""
        stamp = self._stamp(stage)
        if stamp.is_file():
            info = json.loads(stamp.read_text())
            if info.get("key") == key:
                return info
            stamp.unlink()
        return None

    def finish(self, stage: str, key: str, **info: Any) -> dict:
        """Stamp ``stage`` done with ``key`` and ``info``; returns the stamp's content."""
        data = {"key": key, **info}
        write_json_atomic(self._stamp(stage), data)
        return data
