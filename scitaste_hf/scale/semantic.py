"""Dimension C's reference sub-parameters for a block of papers (the formulas of
:func:`scitaste_hf.index.dimensions.semantic_novelty_parameters`, applied one block of papers at a time so that
memory stays that of the block): distance of the paper to its references' centroid, the bridge score between
the references' fields, and the references' dispersion."""

from __future__ import annotations

import numpy as np
from scipy import sparse


def _group_sum(groups: np.ndarray, rows: np.ndarray, vectors: np.ndarray, n_groups: int) -> np.ndarray:
    """Sum of ``vectors[rows]`` per group, as a sparse product (no copy of ``vectors[rows]``)."""
    summer = sparse.csr_matrix((np.ones(rows.size, dtype=vectors.dtype), (groups, rows)),
                               shape=(n_groups, vectors.shape[0]))
    return np.asarray(summer @ vectors, dtype=np.float64)


def _unit_rows(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    norms = np.linalg.norm(vectors, axis=1)
    valid = norms > 1e-12
    unit = np.zeros_like(vectors)
    unit[valid] = vectors[valid] / norms[valid, None]
    return unit, valid


def reference_parameters(paper_row: np.ndarray, rows: np.ndarray, ref_row: np.ndarray, ref_field: np.ndarray,
                         unit: np.ndarray) -> np.ndarray:
    """Reference centroid distance, bridge score and dispersion of a block of papers.

    Parameters
    ----------
    paper_row : ndarray of int, shape (n,)
        Each paper's row in ``unit``, -1 without an embedding.
    rows : ndarray of int, shape (r,)
        Paper (0..n-1) of each reference link, grouped by paper.
    ref_row : ndarray of int, shape (r,)
        The reference's row in ``unit``, -1 without an embedding (such a reference is left out).
    ref_field : ndarray of int, shape (r,)
        The reference's field code, -1 when unknown.
    unit : ndarray of float32, shape (m, d)
        Unit vectors (a memory map is fine: only referenced rows are read).

    Returns
    -------
    ndarray of float, shape (n, 3)
        NaN where a value needs a missing embedding or reference.
    """
    n = paper_row.shape[0]
    out = np.full((n, 3), np.nan)
    keep = ref_row >= 0
    rows, ref_row, ref_field = rows[keep], ref_row[keep], ref_field[keep]
    count = np.bincount(rows, minlength=n)
    has = count > 0
    centroid = _group_sum(rows, ref_row, unit, n)
    centroid[has] /= count[has, None]
    direction, direction_ok = _unit_rows(centroid)
    length = np.linalg.norm(centroid, axis=1)
    paper_ok = direction_ok & (paper_row >= 0)
    paper_unit = np.asarray(unit[paper_row[paper_ok]], dtype=np.float64)
    out[paper_ok, 0] = np.clip(1.0 - np.einsum("ij,ij->i", paper_unit, direction[paper_ok]), 0.0, 2.0)
    # The mean of 1 - cos(u_r, c) over the references is 1 - |c| when c is the mean of the unit vectors u_r.
    out[direction_ok, 2] = np.maximum(1.0 - length[direction_ok], 0.0)
    fielded = ref_field >= 0
    keys, group_of = np.unique(np.stack([rows[fielded], ref_field[fielded]]), axis=1, return_inverse=True)
    group_unit, group_ok = _unit_rows(_group_sum(group_of.ravel(), ref_row[fielded], unit, keys.shape[1]))
    owner = keys[0][group_ok]
    summed = _group_sum(owner, np.flatnonzero(group_ok), group_unit, n)
    m = np.bincount(owner, minlength=n).astype(float)
    # Mean pairwise distance of m unit vectors: sum_{i<j} u_i.u_j = (|sum u|^2 - m) / 2.
    pair_mean = np.divide((summed ** 2).sum(axis=1) - m, m * (m - 1), out=np.zeros(n), where=m > 1)
    out[:, 1] = np.where(m > 1, 1.0 - pair_mean, np.where(m == 1, 0.0, np.nan))
    return out
