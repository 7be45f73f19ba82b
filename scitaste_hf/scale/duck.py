"""The Academic Taste Index over a snapshot with DuckDB: out of core, in resumable stages (docs/scale.md).

1. ``read``: each data file's records, flattened to the fields the index reads (one Parquet file per data file).
2. ``tables``: the flat tables of :mod:`scitaste_hf.scale.sql` (works numbered, citations, the focal papers'
   topics, concepts and countries, the texts to embed).
3. ``features``: dimensions A, B, E, F, G's raw values and C's topic part, one SQL query.
4. ``cd``: the CD index's counts: the in-memory engine's compiled kernel over the citation graph loaded from the
   citation table when it fits in the memory limit, else joins over that table, in blocks of focal papers sized by
   their number of focal -> reference -> citer paths.
5. ``embed``: the texts' vectors (the in-memory engine's embedder), unit length, on disk.
6. ``neighbours``: nearest papers, exact or approximate (FAISS inverted file, :mod:`scitaste_hf.scale.neighbours`).
7. ``semantic``: C's reference centroid, bridge and dispersion, block by block.
8. the scores: the in-memory engine's own normalisations on the per-paper values (N rows of 23 numbers).

DuckDB spills to ``OUT/stages/tmp`` beyond its memory limit. Python holds the embeddings (a memory map), the
ANN index and per-paper arrays; never a per-citation array beyond one block.
"""

from __future__ import annotations

import shutil
from contextlib import closing, contextmanager
from itertools import pairwise
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from scitaste_hf.errors import ScitasteError
from scitaste_hf.progress import StageProgress
from scitaste_hf.scale import sql
from scitaste_hf.scale.options import IndexOptions, size_bytes
from scitaste_hf.scale.stages import Stages, key_of, replace
from scitaste_hf.snapshot.layout import EntityFiles, find_entity
from scitaste_hf.snapshot.store import is_remote
from scitaste_hf.weights import DisciplineWeights

#: Focal -> reference -> citer paths per CD block: bounds the block's join and aggregation (about 1 GB).
CD_BLOCK_PATHS = 40_000_000
#: Peak bytes per citation of the CD kernel's graph (both CSR directions and the edge list they are built from:
#: 1.66 GB at 21 million citations); below the memory limit the CD stage counts with the kernel.
CD_GRAPH_BYTES_PER_EDGE = 80
#: The least share of ``--memory-limit`` DuckDB keeps while Python's arrays (the CD kernel's graph, the nearest-paper
#: search's vectors) hold the rest; the kernel is used for a graph that fits in the other share.
DUCKDB_MIN_SHARE = 0.25
#: Focal papers counted by one call of the CD kernel (progress granularity).
CD_GRAPH_BLOCK = 100_000
#: Focal papers per block of the semantic stage.
SEMANTIC_BLOCK = 50_000
#: Texts embedded at a time: a multiple of the embedder's batch, so batches are those of one call over all.
EMBED_CHUNK = 512 * 32
#: The flat tables written by the ``tables`` stage.
TABLES = ("works", "edges", "topics", "concepts", "countries", "texts")


def _literal(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


class DuckIndex:
    """One index run over a snapshot with DuckDB.

    Parameters
    ----------
    works : str or path-like
        The snapshot (:func:`~scitaste_hf.snapshot.layout.find_entity`).
    out : Path
        The output folder (``stages/`` inside it).
    options : IndexOptions
    progress : StageProgress
    """

    def __init__(self, works: str | Path, out: Path, options: IndexOptions, progress: StageProgress) -> None:
        import duckdb

        self.works_path = works
        self.files: EntityFiles = find_entity(works, "works", options.format)
        self.options = options
        self.progress = progress
        self.stages = Stages(out)
        tmp = self.stages.path("tmp")
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        config = {"memory_limit": options.memory_limit, "temp_directory": str(tmp),
                  "preserve_insertion_order": False}
        if options.threads:
            config["threads"] = options.threads
        self.con = duckdb.connect(config=config)
        if is_remote(self.files.folder):
            # DuckDB reads the store's files through the same fsspec file system as the contract's reader (its own
            # httpfs extension is downloaded at run time, which an offline machine cannot do)
            self.con.register_filesystem(self.files.folder.fs)

    def close(self) -> None:
        """Close the database and remove its spill files."""
        self.con.close()
        shutil.rmtree(self.stages.path("tmp"), ignore_errors=True)

    # --- stage 1 ---
    def read(self) -> str:
        """Check every data file against the record contract and flatten it; returns the stage key. Files are
        checked (:func:`scitaste_hf.snapshot.records.check_parts`, in worker processes for a large snapshot)
        ahead of DuckDB, which flattens each one once it is accepted."""
        import os

        from scitaste_hf.snapshot.records import CONTRACT, MAX_RECORD_BYTES, check_parts

        parts, fmt = self.files.parts, self.files.format
        fingerprint = [(str(p.path), p.path.stat().st_size, p.path.stat().st_mtime_ns) for p in parts]
        key = key_of("read", fmt, fingerprint, CONTRACT)
        folder = self.stages.path("raw")
        if self.stages.done("read", key):
            self.progress.note("read: done before, skipped")
            return key
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()
        total = self.files.records or len(parts)
        blank_lines = 0
        checked = check_parts([p.path for p in parts], fmt, self.options.threads or os.cpu_count() or 1)
        with self.progress.step("reading the snapshot", total) as advance, closing(checked):
            for k, (part, counts) in enumerate(zip(parts, checked)):
                blank_lines += counts.blank_lines
                if fmt == "jsonl":
                    columns = "{" + ", ".join(f"'{c}': '{t}'" for c, t in sql.RECORD_COLUMNS.items()) + "}"
                    source = (f"read_json({_literal(part.path)}, format='newline_delimited', columns={columns}, "
                              f"maximum_object_size={MAX_RECORD_BYTES + 2})")
                else:
                    source = f"read_parquet({_literal(part.path)})"
                target = folder / f"part_{k:05d}.parquet"
                tmp = target.with_suffix(".tmp")
                self.con.execute(f"COPY ({sql.flatten_records(source)}) TO {_literal(tmp)} (FORMAT parquet)")
                replace(tmp, target)
                advance(part.records if self.files.records else 1)
        self.stages.finish("read", key, files=len(parts), blank_lines=blank_lines)
        return key

    def _views(self, names: tuple[str, ...]) -> None:
        for name in names:
            self.con.execute(f"CREATE OR REPLACE VIEW {name} AS SELECT * FROM "
                             f"read_parquet({_literal(self.stages.path(name + '.parquet'))})")

    # --- stage 2 ---
    def tables(self, read_key: str) -> tuple[str, dict]:
        """Write the flat tables; returns the stage key and its counts."""
        focal = self.options.focal
        key = key_of("tables", read_key, focal.key)
        raw = self.stages.path("raw") / "*.parquet"
        self.con.execute(f"CREATE OR REPLACE VIEW raw AS SELECT * FROM read_parquet({_literal(raw)})")
        if focal.ids is not None:
            self.con.execute("CREATE OR REPLACE TABLE focal_ids AS SELECT unnest(?::VARCHAR[]) AS id",
                             [sorted(focal.ids)])
        self.con.execute(f"CREATE OR REPLACE VIEW known AS {sql.known_works(focal.sql())}")
        info = self.stages.done("tables", key)
        if info:
            self.progress.note("tables: done before, skipped")
            self._views(TABLES)
            return key, info
        with self.progress.step("building the tables", len(TABLES) + 1) as advance:
            dup = [r[0] for r in self.con.execute(sql.DUPLICATE_IDS).fetchall()]
            if dup:
                raise ScitasteError(f"the snapshot lists works twice, first: {', '.join(dup)}")
            if focal.ids is not None:
                missing = self.con.execute(sql.COUNT_MISSING_FOCAL_IDS).fetchone()[0]
                if missing:
                    first = [r[0] for r in self.con.execute(sql.MISSING_FOCAL_IDS).fetchall()]
                    raise ScitasteError(f"{missing} focal id(s) are not in the snapshot, first: {', '.join(first)}")
            undated = self.con.execute(sql.UNDATED_FOCAL).fetchone()
            if undated:
                raise ScitasteError(f"focal work {undated[0]} has no publication date or year; the CD index needs "
                                    "the date of every focal paper")
            advance(1)
            n_focal = None
            for name in TABLES:
                if name == "texts":
                    query = sql.texts(n_focal)
                else:
                    query = {"works": sql.WORKS, "edges": sql.EDGES, "topics": sql.TOPICS,
                             "concepts": sql.CONCEPTS, "countries": sql.COUNTRIES}[name]
                target = self.stages.path(name + ".parquet")
                tmp = target.with_suffix(".tmp")
                self.con.execute(f"COPY ({query}) TO {_literal(tmp)} (FORMAT parquet)")
                replace(tmp, target)
                self._views((name,))
                if name == "works":
                    n_focal = self.con.execute("SELECT COUNT(*) FROM works WHERE focal").fetchone()[0]
                    if not n_focal:
                        raise ScitasteError(f"--focal {focal.spec!r} selects no work of the snapshot")
                advance(1)
        counts = self.con.execute("SELECT COUNT(*), SUM(CASE WHEN focal THEN 1 ELSE 0 END) FROM works").fetchone()
        n_edges = self.con.execute("SELECT COUNT(*) FROM edges").fetchone()[0]
        known = self.con.execute("SELECT COUNT(*) FROM raw").fetchone()[0]
        info = self.stages.finish("tables", key, works=int(counts[0]), papers=int(counts[1]), in_snapshot=int(known),
                                  citations=int(n_edges))
        return key, info

    # --- stage 3 ---
    def features(self, tables_key: str, n_focal: int) -> tuple[str, pa.Table]:
        """Per focal paper: the raw values the SQL aggregations give."""
        key = key_of("features", tables_key)
        target = self.stages.path("features.parquet")
        if not self.stages.done("features", key):
            with self.progress.step("aggregating features", 1) as advance:
                tmp = target.with_suffix(".tmp")
                self.con.execute(f"COPY ({sql.features(n_focal)}) TO {_literal(tmp)} (FORMAT parquet)")
                replace(tmp, target)
                advance(1)
            self.stages.finish("features", key)
        else:
            self.progress.note("features: done before, skipped")
        return key, pq.read_table(target)

    @contextmanager
    def _beside(self, nbytes: float, what: str):
        """While the block runs, DuckDB's memory limit is ``--memory-limit`` less the ``nbytes`` Python holds for
        ``what``, so that the two together stay under it; DuckDB keeps at least :data:`DUCKDB_MIN_SHARE`, and where
        that leaves too little for Python the run says what it needs before the stage starts."""
        limit = size_bytes(self.options.memory_limit)
        duck = max(DUCKDB_MIN_SHARE * limit, limit - nbytes)
        if duck + nbytes > limit:
            self.progress.note(f"{what} holds about {nbytes / 1e9:.2f} GB beside DuckDB's {duck / 1e9:.2f} GB: this "
                               f"stage needs about {(duck + nbytes) / 1e9:.2f} GB, over --memory-limit "
                               f"{self.options.memory_limit}")
        self.con.execute(f"SET memory_limit = '{int(duck)}B'")
        try:
            yield
        finally:
            self.con.execute(f"SET memory_limit = '{self.options.memory_limit}'")

    # --- stage 4 ---
    def cd(self, tables_key: str, n_focal: int) -> np.ndarray:
        """The CD counts, shape (n_focal, 3): n_i, n_j, n_k; with the compiled kernel where the citation graph fits
        in the memory limit beside DuckDB's share (:meth:`_beside`), else as joins."""
        n_edges = self.con.sql("SELECT COUNT(*) FROM edges").fetchall()[0][0]
        graph = n_edges * CD_GRAPH_BYTES_PER_EDGE
        if graph <= (1 - DUCKDB_MIN_SHARE) * size_bytes(self.options.memory_limit):
            with self._beside(graph, "the CD kernel's citation graph"):
                return self._cd_graph(tables_key, n_focal)
        return self._cd_joins(tables_key, n_focal)

    def _cd_graph(self, tables_key: str, n_focal: int) -> np.ndarray:
        """The CD counts from :class:`scitaste_hf.index.cd.CitationGraph` over the whole citation table: a
        focal -> reference -> citer path costs the kernel the same at any size, where the joins' rate fell with the
        table (4.4 million paths/s at 10^5 works, 2.7 at 10^6; the kernel counted the 1.37e9 paths of 10^6 works in
        13 s). The SQL and the graph count alike (tests/scale/test_sql_cd.py, tests/scale/test_cd_stage.py)."""
        from scitaste_hf.index.cd import UNDATED, CitationGraph

        window = self.options.cd_window
        key = key_of("cd", tables_key, window, "graph")
        target = self.stages.path("cd.npy")
        if not self.stages.done("cd", key):
            with self.progress.step("CD index (citation graph)", n_focal) as advance:
                days = self.con.sql("SELECT day FROM works ORDER BY w").to_arrow_table().column("day")
                edges = self.con.sql("SELECT citing, cited FROM edges").to_arrow_table()
                graph = CitationGraph(edges.column("citing").to_numpy(), edges.column("cited").to_numpy(),
                                      days.cast(pa.int64()).fill_null(UNDATED).to_numpy())
                del edges
                counts = np.empty((n_focal, 3), dtype=np.int64)
                for lo in range(0, n_focal, CD_GRAPH_BLOCK):
                    hi = min(n_focal, lo + CD_GRAPH_BLOCK)
                    found = graph.cd(np.arange(lo, hi), window)
                    counts[lo:hi] = np.column_stack([found.n_i, found.n_j, found.n_k])
                    advance(hi - lo)
            tmp = self.stages.path("cd.tmp.npy")
            np.save(tmp, counts)
            replace(tmp, target)
            self.stages.finish("cd", key, method="graph")
        else:
            self.progress.note("cd: done before, skipped")
        return np.load(target)

    def _cd_joins(self, tables_key: str, n_focal: int) -> np.ndarray:
        """The CD counts as SQL joins (:func:`scitaste_hf.scale.sql.cd_counts`), block by block, out of core."""
        window = self.options.cd_window
        paths = self.con.sql(sql.cd_paths(n_focal)).to_arrow_table().column("paths").to_numpy().astype(np.int64)
        ends = np.cumsum(paths)
        bounds = [0]
        while bounds[-1] < n_focal:
            start = bounds[-1]
            limit = (ends[start - 1] if start else 0) + CD_BLOCK_PATHS
            bounds.append(max(start + 1, int(np.searchsorted(ends, limit, "right"))))
        bounds[-1] = n_focal
        key = key_of("cd", tables_key, window, bounds)
        folder = self.stages.path("cd")
        if not self.stages.done("cd", key):
            stamp = folder / "key"
            if not (stamp.is_file() and stamp.read_text() == key):
                # Blocks of another plan or input are of no use; those of this one are kept across a restart.
                shutil.rmtree(folder, ignore_errors=True)
                folder.mkdir()
                stamp.write_text(key)
            with self.progress.step("CD index (joins)", n_focal) as advance:
                for lo, hi in pairwise(bounds):
                    target = folder / f"block_{lo:010d}.parquet"
                    if not target.is_file():
                        tmp = target.with_suffix(".tmp")
                        self.con.execute(f"COPY ({sql.cd_counts(lo, hi, window)}) TO {_literal(tmp)} (FORMAT parquet)")
                        replace(tmp, target)
                    advance(hi - lo)
            self.stages.finish("cd", key, blocks=len(bounds) - 1, paths=int(ends[-1]) if n_focal else 0)
        else:
            self.progress.note("cd: done before, skipped")
        counts = np.zeros((n_focal, 3), dtype=np.int64)
        table = self.con.sql(f"SELECT w, n_i, n_j, n_k FROM read_parquet({_literal(folder / 'block_*.parquet')})"
                             ).to_arrow_table()
        w = table.column("w").to_numpy()
        for j, name in enumerate(("n_i", "n_j", "n_k")):
            counts[w, j] = table.column(name).to_numpy()
        return counts

    # --- stage 5 ---
    def embedder(self):
        """The run's embedder (WordLlama unless the options name one) and the embed stage's key part for it."""
        from scitaste_hf.index.embed import WordLlamaEmbedder

        embedder = self.options.embedder or WordLlamaEmbedder()
        return embedder, (type(embedder).__qualname__, vars(embedder).get("dim"), vars(embedder).get("model"))

    def embed(self, tables_key: str) -> tuple[str, np.ndarray, np.ndarray]:
        """Unit vectors of the works with text: (stage key, w of each row, vectors as a memory map)."""
        embedder, described = self.embedder()
        key = key_of("embed", tables_key, *described)
        vectors_path, rows_path = self.stages.path("vectors.f32"), self.stages.path("vector_rows.npy")
        info = self.stages.done("embed", key)
        if not info:
            texts = pq.ParquetFile(self.stages.path("texts.parquet"))
            tmp = vectors_path.with_suffix(".tmp")
            kept, dim = [], None
            with open(tmp, "wb") as fh, self.progress.step("embedding texts", texts.metadata.num_rows) as advance:
                for batch in texts.iter_batches(batch_size=EMBED_CHUNK):
                    w, unit = embed_rows(embedder, batch)
                    if w.size:
                        dim = unit.shape[1]
                        fh.write(unit.tobytes())
                        kept.append(w)
                    advance(batch.num_rows)
            rows = np.concatenate(kept) if kept else np.zeros(0, dtype=np.int64)
            np.save(rows_path, rows.astype(np.int64))
            replace(tmp, vectors_path)
            info = self.stages.finish("embed", key, rows=int(rows.size), dim=int(dim or 1))
        else:
            self.progress.note("embed: done before, skipped")
        return key, *self._vectors(info)

    def _vectors(self, info: dict) -> tuple[np.ndarray, np.ndarray]:
        """The embed stage's output: the w of each vector and the vectors (a memory map)."""
        rows = np.load(self.stages.path("vector_rows.npy"))
        vectors = np.memmap(self.stages.path("vectors.f32"), dtype=np.float32, mode="r",
                            shape=(rows.size, info["dim"])) if rows.size else np.zeros((0, info["dim"]), np.float32)
        return rows, vectors

    # --- stage 6 ---
    def neighbours(self, embed_key: str, paper_rows: np.ndarray, vectors: np.ndarray) -> tuple[np.ndarray, dict]:
        """nn_distance and knn10_distance per focal paper (NaN without an embedding), and the search's report."""
        from scitaste_hf.index.dimensions import NEIGHBOURS
        from scitaste_hf.scale.neighbours import EXACT_LIMIT

        n = paper_rows.size
        have = np.flatnonzero(paper_rows >= 0)
        method = self.options.neighbours
        chosen = ("exact" if have.size < EXACT_LIMIT else "ann") if method == "auto" else method
        key = key_of("neighbours", embed_key, chosen)
        target = self.stages.path("neighbours.npy")
        info = self.stages.done("neighbours", key)
        if not info:
            out = np.full((n, 2), np.nan)
            k = min(NEIGHBOURS, have.size - 1)
            report: dict = {"method": chosen, "papers": int(have.size)}
            if k >= 1:
                total = have.size * (3 if chosen == "ann" else 1)
                held = self._search_bytes(have.size, vectors.shape[1], chosen)
                step = self.progress.step(f"nearest papers ({chosen})", total)
                with self._beside(held, "the nearest-paper search"), step as advance:
                    found = self._search(paper_rows[have], vectors, k, chosen, advance)
                out[have, 0], out[have, 1] = found.nn_distance, found.knn_distance
                if found.recall:
                    report["recall"] = found.recall
                    self.progress.note(f"approximate search recall@{k} against exact search on "
                                       f"{found.recall['sample']} papers: {found.recall['recall_at_k']:.4f}")
            tmp = self.stages.path("neighbours.tmp.npy")
            np.save(tmp, out)
            replace(tmp, target)
            info = self.stages.finish("neighbours", key, report=report)
        else:
            self.progress.note("neighbours: done before, skipped")
        return np.load(target), info["report"]

    def _search_bytes(self, papers: int, dim: int, method: str) -> float:
        """Bytes the search holds in this process: the papers' vectors, and FAISS's copy of them in its lists with
        each paper's lists probed, or the exact search's block of similarities (the lists' search has one too)."""
        from scitaste_hf.scale.neighbours import BLOCK_BYTES, NPROBE

        return 4 * papers * (dim * 2 + NPROBE if method == "ann" else dim) + BLOCK_BYTES

    def _search(self, rows: np.ndarray, vectors: np.ndarray, k: int, method: str, advance):
        """The nearest papers among ``vectors[rows]`` (:func:`scitaste_hf.scale.neighbours.nearest_papers`), in
        this process."""
        from scitaste_hf.scale.neighbours import nearest_papers

        unit = np.ascontiguousarray(vectors[rows])
        ids = np.load(self.stages.path("vector_rows.npy"))[rows]  # the papers' w: the Spark engine samples by them
        return nearest_papers(unit, k, method, threads=self.options.threads, advance=advance, ids=ids)

    # --- stage 7 ---
    def semantic(self, embed_key: str, n_focal: int, n_works: int, rows: np.ndarray, vectors: np.ndarray
                 ) -> np.ndarray:
        """Reference centroid distance, bridge score and dispersion per focal paper."""
        key = key_of("semantic", embed_key)
        target = self.stages.path("semantic.npy")
        if not self.stages.done("semantic", key):
            out = self._reference_parameters(n_focal, n_works, rows, vectors)
            tmp = self.stages.path("semantic.tmp.npy")
            np.save(tmp, out)
            replace(tmp, target)
            self.stages.finish("semantic", key)
        else:
            self.progress.note("semantic: done before, skipped")
        return np.load(target)

    def _reference_parameters(self, n_focal: int, n_works: int, rows: np.ndarray, vectors: np.ndarray
                              ) -> np.ndarray:
        """The semantic stage's values, :data:`SEMANTIC_BLOCK` focal papers at a time in this process."""
        from scitaste_hf.index.dimensions import reference_parameters

        emb_row = np.full(n_works, -1, dtype=np.int64)
        emb_row[rows] = np.arange(rows.size)
        out = np.empty((n_focal, 3))
        with self.progress.step("semantic novelty (blocks)", n_focal) as advance:
            for lo in range(0, n_focal, SEMANTIC_BLOCK):
                hi = min(n_focal, lo + SEMANTIC_BLOCK)
                links = self.con.sql(sql.reference_fields(lo, hi)).to_arrow_table()
                refs = links.column("ref").to_numpy().astype(np.int64)
                out[lo:hi] = reference_parameters(
                    emb_row[lo:hi], links.column("w").to_numpy().astype(np.int64) - lo, emb_row[refs],
                    links.column("field_code").to_numpy().astype(np.int64), vectors)
                advance(hi - lo)
        return out

    def disciplines(self, n_focal: int) -> list[str | None] | None:
        """Each focal paper's discipline for per-discipline weights (None with one vector), checked before the
        long stages so that a paper without a vector is refused at once."""
        from scitaste_hf.scale.disciplines import paper_disciplines

        if not isinstance(self.options.weights, DisciplineWeights):
            return None
        # A cursor of its own: the tables stage may leave a result pending on the main one.
        cursor = self.con.cursor()
        try:
            subfields = cursor.sql(sql.focal_subfields(n_focal)).to_arrow_table().column("subfield_id").to_pylist()
        finally:
            cursor.close()
        return paper_disciplines(subfields, self.options.weights, self.options.taxonomy)

    def run(self) -> tuple[pa.Table, dict]:
        """All stages, then the scores. Returns the index table and a summary of the run."""
        read_key = self.read()
        blank_lines = self.stages.done("read", read_key)["blank_lines"]
        tables_key, counts = self.tables(read_key)
        n_focal, n_works = counts["papers"], counts["works"]
        disciplines = self.disciplines(n_focal)
        _, feats = self.features(tables_key, n_focal)
        cd_counts = self.cd(tables_key, n_focal)
        embed_key, rows, vectors = self.embed(tables_key)
        emb_row = np.full(n_works, -1, dtype=np.int64)
        emb_row[rows] = np.arange(rows.size)
        neighbours, report = self.neighbours(embed_key, emb_row[:n_focal], vectors)
        semantic = self.semantic(embed_key, n_focal, n_works, rows, vectors)
        from scitaste_hf.snapshot.reader import read_journals

        journals = read_journals(self.works_path, self.options.journal_table)
        with self.progress.step("scores", n_focal) as advance:
            table = assemble(feats, cd_counts, neighbours, semantic, journals, self.options.weights, disciplines)
            advance(n_focal)
        summary = {"engine": "duckdb", "papers": n_focal, "works": n_works, "in_snapshot": counts["in_snapshot"],
                   "citations": counts["citations"], "blank_lines": blank_lines, "neighbours": report,
                   "memory_limit": self.options.memory_limit}
        return table, summary


def embed_rows(embedder, batch: pa.RecordBatch) -> tuple[np.ndarray, np.ndarray]:
    """The w and unit float32 vectors of a batch of the ``texts`` table's rows (w, focal, title, abstract_json):
    a focal paper's text is its title and abstract, another work's its title; as in the in-memory engine, a
    work without text, or whose vector is zero or not finite, gets none. Both SQL engines embed through this,
    the Spark engine on its executors, so the vectors are the same for the same embedder."""
    import orjson

    from scitaste_hf.snapshot.reader import paper_text
    from scitaste_hf.sources.openalex import abstract_from_inverted_index

    w = batch.column("w").to_numpy()
    docs = [paper_text(t, abstract_from_inverted_index(orjson.loads(a)) if a else None) if f else t
            for f, t, a in zip(batch.column("focal").to_pylist(), batch.column("title").to_pylist(),
                               batch.column("abstract_json").to_pylist())]
    ok = np.array([bool(d and d.strip()) for d in docs], dtype=bool)
    if not ok.any():
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    vectors = np.asarray(embedder.embed([d for d, o in zip(docs, ok) if o]), dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1)
    good = np.isfinite(norms) & (norms > 0)
    return w[ok][good].astype(np.int64), np.ascontiguousarray(vectors[good] / norms[good, None], dtype=np.float32)


def _column(table: pa.Table, name: str) -> np.ndarray:
    """A numeric column as float64 with NaN for NULL."""
    return table.column(name).cast(pa.float64()).fill_null(np.nan).to_numpy(zero_copy_only=False)


def assemble(feats: pa.Table, cd_counts: np.ndarray, neighbours: np.ndarray, semantic: np.ndarray, journals,
             weights, disciplines=None) -> pa.Table:
    """The index table from the per-paper values, with the in-memory engine's normalisations and columns
    (:func:`scitaste_hf.index.compute_index`); ``disciplines`` (each paper's, per-discipline weights only) picks
    each paper's weight vector."""
    from scitaste_hf.index.dimensions import SUBPARAMETERS, citation_impact, journal_impact
    from scitaste_hf.index.normalise import pca_score
    from scitaste_hf.schema import DIMENSIONS
    from scitaste_hf.weights import composites

    n = feats.num_rows
    n_i, n_j, n_k = (cd_counts[:, j] for j in range(3))
    citers = n_i + n_j
    cd = np.full(n, np.nan)
    np.divide(n_i - n_j, citers + n_k, out=cd, where=citers > 0)
    col = {name: _column(feats, name) for name in feats.column_names if name not in ("id", "journal")}
    parameters = {
        "knowledge_breadth": np.column_stack([col["reference_count"], col["reference_fields"],
                                              col["reference_journals"], col["reference_age_range"]]),
        "semantic_novelty": np.column_stack([neighbours[:, 0], neighbours[:, 1], col["topic_fields"],
                                             col["topic_field_entropy"], semantic[:, 0], semantic[:, 1],
                                             semantic[:, 2]]),
        "disruptiveness": np.column_stack([cd, n_i.astype(float)]),
        "conceptual_innovation": np.column_stack([col["core_concept_score"], col["concept_count"],
                                                  col["core_topic_score"], col["topic_span"]]),
        "team_collaboration": np.column_stack([col["country_count"], col["author_count"]]),
    }
    scores = {key: pca_score(matrix) for key, matrix in parameters.items()}
    scores["citation_impact"] = citation_impact(feats.column("citation_count").to_numpy())
    scores["journal_impact"] = journal_impact(feats.column("journal").to_pylist(), journals)
    dims = {key: np.round(scores[key], 2) for key in DIMENSIONS}
    columns = {"id": feats.column("id"), **dims, "innovation_score": composites(dims, weights, disciplines),
               "cd_index": cd, "n_i": n_i, "n_j": n_j, "n_k": n_k}
    for key, matrix in parameters.items():
        if key == "disruptiveness":
            continue
        for j, name in enumerate(SUBPARAMETERS[key]):
            columns[f"{key}.{name}"] = matrix[:, j]
    return pa.table(columns).replace_schema_metadata(
        {"journal_table": journals.label, "journal_impact_proxy": str(journals.proxy).lower()})


def run_duckdb(works: str | Path, out: Path, options: IndexOptions, progress: StageProgress | None = None
               ) -> tuple[pa.Table, dict]:
    """Score the focal papers of a snapshot with the DuckDB engine (stages under ``out/stages``).

    Returns
    -------
    (pyarrow.Table, dict)
        The index table (the columns of :func:`scitaste_hf.index.compute_index`) and a summary of the run.
    """
    engine = DuckIndex(works, out, options, progress or StageProgress(enabled=False))
    try:
        return engine.run()
    finally:
        engine.close()

