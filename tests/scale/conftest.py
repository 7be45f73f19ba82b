"""Small simulated snapshots shared by the tests of one file (each file runs on one worker)."""

import pytest

from scitaste_hf.snapshot.writer import write_snapshot


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    """A 3,000-work snapshot (seed 3) in both formats, 700 records a data file."""
    root = tmp_path_factory.mktemp("snapshot")
    write_snapshot(root, 3000, seed=3, parquet=True, part_records=700)
    return root
