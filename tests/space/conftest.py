"""A leaderboard Space started with `scitaste space` on 127.0.0.1, shared by the tests of this folder."""

import sys
from pathlib import Path

import pytest

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


@pytest.fixture(scope="session")
def space_starter(servers):
    """Start `scitaste space --data DIR` with extra environment; returns (process, url)."""
    start, _ = servers

    def start_space(data_dir: Path, log: Path, extra_env: dict | None = None):
        return start([SCITASTE, "space", "--data", str(data_dir), "--port", "{port}"], log=log, env=extra_env)

    return start_space


@pytest.fixture(scope="module")
def space(tmp_path_factory, space_starter, servers):
    data = tmp_path_factory.mktemp("space-data")
    proc, url = space_starter(data, data / "log.txt", {"SCITASTE_SUBMIT_LIMIT": "100"})
    yield url, data
    servers[1](proc)
