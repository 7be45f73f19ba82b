"""Rank intervals from a joint paired bootstrap, the top group, and the detectable difference."""

from pathlib import Path

import numpy as np
import pytest

from scitaste_hf.records import load_records
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.scoring.ranks import detectable_difference, rank_intervals, replicates, top_group
from scitaste_hf.weights import DEFAULT_WEIGHTS

ROOT = Path(__file__).resolve().parents[2]
G = np.array([[r["innovation_score"], *(r["dimension_scores"][k] for k in DIMENSIONS)]
              for r in load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")])
F = np.broadcast_to(G.mean(axis=0), G.shape)


def test_rank_intervals_by_hand():
    values = np.array([[3.0, 3.0, 1.0, 3.0], [2.0, 1.0, 3.0, np.nan], [1.0, 2.0, 2.0, 1.0]])
    # ranks per resample: run 0: 1 1 3 1; run 1: 2 3 1 3 (NaN last); run 2: 3 2 2 2
    assert rank_intervals(values, confidence=0.5).tolist() == [[1, 1], [2, 3], [2, 2]]
    assert rank_intervals(np.array([[1.0, 1.0], [1.0, 1.0]])).tolist() == [[1, 1], [1, 1]]  # ties share the best
    assert top_group(np.array([[1, 2], [2, 4], [3, 5]]), np.array([0.5, 0.4, 0.1])).tolist() == [True, True, False]


def test_close_runs_share_ranks_and_distant_ones_do_not():
    rng = np.random.default_rng(3)
    # five runs of nearly the same quality (independent errors), and a much better one and a much worse one
    runs = [np.clip(G + rng.normal(0, s, G.shape), 0, 100) for s in (9.0, 9.2, 9.4, 9.6, 9.8, 2.0, 25.0)]
    runs[3][:20] = np.nan  # a run that failed on 20 papers is resampled on the same draws, without them
    values = np.array([replicates(P, G, F, weights=DEFAULT_WEIGHTS) for P in runs])
    assert values.shape == (7, 200) and not np.isnan(values).any()
    intervals = rank_intervals(values)
    assert intervals[5].tolist() == [1, 1] and intervals[6].tolist() == [7, 7]
    close = intervals[:5]
    assert all(low < high for low, high in close)  # no strict rank among the five close runs
    assert max(close[:, 0]) <= min(close[:, 1])    # every pair of their intervals overlaps
    # the same seed gives the same resamples, so a run's replicates do not depend on the board it is on
    assert np.array_equal(values[0], replicates(runs[0], G, F, weights=DEFAULT_WEIGHTS))


def test_detectable_difference_is_the_textbook_mde():
    # a 95% interval of half-width 1.96 is a standard error of 1; 80% power adds 0.8416 standard errors
    assert detectable_difference([-1.959964, 1.959964]) == pytest.approx(1.959964 + 0.841621, abs=1e-5)


def test_ranks_are_scipys_min_ranks_and_scoring_a_board_does_not_import_scipy_stats():
    import subprocess
    import sys

    from scipy.stats import norm, rankdata

    from scitaste_hf.scoring.ranks import _min_ranks

    rng = np.random.default_rng(11)
    for shape in [(1, 4), (9, 200), (60, 3)]:
        for x in (rng.normal(size=shape), np.round(rng.normal(size=shape), 1),
                  np.where(rng.random(shape) < 0.4, -np.inf, rng.normal(size=shape))):
            assert np.array_equal(_min_ranks(x), rankdata(x, method="min", axis=0))
    z, zp = norm.ppf(0.975), norm.ppf(0.8)
    assert detectable_difference([-0.1, 0.3]) == float((z + zp) * 0.4 / (2 * z))
    # the board's scoring path (rank intervals, the gold redrawn, the detectable difference) in a fresh process
    code = ("import sys, numpy as np\n"
            "from scitaste_hf.scoring.ranks import rank_intervals, detectable_difference\n"
            "from scitaste_hf.scoring.gold_uncertainty import GoldDraws\n"
            "from scitaste_hf.weights import DEFAULT_WEIGHTS\n"
            "rank_intervals(np.random.default_rng(0).normal(size=(3, 50)))\n"
            "detectable_difference([0.0, 1.0])\n"
            "GoldDraws(DEFAULT_WEIGHTS, {k: (v - 0.01, v + 0.01) for k, v in DEFAULT_WEIGHTS.items()}).vectors(5)\n"
            "print('scipy.stats' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"
