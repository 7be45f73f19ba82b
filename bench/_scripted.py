"""The scripted OpenAI-compatible server of tests/fixtures/scripted_chat.py, started for a bench script."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def scripted_server(script: Path, log: Path) -> Iterator[str]:
    """Serve ``script`` on a port of 127.0.0.1, logging each request to ``log``; yield the base URL (``.../v1``).

    The port is picked from the clock (a bench runs alone); the server is waited for for at most 10 s and stopped on
    exit."""
    port = 18000 + int(time.time()) % 1000
    server = subprocess.Popen([sys.executable, str(ROOT / "tests" / "fixtures" / "scripted_chat.py"), str(port),
                               str(script), str(log)])
    try:
        for _ in range(100):
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            raise SystemExit(f"the scripted server did not answer on port {port} within 10 s")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.terminate()
        server.wait()
