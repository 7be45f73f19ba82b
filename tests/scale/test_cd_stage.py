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


def test_the_kernel_graph_counts_under_the_memory_limit(snapshot, tmp_path, monkeypatch):
    """While the CD kernel holds the citation graph, DuckDB's limit is --memory-limit less the graph's bytes, and
    it is --memory-limit again after; a graph over the kernel's share of the limit goes to the joins."""
    seen = []
    kernel = duck.DuckIndex._cd_graph

    def recording(self, *args):
        edges = self.con.execute("SELECT COUNT(*) FROM edges").fetchall()[0][0]
        seen.append((edges, self.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]))
        return kernel(self, *args)

    monkeypatch.setattr(duck.DuckIndex, "_cd_graph", recording)
    # 40% of a 4 GB limit: the kernel runs, DuckDB keeps 2.4 GB (2.2 GiB) meanwhile.
    monkeypatch.setattr(duck, "CD_GRAPH_BYTES_PER_EDGE", 1)
    options = IndexOptions(focal=parse_focal("all"), memory_limit="4GB", neighbours="exact")
    engine = duck.DuckIndex(snapshot, tmp_path / "run", options, StageProgress(bars=False))
    try:
        tables_key, counts = engine.tables(engine.read())
        engine.features(tables_key, counts["papers"])  # as a run does, so that no result of the tables is pending
        monkeypatch.setattr(duck, "CD_GRAPH_BYTES_PER_EDGE", 1.6e9 / counts["citations"])
        engine.cd(tables_key, counts["papers"])
        (edges, during), = seen
        assert edges == counts["citations"] and during == f"{(4e9 - 1.6e9) / 2**30:.1f} GiB"
        assert engine.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0] == f"{4e9 / 2**30:.1f} GiB"
        # 80%: over the kernel's share (DUCKDB_MIN_SHARE stays DuckDB's), so the joins count.
        monkeypatch.setattr(duck, "CD_GRAPH_BYTES_PER_EDGE", 3.2e9 / counts["citations"])
        monkeypatch.setattr(duck.DuckIndex, "_cd_joins", lambda self, *args: "joins")
        assert engine.cd(tables_key, counts["papers"]) == "joins" and len(seen) == 1
    finally:
        engine.close()
