"""A leaderboard Space started with `scitaste space` on 127.0.0.1, and headless Chromium (Debian's `chromium`,
which `.ci/run` installs where it is missing), shared by the tests of this folder."""

import shutil
import sys
from pathlib import Path

import pytest

SCITASTE = str(Path(sys.executable).with_name("scitaste"))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
#: Headless, and nothing that calls Google: on a closed network those connections are refused many at a time.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


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


@pytest.fixture(scope="module")
def chromium(tmp_path_factory):
    """A headless Chromium context with a fresh profile of its own; the test is skipped without Chromium (ask for
    this fixture before the Space's, so that no Space is started for nothing)."""
    if CHROMIUM is None:
        pytest.skip("needs Debian's chromium package (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # A persistent context, to give Chromium a fresh profile folder of the test's own.
        context = p.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=CHROMIUM, headless=True,
            args=CHROMIUM_ARGS, viewport={"width": 1500, "height": 1000})
        try:
            yield context
        finally:
            context.close()
