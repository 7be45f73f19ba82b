"""The weighted (count-based) statistics that Scheme 1, WAPE, the bootstrap, the ranks and the agreement share.

Every statistic is computed for a matrix of resample counts ``C`` of shape (B, n): row b says how often
each of the n papers appears in resample b. The point estimate is the single row of ones, so the formulas
of docs/scoring.md exist once and the bootstrap evaluates exactly the same code.
"""

from __future__ import annotations

import numpy as np


class Counts:
    """Resample counts (B, n) in the two forms the statistics need: float64 for matrix products and a
    small integer type for the gathers of the rank computation, which move most of the memory."""

    def __init__(self, counts: np.ndarray) -> None:
        self.f = np.asarray(counts, dtype=np.float64)
        self.i = self.f.astype(np.int16 if self.f.shape[1] < np.iinfo(np.int16).max else np.int32)
        self.total = self.f.sum(axis=1)


class Ranked:
    """One score vector prepared for weighted average ranks under many count vectors.

    With counts ``c``, a paper's average rank among the sampled items is (sampled items strictly below
    it) + (sampled items tied with it + 1) / 2: the ranks of the resample that scipy's ``rankdata`` would
    give, computed in O(n) per resample from one sort of the original vector.
    """

    def __init__(self, x: np.ndarray) -> None:
        self.x = x
        order = np.argsort(x, kind="stable")
        xs = x[order]
        new_group = np.empty(x.shape[0], dtype=bool)
        new_group[0] = True
        np.not_equal(xs[1:], xs[:-1], out=new_group[1:])
        self.order = order
        self.starts = np.flatnonzero(new_group)
        group_sorted = np.cumsum(new_group) - 1
        self.group = np.empty_like(group_sorted)
        self.group[order] = group_sorted

    def tied(self, counts: Counts) -> np.ndarray:
        """Sampled items in each group of equal values, (B, groups)."""
        return np.add.reduceat(np.take(counts.i, self.order, axis=1), self.starts, axis=1)

    def constant(self, counts: Counts) -> np.ndarray:
        """Per row of ``counts``, whether every sampled value is equal."""
        if self.starts.size == 1:  # one value throughout (a constant floor): no need to look at the counts
            return np.ones(counts.f.shape[0], dtype=bool)
        return self.tied(counts).max(axis=1) == counts.total


def weighted_corr(u: np.ndarray, v: np.ndarray, counts: Counts, undefined: np.ndarray) -> np.ndarray:
    """Pearson correlation of two score vectors per row of ``counts``; NaN where ``undefined``."""
    c, total = counts.f, counts.total
    mu_u, mu_v = c @ u / total, c @ v / total
    cov = c @ (u * v) / total - mu_u * mu_v
    var = (c @ (u * u) / total - mu_u**2) * (c @ (v * v) / total - mu_v**2)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip(cov / np.sqrt(var), -1.0, 1.0)
    r[undefined] = np.nan
    return r


def spearman(p: Ranked, g: Ranked, counts: Counts) -> np.ndarray:
    """Spearman correlation (Pearson of average ranks) per row of ``counts``; NaN when undefined.

    The mean rank of any resample of N items is (N + 1) / 2 and the sum of squared ranks follows from
    the tie groups alone, so only the cross term needs the (B, n) rank matrices.
    """
    if p.starts.size == 1 or g.starts.size == 1:  # a constant vector: undefined in every resample
        return np.full(counts.f.shape[0], np.nan)
    total = counts.total
    mean = (total + 1.0) / 2.0
    squares, ranks, constant = [], [], []
    for x in (p, g):
        tied = x.tied(counts)
        average = (np.cumsum(tied, axis=1) - tied) + (tied + 1.0) / 2.0
        squares.append(np.einsum("ij,ij,ij->i", tied, average, average) / total - mean**2)
        ranks.append(np.take(average, x.group, axis=1))
        constant.append(tied.max(axis=1) == total)
    cross = np.einsum("ij,ij->i", counts.f * ranks[0], ranks[1]) / total - mean**2
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.clip(cross / np.sqrt(squares[0] * squares[1]), -1.0, 1.0)
    r[constant[0] | constant[1]] = np.nan
    return r


def pearson(p: Ranked, g: Ranked, counts: Counts) -> np.ndarray:
    """Pearson correlation of the raw values per row of ``counts``; NaN when either side is constant."""
    return weighted_corr(p.x, g.x, counts, p.constant(counts) | g.constant(counts))


def mean_abs_dev(g: np.ndarray, counts: Counts) -> np.ndarray:
    """Mean absolute deviation of ``g`` from its own (weighted) mean, per row of ``counts``."""
    mu = counts.f @ g / counts.total
    return np.einsum("ij,ij->i", counts.f, np.abs(g[None, :] - mu[:, None])) / counts.total


def variance(g: np.ndarray, counts: Counts) -> np.ndarray:
    """Population variance of ``g`` per row of ``counts`` (clipped at 0 against rounding)."""
    mu = counts.f @ g / counts.total
    return np.maximum(0.0, counts.f @ (g * g) / counts.total - mu**2)
