"""Servers for the source-client tests: real HTTP on 127.0.0.1, in child processes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The servers are test-only code, so they live in tests/fixtures, out of the wheel; the test modules of this folder
# import them by name.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))

from replay_server import ServerProcess

RECORDED = Path(__file__).resolve().parents[2] / "scitaste_hf" / "data" / "recorded"
#: Recorded responses only tests read (a 4.8 MB page of 200 works), kept out of the wheel.
TEST_RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


@pytest.fixture(scope="session")
def recorded() -> Path:
    """The folder of recorded real responses shipped in the package for `scitaste mirror serve --world recorded`."""
    return RECORDED


@pytest.fixture(scope="session")
def replay():
    """Replays every recorded response, the package's and the tests' own; read-only, shared by the parsing tests."""
    with ServerProcess([RECORDED, TEST_RECORDED]) as server:
        yield server


@pytest.fixture(scope="module")
def _fault_server():
    with ServerProcess([RECORDED], synthetic=5) as server:
        yield server


@pytest.fixture
def faults(_fault_server):
    """The recordings plus a synthetic OpenAlex (works W1..W5, their citers and references); faults and log empty."""
    _fault_server.reset()
    return _fault_server


def _one_line(exc: BaseException) -> str:
    text = str(exc)
    assert text and "\n" not in text, text
    return text


@pytest.fixture(scope="session")
def one_line():
    """Checks that an error's message is one non-empty line, and returns it."""
    return _one_line
