"""Scheme 2 (WAPE) against docs/scoring.md#scheme-2 and the paper's figures."""

import math

import numpy as np
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import WAPE_BANDS
from scitaste_hf.scoring import wape, wape_grade, wape_score


def test_paper_physics_cell():
    # Table 9: WAPE 13.1% scores 70.4 (grade C); the docs fix the unrounded value 70.35.
    assert wape_score(0.131) == pytest.approx(70.35, abs=1e-9)
    assert wape_grade(0.131) == "C"


@pytest.mark.parametrize(
    ("w", "score", "grade"),
    [(0.0, 100.0, "A"), (0.049, 90.2, "A"), (0.05, 90.0, "B"), (0.075, 82.5, "B"), (0.10, 75.0, "C"),
     (0.20, 60.0, "D"), (0.25, 50.0, "D"), (0.30, 40.0, "E"), (0.40, 30.0, "E"), (0.50, 20.0, "F"),
     (0.75, 10.0, "F"), (1.0, 0.0, "F"), (1.3, 0.0, "F"), (7.0, 0.0, "F")],
)
def test_bands(w, score, grade):
    assert wape_score(w) == pytest.approx(score, abs=1e-9)
    assert wape_grade(w) == grade


def test_band_edges_are_continuous_and_half_open():
    for band in WAPE_BANDS:
        below, at = band.low - 1e-12, band.low
        if band.low > 0:
            assert wape_score(below) == pytest.approx(band.score_at_low, abs=1e-6)
        assert wape_score(at) == pytest.approx(band.score_at_low)
        assert wape_grade(at) == band.grade
        assert wape_grade(band.high - 1e-12) == band.grade


def test_scheme2_grades_quoted_in_paper():
    # Scheme-2 39.2 is grade E and 44.0 is grade D (paper section 7): invert the score to a WAPE.
    edges = np.linspace(0, 1, 100001)
    for score, grade in ((39.2, "E"), (44.0, "D")):
        w = edges[np.argmin(np.abs([wape_score(x) - score for x in edges[::10]])) * 10]
        assert wape_grade(w) == grade


def test_wape_value_and_symmetry():
    assert wape([50, 40, 30], [50, 50, 20]) == pytest.approx(20 / 120)
    assert wape([10, 20], [10, 20]) == 0.0


@pytest.mark.parametrize(
    ("p", "g", "message"),
    [([1, 2], [1, 2, 3], "differ in length"), ([], [], "empty"), ([float("nan")], [10], "NaN"),
     ([float("inf")], [10], "NaN or infinite"), ([101], [10], "outside 0-100"), ([-1], [10], "outside 0-100"),
     ([5, 5], [0, 0], "sum to 0"), (["a"], [1], "must be numbers")],
)
def test_bad_input(p, g, message):
    with pytest.raises(ScitasteError, match=message):
        wape(p, g)


@pytest.mark.parametrize("w", [-0.1, math.nan, math.inf])
def test_bad_wape_value(w):
    with pytest.raises(ScitasteError, match="finite fraction"):
        wape_score(w)
    with pytest.raises(ScitasteError, match="finite fraction"):
        wape_grade(w)
