"""Helpers shared by the source-client tests."""

from __future__ import annotations

import json
from pathlib import Path

RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


def one_line(exc: BaseException) -> str:
    """The message of an error, checked to be one line and non-empty."""
    text = str(exc)
    assert text and "\n" not in text, text
    return text


def write_recordings(folder: Path, *entries: tuple[str, str, int, object]) -> Path:
    """Write ``(method, url, status, body)`` interactions in the recorded-fixture layout; return the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for i, (method, url, status, body) in enumerate(entries):
        entry = {"request": {"method": method, "url": url},
                 "response": {"status": status, "headers": {"content-type": "application/json"}, "body": body}}
        (folder / f"rec_{i}.json").write_text(json.dumps(entry))
    return folder
