"""A ten-discipline release end to end (issue 20, item 2): the mirror's simulated world and the build both on
the packaged extended taxonomy, then every per-discipline view of it (the build's summary and card, `scitaste
score`, the lm-eval tasks' metrics, the Space's leaderboard, heatmap and About tab) lists the ten."""

import json
import os
import runpy
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from scitaste_hf.records import load_records
from scitaste_hf.schema import DIMENSIONS, DISCIPLINES
from scitaste_hf.taxonomy import load_taxonomy

pytestmark = pytest.mark.slow

SCITASTE = str(Path(sys.executable).with_name("scitaste"))
EXTENDED = load_taxonomy("extended")
#: 50 papers per discipline, 10 of them selected: the smallest size at which every one of the 78 cells is full.
PAPERS, PER_DISCIPLINE, SELECTED = 500, 50, 10


@pytest.fixture(scope="module")
def release(servers, tmp_path_factory):
    start, stop = servers
    folder = tmp_path_factory.mktemp("extended")
    proc, url = start([SCITASTE, "mirror", "serve", "--taxonomy", "extended", "--papers", str(PAPERS), "--seed", "5",
                       "--port", "{port}"], log=folder / "mirror.txt", ready="/health")
    try:
        done = subprocess.run([SCITASTE, "build", "--source", "mirror", "--mirror-url", url.rstrip("/"), "--out",
                               str(folder / "ds"), "--seed", "3", "--taxonomy", "extended", "--per-discipline",
                               str(PER_DISCIPLINE), "--selected-per-discipline", str(SELECTED)],
                              capture_output=True, text=True, timeout=300)
    finally:
        stop(proc)
    assert done.returncode == 0, done.stderr[-3000:]
    return folder / "ds", done.stdout


def test_ten_disciplines_fill_both_splits_with_every_sub_discipline_selected(release):
    folder, summary = release
    selected, backup = load_records(folder, "selected"), load_records(folder, "backup")
    ten = EXTENDED.names
    assert len(ten) == 10 and ten[:6] == DISCIPLINES
    assert Counter(r["discipline"] for r in selected) == dict.fromkeys(ten, SELECTED)
    assert Counter(r["discipline"] for r in backup) == dict.fromkeys(ten, PER_DISCIPLINE - SELECTED)
    assert {r["subcategory_id"] for r in selected} == {c.id for c in EXTENDED.cells}
    codes = {r["bibcode"].split(".")[1] for r in selected if r["discipline"] == "earth_science"}
    assert codes == {"EART"}
    # The summary's discipline table, in the taxonomy's order.
    rows = [line.split("│")[1].strip() for line in summary.splitlines() if line.count("│") == 4]
    assert [r for r in rows if r in ten] == list(ten)
    card = (folder / "README.md").read_text("utf-8")
    assert "from one of ten disciplines" in card and "the other nine disciplines from OpenAlex" in card
    assert "10 disciplines, 78 sub-disciplines" in card


def _answers(records, off=lambda i: 0.0):
    """Each record's gold scores as an answer, moved by ``off(i)`` points (clipped to 0-100)."""
    def move(i, v):
        return min(100.0, max(0.0, v + off(i)))
    return [{"bibcode": r["bibcode"], "innovation_score": move(i, r["innovation_score"]),
             "dimension_scores": {k: move(i, r["dimension_scores"][k]) for k in DIMENSIONS}}
            for i, r in enumerate(records)]


def test_score_tasks_and_space_list_the_ten(release, tmp_path):
    folder, _ = release
    ten = list(EXTENDED.names)
    predictions = tmp_path / "predictions.jsonl"
    predictions.write_text("".join(json.dumps(p) + "\n" for p in _answers(load_records(folder))))
    out = tmp_path / "score.json"
    done = subprocess.run([SCITASTE, "score", "--predictions", str(predictions), "--gold", str(folder), "--json",
                           str(out), "--n-resamples", "50"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "400"})  # one table, a row per scope, to read back
    assert done.returncode == 0, done.stderr[-3000:]
    scored = json.loads(out.read_text())
    assert list(scored["by_discipline"]) == ten
    assert all(block["scheme2"]["score"] == 100 for block in scored["by_discipline"].values())
    scopes = [line.split("│")[1].strip() for line in done.stdout.splitlines() if line.startswith("│")]
    assert scopes == ["overall", *ten]

    from scitaste_hf.adapters.lmeval.tasks import aggregations, process_results

    gold = load_records(folder)
    items = [process_results(r, [json.dumps(p)])["scheme2"] for r, p in zip(gold, _answers(gold))]
    assert all(aggregations(ten)[f"scheme2_{d}"](items) == 100 for d in ten)

    from scitaste_hf.leaderboard import Leaderboard
    from scitaste_hf.resources import bundled_dir

    # A perfect run is flagged as a copy of the gold labels (and left off the board): this one is 8 points off.
    noisy = "".join(json.dumps(p) + "\n" for p in _answers(gold, lambda i: 8.0 if i % 2 else -8.0)).encode()
    board = Leaderboard(tmp_path / "lb", gold, backup=load_records(folder, "backup"), rate_limit=(1000, 3600))
    try:
        board.submit(noisy, "near-oracle", "pure_qa", submitter="u")
        assert board.scopes == ("overall", *ten)
        assert all(50 < board.rows(mode="pure_qa", discipline=d)[0]["scheme2"] < 100 for d in ten)
        app = runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="test")
        figure = app["heatmap"](board, "pure_qa")
        assert [t.get_text() for t in figure.axes[0].get_xticklabels()] == ten
        assert ", ".join(ten[:-1]) + " and social_sciences" in app["about"](board.scopes[1:])
    finally:
        board.close()
