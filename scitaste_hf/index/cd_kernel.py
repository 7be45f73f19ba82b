"""The compiled counting kernel of the CD index (:mod:`scitaste_hf.index.cd` imports it on first use, so that
importing the package does not import numba).

Numba caches the machine code on disk, beside this file or in the user's cache folder; where neither is writable
it refuses ``cache=True``, and the kernel is then compiled once per process instead.
"""

from __future__ import annotations

import numba
import numpy as np

#: Largest stamp base before the stamps restart from 0 (base + 2 must fit in int32).
STAMP_LIMIT = np.iinfo(np.int32).max - 2


def _jit(function):
    try:
        return numba.njit(cache=True, nogil=True)(function)
    except RuntimeError:
        return numba.njit(nogil=True)(function)


@_jit
def _after(values, lo, hi, t):
    # First position in the sorted values[lo:hi] holding a value > t.
    while lo < hi:
        mid = (lo + hi) >> 1
        if values[mid] <= t:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def count_candidates(out_ptr, out_idx, inc_ptr, citers, citer_times, focal, after, until):
    """n_i, n_j and n_k of each focal work, counting candidates v with ``after[q] < t_v <= until[q]``.

    ``out_ptr``/``out_idx`` is the citing -> cited CSR graph; ``inc_ptr``/``citers`` the cited -> citing one
    with each row in date order and ``citer_times`` the citers' time stamps.
    """
    # Stamps: base + 1 marks a work that cites the current focal paper, base + 2 one already counted through a
    # reference (in n_j or n_k); anything up to base is left over from an earlier focal paper, so the array is
    # never cleared. int32 stamps halve the memory that the random accesses touch, and the branch-free update
    # keeps the unpredictable three-way test out of the inner loop.
    n_i = np.zeros(focal.size, np.int64)
    n_j = np.zeros(focal.size, np.int64)
    n_k = np.zeros(focal.size, np.int64)
    stamp = np.zeros(inc_ptr.size - 1, np.int32)
    base = 0
    for q in range(focal.size):
        if base > STAMP_LIMIT:
            stamp[:] = 0
            base = 0
        cites_f, counted = base + 1, base + 2
        f = focal[q]
        citing_f = j = k = 0
        # Source -1 is f itself, then each of its references.
        for s in range(-1, out_ptr[f + 1] - out_ptr[f]):
            source = f if s < 0 else out_idx[out_ptr[f] + s]
            first = _after(citer_times, inc_ptr[source], inc_ptr[source + 1], after[q])
            stop = _after(citer_times, first, inc_ptr[source + 1], until[q])
            if s < 0:
                for e in range(first, stop):
                    stamp[citers[e]] = cites_f
                citing_f = stop - first
                continue
            for e in range(first, stop):
                v = citers[e]
                mark = stamp[v]
                j += mark == cites_f
                k += mark <= base
                stamp[v] = counted
        n_i[q], n_j[q], n_k[q] = citing_f - j, j, k
        base += 2
    return n_i, n_j, n_k
