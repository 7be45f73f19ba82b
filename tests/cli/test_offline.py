"""Commands that need the Hub, with the Hub out of reach: one line each, within a bounded time."""

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCITASTE = str(Path(sys.executable).with_name("scitaste"))
EXAMPLES = ROOT / "scitaste_hf" / "data" / "examples"


@pytest.fixture()
def silent_hub():
    """A Hub endpoint on 127.0.0.1 that accepts connections and never answers (a network black hole)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held, done = [], threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not done.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    done.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


COMMANDS = {
    "score": ["score", "--predictions", str(EXAMPLES / "predictions.jsonl"), "--gold", "org/some-benchmark"],
    "eval": ["eval", "--model", "scitaste-baseline", "--tasks", "scitaste_pure_qa"],
    "publish": ["publish", "metrics", "--org", "org"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("hub", ["silent", "offline"])
def test_an_unreachable_hub_is_one_line(command, hub, silent_hub, tmp_path):
    env = {**os.environ, "HF_ENDPOINT": silent_hub, "HF_HUB_OFFLINE": "1" if hub == "offline" else "0",
           "HF_TOKEN": "hf_test_token", "HF_HOME": str(tmp_path / "hf")}
    env.pop("SCITASTE_DATA_DIR", None)
    started = time.monotonic()
    run = subprocess.run([SCITASTE, *COMMANDS[command]], capture_output=True, text=True, timeout=120, env=env,
                         cwd=tmp_path)
    elapsed = time.monotonic() - started
    assert run.returncode == 2, run.stderr[-2000:]
    assert run.stderr.strip().count("\n") == 0, run.stderr[-2000:]
    expected = "HF_HUB_OFFLINE is set" if hub == "offline" else f"cannot reach the Hugging Face Hub at {silent_hub}"
    assert expected in run.stderr
    assert elapsed < 30  # a bound, not a benchmark: the Hub's own retries took 24-40 s and ended in a traceback
