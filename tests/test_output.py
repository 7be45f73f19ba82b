"""Atomic output files: whole or absent, and with the permissions a plain open() would give."""

import os
import stat

import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.output import write_bytes_atomic, write_json_atomic


def test_atomic_files_get_the_umask_not_the_temporary_files_0600(tmp_path):
    old = os.umask(0o022)
    try:
        path = write_bytes_atomic(tmp_path / "a.bin", b"x")
        write_json_atomic(tmp_path / "b.json", {"a": 1})
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert stat.S_IMODE((tmp_path / "b.json").stat().st_mode) == 0o644
    assert [p.name for p in sorted(tmp_path.iterdir())] == ["a.bin", "b.json"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.json"
    target.write_text('{"old": true}')
    with pytest.raises(ValueError):
        write_json_atomic(target, {"x": float("nan")})
    assert target.read_text() == '{"old": true}' and [p.name for p in tmp_path.iterdir()] == ["out.json"]
    with pytest.raises(ScitasteError, match="is a folder"):
        write_json_atomic(tmp_path, {})
