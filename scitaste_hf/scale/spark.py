"""The Academic Taste Index over a snapshot with Spark (docs/scale.md#spark): the DuckDB engine's stages, with
the ones that grow with the works run as Spark jobs, on :mod:`scitaste_hf.scale.sql`'s queries in Spark's dialect
and on :mod:`scitaste_hf.scale.spark_vectors`'s functions on the executors.

On Spark: reading the records, the flat tables (works numbered by a distributed sort), the features, the CD
index's counts, the embedding, the approximate nearest-paper search and dimension C's reference parameters, each
written as a folder of Parquet files under ``OUT/stages/spark``. On the driver, by the DuckDB engine's own code
(:class:`~scitaste_hf.scale.duck.DuckIndex`): exact nearest-paper search (quadratic, for a focal set one machine
can search), the index's training sample, and the scores over the per-paper values.

With a cluster, ``OUT`` must be a folder that the driver and every executor see (a shared file system).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from scitaste_hf.errors import ScitasteError
from scitaste_hf.progress import StageProgress
from scitaste_hf.scale import sql
from scitaste_hf.scale.duck import DuckIndex, _literal
from scitaste_hf.scale.options import IndexOptions
from scitaste_hf.scale.spark_session import spark_session
from scitaste_hf.scale.stages import key_of, replace
from scitaste_hf.snapshot.store import is_remote
from scitaste_hf.weights import DisciplineWeights

#: Data files read per Spark job of the reading stage, per core of the session: progress between jobs without
#: starving the cores (a gzip file is one task).
READ_FILES_PER_CORE = 4
#: The flat tables Spark writes, in the order they are built (``texts`` reads the others).
TABLES = ("works", "edges", "topics", "concepts", "countries", "texts")
#: Bits of ``monotonically_increasing_id`` below the partition index.
_PARTITION_SHIFT = 33


@dataclass(frozen=True)
class VectorsOnExecutors:
    """What the DuckDB engine's stages see of the Spark engine's vectors, which stay in Spark's output: their
    shape (rows, dimension)."""

    shape: tuple[int, int]


class SparkIndex(DuckIndex):
    """One index run over a snapshot with Spark for the stages over the records and citations.

    Parameters
    ----------
    works, out, options, progress
        As :class:`~scitaste_hf.scale.duck.DuckIndex`.
    spark : pyspark.sql.SparkSession
    """

    def __init__(self, works: str | Path, out: Path, options: IndexOptions, progress: StageProgress,
                 spark) -> None:
        super().__init__(works, out, options, progress)
        self.spark = spark
        self.folder = self.stages.path("spark")
        self.folder.mkdir(exist_ok=True)

    def _write(self, frame, name: str) -> Path:
        """Write a DataFrame as the Parquet folder ``name``, whole or not at all."""
        target = self.folder / name
        tmp = self.folder / f".{name}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        frame.write.parquet(str(tmp))
        return replace(tmp, target)

    def _view(self, name: str) -> None:
        """The Parquet folder ``name`` as a view of that name, in Spark and in the driver's DuckDB."""
        path = self.folder / name
        self.spark.read.parquet(str(path)).createOrReplaceTempView(name)
        self.con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM "
                         f"read_parquet({_literal(path / '*.parquet')})")

    def _rows(self, query: str) -> list[tuple]:
        return [tuple(r) for r in self.spark.sql(query).collect()]

    # --- stage 1 ---
    def read(self) -> str:
        """Check every data file against the record contract on the executors (the DuckDB engine's check, so
        that both accept the same records: :func:`check_batches`), then flatten it with Spark's JSON or Parquet
        reader; returns the stage key."""
        from scitaste_hf.snapshot.records import CONTRACT

        parts = self.files.parts
        fingerprint = [(str(p.path), p.path.stat().st_size, p.path.stat().st_mtime_ns) for p in parts]
        key = key_of("read", "spark", self.files.format, fingerprint, CONTRACT)
        folder = self.folder / "raw"
        if self.stages.done("read", key):
            self.progress.note("read: done before, skipped")
            return key
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        per_job = READ_FILES_PER_CORE * self.spark.sparkContext.defaultParallelism
        schema = ", ".join(f"{c} {t}" for c, t in sql.record_columns(sql.SPARK).items())
        blank_lines = 0
        with self.progress.step("reading the snapshot", self.files.records or len(parts)) as advance:
            for k in range(0, len(parts), per_job):
                batch = parts[k:k + per_job]
                blank_lines += self._check([p.path for p in batch])
                self._records([p.path for p in batch], schema).createOrReplaceTempView("records")
                self._write(self.spark.sql(sql.flatten_records("records", sql.SPARK)), f"raw/batch_{k:06d}")
                advance(sum(p.records for p in batch) if self.files.records else len(batch))
        self.stages.finish("read", key, files=len(parts), blank_lines=blank_lines)
        return key

    def _check(self, paths: list) -> int:
        """The record contract's check of data files, one a task (:func:`check_batches`): the blank lines they
        skip; the first refusal in file order is raised here, in its one line.

        Raises
        ------
        ScitasteError
            As :func:`scitaste_hf.snapshot.records.check_part`.
        """
        from functools import partial

        listed = self.spark.createDataFrame([(k, str(p)) for k, p in enumerate(paths)], "k INT, path STRING")
        rows = sorted(listed.repartition(len(paths)).mapInArrow(
            partial(check_batches, fmt=self.files.format), "k INT, blank_lines BIGINT, error STRING").collect())
        for _, _, error in rows:
            if error:
                raise ScitasteError(error)
        return sum(r[1] for r in rows)

    def _records(self, paths: list, schema: str):
        """The records of data files as a DataFrame: Spark's JSON reader with the records' schema or its Parquet
        reader; for files in a store that Spark's Hadoop layer does not reach (any fsspec URL: ``s3://`` needs
        Maven jars pyspark does not ship), each file is read on an executor through fsspec
        (:func:`store_batches`) and parsed by the same JSON parser (``from_json``), or taken as its Arrow batches."""
        from functools import partial

        from pyspark.sql import functions as F

        fmt = self.files.format
        if not is_remote(self.files.folder):
            names = [str(p) for p in paths]
            return self.spark.read.schema(schema).json(names) if fmt == "jsonl" else self.spark.read.parquet(*names)
        listed = self.spark.createDataFrame([(str(p),) for p in paths], "path STRING").repartition(len(paths))
        if fmt == "jsonl":
            return listed.mapInArrow(partial(store_batches, fmt=fmt), "value STRING") \
                .select(F.from_json("value", schema).alias("r")).select("r.*")
        from pyspark.sql.pandas.types import from_arrow_schema

        with paths[0].open("rb") as fh:
            arrow = pq.ParquetFile(fh).schema_arrow
        arrow = pa.schema([arrow.field(name) for name in sql.RECORD_FIELDS])
        return listed.mapInArrow(partial(store_batches, fmt=fmt, columns=list(sql.RECORD_FIELDS)),
                                 from_arrow_schema(arrow))

    def _number_works(self) -> None:
        """The ``numbered`` view: :func:`sql.work_rows` with each work's number ``w`` in :data:`sql.WORK_ORDER`.
        A global sort, then each sorted partition's offset: ``ROW_NUMBER()`` over every work would run on one
        core."""
        from pyspark.sql import functions as F

        ordered = self.spark.sql(f"SELECT * FROM ({sql.work_rows(sql.SPARK)}) e ORDER BY {sql.WORK_ORDER}")
        # Taken in the sorted partitions, then written: the ids stay those of this sort.
        self._write(ordered.withColumn("part", F.spark_partition_id())
                    .withColumn("mid", F.monotonically_increasing_id()), "sorted_works")
        marked = self.spark.read.parquet(str(self.folder / "sorted_works"))
        sizes = sorted(tuple(r) for r in marked.groupBy("part").count().collect())
        starts = np.concatenate([[0], np.cumsum([n for _, n in sizes])[:-1]]).astype(np.int64)
        offsets = self.spark.createDataFrame([(int(p), int(s)) for (p, _), s in zip(sizes, starts)],
                                             "part INT, start BIGINT")
        position = F.col("mid") - F.col("part").cast("bigint") * (1 << _PARTITION_SHIFT)
        marked.join(F.broadcast(offsets), "part").withColumn("w", F.col("start") + position) \
            .drop("part", "mid", "start").createOrReplaceTempView("numbered")

    # --- stage 2 ---
    def tables(self, read_key: str) -> tuple[str, dict]:
        """Write the flat tables with Spark; returns the stage key and its counts."""
        focal = self.options.focal
        key = key_of("tables", "spark", read_key, focal.key)
        raw = sorted(str(p) for p in (self.folder / "raw").iterdir() if not p.name.startswith("."))
        self.spark.read.parquet(*raw).createOrReplaceTempView("raw")
        if focal.ids is not None:
            self.spark.createDataFrame([(i,) for i in sorted(focal.ids)], "id STRING").createOrReplaceTempView(
                "focal_ids")
        self.spark.sql(sql.known_works(focal.sql())).createOrReplaceTempView("known")
        info = self.stages.done("tables", key)
        if info:
            self.progress.note("tables: done before, skipped")
            for name in TABLES:
                self._view(name)
            return key, info
        with self.progress.step("building the tables", len(TABLES) + 1) as advance:
            dup = [r[0] for r in self._rows(sql.DUPLICATE_IDS)]
            if dup:
                raise ScitasteError(f"the snapshot lists works twice, first: {', '.join(dup)}")
            if focal.ids is not None:
                missing = self._rows(sql.COUNT_MISSING_FOCAL_IDS)[0][0]
                if missing:
                    first = [r[0] for r in self._rows(sql.MISSING_FOCAL_IDS)]
                    raise ScitasteError(f"{missing} focal id(s) are not in the snapshot, first: {', '.join(first)}")
            undated = self._rows(sql.UNDATED_FOCAL)
            if undated:
                raise ScitasteError(f"focal work {undated[0][0]} has no publication date or year; the CD index "
                                    "needs the date of every focal paper")
            advance(1)
            self._number_works()
            n_focal = None
            for name in TABLES:
                query = {"works": sql.works("numbered", sql.SPARK), "edges": sql.edges(sql.SPARK),
                         "topics": sql.topics(sql.SPARK), "concepts": sql.concepts(sql.SPARK),
                         "countries": sql.countries(sql.SPARK)}.get(name) or sql.texts(n_focal)
                self._write(self.spark.sql(query), name)
                self._view(name)
                if name == "works":
                    n_focal = self._rows("SELECT COUNT(*) FROM works WHERE focal")[0][0]
                    if not n_focal:
                        raise ScitasteError(f"--focal {focal.spec!r} selects no work of the snapshot")
                advance(1)
            shutil.rmtree(self.folder / "sorted_works")
        n_works, n_papers = self._rows("SELECT COUNT(*), SUM(CASE WHEN focal THEN 1 ELSE 0 END) FROM works")[0]
        info = self.stages.finish("tables", key, works=int(n_works), papers=int(n_papers),
                                  in_snapshot=int(self._rows("SELECT COUNT(*) FROM raw")[0][0]),
                                  citations=int(self._rows("SELECT COUNT(*) FROM edges")[0][0]))
        return key, info

    def _per_paper(self, name: str, query: str, key: str, description: str) -> pa.Table:
        """A per-focal-paper table computed by Spark (stage ``name``), read back in work order."""
        if not self.stages.done(name, key):
            with self.progress.step(description, 1) as advance:
                self._write(self.spark.sql(query), name)
                advance(1)
            self.stages.finish(name, key)
        else:
            self.progress.note(f"{name}: done before, skipped")
        return pq.read_table(self.folder / name).sort_by("w")

    # --- stage 3 ---
    def features(self, tables_key: str, n_focal: int) -> tuple[str, pa.Table]:
        """Per focal paper: the raw values the SQL aggregations give."""
        key = key_of("features", tables_key)
        return key, self._per_paper("features", sql.features(n_focal), key, "aggregating features")

    # --- stage 4 ---
    def cd(self, tables_key: str, n_focal: int) -> np.ndarray:
        """The CD counts, shape (n_focal, 3): n_i, n_j, n_k; one Spark job (its shuffles spill, so no blocks)."""
        window = self.options.cd_window
        table = self._per_paper("cd", sql.cd_counts(0, n_focal, window), key_of("cd", tables_key, window),
                                "CD index (joins)")
        counts = np.zeros((n_focal, 3), dtype=np.int64)
        w = table.column("w").to_numpy()
        for j, name in enumerate(("n_i", "n_j", "n_k")):
            counts[w, j] = table.column(name).to_numpy()
        return counts

    # --- stage 5 ---
    def embed(self, tables_key: str) -> tuple[str, np.ndarray, VectorsOnExecutors]:
        """The texts' unit vectors, embedded on the executors (the embedder and its weights broadcast once) and
        left in Spark's output: (stage key, w of each row, their shape). The driver copies them only for exact
        search (:meth:`_driver_vectors`)."""
        from functools import partial

        from scitaste_hf.scale.spark_vectors import VECTOR_SCHEMA, embed_batches

        embedder, described = self.embedder()
        key = key_of("embed", tables_key, *described)
        info = self.stages.done("embed", key)
        if not info:
            n = self._rows("SELECT COUNT(*) FROM texts")[0][0]
            with self.progress.step("embedding texts (Spark)", n) as advance:
                embedder.embed([])  # an embedder that loads lazily loads here, so that its weights are broadcast
                shared = self.spark.sparkContext.broadcast(embedder)
                try:
                    frame = self.spark.sql("SELECT * FROM texts ORDER BY w")
                    self._write(frame.mapInArrow(partial(embed_batches, embedder=shared), VECTOR_SCHEMA), "vectors")
                finally:
                    shared.unpersist()
                rows, dim = self._vector_rows()
                self.stages.path("vectors.f32").unlink(missing_ok=True)  # an earlier embedding's driver copy
                advance(n)
            info = self.stages.finish("embed", key, rows=rows, dim=dim)
        else:
            self.progress.note("embed: done before, skipped")
        return key, *self._vectors(info)

    def _vectors(self, info: dict) -> tuple[np.ndarray, VectorsOnExecutors]:
        """The w of each vector and where the vectors are (Spark's output, :class:`VectorsOnExecutors`)."""
        return np.load(self.stages.path("vector_rows.npy")), VectorsOnExecutors((info["rows"], info["dim"]))

    def _vector_files(self) -> list[Path]:
        """Spark's vectors, one file a partition, in work order."""
        return sorted(p for p in (self.folder / "vectors").glob("part-*.parquet"))

    def _vector_rows(self) -> tuple[int, int]:
        """The w of each of Spark's vectors, in work order, as the DuckDB engine's ``vector_rows.npy`` (8 bytes a
        work, read column by column); returns their number and the vectors' dimension."""
        rows_path, dim = self.stages.path("vector_rows.npy"), 1
        kept = []
        for path in self._vector_files():
            kept.append(pq.read_table(path, columns=["w"]).column("w").to_numpy())
            if dim == 1 and kept[-1].size:
                first = next(pq.ParquetFile(path).iter_batches(batch_size=1, columns=["v"])).column("v")
                dim = len(first[0].as_py()) // 4
        rows = np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)
        tmp = rows_path.with_suffix(".tmp.npy")
        np.save(tmp, rows.astype(np.int64))
        replace(tmp, rows_path)
        return int(rows.size), int(dim)

    def _driver_vectors(self) -> np.ndarray:
        """Spark's vectors copied to the driver as the DuckDB engine's vector file (streamed, once), for exact
        search: a memory map of it, in the rows of ``vector_rows.npy``."""
        from scitaste_hf.scale.spark_vectors import matrix

        vectors_path = self.stages.path("vectors.f32")
        rows = np.load(self.stages.path("vector_rows.npy"))
        dim = 1
        if not vectors_path.exists():
            tmp = vectors_path.with_suffix(".tmp")
            with open(tmp, "wb") as fh:
                for path in self._vector_files():
                    for batch in pq.ParquetFile(path).iter_batches():
                        unit = matrix(batch.column("v"))
                        if len(unit):
                            fh.write(unit.tobytes())
            replace(tmp, vectors_path)
        if rows.size:
            dim = vectors_path.stat().st_size // (4 * rows.size)
            return np.memmap(vectors_path, dtype=np.float32, mode="r", shape=(rows.size, dim))
        return np.zeros((0, dim), np.float32)

    # --- stage 6 ---
    def _search_bytes(self, papers: int, dim: int, method: str) -> float:
        """The driver holds the approximate search's coarse sample only (the lists stay on the executors)."""
        from scitaste_hf.scale.neighbours import COARSE_POINTS, groups_for, lists_for

        if method != "ann":
            return super()._search_bytes(papers, dim, method)
        return 4 * dim * COARSE_POINTS * groups_for(lists_for(papers))

    def _check_shuffle_disk(self, papers: int, dim: int) -> None:
        """In local mode the executors' shuffles and the search's tables are on this machine's disk: refuse, before
        the search starts, one that would fill it. The lists' scan sends each paper's vector to each of the
        ``NPROBE`` lists it probes, and the assignment writes it once a probed group (about 64 GB at 10^6 papers of
        256 dimensions, where a full disk would end the run in its middle). The stages finished before stay."""
        from scitaste_hf.scale.neighbours import NPROBE, PROBE_GROUPS

        if not self.spark.sparkContext.master.startswith("local"):
            return  # the executors' disks are not this machine's
        # where this session's shuffles really go: the run's spill folder by default, a --spark-conf of one's own or
        # an active session's setting otherwise, Spark's temporary folder without any
        dirs = self.spark.sparkContext.getConf().get("spark.local.dir") or tempfile.gettempdir()
        disks = {os.stat(d).st_dev: d for d in [*dirs.split(","), str(self.folder)] if os.path.isdir(d)}
        need = 4 * dim * papers * (NPROBE + 2 * PROBE_GROUPS + 2)
        free = sum(shutil.disk_usage(d).free for d in disks.values())
        if need > free:
            raise ScitasteError(f"the nearest-paper search of {papers:,} papers needs about {need / 1e9:.0f} GB of "
                                f"local disk in local mode (its shuffle: each paper's vector to each of the {NPROBE} "
                                f"lists it probes) and {', '.join(disks.values())} has {free / 1e9:.0f} GB free; run "
                                "with --out on a larger disk or on a cluster (the finished stages are kept)")

    def _search(self, rows: np.ndarray, vectors: VectorsOnExecutors, k: int, method: str, advance):
        """The approximate search as Spark jobs (:mod:`scitaste_hf.scale.spark_vectors`), the recall sample's
        vectors read from Spark's output; exact search on the driver, as the DuckDB engine (quadratic: for a focal
        set that fits one machine), on the driver's copy of the vectors."""
        if method != "ann":
            return super()._search(rows, self._driver_vectors(), k, method, advance)
        from scitaste_hf.scale.spark_vectors import approximate_search, matrix

        self._check_shuffle_disk(rows.size, vectors.shape[1])

        self.spark.read.parquet(str(self.folder / "vectors")).createOrReplaceTempView("vectors")
        focal_w = np.load(self.stages.path("vector_rows.npy"))[rows]

        def sample_of(positions: np.ndarray) -> np.ndarray:
            wanted = ", ".join(str(int(w)) for w in focal_w[positions])
            found = sorted(self._rows(f"SELECT w, v FROM vectors WHERE w IN ({wanted})"))
            return matrix(pa.array([v for _, v in found], pa.binary()))

        try:
            return approximate_search(self.spark, self._write, "vectors", focal_w, sample_of, k, advance=advance)
        finally:
            for name in ("nn_train", "nn_grouped", "nn_lists", "nn_probing", "nn_assigned", "nn_found", "nn_result"):
                shutil.rmtree(self.folder / name, ignore_errors=True)

    # --- stage 7 ---
    def _reference_parameters(self, n_focal: int, n_works: int, rows: np.ndarray, vectors: np.ndarray
                              ) -> np.ndarray:
        """Reference centroid distance, bridge score and dispersion per focal paper, grouped by paper on the
        executors (:func:`scitaste_hf.scale.spark_vectors.semantic`)."""
        from scitaste_hf.scale.spark_vectors import semantic

        with self.progress.step("semantic novelty (Spark)", n_focal) as advance:
            self.spark.read.parquet(str(self.folder / "vectors")).createOrReplaceTempView("vectors")
            table = semantic(self.spark, self._write, "vectors", sql.reference_fields(0, n_focal))
            out = np.full((n_focal, 3), np.nan)
            w = table.column("w").to_numpy()
            for j, name in enumerate(("centroid", "bridge", "dispersion")):
                out[w, j] = table.column(name).to_numpy()
            advance(n_focal)
        return out

    def disciplines(self, n_focal: int) -> list[str | None] | None:
        """Each focal paper's discipline for per-discipline weights (None with one vector), from Spark's tables."""
        from scitaste_hf.scale.disciplines import paper_disciplines

        if not isinstance(self.options.weights, DisciplineWeights):
            return None
        subfields = [r[0] for r in self._rows(sql.focal_subfields(n_focal))]
        return paper_disciplines(subfields, self.options.weights, self.options.taxonomy)


def check_batches(batches, fmt: str):
    """mapInArrow, on the executors: rows (k, path) of data files to (k, blank lines, the contract's refusal or
    null) by :func:`scitaste_hf.snapshot.records.check_part`; a refusal travels as data, so that the driver says
    it in its one line (an exception would reach it inside a Java stack trace)."""
    from scitaste_hf.snapshot.records import check_part

    for batch in batches:
        out: list[tuple] = []
        for k, path in zip(batch.column("k").to_pylist(), batch.column("path").to_pylist()):
            try:
                out.append((k, check_part(path, fmt).blank_lines, None))
            except ScitasteError as exc:
                out.append((k, 0, str(exc)))
        yield pa.RecordBatch.from_arrays([pa.array([r[i] for r in out], t) for i, t in
                                          enumerate((pa.int32(), pa.int64(), pa.string()))],
                                         names=["k", "blank_lines", "error"])


#: Lines of a data file in a store per Arrow batch an executor hands Spark.
STORE_BATCH_LINES = 4096


def store_batches(batches, fmt: str, columns: list[str] | None = None):
    """mapInArrow, on the executors: rows (path) of data files in a store to their records, read through fsspec
    (:func:`scitaste_hf.snapshot.store.location`): a JSON Lines file's lines as ``value`` (Spark then parses them),
    a Parquet file's ``columns`` as they are."""
    from scitaste_hf.snapshot.records import json_lines
    from scitaste_hf.snapshot.store import location

    for batch in batches:
        for path in batch.column("path").to_pylist():
            if fmt != "jsonl":
                with location(path).open("rb") as fh:
                    yield from pq.ParquetFile(fh).iter_batches(batch_size=STORE_BATCH_LINES, columns=columns)
                continue
            lines: list[bytes] = []
            for line in json_lines(path):
                lines.append(line)
                if len(lines) == STORE_BATCH_LINES:
                    yield pa.RecordBatch.from_arrays([pa.array(lines, pa.binary()).cast(pa.string())], ["value"])
                    lines = []
            if lines:
                yield pa.RecordBatch.from_arrays([pa.array(lines, pa.binary()).cast(pa.string())], ["value"])


def run_spark(works: str | Path, out: Path, options: IndexOptions, progress: StageProgress | None = None
              ) -> tuple[pa.Table, dict]:
    """Score the focal papers of a snapshot with the Spark engine (stages under ``out/stages``).

    Returns
    -------
    (pyarrow.Table, dict)
        The index table (the columns of :func:`scitaste_hf.index.compute_index`) and a summary of the run.

    Raises
    ------
    ScitasteError
        Without pyspark or Java, when Spark does not start, or on bad input (as the DuckDB engine).
    """
    progress = progress or StageProgress(enabled=False)
    spill = Path(out) / "stages" / "spark-tmp"
    with spark_session(options, spill) as spark:
        engine = SparkIndex(works, out, options, progress, spark)
        try:
            table, summary = engine.run()
        finally:
            engine.close()
        summary.pop("memory_limit")
        summary.update(engine="spark", spark_master=spark.sparkContext.master, spark_version=spark.version)
    shutil.rmtree(spill, ignore_errors=True)
    return table, summary
