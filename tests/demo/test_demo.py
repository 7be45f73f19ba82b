"""`scitaste demo` end to end at a small size: world -> dataset -> evidence -> every mode -> leaderboard, a second
run that reuses everything, and the Space showing a baseline run of each mode."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scitaste_hf.modes import MODES

pytestmark = pytest.mark.slow

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


def test_demo_then_space(tmp_path, servers):
    out = tmp_path / "demo"
    first = subprocess.run([SCITASTE, "demo", "--out", str(out), "--papers", "300"], capture_output=True, text=True,
                           timeout=600)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    for name in ("dataset/README.md", "dataset/tool_evidence/README.md", "leaderboard.sqlite", "traces.jsonl"):
        assert (out / name).exists(), name
    assert len(list((out / "lm_eval").rglob("results_*.json"))) == 1
    assert sorted(p.stem for p in (out / "predictions").glob("*.jsonl")) == sorted(MODES)
    second = subprocess.run([SCITASTE, "demo", "--out", str(out), "--papers", "300"], capture_output=True, text=True,
                            timeout=600)
    assert second.returncode == 0 and second.stdout.count("reusing") == 3
    assert "starting the mirror" not in second.stdout

    from gradio_client import Client

    start, stop = servers
    proc, url = start([SCITASTE, "space", "--data", str(out), "--port", "{port}"], log=tmp_path / "space.log")
    try:
        table = Client(url, verbose=False).predict(api_name="/leaderboard")
    finally:
        stop(proc)
    rows = [dict(zip(table["headers"], row)) for row in table["data"]]
    assert sorted(r["mode"] for r in rows) == sorted(MODES)
    assert all(r["kind"] == "baseline" and r["status"] == "evidence-consistent" for r in rows)
    n = json.loads((out / "dataset" / "README.md").read_text().split("num_examples: ")[1].split()[0])
    assert all(r["coverage"] == f"{n}/{n}" for r in rows)


def test_demo_refuses_too_small_worlds(tmp_path):
    proc = subprocess.run([SCITASTE, "demo", "--out", str(tmp_path / "d"), "--papers", "50"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("scitaste: error: --papers must be at least 300")
