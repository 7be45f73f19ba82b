"""The strict checks every score's inputs pass: score vectors and answer matrices, finite, within 0-100, paired.

A score is a JSON number: a bool or a string is refused here, in the one place every entry point (the Python
functions, the ``evaluate`` modules, the leaderboard) passes through.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS, SCORE_MAX, SCORE_MIN, Answer

_TOO_LARGE = "an integer too large for a float"


def as_scores(values: Any, name: str) -> np.ndarray:
    """Check a 1-D sequence of scores (finite, within 0-100, not empty) and return it as float64."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ScitasteError(f"{name} must be numbers, got {type(values).__name__}") from None
    except OverflowError:  # an integer beyond float range, such as a 400-digit one
        raise _too_large(name, values) from None
    if arr.ndim != 1:
        raise ScitasteError(f"{name} must be one-dimensional, got shape {arr.shape}")
    return _check_range(arr, name)


def as_answer_matrix(values: Any, name: str) -> np.ndarray:
    """Answers to an (n, 8) float64 matrix: innovation score, then the seven dimensions in order.

    Accepts an (n, 8) array, or a sequence of :class:`~scitaste_hf.schema.Answer` objects or dicts
    ``{"innovation_score": x, "dimension_scores": {key: x, ...}}``.
    """
    if isinstance(values, np.ndarray):
        arr = values.astype(np.float64, copy=False)
    else:
        if not isinstance(values, Sequence) or isinstance(values, str):
            raise ScitasteError(f"{name} must be a sequence of answers, got {type(values).__name__}")
        arr = np.array([_answer_row(v, name, i) for i, v in enumerate(values)], dtype=np.float64)
        if arr.size == 0:
            arr = arr.reshape(0, 1 + len(DIMENSIONS))
    if arr.ndim != 2 or arr.shape[1] != 1 + len(DIMENSIONS):
        raise ScitasteError(f"{name} must have {1 + len(DIMENSIONS)} columns per item, got shape {arr.shape}")
    return _check_range(arr, name)


def _answer_row(value: Any, name: str, index: int) -> tuple[float, ...]:
    if isinstance(value, Answer):
        return value.vector()
    if not isinstance(value, Mapping):
        raise ScitasteError(f"{name}[{index}] must be an answer dict, got {type(value).__name__}")
    try:
        dims = value["dimension_scores"]
        row = (value["innovation_score"], *(dims[k] for k in DIMENSIONS))
    except (KeyError, TypeError) as exc:
        raise ScitasteError(f"{name}[{index}] lacks {exc}: each answer needs innovation_score and "
                            f"dimension_scores with the keys {', '.join(DIMENSIONS)}") from None
    if any(isinstance(x, bool) or not isinstance(x, int | float) for x in row):
        raise ScitasteError(f"{name}[{index}] has a score that is not a number")
    try:
        return tuple(float(x) for x in row)
    except OverflowError:  # an integer beyond float range, such as a 400-digit one
        raise ScitasteError(f"{name} has a score outside 0-100 at item {index}: {_TOO_LARGE}") from None


def _too_large(name: str, values: Any) -> ScitasteError:
    """The error for an integer score too large to be a float (numpy's own OverflowError names no item)."""
    i = next((i for i, v in enumerate(values) if isinstance(v, int) and abs(v) > sys.float_info.max), 0)
    return ScitasteError(f"{name} has a score outside 0-100 at item {i}: {_TOO_LARGE}")


def _check_range(arr: np.ndarray, name: str) -> np.ndarray:
    if arr.shape[0] == 0:
        raise ScitasteError(f"{name} is empty: nothing to score")
    bad = ~np.isfinite(arr)
    if bad.any():
        raise ScitasteError(f"{name} has a NaN or infinite value at item {int(np.argwhere(bad)[0][0])}")
    bad = (arr < SCORE_MIN) | (arr > SCORE_MAX)
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        raise ScitasteError(f"{name} has a score outside 0-100 at item {i[0]}: {arr[i]:g}")
    return arr


def check_same_length(a: np.ndarray, b: np.ndarray) -> None:
    """Raise when predictions and references do not pair up one to one."""
    if a.shape[0] != b.shape[0]:
        raise ScitasteError(f"predictions and references differ in length: {a.shape[0]} vs {b.shape[0]}")
