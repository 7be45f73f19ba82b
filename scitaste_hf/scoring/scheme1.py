"""Scoring scheme 1: correlation + dimension accuracy (docs/scoring.md#scheme-1)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from scitaste_hf.schema import DIMENSIONS, SCHEME1_GRADES, SCHEME1_PARTS, SCHEME1_POINTS
from scitaste_hf.scoring.inputs import as_answer_matrix, check_same_length
from scitaste_hf.scoring.stats import Counts, Ranked, mean_abs_dev, pearson, spearman, variance
from scitaste_hf.weights import DEFAULT_WEIGHTS, validate_weights


def scheme1_grade(score: float) -> str:
    """excellent (>= 80), moderate (>= 60), poor (>= 40) or unusable."""
    return next(grade for threshold, grade in SCHEME1_GRADES if score >= threshold)


def _ratio_score(error: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """100 * max(0, 1 - error / scale); a zero scale scores 100 for zero error, else 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(scale > 0, 100.0 * np.maximum(0.0, 1.0 - error / scale), 0.0)
    return np.where((scale <= 0) & (error == 0), 100.0, ratio)


def _points(part: str, scores: Mapping[str, np.ndarray]) -> np.ndarray:
    """A part of Scheme 1: the :data:`SCHEME1_POINTS`-weighted mean of its components' 0-100 scores."""
    points = SCHEME1_POINTS[part]
    return sum(p * scores[key] for key, p in points.items()) / sum(points.values())


def _accuracy(error: np.ndarray, scale: np.ndarray) -> np.ndarray:
    """1 - error / scale, unclipped; a zero scale gives 1 for zero error, else 0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = np.where(scale > 0, 1.0 - error / scale, 0.0)
    return np.where((scale <= 0) & (error == 0), 1.0, acc)


def _moments(p: np.ndarray, g: np.ndarray, counts: Counts) -> tuple[Any, ...]:
    """One column's ranks, errors, constant-gold rows, MAE and the gold's own mean absolute deviation."""
    rp, rg = Ranked(p), Ranked(g)
    err = p - g
    const_g = rg.constant(counts)
    mae = counts.f @ np.abs(err) / counts.total
    mae0 = np.where(const_g, 0.0, mean_abs_dev(g, counts))
    return rp, rg, err, const_g, mae, mae0


def part_a_batch(p: np.ndarray, g: np.ndarray, counts: Counts) -> dict[str, np.ndarray]:
    """Part A of Scheme 1 and its components for each row of resample ``counts`` (B, n): the innovation scores'
    correlations and errors, ``p`` predicted and ``g`` gold, shape (n,)."""
    c, total = counts.f, counts.total
    rp, rg, err, const_g, mae, mae0 = _moments(p, g, counts)
    rho = spearman(rp, rg, counts)
    r = pearson(rp, rg, counts)
    mse = c @ (err * err) / total
    bias = c @ err / total
    var = np.where(const_g, 0.0, variance(g, counts))
    s_mae, s_mse = _ratio_score(mae, mae0), _ratio_score(mse, var)
    out = dict(
        spearman=rho, pearson=r, mae=mae, mse=mse, bias=bias,
        s_rho=100.0 * np.maximum(0.0, np.nan_to_num(rho)),
        s_r=100.0 * np.maximum(0.0, np.nan_to_num(r)),
        s_mae=s_mae, s_mse=s_mse, s_err=(s_mae + s_mse) / 2.0,
        s_bias=_ratio_score(np.abs(bias), np.sqrt(var)),
    )
    out["part_a"] = _points("part_a", out)
    return out


def part_b_batch(P: np.ndarray, G: np.ndarray, counts: Counts, weights: Mapping[str, float]) -> dict[str, np.ndarray]:
    """Part B of Scheme 1 and its components for each row of resample ``counts`` (B, n): the dimensions'
    weighted correlations and accuracies, ``P`` predicted and ``G`` gold, shape (n, 7) in :data:`DIMENSIONS`
    order."""
    out: dict[str, np.ndarray] = {}
    weighted_rho = np.zeros_like(counts.total)
    weighted_acc = np.zeros_like(counts.total)
    for j, key in enumerate(DIMENSIONS):
        rp, rg, _, _, mae_d, mae0_d = _moments(P[:, j], G[:, j], counts)
        rho_d = spearman(rp, rg, counts)
        out[f"spearman_{key}"] = rho_d
        out[f"mae_{key}"] = mae_d
        weighted_rho += weights[key] * np.nan_to_num(rho_d)
        weighted_acc += weights[key] * _accuracy(mae_d, mae0_d)
    # The weights sum to 1, so both sums are at most 1; clipping only removes rounding above it.
    weighted_rho, weighted_acc = np.minimum(weighted_rho, 1.0), np.minimum(weighted_acc, 1.0)
    out["weighted_dimension_spearman"] = weighted_rho
    out["weighted_dimension_accuracy"] = weighted_acc
    out["part_b"] = _points("part_b", {"weighted_dimension_spearman": 100 * np.maximum(0.0, weighted_rho),
                                       "weighted_dimension_accuracy": 100 * np.maximum(0.0, weighted_acc)})
    return out


def scheme1_of(parts: Mapping[str, np.ndarray]) -> np.ndarray:
    """Scheme 1 from its parts (``part_a`` and ``part_b``, shares :data:`SCHEME1_PARTS`)."""
    return sum(share * parts[part] for part, share in SCHEME1_PARTS.items())


def scheme1_batch(P: np.ndarray, G: np.ndarray, counts: Counts,
                  weights: Mapping[str, float]) -> dict[str, np.ndarray]:
    """Every Scheme-1 component for each row of resample ``counts`` (B, n).

    ``P`` and ``G`` are (n, 8): innovation score, then the dimensions in :data:`DIMENSIONS` order. The point
    estimate is one row of ones; the bootstrap passes its resample counts.
    """
    out = {**part_a_batch(P[:, 0], G[:, 0], counts), **part_b_batch(P[:, 1:], G[:, 1:], counts, weights)}
    out["scheme1"] = scheme1_of(out)
    return out


def _number(x: float) -> float | None:
    """A JSON-safe float: None for an undefined (NaN) statistic."""
    x = float(x)
    return None if math.isnan(x) else x


def scheme1(predictions: Any, references: Any, weights: Mapping[str, float] | None = None) -> dict[str, Any]:
    """Scheme-1 score of a set of answers against the gold labels (docs/scoring.md#scheme-1).

    Parameters
    ----------
    predictions, references : sequence of answers, or (n, 8) arrays
        Each answer is a dict ``{"innovation_score": x, "dimension_scores": {key: x}}`` or an
        :class:`~scitaste_hf.schema.Answer`; an array row is the innovation score then the seven
        dimensions in :data:`~scitaste_hf.schema.DIMENSIONS` order. Only scored items: failures are
        excluded before this call and reported as coverage.
    weights : mapping, optional
        Dimension weights for Part B; default :data:`~scitaste_hf.weights.DEFAULT_WEIGHTS`.

    Returns
    -------
    dict
        ``scheme1``, ``grade``, ``part_a``, ``part_b``; the components ``spearman``, ``pearson`` (None when
        undefined, which scores 0), ``mae``, ``mse``, ``bias``, ``s_rho``, ``s_r``, ``s_mae``, ``s_mse``,
        ``s_err``, ``s_bias``, ``weighted_dimension_spearman``, ``weighted_dimension_accuracy``; per
        dimension ``dimension_spearman`` and ``dimension_mae``; and ``n``.
    """
    P = as_answer_matrix(predictions, "predictions")
    G = as_answer_matrix(references, "references")
    check_same_length(P, G)
    w = DEFAULT_WEIGHTS if weights is None else validate_weights(weights)
    stats = {k: v[0] for k, v in scheme1_batch(P, G, Counts(np.ones((1, P.shape[0]))), w).items()}
    result: dict[str, Any] = {
        "scheme1": float(stats["scheme1"]),
        "grade": scheme1_grade(stats["scheme1"]),
    }
    for key in ("part_a", "part_b", "spearman", "pearson", "mae", "mse", "bias", "s_rho", "s_r", "s_mae",
                "s_mse", "s_err", "s_bias", "weighted_dimension_spearman", "weighted_dimension_accuracy"):
        result[key] = _number(stats[key])
    result["dimension_spearman"] = {k: _number(stats[f"spearman_{k}"]) for k in DIMENSIONS}
    result["dimension_mae"] = {k: float(stats[f"mae_{k}"]) for k in DIMENSIONS}
    result["n"] = int(P.shape[0])
    return result
