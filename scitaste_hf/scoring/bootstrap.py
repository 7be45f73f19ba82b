"""Percentile bootstrap intervals and the paired bootstrap test.

The paper reports no uncertainty; with 50 papers per discipline we must. Papers are resampled with
replacement; every statistic is evaluated on the resample counts with the same code as the point estimate
(see :mod:`scitaste_hf.scoring._arrays`), so an interval can never disagree with its point.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DEFAULT_WEIGHTS, validate_weights
from scitaste_hf.scoring._arrays import Counts, as_answer_matrix, as_scores, check_same_length
from scitaste_hf.scoring.scheme1 import scheme1_batch
from scitaste_hf.scoring.wape import wape_batch, wape_scores

N_RESAMPLES = 1000
CONFIDENCE = 0.95
SEED = 0


def resample_counts(n: int, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> np.ndarray:
    """How often each of ``n`` papers appears in each of ``n_resamples`` resamples, shape (B, n).

    Deterministic for a given ``seed``: the same input always gets the same interval.
    """
    if n_resamples < 1:
        raise ScitasteError(f"n_resamples must be >= 1, got {n_resamples}")
    rng = np.random.default_rng(seed)
    picks = rng.integers(0, n, size=(n_resamples, n))
    picks += np.arange(n_resamples)[:, None] * n
    return np.bincount(picks.ravel(), minlength=n_resamples * n).reshape(n_resamples, n)


def _statistics(P: np.ndarray, G: np.ndarray, counts: Counts,
                weights: Mapping[str, float]) -> dict[str, np.ndarray]:
    """The bootstrapped statistics: WAPE and the Scheme-2 score always, Scheme 1 when ``P`` has dimensions."""
    w = wape_batch(P[:, 0], G[:, 0], counts.f)
    out = {"wape": w, "scheme2": wape_scores(w)}
    if P.shape[1] > 1:
        out["scheme1"] = scheme1_batch(P, G, counts, weights)["scheme1"]
    return out


def _interval(values: np.ndarray, confidence: float) -> list[float]:
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.nanpercentile(values, [100 * alpha, 100 * (1 - alpha)])
    return [float(lo), float(hi)]


def _matrices(predictions: Any, references: Any) -> tuple[np.ndarray, np.ndarray]:
    """Answers as (n, 8) matrices, or bare innovation scores as (n, 1)."""
    first = predictions[0] if len(predictions) else None
    if (isinstance(predictions, np.ndarray) and predictions.ndim == 1) or isinstance(first, int | float):
        P = as_scores(predictions, "predictions")[:, None]
        G = as_scores(references, "references")[:, None]
    else:
        P = as_answer_matrix(predictions, "predictions")
        G = as_answer_matrix(references, "references")
    check_same_length(P, G)
    return P, G


def bootstrap(predictions: Any, references: Any, *, weights: Mapping[str, float] | None = None,
              n_resamples: int = N_RESAMPLES, seed: int = SEED, confidence: float = CONFIDENCE
              ) -> dict[str, list[float]]:
    """Percentile bootstrap intervals of WAPE, the Scheme-2 score and (for full answers) Scheme 1.

    Parameters
    ----------
    predictions, references : sequences
        Innovation scores (floats) for WAPE and Scheme 2 only, or answers (dicts, ``Answer`` objects or an
        (n, 8) array) for all three. Scored items only.
    weights : mapping, optional
        Part-B weights of Scheme 1; default :data:`~scitaste_hf.schema.DEFAULT_WEIGHTS`.
    n_resamples : int
        Number of resamples of the papers (default 1,000).
    seed : int
        Seed of the resampling; the same input and seed give the same interval.
    confidence : float
        Coverage of the interval (default 0.95).

    Returns
    -------
    dict
        ``{"wape": [lo, hi], "scheme2": [lo, hi], "scheme1": [lo, hi]}`` (``scheme1`` only for answers).
    """
    if not 0 < confidence < 1:
        raise ScitasteError(f"confidence must be between 0 and 1, got {confidence}")
    P, G = _matrices(predictions, references)
    w = DEFAULT_WEIGHTS if weights is None else validate_weights(weights)
    stats = _statistics(P, G, Counts(resample_counts(P.shape[0], n_resamples, seed)), w)
    return {name: _interval(values, confidence) for name, values in stats.items()}


def paired_bootstrap(predictions_a: Any, predictions_b: Any, references: Any, *,
                     weights: Mapping[str, float] | None = None, n_resamples: int = N_RESAMPLES,
                     seed: int = SEED, confidence: float = CONFIDENCE) -> dict[str, dict[str, Any]]:
    """Paired bootstrap comparison of two runs on the same papers (run A minus run B).

    Both runs are resampled with the same counts, so paper difficulty cancels out. Pass only the papers
    that both runs scored, in the same order as ``references``; parameters as in :func:`bootstrap`.

    Returns
    -------
    dict
        Per statistic (``wape``, ``scheme2`` and, for answers, ``scheme1``): ``difference`` (A - B on all
        papers), ``interval`` of the difference, and ``p_value``, the two-sided bootstrap p-value of no
        difference (twice the smaller tail share of resampled differences on either side of 0, at most 1).
    """
    if not 0 < confidence < 1:
        raise ScitasteError(f"confidence must be between 0 and 1, got {confidence}")
    PA, G = _matrices(predictions_a, references)
    PB, _ = _matrices(predictions_b, references)
    w = DEFAULT_WEIGHTS if weights is None else validate_weights(weights)
    ones = Counts(np.ones((1, G.shape[0])))
    counts = Counts(resample_counts(G.shape[0], n_resamples, seed))
    point_a, point_b = _statistics(PA, G, ones, w), _statistics(PB, G, ones, w)
    boot_a, boot_b = _statistics(PA, G, counts, w), _statistics(PB, G, counts, w)
    out = {}
    for name in point_a:
        diff = boot_a[name] - boot_b[name]
        diff = diff[~np.isnan(diff)]
        tail = min(np.mean(diff <= 0), np.mean(diff >= 0))
        out[name] = {
            "difference": float(point_a[name][0] - point_b[name][0]),
            "interval": _interval(diff, confidence),
            "p_value": float(min(1.0, 2.0 * tail)),
        }
    return out
