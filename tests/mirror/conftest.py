"""A mirror over a small simulated world, served by `scitaste mirror serve` on 127.0.0.1."""

import sys
from pathlib import Path

import pytest

from scitaste_hf.simworld.world import generate

SCITASTE = str(Path(sys.executable).with_name("scitaste"))
PAPERS, SEED = 470, 5


@pytest.fixture(scope="session")
def world():
    """The same world the mirror builds (same papers and seed), for the expected values."""
    return generate(PAPERS, SEED)


@pytest.fixture(scope="session")
def mirror(servers, tmp_path_factory):
    start, stop = servers
    log = tmp_path_factory.mktemp("mirror") / "log.txt"
    proc, url = start([SCITASTE, "mirror", "serve", "--papers", str(PAPERS), "--seed", str(SEED), "--port", "{port}"],
                      log=log, ready="/health")
    yield url.rstrip("/")
    stop(proc)
