"""The DuckDB engine's CD stage counts alike with the in-memory kernel and with the joins."""

import numpy as np
import pyarrow.parquet as pq
import pytest

from scitaste_hf.progress import StageProgress
from scitaste_hf.scale import duck
from scitaste_hf.scale.options import IndexOptions
from scitaste_hf.scale.run import index_snapshot
from scitaste_hf.snapshot.focal import parse_focal


@pytest.mark.parametrize(("focal", "window"), [("all", None), ("publication_year:2005-2020", 3 * 365)])
def test_kernel_and_joins_count_alike(snapshot, tmp_path, monkeypatch, focal, window):
    def run(out):
        progress = StageProgress(bars=False)
        index_snapshot(snapshot, out, "duckdb", IndexOptions(focal=parse_focal(focal), cd_window=window), progress)
        return pq.read_table(out / "index.parquet"), set(progress.times)

    graph, ran = run(tmp_path / "graph")
    assert "CD index (citation graph)" in ran
    monkeypatch.setattr(duck, "CD_GRAPH_BYTES_PER_EDGE", 10**12)
    monkeypatch.setattr(duck, "CD_BLOCK_PATHS", 20_000)
    joins, ran = run(tmp_path / "joins")
    assert "CD index (joins)" in ran and len(list((tmp_path / "joins" / "stages" / "cd").glob("block_*"))) > 2
    counts = {name: graph.column(name).to_numpy() for name in ("n_i", "n_j", "n_k")}
    assert counts["n_k"].sum() > 10 * counts["n_i"].sum() > 0 and counts["n_j"].sum() > 0
    for name in ("n_i", "n_j", "n_k", "cd_index", "disruptiveness"):
        np.testing.assert_array_equal(graph.column(name).to_numpy(), joins.column(name).to_numpy())
