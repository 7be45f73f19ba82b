"""Turning a model's reply into an :class:`~scitaste_hf.schema.Answer` or a counted
:class:`~scitaste_hf.schema.Failure` (DESIGN.md section 9)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from scitaste_hf.schema import Answer, Failure

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n?(.*?)```", re.DOTALL)
#: Where a JSON object can begin: a brace followed by a key or by the closing brace (LaTeX's ``\frac{a}{b}`` and
#: prose braces are not tried at all).
_OBJECT_START = re.compile(r'\{\s*["}]')
_RANGE_ERRORS = {"greater_than_equal", "less_than_equal", "finite_number"}
_ANSWER_KEYS = ("innovation_score", "dimension_scores")
#: Work allowed to :func:`json_objects`, in characters decoded per character of the reply, plus a floor for short
#: replies. A failed decoding attempt also costs ``_FAILED_COST`` characters and a decoded object ``_FOUND_COST``
#: (what the interpreter spends around one attempt is worth about that much decoding).
_WORK_PER_CHAR, _WORK_FLOOR, _FAILED_COST, _FOUND_COST = 2, 1 << 16, 128, 32


class _Reply(str):
    """The reply as the decoder sees it. A failed decode builds a ``JSONDecodeError``, whose line and column are
    counted from the start of the text: on a reply with many stray objects that made every failure cost the
    length of the text (quadratic in all). The position alone is enough here."""

    def count(self, *args: Any) -> int:
        return 0

    def rfind(self, *args: Any) -> int:
        return -1


def json_objects(text: str) -> Iterator[tuple[bool, dict[str, Any]]]:
    """``(fenced, object)`` for every JSON object in ``text``: the contents of code fences, then every
    object embedded in the prose (which includes the fenced ones again, harmlessly).

    The work is linear in the length of the reply, whatever it holds: each decoding attempt, successful or
    not, is charged the characters it read plus a constant against a budget proportional to the reply, and the
    scan stops when the budget is spent (only adversarial text gets there: an honest reply costs about twice its
    length). JSON nested deeper than the decoder's recursion limit is not JSON here: such a
    block is skipped, and the scan of the prose ends at it.
    """
    budget = _WORK_PER_CHAR * len(text) + _WORK_FLOOR
    for match in _FENCE.finditer(text):
        budget -= match.end() - match.start() + _FAILED_COST
        if budget < 0:
            return
        try:
            value = json.loads(match.group(1))
        except (ValueError, RecursionError):  # ValueError: not JSON, or an integer too long to convert
            continue
        if isinstance(value, dict):
            yield True, value
    reply, decode = _Reply(text), json.JSONDecoder().raw_decode
    start = _OBJECT_START.search(reply)
    while start is not None and budget >= 0:
        try:
            value, end = decode(reply, start.start())
        except json.JSONDecodeError as exc:
            budget -= exc.pos - start.start() + _FAILED_COST
            start = _OBJECT_START.search(reply, start.start() + 1)
            continue
        except ValueError:  # an integer longer than Python converts: charged the digits it may have read
            budget -= sys.get_int_max_str_digits() + _FAILED_COST
            start = _OBJECT_START.search(reply, start.start() + 1)
            continue
        except RecursionError:
            return
        budget -= end - start.start() + _FOUND_COST
        if isinstance(value, dict):
            yield False, value
        start = _OBJECT_START.search(reply, end)


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
