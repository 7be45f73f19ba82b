"""The metric Spaces' app.py, run as real Gradio servers on 127.0.0.1 and called through gradio_client."""

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scitaste_hf.metric_app import example_inputs, read_inputs

ROOT = Path(__file__).resolve().parents[2]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module", params=["scitaste_wape", "scitaste_scheme1"])
def space(request, tmp_path_factory):
    import httpx

    port = _free_port()
    env = {**os.environ, "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": str(port)}
    log = tmp_path_factory.mktemp("space") / "log.txt"
    with open(log, "w") as fh:
        proc = subprocess.Popen([sys.executable, "app.py"], cwd=ROOT / "metrics" / request.param, env=env,
                                stdout=fh, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"app exited: {log.read_text()[-2000:]}")
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.3)
    else:
        proc.kill()
        pytest.fail(f"app did not start: {log.read_text()[-2000:]}")
    yield request.param, url
    proc.terminate()
    proc.wait(timeout=20)


def test_space_computes_the_example(space):
    from gradio_client import Client

    name, url = space
    client = Client(url, verbose=False)
    result = client.predict(json.dumps(example_inputs(name)), None, api_name="/compute")
    expected = {"scitaste_wape": ("wape", "score", "grade"), "scitaste_scheme1": ("scheme1", "part_a", "part_b")}
    for key in expected[name]:
        assert result[key] is not None
    assert result["n_scored"] == result["n_total"] == 6


def test_space_reports_bad_input_as_one_line(space):
    from gradio_client import Client
    from gradio_client.exceptions import AppError

    _, url = space
    client = Client(url, verbose=False)
    with pytest.raises(AppError, match="not valid JSON"):
        client.predict("{broken", None, api_name="/compute")


def test_read_inputs_from_upload(tmp_path):
    upload = tmp_path / "pairs.jsonl"
    upload.write_text('{"prediction": 40.0, "reference": 50.0}\n{"prediction": null, "reference": 20.0}\n')
    assert read_inputs(None, str(upload)) == {"predictions": [40.0, None], "references": [50.0, 20.0]}
    upload.write_text('{"prediction": 40.0}\n')
    with pytest.raises(ValueError, match="needs 'prediction' and 'reference'"):
        read_inputs(None, str(upload))
    with pytest.raises(ValueError, match=r'must be a JSON object \{"predictions"'):
        read_inputs("[1, 2]", None)
