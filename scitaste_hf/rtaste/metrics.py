"""The rTaste metrics as pure numpy/scipy functions: Brier scores, the base-rate forecast, top-1 credit, yield,
and intervals across seed papers.

Every comparison of the study is paired within a seed paper and reported with a 95% interval across seed
papers; :func:`grouped_mean` does both, with a cluster-robust t-interval (CR2 standard error, t on G - 1
degrees of freedom for G seed papers), which keeps its coverage with the study's few seed papers.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from scitaste_hf.errors import ScitasteError
from scitaste_hf.scoring.bootstrap import CONFIDENCE, N_RESAMPLES, SEED

#: Expected top-1 credit of a uniformly random choice among five MVEs.
RANDOM_TOP1 = 0.2
#: The range of a probability, of its squared error, of a Brier score and of a hit rate; intervals are clipped to it.
UNIT = (0.0, 1.0)
#: The range of a difference of two of those (of two squared errors, or of two hit rates).
UNIT_DIFFERENCE = (-1.0, 1.0)
#: The range of a hit rate minus random choice's.
ABOVE_RANDOM = (-RANDOM_TOP1, 1.0 - RANDOM_TOP1)


def check_probabilities(probabilities: Any, name: str = "predictions") -> np.ndarray:
    """``probabilities`` as a float64 vector, checked: one-dimensional, not empty, finite, within 0-1.

    Parameters
    ----------
    probabilities : array-like of float
        Forecast probabilities that the events occur.
    name : str
        What to call them in an error message.
    """
    try:
        arr = np.asarray(probabilities, dtype=np.float64)
    except (TypeError, ValueError):
        raise ScitasteError(f"{name} must be probabilities (numbers between 0 and 1)") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ScitasteError(f"{name} must be a non-empty list of probabilities, got shape {arr.shape}")
    bad = np.flatnonzero(~np.isfinite(arr) | (arr < 0.0) | (arr > 1.0))
    if bad.size:
        raise ScitasteError(f"{name}[{bad[0]}] = {arr[bad[0]]:g} is not a probability between 0 and 1")
    return arr


def check_outcomes(outcomes: Any, name: str = "references") -> np.ndarray:
    """``outcomes`` as a float64 vector of 0 and 1 (whether each event occurred), checked.

    Parameters
    ----------
    outcomes : array-like of {0, 1} or bool
        Whether each event occurred.
    name : str
        What to call them in an error message.
    """
    try:
        arr = np.asarray(outcomes, dtype=np.float64)
    except (TypeError, ValueError):
        raise ScitasteError(f"{name} must be 0 or 1 (whether each event occurred)") from None
    if arr.ndim != 1 or arr.size == 0:
        raise ScitasteError(f"{name} must be a non-empty list of 0/1 outcomes, got shape {arr.shape}")
    bad = np.flatnonzero((arr != 0.0) & (arr != 1.0))
    if bad.size:
        raise ScitasteError(f"{name}[{bad[0]}] = {arr[bad[0]]:g}; an outcome is 0 (did not occur) or 1 (occurred)")
    return arr


def _same_length(a: np.ndarray, b: np.ndarray, names: str) -> None:
    if a.shape[0] != b.shape[0]:
        raise ScitasteError(f"{names} differ in length: {a.shape[0]} vs {b.shape[0]}")


def brier_score(probabilities: Any, outcomes: Any) -> float:
    """The Brier score, mean of (p_i - o_i)^2: 0 is perfect, always forecasting 0.5 scores 0.25.

    Parameters
    ----------
    probabilities : array-like of float, shape (n,)
        Forecast probabilities, each within 0-1.
    outcomes : array-like of {0, 1}, shape (n,)
        Whether each event occurred.

    Returns
    -------
    float
    """
    p, o = check_probabilities(probabilities), check_outcomes(outcomes)
    _same_length(p, o, "predictions and references")
    return float(np.mean((p - o) ** 2))


def base_rate_forecast(outcomes: Any, groups: Sequence[str]) -> np.ndarray:
    """For each event, the event rate of the *other* groups (seed papers): the forecast of someone who knows
    how often registered events occur elsewhere but nothing about this paper.

    Parameters
    ----------
    outcomes : array-like of {0, 1}, shape (n,)
        Whether each event occurred.
    groups : sequence of str, shape (n,)
        The seed paper of each event; at least two distinct papers.

    Returns
    -------
    ndarray of float, shape (n,)
    """
    o = check_outcomes(outcomes)
    labels, index = np.unique(np.asarray(groups, dtype=str), return_inverse=True)
    _same_length(o, index, "outcomes and groups")
    if labels.size < 2:
        raise ScitasteError("the base rate needs events from at least two seed papers")
    occurred = np.bincount(index, weights=o, minlength=labels.size)
    counted = np.bincount(index, minlength=labels.size)
    return (occurred.sum() - occurred[index]) / (counted.sum() - counted[index])


def grouped_mean(values: Any, groups: Sequence[str], *, n_resamples: int = N_RESAMPLES, seed: int = SEED,
                 confidence: float = CONFIDENCE, bounds: tuple[float, float] | None = None) -> dict[str, Any]:
    """The mean of ``values`` with a cluster-robust t-interval across groups (seed papers).

    The groups are the study's independent units (seed papers): the MVEs or conditions of one paper share
    it, so the interval treats each group, not each item, as one observation. The estimate weights every
    value equally, so the mean of a difference of two losses is the difference of their means on the same
    items. The interval is the one of that item-weighted mean (a ratio estimator): its cluster-robust CR2
    (Bell-McCaffrey) standard error with a Student t quantile on G - 1 degrees of freedom, G the number of
    groups. With groups of equal size it is exactly the t-interval over the per-group means.

    Parameters
    ----------
    values : array-like of float, shape (n,)
        Per-item values: a squared error, a difference of two squared errors, a top-1 credit.
    groups : sequence of str, shape (n,)
        The group of each item.
    n_resamples : int, default :data:`~scitaste_hf.scoring.bootstrap.N_RESAMPLES`
        0 skips the interval; any other value (>= 0) gives it. The interval is analytic, so the number is not
        otherwise used; it is kept so that callers' 0 still means "no interval".
    seed : int, default 0
        Not used: the interval is analytic, and the same input always gives the same output. Kept for
        callers that pass it.
    confidence : float, default 0.95
        Coverage of the interval, between 0 and 1.
    bounds : (float, float), optional
        The range the statistic can take (a hit rate's or a Brier score's ``(0, 1)``): the interval is clipped
        to it. With few groups the t-interval is wide and reaches past it (two seed papers: a Brier score's
        ``[-0.74, 0.88]``), and a bound outside the range says nothing the range does not.

    Returns
    -------
    dict
        ``estimate`` (the mean), ``interval`` (``[low, high]`` or ``None``), ``clipped`` (whether ``bounds``
        cut the interval), ``n`` items, ``n_groups``. ``interval`` is ``None`` when ``n_resamples`` is 0 or
        there is a single group (one seed paper says nothing about the variation between papers); it is
        ``[estimate, estimate]`` when every group has the same mean (zero variance between groups, up to
        rounding).

    Notes
    -----
    With group sums S_g, sizes n_g, N = sum(n_g) and estimate m = sum(S_g) / N, the variance is
    V = sum((S_g - m n_g)^2 / (1 - n_g / N)) / N^2 and the interval is m -/+ t(G - 1, (1 + confidence) / 2)
    sqrt(V). It covers the population value of the item-weighted mean, E[a paper's sum] / E[its number of
    items]. The percentile bootstrap over groups that this function used before under-covers with few groups
    (the variance of its resamples is (G - 1) / G of the mean's, and its tails are normal, not t): in studies
    simulated by ``bench/bench_rtaste_intervals.py`` (papers of about 5-30 items, unequal in size and mean)
    its "95%" interval covered the truth in 80% of studies with 4 seed papers, 87% with 7 and 92% with 20, and
    BCa did no better; this interval covered it in 95%, 95% and 94%.

    References: R. M. Bell and D. F. McCaffrey (2002), "Bias reduction in standard errors for linear
    regression with multi-stage samples", Survey Methodology 28(2); A. C. Cameron and D. L. Miller (2015),
    "A practitioner's guide to cluster-robust inference", Journal of Human Resources 50(2).
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0 or not np.isfinite(x).all():
        raise ScitasteError("values must be a non-empty list of finite numbers")
    if not 0 < confidence < 1:
        raise ScitasteError(f"confidence must be between 0 and 1, got {confidence}")
    if n_resamples < 0:
        raise ScitasteError(f"n_resamples must be >= 0, got {n_resamples}")
    labels, index = np.unique(np.asarray(groups, dtype=str), return_inverse=True)
    _same_length(x, index, "values and groups")
    estimate = float(x.mean())
    interval, clipped = None, False
    if n_resamples and labels.size > 1:
        interval = _cluster_t_interval(x, index, labels.size, estimate, confidence)
        if bounds is not None:
            low, high = max(interval[0], bounds[0]), min(interval[1], bounds[1])
            clipped = [low, high] != interval
            interval = [low, high]
    return {"estimate": estimate, "interval": interval, "clipped": clipped, "n": int(x.size),
            "n_groups": int(labels.size)}


def _cluster_t_interval(x: np.ndarray, index: np.ndarray, n_groups: int, estimate: float,
                        confidence: float) -> list[float]:
    """The CR2 t-interval of :func:`grouped_mean` for ``n_groups`` >= 2 groups (see its Notes)."""
    sums = np.bincount(index, weights=x, minlength=n_groups)
    sizes = np.bincount(index, minlength=n_groups).astype(np.float64)
    total = sizes.sum()
    # Every group has an item, so with two or more groups 1 - n_g / N > 0.
    variance = np.sum((sums - estimate * sizes) ** 2 / (1.0 - sizes / total)) / total**2
    se = float(np.sqrt(variance))
    if se <= 64 * np.finfo(np.float64).eps * float(np.abs(x).max()):
        return [estimate, estimate]  # the groups' means agree: zero variance, up to rounding
    half = float(stats.t.ppf(0.5 + confidence / 2, n_groups - 1)) * se
    return [estimate - half, estimate + half]


def pooled_sd(cells: Sequence[Sequence[float]], *, confidence: float = CONFIDENCE) -> dict[str, Any] | None:
    """The between-run standard deviation of a metric, pooled over cells of repeated runs, with its interval.

    Each cell holds the values of one set of repeated runs (one seed paper, model and organisation run K times);
    cells with fewer than two values say nothing about the spread and are left out. The pooled variance is the sum of
    the cells' squared deviations from their own means over its degrees of freedom, sum(k_c - 1); the interval is
    the chi-square interval of a normal standard deviation on those degrees of freedom.

    Parameters
    ----------
    cells : sequence of sequence of float
        The metric's value in each run, per cell.
    confidence : float, default 0.95

    Returns
    -------
    dict or None
        ``estimate``, ``interval`` (``[low, high]``), ``clipped`` (False), ``n_cells`` (cells of two runs or more)
        and ``df``; ``None`` when no cell has two runs.
    """
    used = [np.asarray(c, dtype=np.float64) for c in cells if len(c) >= 2]
    if not used:
        return None
    if not all(np.isfinite(c).all() for c in used):
        raise ScitasteError("a repeated run's metric is not a finite number")
    df = sum(c.size - 1 for c in used)
    squares = float(sum(((c - c.mean()) ** 2).sum() for c in used))
    tail = (1 - confidence) / 2
    interval = [float(np.sqrt(squares / stats.chi2.ppf(q, df))) for q in (1 - tail, tail)]
    return {"estimate": float(np.sqrt(squares / df)), "interval": interval, "clipped": False, "n_cells": len(used),
            "df": df}


def top1_credit(choices: Any, values: Any) -> np.ndarray:
    """Per condition, the credit of a choice for picking the MVE the auditors valued highest.

    A choice among k MVEs tied at the highest value earns 1/k (0 if it is not among them), so a uniformly
    random choice earns exactly 1/5 in expectation, ties or not.

    Parameters
    ----------
    choices : array-like of int, shape (n_conditions,)
        The index (0-4, in written order) of the chosen MVE: the agent's rank-1 MVE, or 0 for the
        first-written baseline.
    values : array-like of float, shape (n_conditions, 5)
        The auditors' aggregated (median) value of each MVE, in written order.

    Returns
    -------
    ndarray of float, shape (n_conditions,)
    """
    v = np.asarray(values, dtype=np.float64)
    c = np.asarray(choices)
    if v.ndim != 2 or c.shape != (v.shape[0],):
        raise ScitasteError(f"choices {c.shape} and values {v.shape} must be (n,) and (n, k)")
    if not np.issubdtype(c.dtype, np.integer) or ((c < 0) | (c >= v.shape[1])).any():
        raise ScitasteError(f"choices must be MVE indices 0-{v.shape[1] - 1}")
    best = v == v.max(axis=1, keepdims=True)
    return best[np.arange(v.shape[0]), c] / best.sum(axis=1)


def yield_per_100_usd(counts: Any, costs: Any) -> float | None:
    """Sound, valuable and new MVEs per 100 US dollars: 100 * sum(counts) / sum(costs).

    Parameters
    ----------
    counts : array-like of int
        Qualifying MVEs of each condition.
    costs : array-like of float
        Each condition's cost in US dollars, >= 0.

    Returns
    -------
    float or None
        ``None`` when the conditions cost nothing in total (the yield is then undefined).
    """
    n, c = np.asarray(counts, dtype=np.float64), np.asarray(costs, dtype=np.float64)
    if n.shape != c.shape or (c < 0).any() or not np.isfinite(c).all():
        raise ScitasteError("counts and costs must pair up, with finite costs >= 0")
    total = c.sum()
    return None if total == 0 else float(100.0 * n.sum() / total)
