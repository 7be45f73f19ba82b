"""The app's views that rest on the board's figures follow the board (issue 35): the About tab's floor sentence (it
said the constant floor "earns a Scheme-2 grade C" while the same board showed it at 37.8, grade E), the heatmap
(built once at start-up, stale after a submission) and Compare's default pair (two runs of identical answers)."""

import json
import runpy

import pytest

from scitaste_hf.leaderboard.service import FLOOR_NAMES
from scitaste_hf.leaderboard.setup import open_leaderboard
from scitaste_hf.resources import bundled_dir

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def app():
    return runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="test")


def test_the_floor_sentence_is_the_floor_rows_figure(app, tmp_path):
    board, _ = open_leaderboard(tmp_path)
    [constant] = [f for f in board.floors() if f["model"] == FLOOR_NAMES["constant"]]
    text = app["about"](board.scopes[1:], constant)
    assert (f"Yet on this board's papers the constant floor earns a Scheme-2 of {constant['scheme2']:.1f}, grade "
            f"{constant['scheme2_grade']} (WAPE {100 * constant['wape']:.1f}%)") in text
    assert "grade C:" not in text.replace(f"grade {constant['scheme2_grade']} (", "")
    shown = {**constant, "scheme2": 37.84, "scheme2_grade": "E", "wape": 0.2712}
    assert "earns a Scheme-2 of 37.8, grade E (WAPE 27.1%)" in app["about"](board.scopes[1:], shown)
    board.close()


def test_the_heatmap_is_drawn_again_on_every_visit_and_after_each_submission(app, tmp_path, monkeypatch):
    monkeypatch.delenv("SYSTEM", raising=False)
    board, _ = open_leaderboard(tmp_path)
    demo = app["build_app"](board)
    [heat] = [b for b in demo.blocks.values() if type(b).__name__ == "Plot"
              and getattr(b, "label", None) is None]
    refreshes = [d for d in demo.config["dependencies"] if heat._id in d["outputs"]
                 and any(t[1] in ("load", "then") for t in d["targets"])]
    assert {t[1] for d in refreshes for t in d["targets"]} == {"load", "then"}
    board.close()


def test_compare_preselects_two_runs_whose_answers_differ(app, tmp_path):
    from importlib import resources

    board, _ = open_leaderboard(tmp_path)  # the example run, in dimagent_v3
    example = resources.files("scitaste_hf").joinpath("data/examples/predictions.jsonl").read_bytes()
    board.submit(example, "same answers", "pure_qa", submitter="u")  # identical answers, another mode
    lines = example.decode().splitlines()
    for i, line in enumerate(lines[:50]):  # another answer on 50 papers
        record = json.loads(line)
        if isinstance(record.get("innovation_score"), int | float):
            record["innovation_score"] = 100 - record["innovation_score"]
            lines[i] = json.dumps(record)
    board.submit(("\n".join(lines) + "\n").encode(), "different answers", "native_search", submitter="u")
    ranked = [r["run"] for r in board.rows()]

    def difference(a, b):
        return board.compare(a, b, n_resamples=50)["overall"]["scheme1"]["difference"]

    assert difference(ranked[0], ranked[1]) == 0  # the first two of the order: the same answers
    first, second = app["default_pair"](board)
    assert first == ranked[0] and difference(first, second) != 0
    board.close()
