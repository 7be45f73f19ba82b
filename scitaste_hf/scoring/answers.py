"""Turning a model's reply into an :class:`~scitaste_hf.schema.Answer` or a counted
:class:`~scitaste_hf.schema.Failure` (DESIGN.md section 9)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from scitaste_hf.schema import Answer, Failure

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
_RANGE_ERRORS = {"greater_than_equal", "less_than_equal", "finite_number"}
_ANSWER_KEYS = ("innovation_score", "dimension_scores")


def json_objects(text: str) -> Iterator[tuple[bool, dict[str, Any]]]:
    """``(fenced, object)`` for every JSON object in ``text``: the contents of code fences, then every
    object embedded in the prose (which includes the fenced ones again, harmlessly).

    JSON nested deeper than the decoder's recursion limit is not JSON here: such a block is skipped, and
    the scan of the prose ends at it (retrying from each of its inner braces would take quadratic time).
    """
    decoder = json.JSONDecoder()
    for block in _FENCE.findall(text):
        try:
            value = json.loads(block)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            yield True, value
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        except RecursionError:
            return
        if isinstance(value, dict):
            yield False, value
        start = text.find("{", end)


def validate_answer(obj: Mapping[str, Any]) -> Answer | Failure:
    """Validate an answer object: an :class:`Answer`, or a ``schema``/``out_of_range`` :class:`Failure`."""
    try:
        return Answer.model_validate(obj)
    except ValidationError as exc:
        errors = exc.errors()
        reason = "out_of_range" if all(e["type"] in _RANGE_ERRORS for e in errors) else "schema"
        first = errors[0]
        where = ".".join(str(p) for p in first["loc"]) or "answer"
        return Failure(reason, f"{where}: {first['msg']}" + (f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""))


def parse_answer(text: str) -> Answer | Failure:
    """Parse a model's reply into an :class:`Answer`, tolerating code fences and surrounding prose.

    The answer is the last JSON object in the reply that carries ``innovation_score`` or
    ``dimension_scores`` (fenced blocks are preferred over objects embedded in prose), so a reply that
    restates an example before its final answer is read correctly.

    Returns
    -------
    Answer or Failure
        A failure has reason ``no_json`` (no JSON object at all, or one nested too deeply to parse, see
        :func:`json_objects`), ``schema`` (no answer object, a missing or extra dimension, a non-number) or
        ``out_of_range`` (a NaN, infinite or out-of-range number).
    """
    if not isinstance(text, str):
        return Failure("schema", f"expected the reply as a string, got {type(text).__name__}")
    found_any = False
    last = {True: None, False: None}
    for fenced, obj in json_objects(text):
        found_any = True
        if any(k in obj for k in _ANSWER_KEYS):
            last[fenced] = obj
    candidate = last[True] if last[True] is not None else last[False]
    if candidate is None:
        if found_any:
            return Failure("schema", "no JSON object with innovation_score and dimension_scores")
        return Failure("no_json", "no JSON object in the reply")
    return validate_answer(candidate)
