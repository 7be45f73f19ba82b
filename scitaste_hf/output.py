"""Writing output files so that a crash or an error never leaves a file that looks complete."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from scitaste_hf.errors import ScitasteError


def write_json_atomic(path: str | Path, data: Any) -> None:
    """Write ``data`` as JSON to ``path`` through a temporary file in the same folder and an atomic rename."""
    path = Path(path)
    if path.is_dir():
        raise ScitasteError(f"{path} is a folder; give a file name for the JSON output")
    if not path.parent.is_dir():
        raise ScitasteError(f"folder {path.parent} does not exist")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=2, allow_nan=False)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
