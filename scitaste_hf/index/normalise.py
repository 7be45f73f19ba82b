"""Population-relative normalisations of docs/index-dimensions.md#normalisation: percentile, mean rank, and the PCA
pipeline of dimensions B..F."""

from __future__ import annotations

import numpy as np


def percentile(values: np.ndarray, population: np.ndarray | None = None) -> np.ndarray:
    """Percentile of each value: 100 * (number of population values strictly below it) / N.

    Parameters
    ----------
    values : array-like of float, shape (n,)
        The values to place.
    population : array-like of float, shape (N,), optional
        The reference population; ``values`` itself when None. Must not be empty.

    Returns
    -------
    ndarray of float, shape (n,)
    """
    values = np.asarray(values, dtype=float)
    population = values if population is None else np.asarray(population, dtype=float)
    if population.size == 0:
        return np.zeros_like(values)
    below = np.searchsorted(np.sort(population), values, side="left")
    return 100.0 * below / population.size


def mean_rank(values: np.ndarray) -> np.ndarray:
    """Mean-rank normalisation: 100 * (average rank - 1) / (N - 1), ties averaged; 50 when N = 1.

    Parameters
    ----------
    values : array-like of float, shape (N,)
        Finite values.

    Returns
    -------
    ndarray of float, shape (N,)
    """
    values = np.asarray(values, dtype=float)
    if values.size == 1:
        return np.array([50.0])
    # Average ranks from one sort (scipy.stats.rankdata's "average"; importing scipy.stats costs a process 0.6 s):
    # a group of equal values spanning sorted positions start..end-1 shares the rank (start + 1 + end) / 2, exact
    # in floating point.
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    ends = np.r_[starts[1:], values.size]
    ranks = np.empty(values.size)
    ranks[order] = np.repeat((starts + 1 + ends) / 2.0, ends - starts)
    return 100.0 * (ranks - 1.0) / (values.size - 1)


def standardise(matrix: np.ndarray) -> np.ndarray:
    """Impute, then standardise the columns of a sub-parameter matrix (docs/index-dimensions.md#normalisation).

    Each missing entry (NaN) takes its column mean; a column with no value at all becomes 0. Columns are then
    centred and scaled by their population standard deviation; a zero-variance column becomes 0.

    Parameters
    ----------
    matrix : array-like of float, shape (N, k)
        One row per paper, one column per sub-parameter; NaN marks a missing value.

    Returns
    -------
    ndarray of float, shape (N, k)
    """
    x = np.array(matrix, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"sub-parameter matrix must be 2-D, got shape {x.shape}")
    missing = np.isnan(x)
    counts = (~missing).sum(axis=0)
    sums = np.where(missing, 0.0, x).sum(axis=0)
    # An all-missing column has no mean; the second imputation step (docs/index-dimensions.md#pca-score) fills it
    # with 0.
    col_mean = np.divide(sums, counts, out=np.zeros(x.shape[1]), where=counts > 0)
    x[missing] = np.broadcast_to(col_mean, x.shape)[missing]
    x -= x.mean(axis=0)
    std = x.std(axis=0)
    # Relative threshold: a column of equal values can leave rounding noise after centring.
    scale = np.abs(x).max(axis=0) if x.size else np.zeros(x.shape[1])
    constant = std <= 1e-12 * np.maximum(scale, 1.0)
    x[:, constant] = 0.0
    x[:, ~constant] /= std[~constant]
    return x


def pca_score(matrix: np.ndarray) -> np.ndarray:
    """The 0-100 score of one of dimensions B..F from its sub-parameter matrix (docs/index-dimensions.md#normalisation).

    Imputes and standardises with :func:`standardise`, projects on the first principal component, flips the
    sign when the projection correlates negatively with the row mean of the standardised variables, and maps
    the projection to 0-100 by :func:`mean_rank`.

    Parameters
    ----------
    matrix : array-like of float, shape (N, k)
        One row per paper, one column per sub-parameter; NaN marks a missing value. N >= 1.

    Returns
    -------
    ndarray of float, shape (N,)
        All 50 when the projection has no variance (for example N = 1 or all columns constant).
    """
    z = standardise(matrix)
    n = z.shape[0]
    if n < 2 or not z.any():
        return np.full(n, 50.0)
    projection = _first_component(z)
    row_mean = z.mean(axis=1)
    if np.std(projection) > 0 and np.std(row_mean) > 0 and np.corrcoef(projection, row_mean)[0, 1] < 0:
        projection = -projection
    # PCA leaves ~1e-16 noise on rows that should tie; rounding keeps their ranks tied.
    return mean_rank(np.round(projection, 10))


def _first_component(z: np.ndarray) -> np.ndarray:
    """The projection on the first principal component, as scikit-learn's ``PCA(n_components=1,
    svd_solver="full").fit_transform`` computes it, operation for operation (so bit for bit): centre, SVD by LAPACK's
    gesdd through scipy, the sign that makes each component's largest loading positive, then U * S. Written out
    because importing scikit-learn (with scipy.stats) cost each process that computes the index about 1 s of CPU."""
    from scipy import linalg

    centred = z - np.mean(z, axis=0)
    u, s, vt = linalg.svd(centred, full_matrices=False)
    largest = np.argmax(np.abs(vt), axis=1)
    signs = np.sign(vt[np.arange(vt.shape[0]), largest])
    return u[:, 0] * signs[0] * s[0]
