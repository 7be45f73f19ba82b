"""The rtaste_brier and rtaste_ranking evaluate modules: loadable by name, thin wrappers, clear errors."""

import math

import pytest

from scitaste_hf.adapters.metrics.app import example_inputs
from scitaste_hf.errors import ScitasteError


def test_brier_public_surface(brier):
    assert brier.compute(predictions=[0.5] * 4, references=[1, 0, 0, 1])["brier"] == 0.25
    assert brier.compute(predictions=[1.0, 0.0], references=[1, 0])["brier"] == 0.0
    result = brier.compute(predictions=[0.9, 0.2, None, 0.6], references=[1, 0, 1, 0], n_resamples=0)
    assert result["brier"] == pytest.approx((0.01 + 0.04 + 0.36) / 3)
    assert (result["n_scored"], result["n_total"], result["coverage"]) == (3, 4, 0.75)
    assert result["event_rate"] == 0.5 and result["ci"] is None and result["base_rate_brier"] is None


def test_brier_groups_give_base_rate_and_add_batch(brier):
    brier.add_batch(predictions=[0.5, 0.5], references=[1, 1])
    brier.add_batch(predictions=[0.5, 0.5], references=[0, 1])
    result = brier.compute(groups=["a", "a", "b", "b"], n_resamples=500)
    assert result["brier"] == 0.25
    # a's events get b's rate 1/2 -> 0.25 each; b's get a's rate 1 -> 1 and 0
    assert result["base_rate_brier"] == pytest.approx((0.25 + 0.25 + 1.0 + 0.0) / 4)
    assert result["ci"] == pytest.approx([0.25, 0.25])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"predictions": [0.5, 1.5], "references": [1, 0]}, r"predictions\[1\] = 1.5 is not a probability"),
    ({"predictions": [0.5], "references": [3]}, r"an outcome is 0 \(did not occur\) or 1 \(occurred\)"),
    ({"predictions": [0.5], "references": [1], "groups": ["a", "b"]}, "groups has 2 entries for 1 items"),
])
def test_brier_bad_input(brier, kwargs, message):
    with pytest.raises(ScitasteError, match=message):
        brier.compute(**kwargs)


def test_ranking_by_hand(ranking):
    result = ranking.compute(predictions=[[2, 1, 3, 4, 5], [1, 2, 3, 4, 5]],
                             references=[[1, 3, 2, 0, 0], [2, 2, 0, 0, 1]], groups=["p1", "p2"], n_resamples=1000)
    assert (result["top1_hit_rate"], result["first_written_hit_rate"], result["random_hit_rate"]) == (0.75, 0.25, 0.2)
    assert result["top1_minus_random"] == pytest.approx(0.55)
    assert result["top1_minus_first_written"] == pytest.approx(0.5)
    # Hit rates 1 and 0.5 on the two papers: standard error 0.25, t on 1 degree of freedom tan(0.475 pi), so the
    # t-interval is 0.75 -/+ 3.18, which a hit rate's range 0-1 clips.
    half = 0.25 * math.tan(math.pi * 0.475)
    assert 0.75 - half < 0 and 0.75 + half > 1
    assert result["ci"]["top1_hit_rate"] == [0.0, 1.0] and "top1_hit_rate" in result["ci_clipped"]
    assert result["n_conditions"] == 2


@pytest.mark.parametrize(("predictions", "references", "message"), [
    ([[1, 2, 3, 4, 4]], [[0, 1, 2, 3, 0]],
     r"predictions\[0\] = \[1, 2, 3, 4, 4\] is not a permutation of the ranks 1-5"),
    ([[1, 2, 3, 4]], [[0, 1, 2, 3]], r"not a permutation of the ranks 1-5"),
    ([[1, 2, 3, 4, 5]], [[0, 1, 2, 3, 4]], r"references\[0\] = \[0.0, 1.0, 2.0, 3.0, 4.0\] must be the 5 MVEs' "
                                           r"values within 0-3"),
])
def test_ranking_bad_input(ranking, predictions, references, message):
    with pytest.raises(ScitasteError, match=message):
        ranking.compute(predictions=predictions, references=references)


def test_space_examples_compute(brier, ranking):
    result = brier.compute(**example_inputs("rtaste_brier"))
    assert 0 <= result["brier"] <= 1 and result["coverage"] == 1.0
    result = ranking.compute(**example_inputs("rtaste_ranking"))
    assert result["n_conditions"] == 6
