"""The About tab's statements that rest on a board's figures are the board's own (issue 35, item 10: it said the
constant floor "earns a Scheme-2 grade C" while the same board showed it at 37.8, grade E)."""

import runpy

import pytest

from scitaste_hf.leaderboard.service import FLOOR_NAMES
from scitaste_hf.leaderboard.setup import open_leaderboard
from scitaste_hf.resources import bundled_dir


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
