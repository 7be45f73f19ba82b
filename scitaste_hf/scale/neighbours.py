"""Nearest papers by cosine distance (dimension C's ``nn_distance`` and ``knn10_distance``): exact, or approximate
with an inverted-file index (FAISS ``IndexIVFFlat``, its lists chosen by a two-level quantizer of our own) whose
recall against exact search is measured on a sample.

Exact search is the in-memory engine's own (:func:`scitaste_hf.index.dimensions.nearest_distances`, so that both
engines give the same distances): linear memory, quadratic time (seconds at 10^4 papers, minutes at 10^5, hours
at 10^6). The recall of the approximate search is measured against a blocked float32 matrix product with
``argpartition``, which also gives the neighbours' rows.

The approximate search clusters the unit vectors into lists of about :data:`LIST_SIZE` papers and compares each
paper exactly with the papers of the :data:`NPROBE` lists nearest to it, so its work per paper does not grow with
the number of papers. k-means is trained on a sample in two levels (about sqrt(lists) groups, at most
:data:`COARSE_GROUPS`, then lists within each group in proportion to its points), and a paper's lists are found
through the same two levels (:class:`Lists`): its :data:`PROBE_GROUPS` nearest groups, then the nearest lists among
theirs, by exact similarity. So no structure over all the lists is needed in one place: the Spark engine keeps
each group's lists on the executor that searches them (an HNSW graph of every list's centroid, the quantizer
before, grew as N^1.26 on one thread and was broadcast whole). Graph indexes over the papers themselves (HNSW, in
usearch and in FAISS) were tried and rejected: on the simulated world's embeddings, which form tight clusters per
sub-discipline, they missed the true nearest paper for about 3.5% of papers at 10^5, some by a cosine distance of
0.4-0.5 (docs/scale.md#nearest-papers). Each paper asks for a few more neighbours than it keeps; these and the
candidates of its nearest ones (neighbours' neighbours, which recover most of what the probed lists missed) are
re-ranked by their float32 similarity, as in exact search.

The similarities that rank a paper's lists are computed with ``numpy.einsum`` (no BLAS), whose value for a pair
does not depend on the shape of the batch it is computed in (a matrix product only preselects candidates), and
ranking is by similarity, then the lower number. So the Spark engine's tasks, each holding one group's lists,
choose exactly the lists the DuckDB engine chooses.
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
#: A paper's NPROBE lists are chosen among the lists of its nearest groups: at least PROBE_GROUPS groups, and
#: enough for about PROBE_LISTS lists (so the lists a paper compares with are at least 8 x NPROBE, and about
#: 8 x lists / COARSE_GROUPS once the groups are at their bound).
PROBE_GROUPS, PROBE_LISTS = 8, 8 * NPROBE
#: A group's lists kept from the matrix product for each paper, as a multiple of the lists it probes, before their
#: similarities are computed again exactly, and the group size (in those candidates) from which this pays: below
#: it, comparing with every list costs less than gathering the candidates (:func:`group_hits`).
RERANK, PRESELECT = 2, 8
#: Neighbours asked of the index beyond those kept, re-ranked exactly.
OVERFETCH = 4
#: Queries whose exact neighbours are computed to measure recall.
RECALL_SAMPLE = 1000
#: Bytes of similarities held at once by the exact search.
BLOCK_BYTES = 1 << 28
#: Vectors added to or searched in the index at a time (progress granularity).
BATCH = 8192


@dataclass(frozen=True)
class Lists:
    """The inverted lists' centroids in their two levels (:func:`list_centroids`), and the search for a paper's
    lists through them (:meth:`probes`)."""

    #: The coarse groups' centroids, shape (groups, d).
    coarse: np.ndarray
    #: The lists' centroids, group by group, shape (lists, d).
    centroids: np.ndarray
    #: Group g's lists are rows ``first[g]:first[g + 1]`` of :attr:`centroids`, shape (groups + 1,).
    first: np.ndarray

    @property
    def nlist(self) -> int:
        """The number of lists."""
        return int(self.first[-1])

    def probes(self, x: np.ndarray, nprobe: int) -> np.ndarray:
        """The ``nprobe`` nearest lists of each row of ``x`` among the lists of its :func:`probed_groups`, nearest
        first (ties: the lower list); -1 where those groups hold fewer lists. Each group's part is
        :func:`group_hits`, as a Spark task computes it.

        Parameters
        ----------
        x : ndarray of float32, shape (n, d)
        nprobe : int

        Returns
        -------
        ndarray of int64, shape (n, nprobe)
        """
        groups = probed_groups(x, self.coarse, np.diff(self.first))
        n, probed = groups.shape
        sims = np.full((n, probed, nprobe), -np.inf, dtype=np.float32)
        found = np.full((n, probed, nprobe), -1, dtype=np.int64)
        for g in np.unique(groups):
            rows, slot = np.nonzero(groups == g)
            lo, hi = self.first[g], self.first[g + 1]
            sims[rows, slot], found[rows, slot] = group_hits(x[rows], self.centroids[lo:hi], int(lo), nprobe)
        sims, found = sims.reshape(n, -1), found.reshape(n, -1)
        # Nearest first, ties to the lower list: the order Spark's array_sort gives the (-similarity, list) hits.
        order = np.lexsort((found, -sims), axis=1)[:, :nprobe]
        return np.take_along_axis(found, order, axis=1)


def ranked(sims: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k largest similarities of each row, largest first, ties in column order, and their columns (padded with
    -inf and column 0 where a row has fewer than k columns). Which of similarities equal to the k-th is kept
    depends on the row's values only, so two computations of the same row agree."""
    if k < sims.shape[1]:
        cols = np.sort(np.argpartition(-sims, k - 1, axis=1)[:, :k], axis=1)
    else:
        cols = np.broadcast_to(np.arange(sims.shape[1]), sims.shape)
    top = np.take_along_axis(sims, cols, axis=1)
    order = np.argsort(-top, axis=1, kind="stable")
    top, cols = np.take_along_axis(top, order, axis=1), np.take_along_axis(cols, order, axis=1)
    if cols.shape[1] < k:
        pad = k - cols.shape[1]
        top = np.pad(top, ((0, 0), (0, pad)), constant_values=-np.inf)
        cols = np.pad(cols, ((0, 0), (0, pad)))
    return top, cols


def probed_groups(x: np.ndarray, coarse: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Each row's nearest groups that hold lists (``sizes`` > 0, lists per group), as group numbers in ascending
    order: :data:`PROBE_GROUPS` of them, or as many as hold :data:`PROBE_LISTS` lists on average, or all."""
    sims = np.einsum("bd,gd->bg", x, coarse)
    sims[:, np.asarray(sizes) == 0] = -np.inf
    return np.sort(ranked(sims, groups_probed(sizes))[1], axis=1)


def groups_probed(sizes: np.ndarray) -> int:
    """How many groups :func:`probed_groups` gives each paper, from the lists of each group."""
    held = int(np.count_nonzero(sizes))
    return min(held, max(PROBE_GROUPS, -(-PROBE_LISTS * held // max(1, int(np.sum(sizes))))))


def group_hits(x: np.ndarray, centroids: np.ndarray, first: int, nprobe: int) -> tuple[np.ndarray, np.ndarray]:
    """One group's part of :meth:`Lists.probes`: the ``nprobe`` nearest of its lists (``centroids``, numbered from
    ``first``) to each row of ``x``: similarities and list numbers, nearest first, ties to the lower list (-inf and
    -1 beyond its lists).

    The similarities are ``einsum``'s, whose value for a pair does not depend on which other papers share the
    batch. A group of more than :data:`PRESELECT` x :data:`RERANK` x ``nprobe`` lists is first narrowed to
    :data:`RERANK` x ``nprobe`` candidates a paper by a matrix product (BLAS, faster, but its last bits depend on
    the batch's shape), whose similarities are then computed again by ``einsum``."""
    lists = centroids.shape[0]
    keep = lists if lists <= PRESELECT * RERANK * nprobe else RERANK * nprobe
    out_sims = np.empty((x.shape[0], nprobe), dtype=np.float32)
    out_lists = np.empty((x.shape[0], nprobe), dtype=np.int64)
    step = max(1, BLOCK_BYTES // (4 * max(1, keep * x.shape[1] + lists)))
    for s in range(0, x.shape[0], step):
        rows = x[s:s + step]
        if keep < lists:
            cand = np.sort(np.argpartition(-(rows @ centroids.T), keep - 1, axis=1)[:, :keep], axis=1)
            sims = np.einsum("bd,bkd->bk", rows, centroids[cand])
        else:
            cand = np.broadcast_to(np.arange(lists), (rows.shape[0], lists))
            sims = np.einsum("bd,ld->bl", rows, centroids)
        top, cols = ranked(sims, nprobe)
        out_sims[s:s + step] = top
        out_lists[s:s + step] = np.where(np.isfinite(top), first + np.take_along_axis(cand, cols, axis=1), -1)
    return out_sims, out_lists


@dataclass(frozen=True)
class Neighbours:
    """Per paper (rows of the input): distance to the nearest other paper and mean distance to the k nearest;
    ``method`` says how they were found and ``recall`` what a sample measured (None for exact search)."""

    nn_distance: np.ndarray
    knn_distance: np.ndarray
    method: str
    recall: dict | None


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
        sims_out[s:s + rows.size], keys_out[s:s + rows.size] = ranked(sims, k)
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


def list_centroids(unit: np.ndarray, ids: np.ndarray, seed: int = 0) -> Lists:
    """About :func:`lists_for` lists for the papers ``unit`` (ids ascending), trained in two levels: the
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
    return Lists(top, np.ascontiguousarray(np.vstack(out), dtype=np.float32), list_offsets(shares))


def list_offsets(shares: np.ndarray) -> np.ndarray:
    """Each group's first list number (and the number of lists last), from the lists per group."""
    return np.concatenate([[0], np.cumsum(shares)]).astype(np.int64)


def ivf_index(unit: np.ndarray, threads: int = 0, seed: int = 0, ids: np.ndarray | None = None):
    """A trained, empty FAISS inverted-file index for ``unit`` (inner product) and its lists: lists of about
    :data:`LIST_SIZE` papers, k-means centroids in two levels (:func:`list_centroids`), :data:`NPROBE` lists probed,
    each paper's lists found by :meth:`Lists.probes` (FAISS's quantizer, a flat index of the centroids, is not
    searched: papers are added and searched with their lists given).

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
    (faiss.IndexIVFFlat, Lists)
    """
    import faiss

    m, d = unit.shape
    lists = list_centroids(unit, np.arange(m) if ids is None else ids, seed)
    quantizer = faiss.IndexFlatIP(d)
    quantizer.add(lists.centroids)
    faiss.omp_set_num_threads(threads or os.cpu_count() or 1)
    index = faiss.IndexIVFFlat(quantizer, d, lists.nlist, faiss.METRIC_INNER_PRODUCT)
    index.nprobe = min(NPROBE, lists.nlist)
    return index, lists


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
    from faiss.contrib.ivf_tools import add_preassigned, search_preassigned

    m = unit.shape[0]
    index, lists = ivf_index(unit, threads, seed, ids)
    probes = np.empty((m, index.nprobe), dtype=np.int32)
    for s in range(0, m, BATCH):
        e = min(m, s + BATCH)
        probes[s:e] = lists.probes(unit[s:e], index.nprobe)
        # A paper's own list is its nearest probed one, as FAISS's inverted file assigns it.
        add_preassigned(index, unit[s:e], probes[s:e, 0].astype(np.int64))
        if advance:
            advance(e - s)
    # Queries in list order: consecutive queries then probe mostly the same lists, which stay in the cache
    # (the scan reads about 3 MB of vectors a query, so memory, not arithmetic, bounds it).
    order = np.argsort(probes[:, 0], kind="stable")
    found = np.empty((m, min(m, k + OVERFETCH)), dtype=np.int64)
    for s in range(0, m, BATCH):
        rows = order[s:s + BATCH]
        found[rows] = search_preassigned(index, unit[rows], found.shape[1], probes[rows].astype(np.int64))[1]
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
        top, cols = ranked(sims, k)
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
