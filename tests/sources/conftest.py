"""Servers for the source-client tests: real HTTP on 127.0.0.1, in child processes."""

from __future__ import annotations

import pytest

from sources_helpers import RECORDED

from scitaste_hf.sources.testing import ServerProcess



@pytest.fixture(scope="session")
def replay():
    """Replays every recorded response; read-only, shared by the parsing tests."""
    with ServerProcess([RECORDED]) as server:
        yield server


@pytest.fixture(scope="module")
def _fault_server():
    with ServerProcess(synthetic=5) as server:
        yield server


@pytest.fixture
def faults(_fault_server):
    """A synthetic OpenAlex (works W1..W5 and their citers/references) with an empty fault queue and log."""
    _fault_server.reset()
    return _fault_server
