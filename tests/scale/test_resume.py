"""The DuckDB engine's stages resume: a rerun skips what is done, a changed input recomputes what depends on it,
and an interrupted CD stage keeps its finished blocks."""

import numpy as np
import pyarrow.parquet as pq
import pytest

from scitaste_hf.progress import StageProgress
from scitaste_hf.scale import duck
from scitaste_hf.scale.options import IndexOptions
from scitaste_hf.scale.run import index_snapshot
from scitaste_hf.snapshot.focal import parse_focal
from scitaste_hf.snapshot.writer import write_snapshot

pytestmark = pytest.mark.slow


def _run(snapshot, out, focal="all"):
    progress = StageProgress(bars=False)
    index_snapshot(snapshot, out, "duckdb", IndexOptions(focal=parse_focal(focal)), progress)
    return pq.read_table(out / "index.parquet"), set(progress.times)


def _same(a, b) -> bool:
    """Equal tables, NaN equal to NaN."""
    return a.column_names == b.column_names and all(
        np.array_equal(a.column(c).to_numpy(zero_copy_only=False), b.column(c).to_numpy(zero_copy_only=False),
                       equal_nan=c != "id") for c in a.column_names)


def test_stages_resume(tmp_path, monkeypatch):
    snapshot = tmp_path / "snapshot"
    write_snapshot(snapshot, 1500, seed=4)
    out = tmp_path / "run"
    # The joins rather than the in-memory graph, in small blocks, so that the stage has several to resume from.
    monkeypatch.setattr(duck, "CD_GRAPH_BYTES_PER_EDGE", 10**12)
    monkeypatch.setattr(duck, "CD_BLOCK_PATHS", 5000)
    first, ran = _run(snapshot, out)
    assert {"reading the snapshot", "building the tables", "CD index (joins)", "embedding texts"} <= ran
    blocks = sorted((out / "stages" / "cd").glob("block_*.parquet"))
    assert len(blocks) > 3

    again, ran = _run(snapshot, out)
    assert _same(again, first) and ran == {"scores"}

    # A CD stage killed after some blocks: the finished blocks are kept, the missing one is recomputed.
    (out / "stages" / "cd.done.json").unlink()
    blocks[1].unlink()
    stamps = {b: b.stat().st_mtime_ns for b in blocks if b != blocks[1]}
    again, ran = _run(snapshot, out)
    assert _same(again, first) and ran == {"CD index (joins)", "scores"}
    assert blocks[1].is_file() and all(b.stat().st_mtime_ns == t for b, t in stamps.items())

    # Another focal set: the records are not read again; everything after them is recomputed.
    subset, ran = _run(snapshot, out, "publication_year:>2015")
    assert "reading the snapshot" not in ran and {"building the tables", "embedding texts"} <= ran
    assert 0 < subset.num_rows < first.num_rows
