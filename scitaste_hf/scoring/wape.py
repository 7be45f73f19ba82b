"""Scoring scheme 2: WAPE on the innovation score and its grade bands (docs/scoring.md#scheme-2)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import WAPE_BANDS
from scitaste_hf.scoring.inputs import as_scores, check_same_length

# The bands join without jumps, so the score is one piecewise-linear curve through the band edges.
_EDGES = np.array([b.low for b in WAPE_BANDS] + [WAPE_BANDS[-1].high])
_SCORES = np.array([b.score_at_low for b in WAPE_BANDS] + [WAPE_BANDS[-1].score_at_high])


def wape(predictions: Sequence[float], references: Sequence[float]) -> float:
    """Weighted absolute percentage error, ``sum |p - g| / sum |g|``, as a fraction (0.131 for 13.1%).

    Parameters
    ----------
    predictions, references : sequences of float
        Innovation scores of the same papers in the same order, each finite and within 0-100.

    Raises
    ------
    ScitasteError
        On empty input, different lengths, NaN/infinite or out-of-range values, or references summing to 0.
    """
    p = as_scores(predictions, "predictions")
    g = as_scores(references, "references")
    check_same_length(p, g)
    check_defined(g)
    return float(wape_batch(p, g, np.ones((1, p.shape[0])))[0])


def check_defined(g: np.ndarray) -> None:
    """Raise when WAPE is undefined on the whole set: the reference scores (all >= 0) sum to 0."""
    if not np.any(g):
        raise ScitasteError("WAPE is undefined: the reference scores sum to 0")


def wape_batch(p: np.ndarray, g: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """WAPE for each row of resample ``counts`` (B, n); the point estimate is one row of ones.

    A row whose reference scores sum to 0 has no WAPE: NaN, not the infinity of x / 0, which would score
    as a silent 0 and break a percentile. Callers refuse a set on which it is undefined
    (:func:`check_defined`); a resample of a valid set may still draw only zeros.
    """
    denominator = counts @ np.abs(g)
    with np.errstate(invalid="ignore", divide="ignore"):
        w = counts @ np.abs(p - g) / denominator
    w[denominator == 0] = np.nan
    return w


def _check_wape(w: float) -> float:
    w = float(w)
    if not math.isfinite(w) or w < 0:
        raise ScitasteError(f"WAPE must be a finite fraction >= 0, got {w!r}")
    return w


def wape_score(w: float) -> float:
    """The 0-100 Scheme-2 score of a WAPE fraction: linear inside each band, 0 beyond 100%."""
    return float(np.interp(_check_wape(w), _EDGES, _SCORES, right=0.0))


def wape_scores(w: np.ndarray) -> np.ndarray:
    """:func:`wape_score` for an array of WAPE fractions (NaN stays NaN)."""
    return np.interp(w, _EDGES, _SCORES, right=0.0)


def wape_grade(w: float) -> str:
    """The Scheme-2 grade A..F of a WAPE fraction; each band includes its lower edge, F is 50% and above."""
    w = _check_wape(w)
    for band in WAPE_BANDS:
        if w < band.high:
            return band.grade
    return WAPE_BANDS[-1].grade
