"""The CD index of Funk and Owen-Smith over a citation graph with exact dates
(docs/index-dimensions.md#d-disruptiveness).

For a focal paper f dated t_f, the candidates are the works v dated t_f < t_v (<= t_f + window) that cite f or
cite one of f's references. n_i cite f only, n_j cite f and a reference, n_k cite a reference only, and
CD = (n_i - n_j) / (n_i + n_j + n_k). These are the semantics of the ``cdindex`` package (russellfunk/cdindex),
with one deliberate difference (docs/deviations.md#cd-index): CD is null when f has no citer in the window, where
``cdindex`` returns 0 (or NaN when there is no candidate at all).

``cdindex`` keeps each focal paper's candidates in a list it scans linearly, so it is quadratic in the number of
candidates. Here the candidates of a block of focal papers come out of one sparse product (focal -> reference ->
citer), which is linear in the number of such paths.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

#: Time stamp of a work whose date is unknown: earlier than any focal paper, so never a candidate.
UNDATED = np.iinfo(np.int64).min


@dataclass(frozen=True)
class CDResult:
    """Per focal paper: CD (NaN when there is no citer in the window) and the three counts.

    ``n_i`` is also the number of disruptive citations: citers that cite the paper but none of its references.
    """

    cd: np.ndarray
    n_i: np.ndarray
    n_j: np.ndarray
    n_k: np.ndarray


class CitationGraph:
    """A directed citation graph over ``n`` works numbered 0..n-1, each with an integer time stamp.

    Parameters
    ----------
    citing, cited : array-like of int, shape (m,)
        Edge list: ``citing[e]`` cites ``cited[e]``. Duplicate edges count once; self-citations are dropped
        (``cdindex`` refuses the first and would count a paper as its own reference with the second).
    times : array-like of int64, shape (n,)
        Time stamp of each work in any unit (the index uses days since 1970-01-01); :data:`UNDATED` for an
        unknown date, which keeps that work out of every candidate set.
    """

    def __init__(self, citing: np.ndarray, cited: np.ndarray, times: np.ndarray) -> None:
        times = np.asarray(times, dtype=np.int64)
        citing = np.asarray(citing, dtype=np.int64)
        cited = np.asarray(cited, dtype=np.int64)
        if citing.shape != cited.shape:
            raise ValueError("citing and cited must have the same length")
        n = times.size
        if citing.size and (min(citing.min(), cited.min()) < 0 or max(citing.max(), cited.max()) >= n):
            raise ValueError(f"edge endpoints must be work numbers in 0..{n - 1}")
        keep = citing != cited
        out = sparse.csr_matrix((np.ones(int(keep.sum()), dtype=np.int64), (citing[keep], cited[keep])),
                                shape=(n, n))
        out.sum_duplicates()
        max_refs = int(np.diff(out.indptr).max()) if n else 0
        self._self_weight = 1 << max(1, max_refs.bit_length())
        # int32 products are faster; int64 only for a work with over 2**29 references.
        self._dtype = np.int32 if self._self_weight < 1 << 30 else np.int64
        out = out.astype(self._dtype)
        out.data[:] = 1
        self.times = times
        #: citing -> cited, and its transpose cited -> citing, both CSR with unit data.
        self.out = out
        self.inc = out.T.tocsr()
        self.inc.sort_indices()

    @property
    def n(self) -> int:
        """Number of works."""
        return self.times.size

    def cd(self, focal: np.ndarray, window: int | None = None, *, block_paths: int = 1 << 23) -> CDResult:
        """CD index and counts of each focal work.

        Parameters
        ----------
        focal : array-like of int, shape (q,)
            Work numbers of the focal papers; each must have a known time stamp.
        window : int, optional
            CD_t: only candidates with t_f < t_v <= t_f + window count. None counts all later works.
        block_paths : int
            Upper bound on the focal -> reference -> citer paths handled in one block; bounds peak memory
            (roughly 40 bytes per path).

        Returns
        -------
        CDResult
        """
        focal = np.asarray(focal, dtype=np.int64)
        if focal.size and np.any(self.times[focal] == UNDATED):
            raise ValueError("every focal work needs a time stamp")
        if window is not None and window < 0:
            raise ValueError(f"window must be >= 0, got {window}")
        n_i = np.zeros(focal.size, dtype=np.int64)
        n_j = np.zeros_like(n_i)
        n_k = np.zeros_like(n_i)
        in_degree = np.diff(self.inc.indptr)
        paths = self.out[focal] @ in_degree + in_degree[focal]
        ends = np.cumsum(paths)
        start = 0
        while start < focal.size:
            # At least one focal work per block, however many paths it has.
            stop = max(start + 1, int(np.searchsorted(ends, ends[start] - paths[start] + block_paths, "right")))
            stop = min(stop, focal.size)
            block = focal[start:stop]
            self._count_block(block, window, n_i[start:stop], n_j[start:stop], n_k[start:stop])
            start = stop
        citers = n_i + n_j
        total = citers + n_k
        cd = np.full(focal.size, np.nan)
        np.divide(n_i - n_j, total, out=cd, where=citers > 0)
        return CDResult(cd=cd, n_i=n_i, n_j=n_j, n_k=n_k)

    def _count_block(
        self, block: np.ndarray, window: int | None, n_i: np.ndarray, n_j: np.ndarray, n_k: np.ndarray
    ) -> None:
        # One sparse product labels every candidate: each focal row holds its references with weight 1 and
        # the focal work itself with weight W, a power of two above any reference count, so entry (f, v) of
        # (row @ citers) is W * [v cites f] + (number of f's references that v cites).
        size = block.size
        focal_self = sparse.csr_matrix((np.full(size, self._self_weight, self._dtype), (np.arange(size), block)),
                                       shape=(size, self.n))
        labels = (self.out[block] + focal_self) @ self.inc
        per_row = np.diff(labels.indptr)
        t_focal = np.repeat(self.times[block], per_row)
        t_cand = self.times[labels.indices]
        ok = t_cand > t_focal
        if window is not None:
            ok &= t_cand <= t_focal + window
        # Code per candidate: 0 out of the window, else 1 + [cites a reference] + 2 * [cites f]; one bincount
        # over (row, code) then counts all three kinds at once. int8 and in-place steps keep this pass cheap.
        code = ((labels.data & (self._self_weight - 1)) != 0).view(np.int8)
        code += ((labels.data >= self._self_weight).view(np.int8) << 1) + 1
        code *= ok.view(np.int8)
        key = np.repeat(np.arange(0, 5 * size, 5), per_row)
        key += code
        counts = np.bincount(key, minlength=5 * size).reshape(size, 5)
        n_k += counts[:, 2]
        n_i += counts[:, 3]
        n_j += counts[:, 4]
