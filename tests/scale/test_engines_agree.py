"""The DuckDB engine and the in-memory engine give the same index on the same snapshot."""

import numpy as np
import pyarrow.parquet as pq
import pytest

from scitaste_hf.progress import StageProgress
from scitaste_hf.scale.options import IndexOptions
from scitaste_hf.scale.run import index_snapshot
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.snapshot.focal import parse_focal

pytestmark = pytest.mark.slow


def _run(snapshot, out, engine, **options):
    focal = parse_focal(options.pop("focal", "all"))
    progress = StageProgress(bars=False)
    summary = index_snapshot(snapshot, out, engine, IndexOptions(focal=focal, **options), progress)
    return pq.read_table(out / "index.parquet"), summary


def _compare(a, b, *, raw_atol=1e-9):
    """Largest absolute difference of every dimension and the composite; raw values must agree to raw_atol."""
    assert a.column_names == b.column_names
    assert a.column("id").to_pylist() == b.column("id").to_pylist()
    diffs = {}
    for name in a.column_names[1:]:
        x = a.column(name).to_numpy(zero_copy_only=False).astype(float)
        y = b.column(name).to_numpy(zero_copy_only=False).astype(float)
        assert (np.isnan(x) == np.isnan(y)).all(), name
        diff = np.abs(x - y)[~np.isnan(x)]
        if name in (*DIMENSIONS, "innovation_score"):
            diffs[name] = float(diff.max())
            # Up to floating point: a difference of one rank between near-tied papers, for very few papers.
            assert (diff > 0).mean() <= 0.01, name
        else:
            assert diff.max() <= raw_atol, name
    assert a.schema.metadata == b.schema.metadata
    return diffs


def test_every_work_of_the_snapshot(snapshot, duckdb_index, tmp_path):
    duck, summary = duckdb_index("all")
    memory, _ = _run(snapshot, tmp_path / "memory", "memory")
    assert summary["papers"] == duck.num_rows == 3000 and summary["citations"] > 30_000
    assert summary["neighbours"]["method"] == "exact"
    diffs = _compare(duck, memory)
    assert max(diffs.values()) <= 0.05
    assert np.nanstd(duck.column("cd_index").to_numpy()) > 0.1  # the CD index spreads over its range


def test_a_filtered_focal_set_a_cd_window_and_parquet(snapshot, duckdb_index, tmp_path):
    duck, summary = duckdb_index("filtered")
    assert summary["focal"] == "publication_year:2005-2020,primary_topic.field.id:!26"
    memory, _ = _run(snapshot, tmp_path / "memory", "memory", focal=summary["focal"], cd_window=5 * 365)
    assert 300 < summary["papers"] < 3000 and summary["works"] == 3000
    _compare(duck, memory)


def test_approximate_neighbours_report_their_recall(snapshot, duckdb_index, tmp_path):
    exact, _ = duckdb_index("all")
    ann, summary = _run(snapshot, tmp_path / "ann", "duckdb", neighbours="ann")
    recall = summary["neighbours"]["recall"]
    assert summary["neighbours"]["method"] == "ann" and recall["sample"] == 1000 and recall["k"] == 10
    assert recall["recall_at_k"] >= 0.95 and recall["recall_at_1"] >= 0.95
    for name in ("semantic_novelty.nn_distance", "semantic_novelty.knn10_distance"):
        diff = np.abs(ann.column(name).to_numpy() - exact.column(name).to_numpy())
        assert np.median(diff) < 1e-5 and diff.max() < 0.1
    for name in ("citation_impact", "knowledge_breadth", "disruptiveness", "team_collaboration"):
        assert ann.column(name).equals(exact.column(name))


def test_bad_input_is_refused(snapshot, tmp_path):
    from scitaste_hf.errors import ScitasteError

    with pytest.raises(ScitasteError, match="selects no work"):
        _run(snapshot, tmp_path / "none", "duckdb", focal="publication_year:1800")
    ids = tmp_path / "ids.txt"
    ids.write_text("W8000000001\nW123\n")
    for engine in ("duckdb", "memory"):
        with pytest.raises(ScitasteError, match=r"1 focal id\(s\) are not in the snapshot, first: W123"):
            _run(snapshot, tmp_path / engine, engine, focal=str(ids))
