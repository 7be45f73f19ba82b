"""`scitaste demo` end to end at a small size: world -> dataset -> evidence -> every mode -> leaderboard, a second
run that reuses everything, the Space showing a baseline run of each mode, and `scitaste report` on the demo's runs
giving the board's scores."""

import json
import sqlite3
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

    from suite_http import space_client

    start, stop = servers
    proc, url = start([SCITASTE, "space", "--data", str(out), "--port", "{port}"], log=tmp_path / "space.log")
    try:
        table = space_client(url).predict(api_name="/leaderboard")
    finally:
        stop(proc)
    rows = [dict(zip(table["headers"], row)) for row in table["data"]]
    assert sorted(r["mode"] for r in rows) == sorted(MODES)
    assert all(r["kind"] == "baseline" and r["status"] == "evidence-consistent" for r in rows)
    n = json.loads((out / "dataset" / "README.md").read_text().split("num_examples: ")[1].split()[0])
    assert all(r["coverage"] == f"{n}/{n}" for r in rows)

    # the report of the demo's runs: every run's Scheme 1 and Scheme 2 (score, interval, grade) and coverage, overall
    # and per discipline, are the board's stored ones
    from scitaste_hf.cli import main

    runs = [f"mode={m},path={out / 'predictions' / f'{m}.jsonl'}" for m in MODES]
    assert main(["report", "--gold", str(out / "dataset"), "--model", "scitaste-baseline", *runs,
                 "--out", str(tmp_path / "report")]) == 0
    report = {r["mode"]: r["scopes"] for r in json.loads((tmp_path / "report" / "report.json").read_text())["runs"]}
    with sqlite3.connect(f"file:{out / 'leaderboard.sqlite'}?mode=ro", uri=True) as db:
        stored = {mode: json.loads(result) for mode, result in db.execute("SELECT mode, result FROM runs")}
    assert sorted(report) == sorted(stored) == sorted(MODES)
    for mode, result in stored.items():
        scopes = {"overall": result["overall"], **result["by_discipline"]}
        assert sorted(report[mode]) == sorted(scopes), mode
        for scope, board in scopes.items():
            shown, s1, s2 = report[mode][scope], board["scheme1"], board["scheme2"]
            assert shown["coverage"] == board["coverage"], (mode, scope)
            assert (shown["scheme1"]["score"], shown["scheme1"]["ci"], shown["scheme1"]["grade"]) == (
                s1["scheme1"], s1["ci"]["scheme1"], s1["grade"]), (mode, scope)
            assert (shown["scheme2"]["score"], shown["scheme2"]["ci"], shown["scheme2"]["grade"]) == (
                s2["score"], s2["ci"]["score"], s2["grade"]), (mode, scope)


def test_demo_refuses_too_small_worlds(tmp_path):
    proc = subprocess.run([SCITASTE, "demo", "--out", str(tmp_path / "d"), "--papers", "50"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("scitaste: error: --papers must be at least 300")
