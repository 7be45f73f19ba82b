"""The metrics as pure functions, against hand-computed values."""

import math
import statistics

import numpy as np
import pytest
import scipy.stats

from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.metrics import (
    base_rate_forecast,
    brier_score,
    grouped_mean,
    top1_credit,
    yield_per_100_usd,
)
from scitaste_hf.scoring.bootstrap import resample_counts


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


# The t quantiles the hand computations use, from closed forms rather than scipy: with 1 degree of freedom the t
# distribution is Cauchy, t = tan(pi (p - 1/2)); with 2, t = (2p - 1) / sqrt(2 p (1 - p)).
T1_975 = math.tan(math.pi * 0.475)  # 12.7062...
T2_975 = 0.95 / math.sqrt(2 * 0.975 * 0.025)  # 4.3027...


def test_grouped_mean_equal_groups_is_the_t_interval_over_group_means():
    values = [1.0, 1.0, 0.0, 0.0, 0.5, 0.5]
    groups = ["a", "a", "b", "b", "c", "c"]
    result = grouped_mean(values, groups)
    assert result["estimate"] == pytest.approx(0.5) and (result["n"], result["n_groups"]) == (6, 3)
    # Group means 1, 0, 0.5: standard deviation 0.5, standard error 0.5 / sqrt(3), t on 2 degrees of freedom.
    half = T2_975 * 0.5 / math.sqrt(3)
    assert (T2_975, half) == pytest.approx((4.303, 1.2421), abs=1e-3)  # table value of t
    assert result["interval"] == pytest.approx([0.5 - half, 0.5 + half], rel=1e-12)
    # Four groups of two: the same formula with statistics.stdev and scipy's t on 3 degrees of freedom.
    values = [0.3, 0.1, -0.2, 0.0, 0.4, 0.4, 0.05, 0.15]
    groups = ["p", "p", "q", "q", "r", "r", "s", "s"]
    means = [0.2, -0.1, 0.4, 0.1]
    half = scipy.stats.t.ppf(0.975, 3) * statistics.stdev(means) / 2
    assert grouped_mean(values, groups)["interval"] == pytest.approx([0.15 - half, 0.15 + half], rel=1e-12)
    # Two groups, the fewest with an interval: standard error 0.25, t on 1 degree of freedom.
    assert grouped_mean([0.25, -0.25], ["a", "b"])["interval"] == pytest.approx([-0.25 * T1_975, 0.25 * T1_975])
    # A 90% interval uses the 0.95 quantile.
    half = scipy.stats.t.ppf(0.95, 3) * statistics.stdev(means) / 2
    assert grouped_mean(values, groups, confidence=0.9)["interval"] == pytest.approx([0.15 - half, 0.15 + half])


def test_grouped_mean_unequal_groups_by_hand():
    # a: 3 items summing to 0.6; b: 1 item, 1.0; c: 2 items summing to 0.4. N = 6, estimate m = 2 / 6 = 1/3.
    values = [0.2, 0.4, 0.0, 1.0, 0.1, 0.3]
    groups = ["a", "a", "a", "b", "c", "c"]
    result = grouped_mean(values, groups)
    assert result["estimate"] == pytest.approx(1 / 3)  # the item-weighted mean, not the mean of group means (0.4)
    # Residual sums S_g - m n_g: -0.4, 2/3, -4/15; each squared over 1 - n_g / N (1/2, 5/6, 2/3):
    # 0.32 + 8/15 + 8/75 = 0.96; the variance is 0.96 / 36.
    variance = (0.16 / 0.5 + (4 / 9) / (5 / 6) + (16 / 225) / (2 / 3)) / 36
    assert variance == pytest.approx(0.96 / 36)
    half = T2_975 * math.sqrt(variance)
    assert result["interval"] == pytest.approx([1 / 3 - half, 1 / 3 + half], rel=1e-12)
    assert result["interval"][0] < 0 < result["interval"][1]


def test_grouped_mean_edge_cases():
    values = [1.0, 1.0, 0.0, 0.0, 0.5]
    groups = ["a", "a", "b", "b", "c"]
    result = grouped_mean(values, groups)
    assert grouped_mean(values, groups) == result  # the same input, the same output
    assert grouped_mean(values, groups, n_resamples=5, seed=7) == result  # analytic: neither changes it
    assert grouped_mean(values, groups, n_resamples=0) == {**result, "interval": None}
    # One group says nothing about the variation between groups: no interval, however many items.
    assert grouped_mean([0.1, 0.4, 0.9], ["a"] * 3) == {"estimate": pytest.approx(1.4 / 3), "interval": None,
                                                        "clipped": False, "n": 3, "n_groups": 1}
    # Groups with the same mean: zero variance, a degenerate interval exactly at the estimate (no NaN).
    constant = grouped_mean([0.1] * 4, ["a", "b", "c", "d"])
    assert constant["interval"] == [constant["estimate"]] * 2 and constant["estimate"] == pytest.approx(0.1)
    same_means = grouped_mean([0.0, 0.2, 0.1, 0.1, 0.1], ["a", "a", "b", "b", "c"])
    assert same_means["interval"] == [same_means["estimate"]] * 2
    assert grouped_mean([0.0, 0.0], ["a", "b"])["interval"] == [0.0, 0.0]
    with pytest.raises(ScitasteError, match="confidence"):
        grouped_mean(values, groups, confidence=1.5)
    with pytest.raises(ScitasteError, match="n_resamples must be >= 0"):
        grouped_mean(values, groups, n_resamples=-1)
    with pytest.raises(ScitasteError, match="finite"):
        grouped_mean([0.1, float("nan")], ["a", "b"])


def _percentile_bootstrap(values, index, counts):
    """The interval grouped_mean gave before: percentiles of the item-weighted mean over group resamples."""
    sums = np.bincount(index, weights=values, minlength=counts.shape[1])
    sizes = np.bincount(index, minlength=counts.shape[1])
    return np.percentile(counts @ sums / (counts @ sizes), [2.5, 97.5])


def test_grouped_mean_covers_with_four_groups():
    # 400 simulated studies of 4 heterogeneous groups of 3-10 items; the population value is 0.
    rng = np.random.default_rng(0)
    counts = resample_counts(4, 1000, 0)  # what the old percentile bootstrap drew (seed 0)
    new = old = 0
    for _ in range(400):
        index = np.repeat(np.arange(4), rng.integers(3, 11, 4))
        values = rng.normal(0.0, 0.1, 4)[index] + rng.normal(0.0, 0.2, index.size)
        lo, hi = grouped_mean(values, index.astype(str))["interval"]
        new += lo <= 0.0 <= hi
        lo, hi = _percentile_bootstrap(values, index, counts)
        old += lo <= 0.0 <= hi
    assert new / 400 >= 0.9  # 0.9375 with this seed
    assert old / 400 < 0.85  # 0.7525: the percentile bootstrap's "95%" falls short with four groups


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
