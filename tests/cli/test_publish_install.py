"""Opt-in (``pytest -m hub_install``, minutes: pip downloads the dependencies from PyPI): the Spaces that
`scitaste publish` pushes build and run where they are pushed.

Each Space is pushed to a Hub stand-in on 127.0.0.1 that also serves what it received at the Hub's download URL,
then built the way the Hub builds a Gradio Space: a fresh virtual environment, pip on requirements.txt alone (the
Space's files are copied in only afterwards) from an empty folder, with the Gradio of the card's sdk_version and
no path back to this checkout. The leaderboard then runs as ``python app.py`` and answers ``/leaderboard`` and
``/submit`` through gradio_client; every metric Space's folder computes with ``evaluate.load``.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

import pytest

pytestmark = [pytest.mark.hub_install, pytest.mark.timeout(3600)]

ROOT = Path(__file__).resolve().parents[2]
SCITASTE = str(Path(sys.executable).with_name("scitaste"))
#: The environment of everything run in a Space's virtual environment: nothing that leads back to this checkout.
_CLEAN = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """The Hub stand-in of tests/fixtures/fake_hub.py, which also answers GET .../resolve/main/PATH with what was
    pushed, as the Hub does (a Space's build fetches its wheel there). Yields (url, out folder, token)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("fake_hub", ROOT / "tests" / "fixtures" / "fake_hub.py")
    fake_hub = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fake_hub)
    out, token = tmp_path_factory.mktemp("hub"), "hf_test_install_token"

    class Handler(fake_hub.make_handler(out, token)):
        def do_GET(self):
            parts = self.path.split("?")[0].strip("/").split("/")
            if len(parts) > 5 and parts[0] == "spaces" and parts[3:5] == ["resolve", "main"]:
                path = out / parts[1] / parts[2] / "/".join(parts[5:])
                if path.is_file():
                    data = path.read_bytes()
                    self.send_response(200)
                    self.send_header("Content-Type", "application/octet-stream")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                    return None
            return super().do_GET()

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}", out, token
    server.shutdown()


def _publish(hub, *args: str) -> None:
    url, _, token = hub
    env = {**os.environ, "HF_ENDPOINT": url, "HF_TOKEN": token, "HF_HUB_OFFLINE": "0", "HF_HUB_DISABLE_XET": "1"}
    proc = subprocess.run([SCITASTE, "publish", *args], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr


def _build_space(pushed: Path, tmp: Path, name: str) -> tuple[Path, Path]:
    """Build the pushed Space as the Hub does; returns (the venv's python, the app folder)."""
    start = time.monotonic()
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=_CLEAN, timeout=300)
    python = venv / "bin" / "python"
    mount, app = tmp / "mount", tmp / name
    mount.mkdir()
    app.mkdir()
    shutil.copyfile(pushed / "requirements.txt", mount / "requirements.txt")
    sdk = re.search(r"^sdk_version: *(\S+)$", (pushed / "README.md").read_text(), re.MULTILINE).group(1)
    pip = subprocess.run([str(python), "-m", "pip", "install", "--no-input", "-r", str(mount / "requirements.txt"),
                          f"gradio=={sdk}"], cwd=app, env=_CLEAN, capture_output=True, text=True, timeout=2400)
    assert pip.returncode == 0, pip.stdout[-4000:] + pip.stderr[-4000:]
    shutil.copytree(pushed, app, dirs_exist_ok=True)
    where = subprocess.run([str(python), "-c", "import scitaste_hf, scitaste_hf.builder; print(scitaste_hf.__file__); "
                            "print(scitaste_hf.builder.__file__)"], cwd=tmp, env=_CLEAN, capture_output=True, text=True,
                           timeout=120)
    assert where.returncode == 0, where.stderr
    for path in where.stdout.split():
        assert Path(path).is_relative_to(venv) and not Path(path).is_relative_to(ROOT), path
    print(f"\n{name}: venv + pip install of the pushed requirements.txt took {time.monotonic() - start:.0f} s")
    return python, app


def _answers(gold):
    """Honest-looking answers: the labels plus errors of SD 5 (a shifted copy would be flagged, not ranked)."""
    import numpy as np

    rng = np.random.default_rng(3)

    def noisy(x):
        return float(np.clip(x + rng.normal(0, 5), 0, 100).round(1))

    return [{"bibcode": r["bibcode"], "innovation_score": noisy(r["innovation_score"]),
             "dimension_scores": {k: noisy(v) for k, v in r["dimension_scores"].items()}} for r in gold]


def test_the_leaderboard_space_builds_and_serves(hub, servers, tmp_path):
    from gradio_client import handle_file
    from suite_http import space_client

    from scitaste_hf.records import load_records

    _publish(hub, "space", "--repo-id", "test-org/board")
    python, app = _build_space(hub[1] / "test-org" / "board", tmp_path, "board")
    start, stop = servers
    proc, url = start([str(python), "app.py"], log=tmp_path / "space.log", cwd=app, timeout=300,
                      env={"PYTHONPATH": "", "HF_HUB_OFFLINE": "1", "SCITASTE_DATA": str(tmp_path / "store")})
    try:
        client = space_client(url)
        table = client.predict("all", "overall", "all", "all", False, api_name="/leaderboard")
        rows = [dict(zip(table["headers"], row)) for row in table["data"]]
        assert [r["model"] for r in rows] == ["synthetic-example-model"]
        upload = tmp_path / "answers.jsonl"
        gold = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")
        upload.write_text("".join(json.dumps(a) + "\n" for a in _answers(gold)))
        message = client.predict(handle_file(str(upload)), "Model-Installed", "pure_qa", "Lab", "", api_name="/submit")
        assert message.startswith("Accepted: scored as run #"), message
        table = client.predict("all", "overall", "all", "all", False, api_name="/leaderboard")
        assert "Model-Installed" in [dict(zip(table["headers"], row))["model"] for row in table["data"]]
    finally:
        stop(proc)


def test_the_metric_spaces_build_and_compute(hub, tmp_path):
    from scitaste_hf.resources import metric_names

    _publish(hub, "metrics", "--org", "test-org")
    pushed = {name: hub[1] / "test-org" / name for name in metric_names()}
    # One build stands for all: their requirements differ only in the Space the wheel is fetched from.
    wanted = (pushed["scitaste_wape"] / "requirements.txt").read_text()
    for name, folder in pushed.items():
        assert (folder / "requirements.txt").read_text().replace(f"/{name}/", "/scitaste_wape/") == wanted
    python, app = _build_space(pushed["scitaste_wape"], tmp_path, "scitaste_wape")
    folders = [app] + [shutil.copytree(folder, tmp_path / name) for name, folder in pushed.items()
                       if name != "scitaste_wape"]
    script = """
import json, runpy, sys
from pathlib import Path

import evaluate

from scitaste_hf.adapters.metrics.app import example_inputs

for folder in sys.argv[1:]:
    name = Path(folder).name
    result = evaluate.load(folder).compute(**example_inputs(name))
    demo = runpy.run_path(str(Path(folder) / "app.py"))["demo"]  # the Space's app builds (not launched)
    print(json.dumps({"name": name, "keys": sorted(result), "app": type(demo).__name__}))
"""
    proc = subprocess.run([str(python), "-c", script, *map(str, folders)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=600, env={**_CLEAN, "HF_HUB_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    results = {r["name"]: r for r in map(json.loads, proc.stdout.splitlines())}
    assert set(results) == set(metric_names()) and {r["app"] for r in results.values()} == {"Blocks"}
    assert {"wape", "score", "coverage"} <= set(results["scitaste_wape"]["keys"])
