"""How sure a ranking is: rank intervals from a joint paired bootstrap, the top group, and the smallest
difference a board of n papers can resolve.

A board's runs answer the same papers, so the bootstrap resamples the papers once for all of them
(:func:`replicates` with one seed: the same resample counts for every run) and ranks the runs within each
resample. A run's 95% rank interval is the 2.5th to 97.5th percentile of its ranks; runs whose interval
reaches the leader's share the top group. Pure numpy, like the rest of :mod:`scitaste_hf.scoring`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from scitaste_hf.scoring.bootstrap import CONFIDENCE, SEED, _count_blocks, _skill_values, _statistics
from scitaste_hf.scoring.stats import Counts

#: Resamples behind a board's rank intervals: enough for stable 2.5/97.5 percentiles of ranks, and small enough
#: to keep for every run of a board of 10,000.
RANK_RESAMPLES = 200


def replicates(P: np.ndarray, G: np.ndarray, F: np.ndarray, *, weights: Mapping[str, float],
               n_resamples: int = RANK_RESAMPLES, seed: int = SEED) -> np.ndarray:
    """Scheme-1 skill over the floor ``F`` on each of ``n_resamples`` resamples of the papers.

    Every run of a board must be given the same ``G``, ``n_resamples`` and ``seed``: the resamples are then the
    same for all of them, which is what makes the bootstrap joint and paired. A paper the run did not answer
    (a NaN row of ``P``) is left out of its statistics in every resample, as in its point estimate.

    Parameters
    ----------
    P, G, F : ndarray, shape (n, 8)
        The run's answers (NaN rows for failures), the gold, and the floor's answers, for all the board's papers.
    weights : mapping
        Part-B weights of Scheme 1.

    Returns
    -------
    ndarray of float, shape (n_resamples,)
        NaN on a resample where the skill is undefined.
    """
    scored = ~np.isnan(P).any(axis=1)
    if not scored.any():
        return np.full(n_resamples, np.nan)
    out = []
    for block in _count_blocks(G.shape[0], n_resamples, seed):
        counts = Counts(block[:, scored])
        with np.errstate(divide="ignore", invalid="ignore"):  # a resample that draws none of them is NaN, as documented
            run, floor = (_statistics(M[scored], G[scored], counts, weights) for M in (P, F))
            out.append(_skill_values(run, floor)["scheme1"])
    return np.concatenate(out)


def rank_intervals(values: np.ndarray, *, confidence: float = CONFIDENCE) -> np.ndarray:
    """Each run's rank interval (1 = best) from its statistic on the same resamples.

    Parameters
    ----------
    values : ndarray, shape (runs, resamples)
        Higher is better; a NaN (undefined on that resample) ranks last.
    confidence : float
        Coverage of each interval.

    Returns
    -------
    ndarray of int, shape (runs, 2)
        ``[best rank, worst rank]`` per run; a tie shares the best of its ranks.
    """
    if values.shape[0] == 0:
        return np.zeros((0, 2), dtype=int)
    # a run's rank on a resample: 1 + how many runs did strictly better there ("min" ranks of the negated values)
    ranks = _min_ranks(-np.where(np.isnan(values), -np.inf, values))
    alpha = 100 * (1 - confidence) / 2
    low, high = np.percentile(ranks, [alpha, 100 - alpha], axis=1, method="nearest")
    return np.stack([low, high], axis=1).astype(int)


def _min_ranks(x: np.ndarray) -> np.ndarray:
    """``scipy.stats.rankdata(x, method="min", axis=0)``, written out so that scoring does not import scipy.stats
    (about 0.6 s of CPU in every process that ranks a board): each value's rank is 1 + how many values of its column
    are smaller, ties sharing the lowest."""
    order = np.argsort(x, axis=0, kind="stable")
    ordered = np.take_along_axis(x, order, axis=0)
    position = np.arange(x.shape[0])[:, None]
    starts = np.ones(x.shape, dtype=bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    # the first position of each run of equal values, carried down the run
    first = np.maximum.accumulate(np.where(starts, position, 0), axis=0)
    ranks = np.empty(x.shape, dtype=np.int64)
    np.put_along_axis(ranks, order, first + 1, axis=0)
    return ranks


def top_group(intervals: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Whether each run shares the top group: its rank interval reaches the best rank of the leader's.

    Parameters
    ----------
    intervals : ndarray, shape (runs, 2)
        From :func:`rank_intervals`.
    points : ndarray, shape (runs,)
        The statistic on all papers (higher is better; NaN never leads).
    """
    if len(points) == 0:
        return np.zeros(0, dtype=bool)
    leader = int(np.nanargmax(np.where(np.isnan(points), -np.inf, points)))
    return intervals[:, 0] <= intervals[leader, 1]


def detectable_difference(interval: list[float] | tuple[float, float], *, confidence: float = CONFIDENCE,
                          power: float = 0.8) -> float:
    """The smallest true difference that a paired comparison of this precision detects with ``power``.

    The standard error is read off the difference's bootstrap ``interval`` (its width over twice the normal
    quantile of ``confidence``); the detectable difference is ``(z_(1 - alpha/2) + z_power) * SE``, the usual
    two-sided minimum detectable effect.

    Parameters
    ----------
    interval : [low, high]
        The ``confidence`` interval of a difference between two runs on the same papers.
    """
    from scipy.special import ndtri  # the normal quantile (what scipy.stats.norm.ppf calls), without scipy.stats

    z = ndtri(0.5 + confidence / 2)
    se = (interval[1] - interval[0]) / (2 * z)
    return float((z + ndtri(power)) * se)
