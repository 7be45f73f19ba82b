"""Nearest papers by cosine distance (dimension C's ``nn_distance`` and ``knn10_distance``): exact, or approximate
with an inverted-file index (FAISS ``IndexIVFFlat`` over an ``IndexHNSWFlat`` coarse quantizer) whose recall
against exact search is measured on a sample.

Exact search is the in-memory engine's own (:func:`scitaste_hf.index.dimensions.nearest_distances`, so that both
engines give the same distances): linear memory, quadratic time (seconds at 10^4 papers, minutes at 10^5, hours
at 10^6). The recall of the approximate search is measured against a blocked float32 matrix product with
``argpartition``, which also gives the neighbours' rows.

The approximate search clusters the unit vectors into lists of about :data:`LIST_SIZE` papers and compares each
paper exactly with the papers of the :data:`NPROBE` lists nearest to it, so its work per paper does not grow with
the number of papers. What would grow is finding those lists among N / LIST_SIZE centroids, so the centroids are
searched through a graph (HNSW), and k-means is trained on a sample in two levels (about sqrt(lists) groups,
then lists within each group in proportion to its points). Graph indexes over the papers themselves (HNSW, in
usearch and in FAISS) were tried and rejected: on the simulated world's embeddings, which form tight clusters per
sub-discipline, they missed the true nearest paper for about 3.5% of papers at 10^5, some by a cosine distance of
0.4-0.5 (docs/scale.md#nearest-papers). Each paper asks for a few more neighbours than it keeps; these and the
candidates of its nearest ones (neighbours' neighbours, which recover most of what the probed lists missed) are
re-ranked by their float32 similarity, as in exact search.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: Below this many papers ``auto`` searches exactly.
EXACT_LIMIT = 50_000
#: Papers per inverted list, lists probed per query (64 lists of 64: about 4,000 papers compared per query).
LIST_SIZE, NPROBE = 64, 64
#: k-means: training points per list (a quarter of the papers; at least MIN_TRAIN in all), iterations.
TRAIN_PER_LIST, KMEANS_ITER, MIN_TRAIN = 16, 10, 256
#: The lists' coarse level: at most this many groups, trained on this many points a group (the part the Spark
#: engine's driver runs: at most 65,536 points at any number of papers).
COARSE_GROUPS, COARSE_POINTS = 1024, 64
#: The coarse quantizer's graph: links per centroid, candidates kept while searching it (at least NPROBE).
HNSW_LINKS, HNSW_EF = 32, 192
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


def distances(sims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """nn_distance and knn_distance (float64) from each row's similarities, largest first."""
    dist = np.clip(1.0 - sims, 0.0, 2.0)
    return dist[:, 0].astype(np.float64), dist.mean(axis=1).astype(np.float64)


def lists_for(m: int) -> int:
    """Inverted lists for ``m`` papers: about :data:`LIST_SIZE` papers a list."""
    return max(1, m // LIST_SIZE)


def groups_for(lists: int) -> int:
    """Groups of the lists' coarse level: about sqrt(lists), at most :data:`COARSE_GROUPS`."""
    return max(1, min(COARSE_GROUPS, int(np.sqrt(lists))))


def sample_fractions(m: int) -> tuple[float, float]:
    """The shares of ``m`` papers that train the lists (:data:`TRAIN_PER_LIST` a list, at least
    :data:`MIN_TRAIN` papers) and the coarse level (:data:`COARSE_POINTS` a group, a subset of the former): a
    paper is in each when its :func:`sample_hash` is below the share."""
    train = min(1.0, max(TRAIN_PER_LIST * lists_for(m), MIN_TRAIN) / m)
    return train, min(train, COARSE_POINTS * groups_for(lists_for(m)) / m)


def sample_hash(ids: np.ndarray, seed: int = 0) -> np.ndarray:
    """A uniform number in [0, 1) for each paper id (splitmix64 of the id and the seed): the training samples are
    the papers below a share, so that the Spark engine's executors choose the same papers as the DuckDB engine
    without a list of them."""
    golden = np.uint64(0x9E3779B97F4A7C15)
    with np.errstate(over="ignore"):
        z = np.asarray(ids).astype(np.uint64) + np.uint64(seed + 1) * golden
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) / 2.0**53


def _kmeans(points: np.ndarray, clusters: int, seed: int) -> np.ndarray:
    """Spherical k-means centroids of ``points`` (one thread: the same centroids in every process)."""
    import faiss

    faiss.omp_set_num_threads(1)
    # min_points_per_centroid=1: small training sets are deliberate here, not a mistake to warn about.
    km = faiss.Kmeans(points.shape[1], clusters, niter=KMEANS_ITER, spherical=True, seed=seed,
                      min_points_per_centroid=1, max_points_per_centroid=points.shape[0])
    km.train(np.ascontiguousarray(points, dtype=np.float32))
    return km.centroids


def coarse_centroids(points: np.ndarray, m: int, seed: int = 0) -> np.ndarray:
    """The coarse level of the lists' training for ``m`` papers: :func:`groups_for` groups trained on ``points``
    (the coarse sample, in id order): at most :data:`COARSE_GROUPS` x :data:`COARSE_POINTS` points, so this part,
    which the Spark engine runs on its driver, does not grow with the papers."""
    return _kmeans(points, max(1, min(points.shape[0], groups_for(lists_for(m)))), seed)


def group_of(points: np.ndarray, coarse: np.ndarray) -> np.ndarray:
    """Each point's group: its nearest coarse centroid by inner product (the lowest on a tie)."""
    import faiss

    faiss.omp_set_num_threads(1)
    index = faiss.IndexFlatIP(coarse.shape[1])
    index.add(np.ascontiguousarray(coarse, dtype=np.float32))
    return index.search(np.ascontiguousarray(points, dtype=np.float32), 1)[1][:, 0]


def fine_shares(sizes: np.ndarray, m: int) -> np.ndarray:
    """Lists per group, in proportion to the group's training points (at least one, at most its points; none for
    an empty group)."""
    sizes = np.asarray(sizes, dtype=np.int64)
    shares = np.maximum(1, np.rint(sizes * lists_for(m) / max(1, sizes.sum())).astype(np.int64))
    return np.where(sizes > 0, np.minimum(sizes, shares), 0)


def fine_centroids(points: np.ndarray, share: int, seed: int = 0) -> np.ndarray:
    """A group's lists: ``share`` k-means centroids of its training points (in id order); the Spark engine trains
    each group on an executor."""
    return _kmeans(points, share, seed)


def list_centroids(unit: np.ndarray, ids: np.ndarray, seed: int = 0) -> np.ndarray:
    """About :func:`lists_for` centroids for the papers ``unit`` (ids ascending), trained in two levels: the
    coarse groups on the coarse sample, then each group's training points into lists in proportion to them
    (:func:`sample_fractions`, :func:`coarse_centroids`, :func:`fine_shares`, :func:`fine_centroids`), groups in
    order. The cost of the coarse level is bounded; the fine level's grows as the sample times lists a group."""
    m = unit.shape[0]
    score = sample_hash(ids, seed)
    train, coarse = sample_fractions(m)
    sample = np.flatnonzero(score < train)
    top = coarse_centroids(unit[np.flatnonzero(score < coarse)], m, seed)
    group = group_of(unit[sample], top)
    shares = fine_shares(np.bincount(group, minlength=top.shape[0]), m)
    out = [fine_centroids(unit[sample[group == g]], int(shares[g]), seed) for g in np.flatnonzero(shares)]
    return np.ascontiguousarray(np.vstack(out), dtype=np.float32)


def coarse_quantizer(centroids: np.ndarray):
    """The inverted lists' centroids (:func:`list_centroids`) in an HNSW graph searched with :data:`HNSW_EF`
    candidates.

    Built on one thread: HNSW's parallel insertion makes the graph, hence the lists probed, depend on thread
    timing.

    Returns
    -------
    faiss.IndexHNSWFlat
        Inner product; one centroid a list.
    """
    import faiss

    faiss.omp_set_num_threads(1)
    quantizer = faiss.IndexHNSWFlat(centroids.shape[1], HNSW_LINKS, faiss.METRIC_INNER_PRODUCT)
    quantizer.add(centroids)
    quantizer.hnsw.efSearch = HNSW_EF
    return quantizer


def ivf_index(unit: np.ndarray, threads: int = 0, seed: int = 0, ids: np.ndarray | None = None):
    """A trained, empty FAISS inverted-file index for ``unit`` (inner product): lists of about
    :data:`LIST_SIZE` papers, k-means centroids (:func:`list_centroids`) found through an HNSW graph
    (:func:`coarse_quantizer`), :data:`NPROBE` lists probed.

    Parameters
    ----------
    unit : ndarray of float32, shape (m, d)
    threads : int
        Threads FAISS uses afterwards, to add and search (0: all cores).
    seed : int
        Seeds the training samples and k-means; the index depends on nothing else.
    ids : ndarray of int, optional
        The papers' ids (ascending), which choose the training samples (:func:`sample_hash`); the rows when None.

    Returns
    -------
    faiss.IndexIVFFlat
    """
    import faiss

    m, d = unit.shape
    quantizer = coarse_quantizer(list_centroids(unit, np.arange(m) if ids is None else ids, seed))
    faiss.omp_set_num_threads(threads or os.cpu_count() or 1)
    index = faiss.IndexIVFFlat(quantizer, d, quantizer.ntotal, faiss.METRIC_INNER_PRODUCT)
    index.nprobe = min(NPROBE, quantizer.ntotal)
    return index


def approximate_search(unit: np.ndarray, k: int, threads: int = 0, seed: int = 0,
                       advance: Callable[[int], None] | None = None, ids: np.ndarray | None = None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Approximate k nearest rows of every row of ``unit`` through :func:`ivf_index`, widened by neighbours'
    neighbours and re-ranked by float32 similarity; the same for any number of threads.

    Parameters
    ----------
    unit : ndarray of float32, shape (m, d)
    k : int
    threads : int
        Threads for FAISS (0: all cores).
    seed : int
        The index's seed (:func:`ivf_index`).
    advance : callable, optional
        Called with the number of vectors added, searched, then refined (3 m in all).
    ids : ndarray of int, optional
        The papers' ids (:func:`ivf_index`).

    Returns
    -------
    (ndarray of float32, ndarray of int64), each shape (m, k)
        Similarities (largest first; -inf where fewer than k were found) and the neighbours' rows (-1 there).
    """
    import faiss

    m = unit.shape[0]
    index = ivf_index(unit, threads, seed, ids)
    for s in range(0, m, BATCH):
        e = min(m, s + BATCH)
        index.add(unit[s:e])
        if advance:
            advance(e - s)
    # Queries in list order: consecutive queries then probe mostly the same lists, which stay in the cache
    # (the scan reads about 3 MB of vectors a query, so memory, not arithmetic, bounds it).
    invlists = index.invlists
    order = np.concatenate([faiss.rev_swig_ptr(invlists.get_ids(j), invlists.list_size(j)).copy()
                            for j in range(index.nlist) if invlists.list_size(j)])
    found = np.empty((m, min(m, k + OVERFETCH)), dtype=np.int64)
    for s in range(0, m, BATCH):
        rows = order[s:s + BATCH]
        found[rows] = index.search(unit[rows], found.shape[1])[1]
        if advance:
            advance(rows.size)
    return _refine(unit, found, k, advance)


def _refine(unit: np.ndarray, found: np.ndarray, k: int, advance: Callable[[int], None] | None
            ) -> tuple[np.ndarray, np.ndarray]:
    """The k nearest among each row's candidates and its first k candidates' candidates (-1: none), by float32
    similarity. A neighbour's neighbours recover most of what the lists probed missed, at a cost that does not
    grow with the number of papers."""
    m = unit.shape[0]
    sims_out = np.empty((m, k), dtype=np.float32)
    keys_out = np.empty((m, k), dtype=np.int64)
    for s in range(0, m, BATCH // 8):
        e = min(m, s + BATCH // 8)
        own = found[s:e]
        second = found[np.where(own[:, :k] >= 0, own[:, :k], 0)].reshape(e - s, -1)
        second[np.repeat(own[:, :k] < 0, found.shape[1], axis=1)] = -1
        keys = np.sort(np.concatenate([own, second], axis=1), axis=1)
        bad = (keys < 0) | (keys == np.arange(s, e)[:, None])
        bad[:, 1:] |= keys[:, 1:] == keys[:, :-1]
        keys[bad] = 0
        sims = np.einsum("bd,bkd->bk", unit[s:e], unit[keys])
        sims[bad] = -np.inf
        top, cols = _top_k(sims, k)
        sims_out[s:e] = top
        keys_out[s:e] = np.where(np.isfinite(top), np.take_along_axis(keys, cols, axis=1), -1)
        if advance:
            advance(e - s)
    return sims_out, keys_out


def recall_queries(m: int, sample: int = RECALL_SAMPLE, seed: int = 0) -> np.ndarray:
    """The rows (sorted) of ``m`` papers on which :func:`recall` compares with exact search."""
    return np.sort(np.random.default_rng(seed).choice(m, size=min(sample, m), replace=False))


def recall_figures(keys: np.ndarray, sims: np.ndarray, exact_keys: np.ndarray, exact_sims: np.ndarray) -> dict:
    """:func:`recall`'s figures from the sampled queries' approximate and exact neighbours (rows of the same
    queries, each shape (q, k), any row numbering both share)."""
    k = keys.shape[1]
    found = [len(set(a.tolist()) & set(b.tolist())) for a, b in zip(keys, exact_keys)]
    nn_a, knn_a = distances(sims)
    nn_e, knn_e = distances(exact_sims)
    return {"sample": int(keys.shape[0]), "k": int(k), "recall_at_k": float(np.mean(found) / k),
            "recall_at_1": float(np.mean(keys[:, 0] == exact_keys[:, 0])),
            "nn_distance_max_abs_diff": float(np.max(np.abs(nn_a - nn_e))),
            "knn_distance_max_abs_diff": float(np.max(np.abs(knn_a - knn_e))),
            "knn_distance_mean_abs_diff": float(np.mean(np.abs(knn_a - knn_e)))}


def recall(unit: np.ndarray, keys: np.ndarray, sims: np.ndarray, sample: int = RECALL_SAMPLE,
           seed: int = 0) -> dict:
    """Recall of approximate neighbours against exact search on a random sample of queries
    (:func:`recall_queries`).

    Returns
    -------
    dict
        ``sample`` (queries), ``recall_at_k`` (share of the exact k nearest found), ``recall_at_1`` (share of
        queries whose nearest was found) and the largest and mean absolute differences of the two distances.
    """
    queries = recall_queries(keys.shape[0], sample, seed)
    exact_sims, exact_keys = exact_search(unit, keys.shape[1], queries)
    return recall_figures(keys[queries], sims[queries], exact_keys, exact_sims)


def nearest_papers(unit: np.ndarray, k: int, method: str = "auto", threads: int = 0,
                   advance: Callable[[int], None] | None = None, ids: np.ndarray | None = None) -> Neighbours:
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
        Progress: exact search advances by m once done, approximate by 3 m as it goes.
    ids : ndarray of int, optional
        The papers' ids, ascending, which choose the approximate index's training samples (:func:`ivf_index`).

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
    sims, keys = approximate_search(unit, k, threads=threads, advance=advance, ids=ids)
    nn, knn = distances(sims)
    return Neighbours(nn, knn, "ann", recall(unit, keys, sims))
