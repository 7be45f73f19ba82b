"""Turning several model raters' labels into one label, and measuring how far the raters agree.

Three auditors: majority vote for the faithful and valid verdicts, median for the 0-3 value. Three reviewers:
the answer at least two give. Agreement: Cohen's kappa for every pair of raters, Fleiss' kappa for all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable, Sequence
from itertools import combinations

import numpy as np

from scitaste_hf.errors import ScitasteError


def _matrix(ratings: Sequence[Sequence] | np.ndarray, name: str, min_raters: int = 2) -> np.ndarray:
    arr = np.asarray(ratings, dtype=object)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] < min_raters:
        raise ScitasteError(f"{name} must be a non-empty table of items x raters with at least {min_raters} "
                            f"raters, got shape {arr.shape}")
    return arr


def majority_vote(votes: Sequence[Sequence[bool]] | np.ndarray) -> np.ndarray:
    """The majority of each item's boolean votes.

    Parameters
    ----------
    votes : array-like of shape (n_items, n_raters)
        Booleans; ``n_raters`` must be odd so that there is always a majority (three auditors).

    Returns
    -------
    ndarray of bool, shape (n_items,)
    """
    arr = _matrix(votes, "votes", min_raters=1)
    if arr.shape[1] % 2 == 0:
        raise ScitasteError(f"a majority vote needs an odd number of raters, got {arr.shape[1]}")
    if not all(isinstance(v, bool | np.bool_) for v in arr.ravel()):
        raise ScitasteError("votes must be booleans")
    return arr.astype(bool).sum(axis=1) * 2 > arr.shape[1]


def median_value(values: Sequence[Sequence[int]] | np.ndarray) -> np.ndarray:
    """The median of each item's ratings (with three auditors, the middle 0-3 value).

    Parameters
    ----------
    values : array-like of shape (n_items, n_raters)
        Numbers.

    Returns
    -------
    ndarray of float, shape (n_items,)
    """
    arr = _matrix(values, "values", min_raters=1).astype(np.float64)
    return np.median(arr, axis=1)


def agreed_answer(answers: Sequence[Hashable], min_agree: int = 2) -> Hashable | None:
    """The answer that at least ``min_agree`` raters gave to one question, or ``None`` when none did.

    Parameters
    ----------
    answers : sequence of hashable
        One answer per rater (three reviewers).
    min_agree : int
        How many raters must give the same answer (default 2, "at least two agree").
    """
    if min_agree < 1 or 2 * min_agree <= len(answers):
        # With min_agree <= n/2 two different answers could both qualify.
        raise ScitasteError(f"min_agree={min_agree} does not make a unique answer among {len(answers)} raters")
    answer, count = Counter(answers).most_common(1)[0] if answers else (None, 0)
    return answer if count >= min_agree else None


def cohen_kappa_pairs(ratings: Sequence[Sequence[Hashable]] | np.ndarray,
                      rater_names: Sequence[str] | None = None) -> dict[str, float]:
    """Cohen's kappa of every pair of raters (scikit-learn's :func:`~sklearn.metrics.cohen_kappa_score`).

    Parameters
    ----------
    ratings : array-like of shape (n_items, n_raters)
        Categorical labels (booleans, strings or integers), one column per rater.
    rater_names : sequence of str, optional
        A name per column; default ``rater1``, ``rater2``, ...

    Returns
    -------
    dict
        ``"a~b"`` -> kappa for each pair of columns; NaN when both raters use one and the same label
        throughout (chance agreement is then 1 and kappa is undefined).
    """
    from sklearn.metrics import cohen_kappa_score

    arr = _matrix(ratings, "ratings")
    names = list(rater_names) if rater_names is not None else [f"rater{i + 1}" for i in range(arr.shape[1])]
    if len(names) != arr.shape[1]:
        raise ScitasteError(f"{len(names)} rater names for {arr.shape[1]} raters")
    out = {}
    for i, j in combinations(range(arr.shape[1]), 2):
        a, b = arr[:, i].astype(str), arr[:, j].astype(str)
        with np.errstate(invalid="ignore", divide="ignore"):
            out[f"{names[i]}~{names[j]}"] = float(cohen_kappa_score(a, b)) if len({*a, *b}) > 1 else float("nan")
    return out


def rating_table(ratings: Sequence[Sequence[Hashable]] | np.ndarray) -> tuple[np.ndarray, list]:
    """Raw ratings as the (n_items, n_categories) count table that :func:`fleiss_kappa` takes.

    Parameters
    ----------
    ratings : array-like of shape (n_items, n_raters)
        Categorical labels, one column per rater.

    Returns
    -------
    table : ndarray of int, shape (n_items, n_categories)
        How many raters put each item in each category.
    categories : list
        The categories, in the table's column order (sorted by their string form).
    """
    arr = _matrix(ratings, "ratings")
    categories = sorted(set(arr.ravel().tolist()), key=str)
    index = {c: k for k, c in enumerate(categories)}
    table = np.zeros((arr.shape[0], len(categories)), dtype=np.int64)
    for item, row in enumerate(arr):
        for label in row:
            table[item, index[label]] += 1
    return table, categories


def fleiss_kappa(table: Sequence[Sequence[int]] | np.ndarray) -> float:
    """Fleiss' kappa of a count table (Fleiss 1971), the agreement of any number of raters.

    With n raters per item, P_i = (sum_j n_ij^2 - n) / (n (n - 1)) is item i's observed agreement and
    p_j = sum_i n_ij / (N n) the share of category j; kappa = (mean P_i - sum p_j^2) / (1 - sum p_j^2).

    Parameters
    ----------
    table : array-like of int, shape (n_items, n_categories)
        How many raters put each item in each category; every row must sum to the same n >= 2
        (see :func:`rating_table`).

    Returns
    -------
    float
        Kappa: 1 for perfect agreement, about 0 for agreement by chance; NaN when all ratings fall in one
        category (chance agreement 1, kappa undefined).
    """
    counts = np.asarray(table, dtype=np.float64)
    if counts.ndim != 2 or counts.shape[0] == 0:
        raise ScitasteError(f"the count table must be items x categories, got shape {counts.shape}")
    n = counts.sum(axis=1)
    if (counts < 0).any() or not np.all(n == n[0]) or n[0] < 2:
        raise ScitasteError("every item of the count table needs the same number (>= 2) of non-negative ratings")
    raters = n[0]
    p_item = ((counts**2).sum(axis=1) - raters) / (raters * (raters - 1))
    p_category = counts.sum(axis=0) / counts.sum()
    chance = float((p_category**2).sum())
    if np.isclose(chance, 1.0):
        return float("nan")
    return float((p_item.mean() - chance) / (1.0 - chance))
