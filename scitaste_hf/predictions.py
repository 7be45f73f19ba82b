"""Reading a run's predictions file: one JSON object per line, keyed by ``bibcode``.

A line holds the answer fields (``innovation_score``, ``dimension_scores``, ...), or the model's raw reply
as ``response`` (parsed with :func:`~scitaste_hf.scoring.parse_answer`), or a recorded failure as
``failure`` (a reason of :data:`~scitaste_hf.schema.FAILURE_REASONS`) with an optional ``detail``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from scitaste_hf.errors import ScitasteError
from scitaste_hf.records import jsonl_lines
from scitaste_hf.schema import FAILURE_REASONS, Answer, Failure
from scitaste_hf.scoring import parse_answer, validate_answer


def _line_to_answer(obj: dict, strict_fields: bool) -> Answer | Failure:
    if "response" in obj:
        response = obj["response"]
        if response is None:
            return Failure("api_error", str(obj.get("error") or "no response"))
        return parse_answer(response)
    if "failure" in obj:
        reason = obj["failure"] if obj["failure"] in FAILURE_REASONS else "other"
        return Failure(reason, str(obj.get("detail") or obj["failure"]))
    if "innovation_score" in obj or "dimension_scores" in obj:
        answer = validate_answer(obj)
        if strict_fields and isinstance(answer, Failure):
            raise ScitasteError(f"invalid answer fields ({answer.reason}): {answer.detail}")
        return answer
    if strict_fields:
        raise ScitasteError("the line has no answer fields, response or failure")
    return Failure("schema", "the line has no answer fields, response or failure")


def parse_predictions(lines: Iterable[str], source: str, *, strict_fields: bool = False
                      ) -> dict[str, Answer | Failure]:
    """Parse predictions JSONL lines into ``{bibcode: Answer or Failure}``.

    Parameters
    ----------
    lines : iterable of str
        The file's lines, split on ``"\\n"`` only (see :func:`~scitaste_hf.records.jsonl_lines`); blank
        lines are skipped.
    source : str
        Name of the input in error messages (``source:line: ...``).
    strict_fields : bool
        When true, answer fields that fail validation (NaN, out of range, a missing dimension) are an error
        for the whole file instead of a counted failure: for submitted files, whose fields the submitter
        wrote, as opposed to raw model replies, which are the model's.

    Raises
    ------
    ScitasteError
        When there are no lines, a line is not a JSON object, lacks a ``bibcode``, or repeats one.
    """
    out: dict[str, Answer | Failure] = {}
    first_line: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ScitasteError(f"{source}:{number}: not a JSON line ({exc.msg})") from None
        except RecursionError:
            raise ScitasteError(f"{source}:{number}: not a JSON line (nested too deeply)") from None
        except ValueError:  # Python's int-string conversion limit: json refuses an integer of over 4300 digits
            raise ScitasteError(f"{source}:{number}: not a JSON line (a number has too many digits)") from None
        if not isinstance(obj, dict):
            raise ScitasteError(f"{source}:{number}: expected a JSON object, got {type(obj).__name__}")
        bibcode = obj.get("bibcode")
        if not isinstance(bibcode, str) or not bibcode:
            raise ScitasteError(f"{source}:{number}: missing 'bibcode'")
        if bibcode in first_line:
            raise ScitasteError(f"{source}:{number}: duplicate bibcode {bibcode} (first on line {first_line[bibcode]})")
        first_line[bibcode] = number
        try:
            out[bibcode] = _line_to_answer(obj, strict_fields)
        except ScitasteError as exc:
            raise ScitasteError(f"{source}:{number}: {exc}") from None
    if not out:
        raise ScitasteError(f"{source} is empty")
    return out


def read_predictions(path: str | Path) -> dict[str, Answer | Failure]:
    """Read a predictions JSONL file into ``{bibcode: Answer or Failure}`` (see :func:`parse_predictions`).

    Raises
    ------
    ScitasteError
        When the file is missing, unreadable or empty, or a line is malformed.
    """
    path = Path(path)
    try:
        lines = jsonl_lines(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ScitasteError(f"predictions file not found: {path}") from None
    except OSError as exc:  # a folder, no permission, an I/O error
        raise ScitasteError(f"cannot read predictions file {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ScitasteError(f"cannot read predictions file {path}: {exc}") from None
    return parse_predictions(lines, str(path))
