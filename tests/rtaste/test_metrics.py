"""The metrics as pure functions, against hand-computed values."""

import numpy as np
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.metrics import (
    base_rate_forecast,
    brier_score,
    grouped_mean,
    top1_credit,
    yield_per_100_usd,
)


def test_brier_reference_values():
    assert brier_score([0.5] * 4, [1, 0, 1, 1]) == 0.25
    assert brier_score([1.0, 0.0, 1.0], [1, 0, 1]) == 0.0
    assert brier_score([0.0, 1.0], [1, 0]) == 1.0
    # (0.8-1)^2 = 0.04, (0.3-0)^2 = 0.09, (0.6-0)^2 = 0.36: mean 0.49 / 3
    assert brier_score([0.8, 0.3, 0.6], [1, 0, 0]) == pytest.approx(0.49 / 3)
    assert brier_score(np.array([0.2]), np.array([True])) == pytest.approx(0.64)


@pytest.mark.parametrize(("probabilities", "outcomes", "message"), [
    ([0.5, 1.2], [1, 0], r"predictions\[1\] = 1.2 is not a probability between 0 and 1"),
    ([-0.1], [1], r"predictions\[0\] = -0.1 is not a probability"),
    ([float("nan")], [1], r"predictions\[0\] = nan is not a probability"),
    ([0.5], [2], r"references\[0\] = 2; an outcome is 0 \(did not occur\) or 1 \(occurred\)"),
    ([0.5, 0.5], [1], "differ in length: 2 vs 1"),
    ([], [], "non-empty"),
    (["high"], [1], "must be probabilities"),
])
def test_brier_bad_input(probabilities, outcomes, message):
    with pytest.raises(ScitasteError, match=message):
        brier_score(probabilities, outcomes)


def test_base_rate_uses_the_other_seed_papers():
    outcomes = [1, 1, 0, 0, 0, 1, 0]
    groups = ["a", "a", "b", "b", "b", "c", "c"]
    # a: others b+c = 1/5; b: others a+c = 3/4; c: others a+b = 2/5
    assert base_rate_forecast(outcomes, groups).tolist() == pytest.approx([0.2, 0.2, 0.75, 0.75, 0.75, 0.4, 0.4])
    with pytest.raises(ScitasteError, match="at least two seed papers"):
        base_rate_forecast([1, 0], ["a", "a"])


def test_grouped_mean_resamples_whole_groups():
    values = [1.0, 1.0, 0.0, 0.0, 0.5]
    groups = ["a", "a", "b", "b", "c"]
    result = grouped_mean(values, groups, n_resamples=2000, seed=1)
    assert result["estimate"] == pytest.approx(0.5) and (result["n"], result["n_groups"]) == (5, 3)
    lo, hi = result["interval"]
    # Every resample mean is a mixture of group means 1, 0 and 0.5: it lies in [0, 1], and 2000 draws
    # reach both ends (all-a and all-b resamples have probability 1/27 each).
    assert lo == 0.0 and hi == 1.0
    assert grouped_mean(values, groups, n_resamples=2000, seed=1) == result  # seeded
    assert grouped_mean(values, groups, n_resamples=0)["interval"] is None
    # A constant difference has a degenerate interval at its value.
    assert grouped_mean([0.1] * 4, ["a", "b", "c", "d"], n_resamples=50)["interval"] == pytest.approx([0.1, 0.1])
    with pytest.raises(ScitasteError, match="confidence"):
        grouped_mean(values, groups, confidence=1.5)


def test_top1_credit_shares_ties():
    values = [[0, 3, 1, 2, 2],  # unique best: index 1
              [2, 2, 0, 1, 1],  # tie of two at 2
              [1, 1, 1, 1, 1]]  # all tied
    assert top1_credit([1, 0, 4], values).tolist() == [1.0, 0.5, 0.2]
    assert top1_credit([0, 2, 0], values).tolist() == [0.0, 0.0, 0.2]
    # A uniformly random choice earns 1/5 in expectation whatever the ties.
    expected = np.mean([top1_credit([k] * 3, values) for k in range(5)], axis=0)
    assert expected.tolist() == pytest.approx([0.2, 0.2, 0.2])
    with pytest.raises(ScitasteError, match="MVE indices 0-4"):
        top1_credit([5, 0, 0], values)


def test_yield_per_100_usd():
    assert yield_per_100_usd([3, 2], [15.0, 25.0]) == pytest.approx(12.5)
    assert yield_per_100_usd([1], [0.0]) is None
    with pytest.raises(ScitasteError, match="costs >= 0"):
        yield_per_100_usd([1], [-1.0])
