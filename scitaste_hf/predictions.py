"""Reading a run's predictions file: one JSON object per line, keyed by ``bibcode``.

A line holds the answer fields (``innovation_score``, ``dimension_scores``, ...), or the model's raw reply
as ``response`` (parsed with :func:`~scitaste_hf.scoring.parse_answer`), or a recorded failure as
``failure`` (a reason of :data:`~scitaste_hf.schema.FAILURE_REASONS`) with an optional ``detail``.
"""

from __future__ import annotations

import json
from pathlib import Path

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import FAILURE_REASONS, Answer, Failure
from scitaste_hf.scoring import parse_answer, validate_answer


def _line_to_answer(obj: dict) -> Answer | Failure:
    if "response" in obj:
        response = obj["response"]
        if response is None:
            return Failure("api_error", str(obj.get("error") or "no response"))
        return parse_answer(response)
    if "failure" in obj:
        reason = obj["failure"] if obj["failure"] in FAILURE_REASONS else "other"
        return Failure(reason, str(obj.get("detail") or obj["failure"]))
    if "innovation_score" in obj or "dimension_scores" in obj:
        return validate_answer(obj)
    return Failure("schema", "the line has no answer fields, response or failure")


def read_predictions(path: str | Path) -> dict[str, Answer | Failure]:
    """Read a predictions JSONL file into ``{bibcode: Answer or Failure}``.

    Raises
    ------
    ScitasteError
        When the file is missing or empty, a line is not a JSON object, lacks a ``bibcode``, or repeats one.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise ScitasteError(f"predictions file not found: {path}") from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        raise ScitasteError(f"cannot read predictions file {path}: {exc}") from None
    out: dict[str, Answer | Failure] = {}
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScitasteError(f"{path}:{number}: not a JSON line ({exc.msg})") from None
        if not isinstance(obj, dict):
            raise ScitasteError(f"{path}:{number}: expected a JSON object, got {type(obj).__name__}")
        bibcode = obj.get("bibcode")
        if not isinstance(bibcode, str) or not bibcode:
            raise ScitasteError(f"{path}:{number}: missing 'bibcode'")
        if bibcode in first_line:
            raise ScitasteError(f"{path}:{number}: duplicate bibcode {bibcode} (first on line {first_line[bibcode]})")
        first_line[bibcode] = number
        out[bibcode] = _line_to_answer(obj)
    if not out:
        raise ScitasteError(f"predictions file {path} is empty")
    return out
