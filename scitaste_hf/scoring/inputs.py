"""The strict checks every score's inputs pass: score vectors and answer matrices, finite, within 0-100, paired.

A score is a number: a bool or a string (``True``, ``"50"``) is refused here, with the item named, in the one place
every entry point (the Python functions, the ``evaluate`` modules, the leaderboard) passes through; numpy would
read them as 1.0 and 50.0. A numpy array of integers or floats is checked by its dtype, not item by item: it is
what the bootstrap passes.
"""

from __future__ import annotations

import numbers
import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scitaste_hf.errors import InvalidInput, short_repr
from scitaste_hf.schema import DIMENSIONS, SCORE_MAX, SCORE_MIN, Answer

_TOO_LARGE = "an integer too large for a float"
#: numpy's dtype kinds of integers and floats; not ``b`` (bool), ``U``/``S`` (text) or ``O`` (any object).
_NUMERIC_KINDS = "iuf"


def is_number(value: Any) -> bool:
    """Whether ``value`` is a number a score can be: an int or a float, numpy's included, but not a bool."""
    return type(value) is float or type(value) is int or (
        isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_))


def _shown(value: Any) -> str:
    return short_repr(value.item() if isinstance(value, np.generic) else value)


def as_scores(values: Any, name: str) -> np.ndarray:
    """Check a 1-D sequence of scores (numbers, finite, within 0-100, not empty) and return it as float64.

    Raises
    ------
    InvalidInput
        In one line that names the first bad item (``name[i] = True is not a number``).
    """
    if isinstance(values, str | bytes | Mapping):
        raise InvalidInput(f"{name} must be numbers, got {type(values).__name__}")
    if not isinstance(values, list | tuple):  # an array (numpy's, or one that converts to it)
        try:
            arr = np.asarray(values)
        except (TypeError, ValueError):
            raise InvalidInput(f"{name} must be numbers, got {type(values).__name__}") from None
        if arr.dtype.kind in _NUMERIC_KINDS:
            arr = arr.astype(np.float64, copy=False)
            if arr.ndim != 1:
                raise InvalidInput(f"{name} must be one-dimensional, got shape {arr.shape}")
            return _check_range(arr, name)
        if arr.ndim == 0:
            raise InvalidInput(f"{name} must be numbers, got {type(values).__name__}")
        values = arr
    # the types first (at C speed): a list of plain floats and ints, the usual case, needs no look at each item
    bad = None if set(map(type, values)) <= {float, int} else next(
        (i for i, v in enumerate(values) if not is_number(v)), None)
    if bad is not None:
        raise InvalidInput(f"{name}[{bad}] = {_shown(values[bad])} is not a number ({name} must be numbers, "
                            "0-100)")
    try:
        arr = np.asarray(values, dtype=np.float64)
    except OverflowError:  # an integer beyond float range, such as a 400-digit one
        raise _too_large(name, values) from None
    return _check_range(arr, name)


def as_answer_matrix(values: Any, name: str) -> np.ndarray:
    """Answers to an (n, 8) float64 matrix: innovation score, then the seven dimensions in order.

    Accepts an (n, 8) array of numbers, or a sequence of :class:`~scitaste_hf.schema.Answer` objects or dicts
    ``{"innovation_score": x, "dimension_scores": {key: x, ...}}`` whose scores are numbers (not bools or strings).
    """
    if isinstance(values, np.ndarray):
        if values.dtype.kind not in _NUMERIC_KINDS:
            rows = values if values.ndim else values.reshape(1)
            bad = next(((i, x) for i, row in enumerate(rows) for x in np.ravel(row) if not is_number(x)), None)
            if bad is not None:
                raise InvalidInput(f"{name}[{bad[0]}] has a score that is not a number: {_shown(bad[1])}")
        arr = values.astype(np.float64, copy=False)
    else:
        if not isinstance(values, Sequence) or isinstance(values, str):
            raise InvalidInput(f"{name} must be a sequence of answers, got {type(values).__name__}")
        arr = np.array([_answer_row(v, name, i) for i, v in enumerate(values)], dtype=np.float64)
        if arr.size == 0:
            arr = arr.reshape(0, 1 + len(DIMENSIONS))
    if arr.ndim != 2 or arr.shape[1] != 1 + len(DIMENSIONS):
        raise InvalidInput(f"{name} must have {1 + len(DIMENSIONS)} columns per item, got shape {arr.shape}")
    return _check_range(arr, name)


def _answer_row(value: Any, name: str, index: int) -> tuple[float, ...]:
    if isinstance(value, Answer):
        return value.vector()
    if not isinstance(value, Mapping):
        raise InvalidInput(f"{name}[{index}] must be an answer dict, got {type(value).__name__}")
    try:
        dims = value["dimension_scores"]
        row = (value["innovation_score"], *(dims[k] for k in DIMENSIONS))
    except (KeyError, TypeError) as exc:
        raise InvalidInput(f"{name}[{index}] lacks {exc}: each answer needs innovation_score and "
                            f"dimension_scores with the keys {', '.join(DIMENSIONS)}") from None
    bad = next((k for k, x in enumerate(row) if not is_number(x)), None)
    if bad is not None:
        raise InvalidInput(f"{name}[{index}] has a score that is not a number: {_shown(row[bad])}")
    try:
        return tuple(float(x) for x in row)
    except OverflowError:  # an integer beyond float range, such as a 400-digit one
        raise InvalidInput(f"{name} has a score outside 0-100 at item {index}: {_TOO_LARGE}") from None


def _too_large(name: str, values: Any) -> InvalidInput:
    """The error for an integer score too large to be a float (numpy's own OverflowError names no item)."""
    i = next((i for i, v in enumerate(values) if isinstance(v, int) and abs(v) > sys.float_info.max), 0)
    return InvalidInput(f"{name} has a score outside 0-100 at item {i}: {_TOO_LARGE}")


def _check_range(arr: np.ndarray, name: str) -> np.ndarray:
    if arr.shape[0] == 0:
        raise InvalidInput(f"{name} is empty: nothing to score")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise InvalidInput(f"{name} has a NaN or infinite value at item {int(np.argwhere(bad)[0][0])}")
    bad = (arr < SCORE_MIN) | (arr > SCORE_MAX)
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        raise InvalidInput(f"{name} has a score outside 0-100 at item {i[0]}: {arr[i]:g}")
    return arr


def check_same_length(a: np.ndarray, b: np.ndarray) -> None:
    """Raise when predictions and references do not pair up one to one."""
    if a.shape[0] != b.shape[0]:
        raise InvalidInput(f"predictions and references differ in length: {a.shape[0]} vs {b.shape[0]}")
