"""Embedding and nearest papers as Spark jobs (docs/scale.md#spark): the functions the executors run, and the
driver's side of each job.

Embedding: the texts in work order, each partition embedded with the run's embedder, which the driver loads once
and broadcasts with its weights; the rows go through :func:`scitaste_hf.scale.duck.embed_rows`, as in the DuckDB
engine, so the vectors are the same.

Nearest papers (the approximate search of :mod:`scitaste_hf.scale.neighbours`, spread over the executors):

1. the lists' centroids, trained as the DuckDB engine trains them
   (:func:`~scitaste_hf.scale.neighbours.list_centroids`), in two levels: the executors choose the training samples
   by a hash of each paper's id (``train``); the driver trains the coarse groups on the coarse sample (at most
   65,536 papers at any size: :func:`~scitaste_hf.scale.neighbours.coarse_centroids`) and broadcasts them; the
   executors put each training paper in its group (``group``), then train each group's lists (``fine``), one group
   a task, and keep them where they are (a Parquet stage of one row a group): the driver never holds the lists;
2. ``assign``: each paper's :data:`~scitaste_hf.scale.neighbours.NPROBE` nearest lists, found as the DuckDB engine
   finds them (:meth:`~scitaste_hf.scale.neighbours.Lists.probes`): each paper's nearest groups against the
   broadcast coarse centroids (``probe_groups``), then, grouped by group, the group's lists against the papers
   that probe it (``probe``, a chunk of at most :data:`PROBE_QUERIES` papers a task), and the nearest over the
   groups; the first is its own list (FAISS's inverted file assigns a vector so);
3. ``scan``: grouped by list, each list's papers against the papers that probe it, exact float32 similarities,
   the best ``k + OVERFETCH`` of each query per list, then the best of each query over its lists: FAISS's
   inverted-file search, one list a group;
4. ``refine``: the neighbours' neighbours (the candidates of a paper's first k), as in the DuckDB engine, with
   their exact similarity; a candidate in a list the paper probed is left out, because the scan compared it
   already and kept better ones, so only the few from other lists are compared;
5. the recall: the exact neighbours of :data:`~scitaste_hf.scale.neighbours.RECALL_SAMPLE` papers, each executor
   searching its partitions for the broadcast sample, against what the search found for them.

Vectors travel as float32 bytes (``BINARY``). The executors need scitaste-hf and its embedder's package
installed (a wheel of this checkout, ``pip wheel --no-deps .``, installed on each); the Python of a local session is
the driver's.
"""

from __future__ import annotations

from contextlib import contextmanager
from functools import partial

import numpy as np
import pyarrow as pa

from scitaste_hf.errors import ScitasteError

#: A vector table's Spark schema: the work's number and its unit vector as float32 bytes.
VECTOR_SCHEMA = "w BIGINT, v BINARY"
#: Lists per Arrow batch of the scan: a list's row holds every query probing it (about NPROBE x LIST_SIZE
#: vectors, 4 MB at 256 dimensions).
SCAN_LISTS_PER_BATCH = 8
#: A search hit as Spark sorts it: negated similarity first, so ``array_sort`` puts the nearest first (ties: the
#: lower work number); and a list of hits as Arrow holds it.
HIT = "STRUCT<s: FLOAT, c: BIGINT>"
HITS = pa.list_(pa.struct([("s", pa.float32()), ("c", pa.int64())]))

#: Papers of one group's lists compared in one task of the assignment (a chunk of the papers probing the group).
PROBE_QUERIES = 4096


def matrix(column) -> np.ndarray:
    """The rows of a BINARY column of equal-length float32 vectors as an (n, d) array (a view of its buffer)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n = len(column)
    offsets = np.frombuffer(column.buffers()[1], dtype=np.int32)[column.offset:column.offset + n + 1]
    if n == 0:
        return np.zeros((0, 0), dtype=np.float32)
    data = np.frombuffer(column.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
    return data.view(np.float32).reshape(n, -1)


def binary(unit: np.ndarray) -> pa.Array:
    """Rows of float32 vectors as a BINARY array (:func:`matrix` reads it back)."""
    unit = np.ascontiguousarray(unit, dtype=np.float32)
    n, width = unit.shape[0], unit.shape[1] * 4 if unit.ndim == 2 else 0
    offsets = np.arange(n + 1, dtype=np.int32) * width
    return pa.Array.from_buffers(pa.binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(unit.tobytes())])


def _hits(sims: np.ndarray, keys: np.ndarray) -> pa.Array:
    """Each row's hits (similarity, work) as a list of :data:`HIT`, dropping those that are -inf (none)."""
    keep = np.isfinite(sims)
    offsets = np.concatenate([[0], np.cumsum(keep.sum(axis=1))]).astype(np.int32)
    items = pa.StructArray.from_arrays([pa.array(-sims[keep], pa.float32()), pa.array(keys[keep], pa.int64())],
                                       fields=list(HITS.value_type))
    return pa.ListArray.from_arrays(pa.array(offsets), items, type=HITS)


def _hit_lists(column) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A list-of-:data:`HIT` column as (offsets, similarities, works)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    offsets = column.offsets.to_numpy()
    items = column.values
    return (offsets - offsets[0], -items.field("s").to_numpy(zero_copy_only=False)[offsets[0]:offsets[-1]],
            items.field("c").to_numpy(zero_copy_only=False)[offsets[0]:offsets[-1]])


# --- run on the executors ---

def embed_batches(batches, embedder):
    """mapInArrow: each batch of the ``texts`` table to (w, v) with the broadcast ``embedder``."""
    from scitaste_hf.scale.duck import embed_rows

    model = embedder.value
    for batch in batches:
        w, unit = embed_rows(model, batch)
        yield pa.RecordBatch.from_arrays([pa.array(w, pa.int64()), binary(unit)], names=["w", "v"])


def train_batches(batches, seed: int, train: float, coarse: float):
    """mapInArrow: (w, v) to the papers in the training sample, (w, v, coarse): whether each is in the coarse sample
    too (:func:`scitaste_hf.scale.neighbours.sample_hash` below each share)."""
    from scitaste_hf.scale.neighbours import sample_hash

    for batch in batches:
        score = sample_hash(batch.column("w").to_numpy(), seed)
        keep = score < train
        picked = batch.filter(pa.array(keep))
        yield pa.RecordBatch.from_arrays([picked.column("w"), picked.column("v"), pa.array(score[keep] < coarse)],
                                         names=["w", "v", "coarse"])


def group_batches(batches, coarse):
    """mapInArrow: (w, v) of training papers to (g, w, v), g the group of the broadcast coarse centroids."""
    from scitaste_hf.scale.neighbours import group_of

    for batch in batches:
        x = matrix(batch.column("v"))
        g = group_of(x, coarse.value) if len(x) else np.zeros(0, np.int64)
        yield pa.RecordBatch.from_arrays([pa.array(g, pa.int64()), batch.column("w"), batch.column("v")],
                                         names=["g", "w", "v"])


def fine_batches(batches, shares, seed: int):
    """mapInArrow: a group's training papers in id order (g, vs) to its lists' centroids (g, c: float32 bytes) by
    :func:`scitaste_hf.scale.neighbours.fine_centroids`, ``shares`` (broadcast) lists for group g."""
    from scitaste_hf.scale.neighbours import fine_centroids

    for batch in batches:
        out = []
        for j in range(batch.num_rows):
            g = batch.column("g")[j].as_py()
            out.append(fine_centroids(matrix(batch.column("vs")[j].values), int(shares.value[g]), seed).tobytes())
        yield pa.RecordBatch.from_arrays([batch.column("g"), pa.array(out, pa.binary())], names=["g", "c"])


def probe_group_batches(batches, coarse, sizes):
    """mapInArrow: (w, v) to (g, w, v), one row for each group the paper's lists are chosen from
    (:func:`scitaste_hf.scale.neighbours.probed_groups` against the broadcast coarse centroids and lists a group)."""
    from scitaste_hf.scale.neighbours import probed_groups

    for batch in batches:
        x = matrix(batch.column("v"))
        if not len(x):
            continue
        groups = probed_groups(x, coarse.value, sizes.value)
        take = pa.array(np.repeat(np.arange(len(x)), groups.shape[1]))
        yield pa.RecordBatch.from_arrays([pa.array(groups.ravel(), pa.int64()), batch.column("w").take(take),
                                          batch.column("v").take(take)], names=["g", "w", "v"])


def probe_batches(batches, first, nprobe: int):
    """mapInArrow: one row per group and chunk (the group's lists ``c``, the papers probing it ``qs``/``qvs``) to one
    row per paper: its ``nprobe`` nearest lists of the group (:func:`scitaste_hf.scale.neighbours.group_hits`,
    ``first`` broadcast: each group's first list number), as hits."""
    from scitaste_hf.scale.neighbours import group_hits

    for batch in batches:
        out_q, out_hits = [], []
        for j in range(batch.num_rows):
            queries = matrix(batch.column("qvs")[j].values)
            lists = np.frombuffer(batch.column("c")[j].as_py(), dtype=np.float32).reshape(-1, queries.shape[1])
            g = batch.column("g")[j].as_py()
            out_q.append(batch.column("qs")[j].values.to_numpy())
            out_hits.append(_hits(*group_hits(queries, lists, int(first.value[g]), nprobe)))
        q = np.concatenate(out_q) if out_q else np.zeros(0, np.int64)
        hits = pa.concat_arrays(out_hits) if out_hits else pa.array([], HITS)
        yield pa.RecordBatch.from_arrays([pa.array(q, pa.int64()), hits], names=["q", "hits"])


def scan_batches(batches, keep: int):
    """mapInArrow: one row per list (its papers ``ws``/``vs``, the queries probing it ``qs``/``qvs``) to one row
    per query and list: the query's best ``keep`` papers of that list by exact float32 similarity."""
    from scitaste_hf.scale.neighbours import ranked

    for batch in batches:
        out_q, out_hits = [], []
        for j in range(batch.num_rows):
            ws = batch.column("ws")[j].values.to_numpy()
            members = matrix(batch.column("vs")[j].values)
            qs = batch.column("qs")[j].values.to_numpy()
            queries = matrix(batch.column("qvs")[j].values)
            sims, cols = ranked(queries @ members.T, min(keep, ws.size))
            out_q.append(qs)
            out_hits.append(_hits(sims, ws[cols]))
        q = np.concatenate(out_q) if out_q else np.zeros(0, np.int64)
        hits = pa.concat_arrays(out_hits) if out_hits else pa.array([], HITS)
        yield pa.RecordBatch.from_arrays([pa.array(q, pa.int64()), hits], names=["q", "hits"])


def pair_batches(batches):
    """mapInArrow: (q, c, qv, cv) to (q, c, s), s the negated float32 similarity."""
    for batch in batches:
        sims = np.einsum("bd,bd->b", matrix(batch.column("qv")), matrix(batch.column("cv")))
        yield pa.RecordBatch.from_arrays([batch.column("q"), batch.column("c"), pa.array(-sims, pa.float32())],
                                         names=["q", "c", "s"])


def final_batches(batches, k: int):
    """mapInArrow: a query's scan hits and its extra candidates (may be null) to its k nearest other papers:
    (w, nn_distance, knn_distance, keys, sims), the distances by :func:`scitaste_hf.scale.neighbours.distances`."""
    from scitaste_hf.scale.neighbours import distances, ranked

    for batch in batches:
        q = batch.column("q").to_numpy()
        own_off, own_s, own_c = _hit_lists(batch.column("own"))
        ex_off, ex_s, ex_c = _hit_lists(batch.column("extra"))
        width = max(k, int(np.max(np.diff(own_off) + np.diff(ex_off), initial=0)))
        sims = np.full((q.size, width), -np.inf, dtype=np.float32)
        keys = np.full((q.size, width), -1, dtype=np.int64)
        for i in range(q.size):
            c = np.concatenate([own_c[own_off[i]:own_off[i + 1]], ex_c[ex_off[i]:ex_off[i + 1]]])
            s = np.concatenate([own_s[own_off[i]:own_off[i + 1]], ex_s[ex_off[i]:ex_off[i + 1]]])
            s[c == q[i]] = -np.inf  # the paper itself is no neighbour
            sims[i, :c.size], keys[i, :c.size] = s, c
        top, cols = ranked(sims, k)
        found = np.where(np.isfinite(top), np.take_along_axis(keys, cols, axis=1), -1)
        nn, knn = distances(top)
        yield pa.RecordBatch.from_arrays(
            [pa.array(q, pa.int64()), pa.array(nn), pa.array(knn),
             pa.FixedSizeListArray.from_arrays(pa.array(found.ravel()), k).cast(pa.list_(pa.int64())),
             pa.FixedSizeListArray.from_arrays(pa.array(top.ravel()), k).cast(pa.list_(pa.float32()))],
            names=["w", "nn_distance", "knn_distance", "keys", "sims"])


def exact_batches(batches, sample, k: int):
    """mapInArrow: each partition's k nearest papers to each broadcast sample query (itself excluded), as rows
    (i, hits) for the sample's i-th query."""
    from scitaste_hf.scale.neighbours import ranked

    ws, queries = sample.value
    for batch in batches:
        w = batch.column("w").to_numpy()
        if not w.size:
            continue
        sims = queries @ matrix(batch.column("v")).T
        sims[ws[:, None] == w[None, :]] = -np.inf
        top, cols = ranked(sims, min(k, w.size))
        yield pa.RecordBatch.from_arrays([pa.array(np.arange(ws.size), pa.int64()), _hits(top, w[cols])],
                                         names=["i", "hits"])


def semantic_batches(batches):
    """mapInArrow: a focal paper's vector (null without one) and its references with an embedding (ref,
    field_code, rv; in reference order) to dimension C's reference centroid distance, bridge score and dispersion,
    by :func:`scitaste_hf.index.dimensions.reference_parameters` on the batch's own vectors: a paper's values
    depend on its references alone, summed in the same order as on the driver, so they are the same."""
    import pyarrow.compute as pc

    from scitaste_hf.index.dimensions import reference_parameters

    for batch in batches:
        w = batch.column("w").to_numpy()
        own = batch.column("pv")
        has = np.asarray(pc.is_valid(own).to_numpy(zero_copy_only=False))
        refs = batch.column("refs")
        counts = np.diff(refs.offsets.to_numpy())
        _, field, vector = refs.flatten().flatten()
        papers = matrix(own.filter(pc.is_valid(own))) if has.any() else np.zeros((0, 0), np.float32)
        cited = matrix(vector)
        unit = np.vstack([papers, cited]) if len(papers) else cited
        paper_row = np.full(w.size, -1, dtype=np.int64)
        paper_row[has] = np.arange(int(has.sum()))
        out = reference_parameters(paper_row, np.repeat(np.arange(w.size), counts), len(papers) + np.arange(len(cited)),
                                   field.to_numpy(zero_copy_only=False).astype(np.int64), unit)
        yield pa.RecordBatch.from_arrays([pa.array(w, pa.int64()), *(pa.array(out[:, j]) for j in range(3))],
                                         names=["w", "centroid", "bridge", "dispersion"])


# --- the driver's side ---

def semantic(spark, write, vectors: str, links: str) -> pa.Table:
    """Dimension C's reference parameters of every focal paper with a reference that has an embedding, computed
    on the executors: (w, centroid, bridge, dispersion). ``links`` is SQL of (w, ref, field_code) rows."""
    import pyarrow.parquet as pq

    grouped = (f"SELECT l.w, array_sort(collect_list(named_struct('ref', l.ref, 'field_code', l.field_code, 'rv', "
               f"r.v))) AS refs FROM ({links}) l JOIN {vectors} r ON r.w = l.ref GROUP BY l.w")
    frame = spark.sql(f"SELECT g.w, p.v AS pv, g.refs FROM ({grouped}) g LEFT JOIN {vectors} p ON p.w = g.w")
    path = write(frame.mapInArrow(semantic_batches, "w BIGINT, centroid DOUBLE, bridge DOUBLE, dispersion DOUBLE"),
                 "semantic")
    return pq.read_table(path)

@contextmanager
def _arrow_batches(spark, records: int):
    """Spark's Arrow batches of ``records`` rows for the jobs run inside, the session's setting again after."""
    previous = spark.conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(records))
    try:
        yield
    finally:
        spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", previous)


def _merged(view: str, key: str, keep: int) -> str:
    """SQL: per ``key``, the best ``keep`` hits of all rows of ``view``."""
    return (f"SELECT {key}, slice(array_sort(flatten(collect_list(hits))), 1, {keep}) AS hits FROM {view} "
            f"GROUP BY {key}")


def _lists(spark, write, focal, m: int, seed: int) -> tuple[np.ndarray, np.ndarray, str]:
    """:func:`scitaste_hf.scale.neighbours.list_centroids` of the papers ``focal`` (a DataFrame of (w, v)) as Spark
    jobs: the samples and the fine level on the executors, the coarse level (bounded) on the driver. Returns the
    coarse centroids, the lists of each group and the Parquet stage of the lists' centroids, one row (g, c) a
    group that has lists, ``c`` its centroids as float32 bytes."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from scitaste_hf.scale.neighbours import coarse_centroids, fine_shares, sample_fractions

    context = spark.sparkContext
    train, coarse = sample_fractions(m)
    sampled = write(focal.mapInArrow(partial(train_batches, seed=seed, train=train, coarse=coarse),
                                     "w BIGINT, v BINARY, coarse BOOLEAN"), "nn_train")
    points = matrix(pq.read_table(sampled, columns=["w", "v"], filters=pc.field("coarse")).sort_by("w").column("v"))
    top = context.broadcast(coarse_centroids(points, m, seed))
    grouped = write(spark.read.parquet(str(sampled)).select("w", "v").mapInArrow(
        partial(group_batches, coarse=top), "g BIGINT, w BIGINT, v BINARY"), "nn_grouped")
    coarse_top = top.value
    groups = coarse_top.shape[0]
    top.unpersist()
    spark.read.parquet(str(grouped)).createOrReplaceTempView("nn_grouped")
    sizes = np.zeros(groups, dtype=np.int64)
    for g, n in spark.sql("SELECT g, COUNT(*) FROM nn_grouped GROUP BY g").collect():
        sizes[g] = n
    per_group = fine_shares(sizes, m)
    shares = context.broadcast(per_group)
    by_group = spark.sql("SELECT g, transform(array_sort(collect_list(named_struct('w', w, 'v', v))), p -> p.v) AS vs "
                         "FROM nn_grouped GROUP BY g")
    try:
        with _arrow_batches(spark, 1):  # a group's points are one row
            lists = write(by_group.mapInArrow(partial(fine_batches, shares=shares, seed=seed), "g BIGINT, c BINARY"),
                          "nn_lists")
    finally:
        shares.unpersist()
    return coarse_top, per_group, str(lists)


def approximate_search(spark, write, vectors: str, focal_w: np.ndarray, sample_of, k: int, seed: int = 0,
                       advance=None):
    """The approximate search of :func:`scitaste_hf.scale.neighbours.approximate_search` as Spark jobs, with its
    recall measured as :func:`scitaste_hf.scale.neighbours.recall` does.

    Parameters
    ----------
    spark : SparkSession
    write : callable
        ``write(frame, name) -> path``: writes a DataFrame as a Parquet folder (the engine's stage writer).
    vectors : str
        The Spark view of (w, v) holding every focal paper's vector.
    focal_w : ndarray of int64
        The focal papers searched, ascending (the rows of the result).
    sample_of : callable
        ``sample_of(rows) -> ndarray (len(rows), d)``: the vectors of the focal papers at those positions, read
        on the driver (the recall sample).
    k : int
    seed : int
        The index's and the recall sample's seed.
    advance : callable, optional
        Progress: the number of papers assigned, scanned, then refined (3 m in all).

    Returns
    -------
    scitaste_hf.scale.neighbours.Neighbours
    """
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from scitaste_hf.scale.neighbours import (
        NPROBE,
        OVERFETCH,
        Neighbours,
        groups_probed,
        list_offsets,
        recall_figures,
        recall_queries,
    )

    m = focal_w.size
    step = advance or (lambda n: None)
    context = spark.sparkContext
    last = int(focal_w[-1])
    focal_sql = f"SELECT w, v FROM {vectors} WHERE w <= {last}"
    focal = spark.sql(focal_sql)
    coarse, shares, lists_path = _lists(spark, write, focal, m, seed)
    first = list_offsets(shares)
    nprobe = min(NPROBE, int(first[-1]))
    keep = min(m, k + OVERFETCH)
    broadcasts = [context.broadcast(x) for x in (coarse, shares, first)]
    # Written before the chunks are formed: their job reads one row an Arrow batch, which this one must not.
    probing = write(focal.mapInArrow(partial(probe_group_batches, coarse=broadcasts[0], sizes=broadcasts[1]),
                                     "g BIGINT, w BIGINT, v BINARY"), "nn_probing")
    spark.read.parquet(str(probing)).createOrReplaceTempView("nn_probing")
    spark.read.parquet(lists_path).createOrReplaceTempView("nn_lists")
    # A group's papers in chunks of about PROBE_QUERIES, each chunk a row beside the group's lists.
    chunks = max(1, -(-m * groups_probed(shares) // (max(1, coarse.shape[0]) * PROBE_QUERIES)))
    tasks = (f"SELECT p.g, l.c, p.qs, p.qvs FROM (SELECT g, collect_list(w) AS qs, collect_list(v) AS qvs FROM "
             f"nn_probing GROUP BY g, pmod(w, {chunks})) p JOIN nn_lists l ON l.g = p.g")
    try:
        with _arrow_batches(spark, 1):  # a row holds a chunk and its group's lists
            spark.sql(tasks).mapInArrow(partial(probe_batches, first=broadcasts[2], nprobe=nprobe),
                                        f"q BIGINT, hits ARRAY<{HIT}>").createOrReplaceTempView("nn_probe")
            assigned = write(spark.sql(f"SELECT f.w, f.v, transform(p.hits, h -> CAST(h.c AS INT)) AS probes FROM "
                                       f"({_merged('nn_probe', 'q', nprobe)}) p JOIN ({focal_sql}) f ON f.w = p.q"),
                             "nn_assigned")
    finally:
        for value in broadcasts:
            value.unpersist()
    spark.read.parquet(str(assigned)).createOrReplaceTempView("nn_assigned")
    step(m)

    lists = ("SELECT element_at(probes, 1) AS l, collect_list(w) AS ws, collect_list(v) AS vs FROM nn_assigned "
             "GROUP BY element_at(probes, 1)")
    probing = ("SELECT l, collect_list(w) AS qs, collect_list(v) AS qvs FROM "
               "(SELECT w, v, explode(probes) AS l FROM nn_assigned) GROUP BY l")
    grouped = spark.sql(f"SELECT a.l, a.ws, a.vs, b.qs, b.qvs FROM ({lists}) a JOIN ({probing}) b ON a.l = b.l")
    hits = f"q BIGINT, hits ARRAY<{HIT}>"
    with _arrow_batches(spark, SCAN_LISTS_PER_BATCH):
        grouped.mapInArrow(partial(scan_batches, keep=keep), hits).createOrReplaceTempView("nn_scan")
        found = write(spark.sql(_merged("nn_scan", "q", keep)), "nn_found")
    spark.read.parquet(str(found)).createOrReplaceTempView("nn_found")
    step(m)

    # Neighbours' neighbours from lists the paper did not probe (the others the scan ranked already).
    second = (f"SELECT DISTINCT q, h.c AS c FROM (SELECT f.q, g.hits FROM (SELECT q, h.c AS n FROM nn_found "
              f"LATERAL VIEW posexplode(hits) t AS pos, h WHERE pos < {k}) f JOIN nn_found g ON g.q = f.n) "
              "LATERAL VIEW explode(hits) t AS h")
    pairs = (f"SELECT s.q, s.c, aq.v AS qv, ac.v AS cv FROM ({second}) s JOIN nn_found o ON o.q = s.q "
             "JOIN nn_assigned aq ON aq.w = s.q JOIN nn_assigned ac ON ac.w = s.c "
             "WHERE s.c <> s.q AND NOT array_contains(transform(o.hits, x -> x.c), s.c) "
             "AND NOT array_contains(aq.probes, element_at(ac.probes, 1))")
    spark.sql(pairs).mapInArrow(pair_batches, "q BIGINT, c BIGINT, s FLOAT").createOrReplaceTempView("nn_pairs")
    final = spark.sql(f"SELECT o.q, o.hits AS own, coalesce(x.extra, CAST(array() AS ARRAY<{HIT}>)) AS extra "
                      "FROM nn_found o LEFT JOIN (SELECT q, collect_list(named_struct('s', s, 'c', c)) AS extra "
                      "FROM nn_pairs GROUP BY q) x ON x.q = o.q")
    result = write(final.mapInArrow(partial(final_batches, k=k), "w BIGINT, nn_distance DOUBLE, knn_distance "
                                    "DOUBLE, keys ARRAY<BIGINT>, sims ARRAY<FLOAT>").orderBy("w"), "nn_result")
    step(m)

    # The recall: exact neighbours of the sample, searched on the executors.
    queries = recall_queries(m, seed=seed)
    sample_w = focal_w[queries]
    shared = context.broadcast((sample_w, np.ascontiguousarray(sample_of(queries), dtype=np.float32)))
    exact = spark.sql("SELECT w, v FROM nn_assigned").mapInArrow(
        partial(exact_batches, sample=shared, k=k), f"i BIGINT, hits ARRAY<{HIT}>")
    exact.createOrReplaceTempView("nn_exact")
    rows = sorted(spark.sql(_merged("nn_exact", "i", k)).collect(), key=lambda r: r["i"])
    shared.unpersist()
    exact_sims = np.array([[-h["s"] for h in r["hits"]] for r in rows], dtype=np.float32)
    exact_keys = np.array([[h["c"] for h in r["hits"]] for r in rows], dtype=np.int64)

    table = pq.read_table(result, columns=["w", "nn_distance", "knn_distance"]).sort_by("w")
    if table.num_rows != m or not np.array_equal(table.column("w").to_numpy(), focal_w):
        raise ScitasteError(f"the Spark nearest-paper search returned {table.num_rows} papers of {m}")
    sampled = pq.read_table(result, filters=pc.field("w").isin(pa.array(sample_w))).sort_by("w")
    keys = np.array(sampled.column("keys").to_pylist(), dtype=np.int64)
    sims = np.array(sampled.column("sims").to_pylist(), dtype=np.float32)
    report = recall_figures(keys, sims, exact_keys, exact_sims)
    return Neighbours(table.column("nn_distance").to_numpy(), table.column("knn_distance").to_numpy(), "ann",
                      report)
