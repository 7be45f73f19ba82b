"""A leaderboard Space started with `scitaste space` on 127.0.0.1, shared by the tests of this folder."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_space(data_dir: Path, log: Path, extra_env: dict | None = None):
    """Start `scitaste space` and wait until it answers; returns (process, url)."""
    import httpx

    port = free_port()
    env = {**os.environ, **(extra_env or {})}
    with open(log, "w") as fh:
        proc = subprocess.Popen([SCITASTE, "space", "--data", str(data_dir), "--port", str(port)], env=env,
                                stdout=fh, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"space exited: {log.read_text()[-3000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.3)
    proc.kill()
    raise RuntimeError(f"space did not start: {log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    data = tmp_path_factory.mktemp("space-data")
    proc, url = start_space(data, data / "log.txt", {"SCITASTE_SUBMIT_LIMIT": "100"})
    yield url, data
    proc.terminate()
    proc.wait(timeout=20)


@pytest.fixture()
def space_starter():
    """`start_space` as a fixture, for tests that need a Space with their own settings."""
    return start_space
