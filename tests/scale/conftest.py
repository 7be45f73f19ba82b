"""The small simulated snapshot the scale tests share, and the DuckDB engine's index of it that several files compare
against, each written once per test run."""

from pathlib import Path

import pytest

from scitaste_hf.snapshot.writer import write_snapshot

#: The DuckDB runs over :func:`snapshot` that more than one test compares with: name -> (focal set, options).
DUCKDB_RUNS = {"all": ("all", {}),
               "filtered": ("publication_year:2005-2020,primary_topic.field.id:!26",
                            {"cd_window": 5 * 365, "format": "parquet"})}


@pytest.fixture(scope="session")
def snapshot(once):
    """A 3,000-work snapshot (seed 3) in both formats, 700 records a data file; shared by every worker, read-only."""

    def make(folder):
        write_snapshot(folder / "snapshot", 3000, seed=3, parquet=True, part_records=700)
        return str(folder / "snapshot")

    return Path(once("scale-snapshot", make))


@pytest.fixture(scope="session")
def duckdb_index(once, snapshot):
    """``duckdb_index(name)``: the DuckDB engine's index of :func:`snapshot` for the run ``name`` of
    :data:`DUCKDB_RUNS`, made once per test run (5-10 s each) and shared read-only: its table and its summary."""
    import pyarrow.parquet as pq

    from scitaste_hf.progress import StageProgress
    from scitaste_hf.scale.options import IndexOptions
    from scitaste_hf.scale.run import index_snapshot
    from scitaste_hf.snapshot.focal import parse_focal

    def get(name):
        focal, options = DUCKDB_RUNS[name]

        def make(folder):
            options_ = IndexOptions(focal=parse_focal(focal), **options)
            summary = index_snapshot(snapshot, folder / "index", "duckdb", options_, StageProgress(bars=False))
            return [str(folder / "index" / "index.parquet"), summary]

        path, summary = once(f"scale-duckdb-{name}", make)
        return pq.read_table(path), summary

    return get


@pytest.fixture(scope="session")
def spark_missing():
    """Why the Spark engine cannot run here (no pyspark, no Java), or None."""
    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.scale.spark_session import java_home

    try:
        import pyspark
    except ImportError:
        return "pyspark is not installed (pip install '.[test]' installs it)"
    try:
        java_home(pyspark.__version__)
    except ScitasteError as exc:
        return str(exc)
    return None
