"""Bootstrap intervals: the count-based resampling must equal scoring each resample explicitly."""

import importlib

import numpy as np
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.scoring import bootstrap, paired_bootstrap, scheme1, wape, wape_score
from scitaste_hf.scoring.bootstrap import MAX_RESAMPLES, resample_counts
from scitaste_hf.scoring.scheme1 import scheme1_batch
from scitaste_hf.scoring.stats import Counts
from scitaste_hf.weights import DEFAULT_WEIGHTS

# The module, not the function of the same name that scitaste_hf.scoring exports.
bootstrap_module = importlib.import_module("scitaste_hf.scoring.bootstrap")


@pytest.fixture(scope="module")
def run():
    rng = np.random.default_rng(11)
    G = rng.uniform(0, 100, (60, 8)).round(0)
    P = np.clip(G + rng.normal(5, 15, G.shape), 0, 100).round(0)
    return P, G


def test_each_resample_equals_scoring_it_explicitly(run):
    P, G = run
    counts = resample_counts(len(G), n_resamples=5, seed=3)
    batch = scheme1_batch(P, G, Counts(counts), DEFAULT_WEIGHTS)
    for b in range(5):
        idx = np.repeat(np.arange(len(G)), counts[b])
        explicit = scheme1(P[idx], G[idx])
        assert batch["scheme1"][b] == pytest.approx(explicit["scheme1"], rel=1e-9)
        assert batch["spearman"][b] == pytest.approx(explicit["spearman"], rel=1e-9)
        assert batch["mae"][b] == pytest.approx(explicit["mae"], rel=1e-12)


def test_intervals_contain_point_and_are_reproducible(run):
    P, G = run
    ci = bootstrap(P, G, seed=5)
    assert set(ci) == {"wape", "scheme2", "scheme1"}
    point = scheme1(P, G)["scheme1"]
    assert ci["scheme1"][0] < point < ci["scheme1"][1]
    w = wape(P[:, 0], G[:, 0])
    assert ci["wape"][0] < w < ci["wape"][1]
    assert ci["scheme2"][0] < wape_score(w) < ci["scheme2"][1]
    assert bootstrap(P, G, seed=5) == ci
    assert bootstrap(P, G, seed=6) != ci


def test_interval_narrows_with_more_papers():
    rng = np.random.default_rng(0)
    widths = []
    for n in (50, 800):
        g = rng.uniform(10, 100, n)
        p = np.clip(g + rng.normal(0, 10, n), 0, 100)
        lo, hi = bootstrap(p, g)["wape"]
        widths.append(hi - lo)
    assert widths[1] < widths[0] / 2


def test_scores_only_give_no_scheme1():
    assert set(bootstrap([10.0, 20.0, 30.0], [12.0, 18.0, 33.0])) == {"wape", "scheme2"}


def test_paired_bootstrap(run):
    P, G = run
    better = np.clip(G + (P - G) / 4, 0, 100)
    result = paired_bootstrap(better, P, G)
    assert result["scheme1"]["difference"] == pytest.approx(scheme1(better, G)["scheme1"] - scheme1(P, G)["scheme1"])
    assert result["scheme1"]["difference"] > 0 and result["scheme1"]["interval"][0] > 0
    assert result["scheme1"]["p_value"] < 0.01
    assert result["wape"]["difference"] < 0
    same = paired_bootstrap(P, P, G)
    assert same["scheme1"]["difference"] == 0 and same["scheme1"]["p_value"] == 1.0


def test_bad_arguments(run):
    P, G = run
    with pytest.raises(ScitasteError, match="n_resamples"):
        bootstrap(P, G, n_resamples=0)
    with pytest.raises(ScitasteError, match="confidence"):
        bootstrap(P, G, confidence=1.5)
    with pytest.raises(ScitasteError, match="8 columns per item"):
        paired_bootstrap(P, P[:, :1], G)
    with pytest.raises(ScitasteError, match="differ in length"):
        paired_bootstrap(P, P[:30], G)


def test_resamples_without_nonzero_gold_are_left_out():
    # Resamples that draw only the two zero-gold papers have no WAPE; they used to give [0.9, nan].
    ci = bootstrap([1.0, 2.0, 3.0], [0.0, 0.0, 30.0])
    assert np.isfinite(ci["wape"]).all() and np.isfinite(ci["scheme2"]).all()
    assert ci["wape"][0] == pytest.approx(0.9) and ci["wape"][1] < 1.1
    result = paired_bootstrap([1.0, 2.0, 3.0], [2.0, 2.0, 2.0], [0.0, 0.0, 30.0])
    assert all(np.isfinite(r["interval"]).all() and 0 <= r["p_value"] <= 1 for r in result.values())


def test_interval_is_none_when_mostly_undefined():
    seed = next(s for s in range(1000) if resample_counts(3, 1, s)[0, 2] == 0)
    assert bootstrap([1.0, 2.0, 3.0], [0.0, 0.0, 30.0], n_resamples=1, seed=seed) == {"wape": None, "scheme2": None}
    result = paired_bootstrap([1.0, 2.0, 3.0], [2.0, 2.0, 2.0], [0.0, 0.0, 30.0], n_resamples=1, seed=seed)
    assert result["wape"]["interval"] is None and result["wape"]["p_value"] is None


def test_all_zero_gold_is_an_error_as_for_wape():
    for call in (lambda: wape([1.0, 2.0], [0.0, 0.0]), lambda: bootstrap([1.0, 2.0], [0.0, 0.0]),
                 lambda: paired_bootstrap([1.0, 2.0], [2.0, 1.0], [0.0, 0.0])):
        with pytest.raises(ScitasteError, match="WAPE is undefined"):
            call()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"seed": -1}, "seed must be a whole number >= 0, got -1"),
    ({"seed": 0.5}, "seed must be a whole number >= 0, got 0.5"),
    ({"n_resamples": MAX_RESAMPLES + 1}, "n_resamples must be a whole number between 1 and 100,000"),
])
def test_resampling_arguments_are_checked(run, kwargs, message):
    P, G = run
    with pytest.raises(ScitasteError, match=message):
        bootstrap(P, G, **kwargs)
    with pytest.raises(ScitasteError, match=message):
        paired_bootstrap(P, P, G, **kwargs)


def test_blocks_of_resamples_give_the_same_intervals(run, monkeypatch):
    # Memory is bounded by evaluating the resamples in blocks; the blocks draw the same random stream.
    P, G = run
    whole = bootstrap(P, G, n_resamples=50, seed=2)
    counts = resample_counts(len(G), 50, seed=2)
    zeros = bootstrap([1.0, 2.0, 3.0], [0.0, 0.0, 30.0], n_resamples=40)
    monkeypatch.setattr(bootstrap_module, "_BLOCK_CELLS", 7 * len(G))  # blocks of 7 resamples
    assert np.array_equal(resample_counts(len(G), 50, seed=2), counts)
    assert bootstrap(P, G, n_resamples=50, seed=2) == whole
    # A block of one resample is a resample, not a point estimate: an all-zero draw is NaN, not an error.
    monkeypatch.setattr(bootstrap_module, "_BLOCK_CELLS", 1)
    assert bootstrap([1.0, 2.0, 3.0], [0.0, 0.0, 30.0], n_resamples=40) == zeros
