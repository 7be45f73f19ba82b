"""The CD index of Funk and Owen-Smith over a citation graph with exact dates
(docs/index-dimensions.md#d-disruptiveness).

For a focal paper f dated t_f, the candidates are the works v dated t_f < t_v (<= t_f + window) that cite f or
cite one of f's references. n_i cite f only, n_j cite f and a reference, n_k cite a reference only, and
CD = (n_i - n_j) / (n_i + n_j + n_k). These are the semantics of the ``cdindex`` package (russellfunk/cdindex),
with one deliberate difference (docs/deviations.md#cd-index): CD is null when f has no citer in the window, where
``cdindex`` returns 0 (or NaN when there is no candidate at all).

``cdindex`` keeps each focal paper's candidates in a list it scans linearly, so it is quadratic in the number of
candidates. Here a compiled kernel (:mod:`scitaste_hf.index.cd_kernel`) walks each focal paper's
focal -> reference -> citer paths once: every work's citers are stored in date order, so two binary searches
bound the citers inside the window, and one stamp per work tells a candidate already counted for this focal paper.
Numba compiles the kernel on the first call of :meth:`CitationGraph.cd` (or :func:`compile_kernel`) and caches it
on disk.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import sparse

#: Time stamp of a work whose date is unknown: earlier than any focal paper, so never a candidate.
UNDATED = np.iinfo(np.int64).min
_LATEST = np.iinfo(np.int64).max


@dataclass(frozen=True)
class CDResult:
    """Per focal paper: CD (NaN when there is no citer in the window) and the three counts.

    ``n_i`` is also the number of disruptive citations: citers that cite the paper but none of its references.
    """

    cd: np.ndarray
    n_i: np.ndarray
    n_j: np.ndarray
    n_k: np.ndarray


def compile_kernel() -> bool:
    """Compile the counting kernel now (or load it from numba's on-disk cache) instead of on the first
    :meth:`CitationGraph.cd` call.

    Returns
    -------
    bool
        True when the compiled code came from the on-disk cache.
    """
    from scitaste_hf.index.cd_kernel import count_candidates

    empty = np.zeros(1, dtype=np.int64)
    graph = CitationGraph(empty[:0], empty[:0], empty)
    graph.cd(np.zeros(1, dtype=np.int64))
    return bool(sum(count_candidates.stats.cache_hits.values()))


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
        out = sparse.csr_matrix((np.ones(int(keep.sum()), dtype=np.int32), (citing[keep], cited[keep])),
                                shape=(n, n))
        out.sum_duplicates()
        out.data[:] = 1
        self.times = times
        #: citing -> cited, CSR with unit data.
        self.out = out
        # cited -> citing, with the citers' ranks in date order as columns: sorted rows list each work's citers
        # by date.
        by_date = np.argsort(times, kind="stable")
        rank = np.empty(n, dtype=np.int64)
        rank[by_date] = np.arange(n)
        citing_of = np.repeat(np.arange(n), np.diff(out.indptr))
        inc = sparse.csr_matrix((out.data, (out.indices, rank[citing_of])), shape=(n, n))
        inc.sort_indices()
        self._inc_ptr = inc.indptr
        self._citers = by_date[inc.indices].astype(out.indices.dtype)
        self._citer_times = times[self._citers]

    @property
    def n(self) -> int:
        """Number of works."""
        return self.times.size

    def cd(self, focal: np.ndarray, window: int | None = None) -> CDResult:
        """CD index and counts of each focal work.

        Parameters
        ----------
        focal : array-like of int, shape (q,)
            Work numbers of the focal papers; each must have a known time stamp.
        window : int, optional
            CD_t: only candidates with t_f < t_v <= t_f + window count. None counts all later works.

        Returns
        -------
        CDResult
        """
        focal = np.asarray(focal, dtype=np.int64).ravel()
        if focal.size and (focal.min() < 0 or focal.max() >= self.n):
            raise ValueError(f"focal works must be work numbers in 0..{self.n - 1}")
        if focal.size and np.any(self.times[focal] == UNDATED):
            raise ValueError("every focal work needs a time stamp")
        if window is not None and window < 0:
            raise ValueError(f"window must be >= 0, got {window}")
        window = None if window is None else min(int(window), _LATEST)
        after = self.times[focal]
        # t_f + window saturates at the largest time stamp instead of wrapping around.
        until = np.full(focal.size, _LATEST) if window is None else np.minimum(after, _LATEST - window) + window
        # Imported here, not at the top, so that importing the package (and `scitaste --help`) does not import
        # numba.
        from scitaste_hf.index.cd_kernel import count_candidates

        n_i, n_j, n_k = count_candidates(self.out.indptr, self.out.indices, self._inc_ptr, self._citers,
                                        self._citer_times, focal, after, until)
        citers = n_i + n_j
        total = citers + n_k
        cd = np.full(focal.size, np.nan)
        np.divide(n_i - n_j, total, out=cd, where=citers > 0)
        return CDResult(cd=cd, n_i=n_i, n_j=n_j, n_k=n_k)
