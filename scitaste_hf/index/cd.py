"""The CD index of Funk and Owen-Smith over a citation graph with exact dates (DESIGN.md section 5, dimension D).

For a focal paper f dated t_f, the candidates are the works v dated t_f < t_v (<= t_f + window) that cite f or
cite one of f's references. n_i cite f only, n_j cite f and a reference, n_k cite a reference only, and
CD = (n_i - n_j) / (n_i + n_j + n_k). These are the semantics of the ``cdindex`` package (russellfunk/cdindex),
with one deliberate difference: DESIGN.md makes CD null when f has no citer in the window, where ``cdindex``
returns 0 (or NaN when there is no candidate at all).

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
        ones = np.ones(int(keep.sum()), dtype=np.int32)
        out = sparse.csr_matrix((ones, (citing[keep], cited[keep])), shape=(n, n))
        out.sum_duplicates()
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
        # Code 1: cites a reference of f; code 2: cites f; 3: both. Summing two 0/1 patterns weighted 1 and 2
        # labels every candidate in a single sparse addition.
        via_refs = self.out[block] @ self.inc
        via_refs.data = np.ones(via_refs.data.size, dtype=np.int8)
        direct = self.inc[block]
        direct = sparse.csr_matrix((np.full(direct.data.size, 2, np.int8), direct.indices, direct.indptr),
                                   shape=direct.shape)
        labels = via_refs + direct
        rows = np.repeat(np.arange(block.size), np.diff(labels.indptr))
        t_focal = self.times[block][rows]
        t_cand = self.times[labels.indices]
        ok = t_cand > t_focal
        if window is not None:
            ok &= t_cand <= t_focal + window
        rows, code = rows[ok], labels.data[ok]
        size = block.size
        n_k += np.bincount(rows[code == 1], minlength=size)
        n_i += np.bincount(rows[code == 2], minlength=size)
        n_j += np.bincount(rows[code == 3], minlength=size)
