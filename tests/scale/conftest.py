"""The small simulated snapshot the scale tests share, written once per test run."""

from pathlib import Path

import pytest

from scitaste_hf.snapshot.writer import write_snapshot


@pytest.fixture(scope="session")
def snapshot(once):
    """A 3,000-work snapshot (seed 3) in both formats, 700 records a data file; shared by every worker, read-only."""

    def make(folder):
        write_snapshot(folder / "snapshot", 3000, seed=3, parquet=True, part_records=700)
        return str(folder / "snapshot")

    return Path(once("scale-snapshot", make))
