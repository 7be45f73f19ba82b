"""Turning a model's reply into an :class:`~scitaste_hf.schema.Answer` or a counted
:class:`~scitaste_hf.schema.Failure` (docs/answers.md#parsing)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from scitaste_hf.schema import Answer, Failure

# Possessive runs of spaces around the language tag: with backtracking ones, an unclosed fence followed by spaces
# made the regex retry every split of them, each with a scan to the end (cubic time).
_FENCE = re.compile(r"```[ \t]*+(?:(?:json|JSON)[ \t]*+)?\r?\n?(.*?)```", re.DOTALL)
#: Where a JSON object can begin: a brace followed by a key or by the closing brace (LaTeX's ``\frac{a}{b}`` and
#: prose braces are not tried at all).
_OBJECT_START = re.compile(r'\{\s*["}]')
_RANGE_ERRORS = {"greater_than_equal", "less_than_equal", "finite_number"}
_ANSWER_KEYS = ("innovation_score", "dimension_scores")
#: Work allowed to :func:`last_json_object`, in characters decoded per character of the reply, plus a floor for
#: short replies. A failed decoding attempt also costs ``_FAILED_COST`` characters, a decoded object
#: ``_FOUND_COST`` and a brace looked at ``_BRACE_COST`` (what the interpreter spends around each is worth about
#: that much decoding).
_WORK_PER_CHAR, _WORK_FLOOR, _FAILED_COST, _FOUND_COST, _BRACE_COST = 2, 1 << 18, 256, 32, 8


class _Reply(str):
    """The reply as the decoder sees it. A failed decode builds a ``JSONDecodeError``, whose line and column are
    counted from the start of the text: on a reply with many stray objects that made every failure cost the
    length of the text (quadratic in all). The position alone is enough here."""

    def count(self, *args: Any) -> int:
        return 0

    def rfind(self, *args: Any) -> int:
        return -1


_DECODER = json.JSONDecoder()


class _Budget:
    """The work left to a scan of one reply, in characters (see :data:`_WORK_PER_CHAR`)."""

    def __init__(self, left: int) -> None:
        self.left = left

    def spend(self, amount: int) -> bool:
        """Charge ``amount``; whether any work is left."""
        self.left -= amount
        return self.left >= 0


def _decode_at(reply: _Reply, start: int, budget: _Budget) -> tuple[Any, int] | None:
    """The JSON value that begins at ``start`` and where it ends, charged to ``budget``; None if there is none
    there (not JSON, nested past the decoder's recursion limit, or an integer too long for Python to convert)."""
    try:
        value, end = _DECODER.raw_decode(reply, start)
    except json.JSONDecodeError as exc:
        budget.spend(exc.pos - start + _FAILED_COST)
        return None
    except (ValueError, RecursionError):  # neither says how far it read: charged what it may have read
        budget.spend(sys.getrecursionlimit() + sys.get_int_max_str_digits() + _FAILED_COST)
        return None
    budget.spend(end - start + _FOUND_COST)
    return value, end


def last_json_object(text: str, wanted: Callable[[dict[str, Any]], bool]) -> tuple[dict[str, Any] | None, bool]:
    """The last JSON object in ``text`` that ``wanted`` accepts, and whether ``text`` holds any JSON object.

    Code fences are looked at first (their last accepted object wins), then the objects in the prose. The prose
    is scanned from its end, where a final answer stands, for half of the work allowed; then from its start with
    what is left, for an answer written before long material (the last one found wins). Objects nested inside
    others are found too. The work is linear in the length of the reply, whatever it holds: each decoding
    attempt, successful or not, is charged the characters it read plus a constant against a budget proportional
    to the reply, and the scan stops when the budget is spent (only adversarial text gets there).

    Parameters
    ----------
    text : str
        A model's reply.
    wanted : callable
        ``wanted(obj) -> bool`` for a decoded JSON object.
    """
    budget, found_any = _Budget(_WORK_PER_CHAR * len(text) + _WORK_FLOOR), False
    for match in reversed(list(_FENCE.finditer(text))):
        if not budget.spend(match.end() - match.start() + _FOUND_COST):
            return None, found_any
        try:
            value = json.loads(match.group(1))
        except (ValueError, RecursionError):
            budget.spend(_FAILED_COST - _FOUND_COST)
            continue
        if isinstance(value, dict):
            found_any = True
            if wanted(value):
                return value, True
    reply, half = _Reply(text), budget.left // 2
    backward, position = _Budget(half), len(text)
    while backward.spend(_BRACE_COST) and (position := text.rfind("{", 0, position)) != -1:
        if _OBJECT_START.match(text, position) and (found := _decode_at(reply, position, backward)) is not None:
            found_any |= isinstance(found[0], dict)
            if isinstance(found[0], dict) and wanted(found[0]):
                return found[0], True
    budget.spend(half - backward.left)
    last, start = None, _OBJECT_START.search(reply)
    while start is not None and budget.spend(_BRACE_COST):
        found = _decode_at(reply, start.start(), budget)
        if found is None:
            start = _OBJECT_START.search(reply, start.start() + 1)
            continue
        value, end = found
        if isinstance(value, dict):
            found_any = True
            last = value if wanted(value) else last
        start = _OBJECT_START.search(reply, end)
    return last, found_any


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
    ``dimension_scores`` (fenced blocks are preferred over objects embedded in prose,
    :func:`last_json_object`), so a reply that restates an example before its final answer is read correctly.

    Returns
    -------
    Answer or Failure
        A failure has reason ``no_json`` (no JSON object at all, or one nested too deeply to parse, see
        :func:`last_json_object`), ``schema`` (no answer object, a missing or extra dimension, a non-number) or
        ``out_of_range`` (a NaN, infinite or out-of-range number).
    """
    if not isinstance(text, str):
        return Failure("schema", f"expected the reply as a string, got {type(text).__name__}")
    candidate, found_any = last_json_object(text, lambda obj: any(k in obj for k in _ANSWER_KEYS))
    if candidate is None:
        if found_any:
            return Failure("schema", "no JSON object with innovation_score and dimension_scores")
        return Failure("no_json", "no JSON object in the reply")
    return validate_answer(candidate)
