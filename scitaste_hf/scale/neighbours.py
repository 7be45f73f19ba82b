"""Nearest papers by cosine distance (dimension C's ``nn_distance`` and ``knn10_distance``): exact, or approximate
with an inverted-file index (FAISS ``IndexIVFFlat``) whose recall against exact search is measured on a sample.

Exact search is the in-memory engine's own (:func:`scitaste_hf.index.dimensions.nearest_distances`, so that both
engines give the same distances): linear memory, quadratic time (seconds at 10^4 papers, minutes at 10^5, hours
at 10^6). The recall of the approximate search is measured against a blocked float32 matrix product with
``argpartition``, which also gives the neighbours' rows.

The approximate search clusters the unit vectors by k-means into about 4 sqrt(N) lists and compares each paper
with the papers of the :data:`NPROBE` lists nearest to it, exactly. Graph indexes (HNSW, in usearch and in FAISS)
were tried first and rejected: on the simulated world's embeddings, which form tight clusters per sub-discipline,
they missed the true nearest paper for about 3.5% of papers at 10^5, some by a cosine distance of 0.4-0.5, where
this index misses it for 0.2%, by at most 0.01 (docs/scale.md#nearest-papers). Each paper asks for a few more
neighbours than it keeps and they are re-ranked by their float32 similarity, as in exact search.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: Below this many papers ``auto`` searches exactly.
EXACT_LIMIT = 50_000
#: Inverted lists per square root of the number of papers, lists probed per query, training points per list.
LISTS_PER_ROOT, NPROBE, TRAIN_PER_LIST = 4, 32, 40
#: Neighbours asked of the index beyond those kept, re-ranked exactly.
OVERFETCH = 4
#: Queries whose exact neighbours are computed to measure recall.
RECALL_SAMPLE = 1000
#: Bytes of similarities held at once by the exact search.
BLOCK_BYTES = 1 << 28
#: Vectors added to or searched in the index at a time (progress granularity).
BATCH = 8192


@dataclass(frozen=True)
class Neighbours:
    """Per paper (rows of the input): distance to the nearest other paper and mean distance to the k nearest;
    ``method`` says how they were found and ``recall`` what a sample measured (None for exact search)."""

    nn_distance: np.ndarray
    knn_distance: np.ndarray
    method: str
    recall: dict | None


def _top_k(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest similarities of each row, largest first, and their columns."""
    part = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    top = np.take_along_axis(sims, part, axis=1)
    order = np.argsort(-top, axis=1, kind="stable")
    return np.take_along_axis(top, order, axis=1), np.take_along_axis(part, order, axis=1)


def exact_search(unit: np.ndarray, k: int, queries: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Exact k nearest rows of ``unit`` (unit vectors) for each query row, the query itself excluded.

    Parameters
    ----------
    unit : ndarray of float32, shape (m, d)
    k : int
        1 <= k < m.
    queries : ndarray of int, optional
        Rows to search for; all when None.

    Returns
    -------
    (ndarray of float32, ndarray of int64), each shape (q, k)
        Similarities (largest first) and the neighbours' rows.
    """
    m = unit.shape[0]
    queries = np.arange(m) if queries is None else np.asarray(queries)
    block = max(1, min(4096, BLOCK_BYTES // (4 * m)))
    sims_out = np.empty((queries.size, k), dtype=np.float32)
    keys_out = np.empty((queries.size, k), dtype=np.int64)
    for s in range(0, queries.size, block):
        rows = queries[s:s + block]
        sims = unit[rows] @ unit.T
        # The query itself is not its own neighbour, even when another paper shares its vector.
        sims[np.arange(rows.size), rows] = -np.inf
        sims_out[s:s + rows.size], keys_out[s:s + rows.size] = _top_k(sims, k)
    return sims_out, keys_out


def _distances(sims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    dist = np.clip(1.0 - sims, 0.0, 2.0)
    return dist[:, 0].astype(np.float64), dist.mean(axis=1).astype(np.float64)


def approximate_search(unit: np.ndarray, k: int, threads: int = 0,
                       advance: Callable[[int], None] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Approximate k nearest rows of every row of ``unit`` through a FAISS inverted-file index, re-ranked by
    float32 similarity.

    Parameters
    ----------
    unit : ndarray of float32, shape (m, d)
    k : int
    threads : int
        Threads for FAISS (0: all cores).
    advance : callable, optional
        Called with the number of vectors added, then searched (2 m in all).

    Returns
    -------
    (ndarray of float32, ndarray of int64), each shape (m, k)
        Similarities (largest first; -inf where fewer than k were found) and the neighbours' rows (-1 there).
    """
    import faiss

    faiss.omp_set_num_threads(threads or os.cpu_count() or 1)
    m, d = unit.shape
    lists = max(1, min(m // TRAIN_PER_LIST, int(LISTS_PER_ROOT * np.sqrt(m))))
    index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, lists, faiss.METRIC_INNER_PRODUCT)
    train = np.random.default_rng(0).choice(m, size=min(m, TRAIN_PER_LIST * lists), replace=False)
    index.train(unit[np.sort(train)])
    for s in range(0, m, BATCH):
        e = min(m, s + BATCH)
        index.add(unit[s:e])
        if advance:
            advance(e - s)
    index.nprobe = min(NPROBE, lists)
    wanted = min(m, k + OVERFETCH)
    sims_out = np.empty((m, k), dtype=np.float32)
    keys_out = np.empty((m, k), dtype=np.int64)
    for s in range(0, m, BATCH):
        e = min(m, s + BATCH)
        keys = index.search(unit[s:e], wanted)[1]
        valid = keys >= 0
        keys = np.where(valid, keys, 0)
        sims = np.einsum("bd,bkd->bk", unit[s:e], unit[keys])
        sims[~valid | (keys == np.arange(s, e)[:, None])] = -np.inf
        top, cols = _top_k(sims, k)
        sims_out[s:e] = top
        keys_out[s:e] = np.where(np.isfinite(top), np.take_along_axis(keys, cols, axis=1), -1)
        if advance:
            advance(e - s)
    return sims_out, keys_out


def recall(unit: np.ndarray, keys: np.ndarray, sims: np.ndarray, sample: int = RECALL_SAMPLE,
           seed: int = 0) -> dict:
    """Recall of approximate neighbours against exact search on a random sample of queries.

    Returns
    -------
    dict
        ``sample`` (queries), ``recall_at_k`` (share of the exact k nearest found), ``recall_at_1`` (share of
        queries whose nearest was found) and the largest and mean absolute differences of the two distances.
    """
    m, k = keys.shape
    queries = np.sort(np.random.default_rng(seed).choice(m, size=min(sample, m), replace=False))
    exact_sims, exact_keys = exact_search(unit, k, queries)
    found = [len(set(a.tolist()) & set(b.tolist())) for a, b in zip(keys[queries], exact_keys)]
    nn_a, knn_a = _distances(sims[queries])
    nn_e, knn_e = _distances(exact_sims)
    return {"sample": int(queries.size), "k": int(k), "recall_at_k": float(np.mean(found) / k),
            "recall_at_1": float(np.mean(keys[queries, 0] == exact_keys[:, 0])),
            "nn_distance_max_abs_diff": float(np.max(np.abs(nn_a - nn_e))),
            "knn_distance_max_abs_diff": float(np.max(np.abs(knn_a - knn_e))),
            "knn_distance_mean_abs_diff": float(np.mean(np.abs(knn_a - knn_e)))}


def nearest_papers(unit: np.ndarray, k: int, method: str = "auto", threads: int = 0,
                   advance: Callable[[int], None] | None = None) -> Neighbours:
    """Distance to the nearest paper and mean distance to the k nearest, for each row of ``unit``.

    Parameters
    ----------
    unit : ndarray of float32, shape (m, d)
        The papers' unit vectors; m >= k + 1 >= 2.
    k : int
        Neighbours averaged.
    method : {"auto", "exact", "ann"}
        ``auto``: exact below :data:`EXACT_LIMIT` papers, approximate from there on.
    threads : int
        Threads for FAISS (0: all cores).
    advance : callable, optional
        Progress: exact search advances by m once done, approximate by 2 m as it goes.

    Returns
    -------
    Neighbours
    """
    m = unit.shape[0]
    chosen = ("exact" if m < EXACT_LIMIT else "ann") if method == "auto" else method
    if chosen == "exact":
        from scitaste_hf.index.dimensions import nearest_distances

        nn, knn = nearest_distances(unit, k)
        if advance:
            advance(m)
        return Neighbours(nn.astype(np.float64), knn.astype(np.float64), "exact", None)
    sims, keys = approximate_search(unit, k, threads=threads, advance=advance)
    nn, knn = _distances(sims)
    return Neighbours(nn, knn, "ann", recall(unit, keys, sims))
