"""Test-wide settings: no test may reach the internet, and Hugging Face caches stay inside the test run."""

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

# Set before any test imports datasets/evaluate/huggingface_hub, which read these at import time.
_CACHE = tempfile.mkdtemp(prefix="scitaste-hf-tests-")
os.environ.setdefault("HF_HOME", _CACHE)
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["HF_EVALUATE_OFFLINE"] = "1"
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
os.environ.pop("HF_TOKEN", None)


@pytest.fixture()
def fake_hub(tmp_path):
    """A Hub stand-in (tests/fixtures/fake_hub.py) on 127.0.0.1: yields the environment that points
    huggingface_hub at it (with a valid token) and the folder where it writes what is committed."""
    import httpx

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "hub"
    out.mkdir()
    token = "hf_test_secret_token"
    server = subprocess.Popen([sys.executable, str(Path(__file__).parent / "fixtures" / "fake_hub.py"), str(port),
                               str(out), token])
    try:
        for _ in range(100):
            try:
                httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        yield {**os.environ, "HF_ENDPOINT": f"http://127.0.0.1:{port}", "HF_TOKEN": token, "HF_HUB_OFFLINE": "0",
               "HF_HUB_DISABLE_XET": "1"}, out
    finally:
        server.terminate()
        server.wait(timeout=10)
