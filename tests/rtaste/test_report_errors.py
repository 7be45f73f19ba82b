"""A release that `datasets` cannot read: `scitaste rtaste report` prints its one-line error and nothing else (no
progress bar, no schema dump), and `datasets` is left as it was."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.release import example_release_dir, load_release

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


def _columns_that_do_not_match(tmp_path: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "release.parquet"
    pq.write_table(pa.table({"mve_id": ["a"], "x": [1]}), path)
    return path


def _folder_with_a_cut_file(tmp_path: Path) -> Path:
    folder = tmp_path / "release"
    shutil.copytree(example_release_dir(), folder)
    (data,) = (folder / "data").glob("*.jsonl")
    data.write_bytes(data.read_bytes()[:3000])  # cut inside a string
    return folder


@pytest.mark.parametrize("broken", [_columns_that_do_not_match, _folder_with_a_cut_file])
def test_a_broken_release_prints_one_line(tmp_path, broken):
    source = broken(tmp_path)
    done = subprocess.run([SCITASTE, "rtaste", "report", "--data", str(source)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 2
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"scitaste: error: cannot read the rTaste release {source}: ")


def test_reading_is_quiet_and_leaves_datasets_as_it_was(tmp_path, capfd):
    import datasets

    datasets.logging.set_verbosity_warning()
    datasets.enable_progress_bars()
    with pytest.raises(ScitasteError, match="cannot read the rTaste release"):
        load_release(_columns_that_do_not_match(tmp_path))
    assert load_release().records  # a good release is read quietly too
    assert capfd.readouterr().err == ""
    assert datasets.logging.get_verbosity() == datasets.logging.WARNING and datasets.is_progress_bar_enabled()
