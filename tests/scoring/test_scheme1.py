"""Scheme 1 against docs/scoring.md#scheme-1, checked by an independent scipy computation."""

import numpy as np
import pytest
from scipy import stats

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.scoring import scheme1, scheme1_grade
from scitaste_hf.weights import DEFAULT_WEIGHTS


def _answers(matrix):
    return [{"innovation_score": row[0], "dimension_scores": dict(zip(DIMENSIONS, row[1:]))} for row in matrix]


def _reference_scheme1(P, G, w):
    """docs/scoring.md#scheme-1 written out directly with scipy, item by item."""

    def ratio(err, scale):
        return (100.0 if err == 0 else 0.0) if scale == 0 else 100 * max(0.0, 1 - err / scale)

    p, g = P[:, 0], G[:, 0]
    rho, r = stats.spearmanr(p, g).statistic, stats.pearsonr(p, g).statistic
    mae, mse, bias = np.mean(np.abs(p - g)), np.mean((p - g) ** 2), np.mean(p - g)
    s_err = (ratio(mae, np.mean(np.abs(g - g.mean()))) + ratio(mse, np.var(g))) / 2
    part_a = (15 * 100 * max(0, rho) + 10 * 100 * max(0, r) + 15 * s_err + 10 * ratio(abs(bias), np.std(g))) / 50
    wr = sum(w[k] * stats.spearmanr(P[:, j], G[:, j]).statistic for j, k in enumerate(DIMENSIONS, 1))
    wa = sum(w[k] * (1 - np.mean(np.abs(P[:, j] - G[:, j])) / np.mean(np.abs(G[:, j] - G[:, j].mean())))
             for j, k in enumerate(DIMENSIONS, 1))
    part_b = (30 * 100 * max(0, wr) + 20 * 100 * max(0, wa)) / 50
    return 0.5 * part_a + 0.5 * part_b, part_a, part_b


@pytest.fixture(scope="module")
def noisy():
    rng = np.random.default_rng(7)
    G = rng.uniform(0, 100, (120, 8)).round(0)
    P = np.clip(G * 0.7 + 20 + rng.normal(0, 12, G.shape), 0, 100).round(0)  # rounded: many ties
    return P, G


def test_matches_direct_scipy_computation(noisy):
    P, G = noisy
    result = scheme1(_answers(P), _answers(G))
    expected, part_a, part_b = _reference_scheme1(P, G, DEFAULT_WEIGHTS)
    assert result["scheme1"] == pytest.approx(expected, rel=1e-10)
    assert result["part_a"] == pytest.approx(part_a, rel=1e-10)
    assert result["part_b"] == pytest.approx(part_b, rel=1e-10)
    assert result["spearman"] == pytest.approx(stats.spearmanr(P[:, 0], G[:, 0]).statistic, rel=1e-12)
    assert result["pearson"] == pytest.approx(stats.pearsonr(P[:, 0], G[:, 0]).statistic, rel=1e-12)
    for j, key in enumerate(DIMENSIONS, 1):
        assert result["dimension_spearman"][key] == pytest.approx(stats.spearmanr(P[:, j], G[:, j]).statistic)
        assert result["dimension_mae"][key] == pytest.approx(np.mean(np.abs(P[:, j] - G[:, j])))
    assert result["grade"] == scheme1_grade(expected)
    assert result["n"] == 120


def test_array_input_equals_dict_input(noisy):
    P, G = noisy
    assert scheme1(P, G) == scheme1(_answers(P), _answers(G))


def test_perfect_predictions_score_100():
    G = np.random.default_rng(1).uniform(0, 100, (40, 8))
    result = scheme1(G, G)
    assert result["scheme1"] == pytest.approx(100.0)
    assert result["grade"] == "excellent"
    assert result["mae"] == 0 and result["bias"] == 0


def test_predicting_the_gold_mean():
    G = np.random.default_rng(2).uniform(0, 100, (50, 8))
    result = scheme1(np.tile(G.mean(axis=0), (50, 1)), G)
    assert result["s_err"] == pytest.approx(0.0, abs=1e-9)
    assert result["s_rho"] == 0.0 and result["s_r"] == 0.0
    assert result["spearman"] is None and result["pearson"] is None  # undefined, not zero
    assert result["s_bias"] == pytest.approx(100.0)
    # Part A is then the bias term alone: 10 * 100 / 50.
    assert result["part_a"] == pytest.approx(20.0, abs=1e-9)


def test_negative_correlation_is_clipped_not_rewarded():
    g = np.linspace(0, 100, 30)
    G = np.column_stack([g] * 8)
    result = scheme1(G[::-1], G)
    assert result["spearman"] == pytest.approx(-1.0)
    assert result["s_rho"] == 0.0 and result["s_r"] == 0.0


def test_constant_gold_zero_rule():
    G = np.full((5, 8), 40.0)
    assert scheme1(G, G)["s_err"] == 100.0
    off = scheme1(G + 1, G)
    assert off["s_err"] == 0.0 and off["s_bias"] == 0.0


def test_custom_weights_change_part_b(noisy):
    P, G = noisy
    only_a = {k: (1.0 if k == "citation_impact" else 0.0) for k in DIMENSIONS}
    result = scheme1(P, G, weights=only_a)
    rho = stats.spearmanr(P[:, 1], G[:, 1]).statistic
    acc = 1 - np.mean(np.abs(P[:, 1] - G[:, 1])) / np.mean(np.abs(G[:, 1] - G[:, 1].mean()))
    assert result["part_b"] == pytest.approx((30 * 100 * max(0, rho) + 20 * 100 * max(0, acc)) / 50)


@pytest.mark.parametrize("score,grade", [(80, "excellent"), (79.99, "moderate"), (60, "moderate"),
                                         (40, "poor"), (39.9, "unusable"), (0, "unusable")])
def test_grades(score, grade):
    assert scheme1_grade(score) == grade


def test_bad_input():
    G = np.random.default_rng(3).uniform(0, 100, (4, 8))
    with pytest.raises(ScitasteError, match="differ in length"):
        scheme1(G[:3], G)
    with pytest.raises(ScitasteError, match="empty"):
        scheme1([], [])
    bad = G.copy()
    bad[2, 3] = np.nan
    with pytest.raises(ScitasteError, match="NaN or infinite value at item 2"):
        scheme1(bad, G)
    bad[2, 3] = 120
    with pytest.raises(ScitasteError, match="outside 0-100 at item 2"):
        scheme1(bad, G)
    with pytest.raises(ScitasteError, match="lacks 'journal_impact'"):
        answers = _answers(G)
        del answers[1]["dimension_scores"]["journal_impact"]
        scheme1(answers, G)
    with pytest.raises(ScitasteError, match="sum to 1"):
        scheme1(G, G, weights={k: 0.5 for k in DIMENSIONS})
