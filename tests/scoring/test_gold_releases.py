"""The citation-window redraw (issue 33, item 3): a board whose data folder stores a second release of its papers
(DATA/gold_releases/) redraws its gold from both, so its second rank interval is wider than with its own release
alone and its noise ceiling falls below perfect; a paper the other release lacks keeps the board's gold."""

import json
from pathlib import Path

import numpy as np
import pytest

from scitaste_hf.errors import InvalidInput
from scitaste_hf.leaderboard.setup import GOLD_RELEASES_DIR, gold_draws
from scitaste_hf.records import load_records
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.scoring.gold_uncertainty import GoldDraws, default_draws, gold_replicates, noise_ceiling
from scitaste_hf.scoring.ranks import RANK_RESAMPLES, rank_intervals, replicates
from scitaste_hf.weights import DEFAULT_WEIGHTS

GOLD = load_records(Path(__file__).resolve().parents[2] / "scitaste_hf" / "data" / "examples" / "gold.jsonl")


def _refreshed(gold, seed=5):
    """A later release of the same papers: their citation impact moved (a longer citation window), the composite
    moved with it, the other dimensions as they were."""
    rng = np.random.default_rng(seed)
    out = []
    for r in gold:
        ci = float(np.clip(r["dimension_scores"]["citation_impact"] + rng.normal(0, 15), 0, 100))
        moved = (ci - r["dimension_scores"]["citation_impact"]) * DEFAULT_WEIGHTS["citation_impact"]
        out.append({**r, "innovation_score": float(np.clip(r["innovation_score"] + moved, 0, 100)),
                    "dimension_scores": {**r["dimension_scores"], "citation_impact": ci}})
    return out


def _matrix(records):
    return np.array([[r["innovation_score"], *(r["dimension_scores"][k] for k in DIMENSIONS)] for r in records])


def test_a_second_release_in_the_board_folder_is_redrawn_and_widens_the_second_rank_interval(tmp_path):
    later = _refreshed(GOLD)
    folder = tmp_path / "board" / GOLD_RELEASES_DIR
    folder.mkdir(parents=True)
    # the later release lacks five of the board's papers: they keep the board's gold in its draws
    (folder / "2024-refresh.jsonl").write_text("".join(json.dumps(r) + "\n" for r in later[5:]))
    draws = gold_draws(tmp_path / "board", GOLD)
    G = _matrix(GOLD)
    [other] = draws.releases
    assert np.array_equal(other[:5], G[:5]) and np.allclose(other[5:], _matrix(later[5:]))
    assert not draws.trivial and gold_draws(tmp_path / "board" / "none", GOLD) == default_draws()

    F = np.tile(G.mean(axis=0), (len(G), 1))
    rng = np.random.default_rng(11)
    runs = [np.clip(G + rng.normal(0, 14 + k / 2, G.shape), 0, 100) for k in range(8)]

    def widths(d):
        values = np.stack([gold_replicates(P, G, F, d, weights=DEFAULT_WEIGHTS, n_resamples=RANK_RESAMPLES)
                           for P in runs])
        ranks = rank_intervals(values)
        return (ranks[:, 1] - ranks[:, 0]).sum()

    one = GoldDraws(DEFAULT_WEIGHTS)  # its own release alone, the weights known: the papers-only interval
    papers = rank_intervals(np.stack([replicates(P, G, F, weights=DEFAULT_WEIGHTS) for P in runs]))
    two = GoldDraws(DEFAULT_WEIGHTS, None, draws.releases)
    assert widths(one) == (papers[:, 1] - papers[:, 0]).sum() < widths(two)
    ceiling = noise_ceiling(G, F, two, weights=DEFAULT_WEIGHTS, n_draws=40)
    assert ceiling["scheme1_skill"]["value"] < 1.0 and ceiling["scheme2"]["value"] < 100.0


def test_a_release_of_other_papers_or_without_the_board_gold_is_one_line(tmp_path):
    folder = tmp_path / GOLD_RELEASES_DIR
    folder.mkdir()
    (folder / "other.jsonl").write_text("".join(json.dumps({**r, "bibcode": r["bibcode"] + "X"}) + "\n"
                                                for r in GOLD[:20]))
    with pytest.raises(InvalidInput, match=r"other\.jsonl holds none of the board's 300 papers"):
        gold_draws(tmp_path, GOLD)
    with pytest.raises(InvalidInput, match="which was not given"):
        gold_draws(tmp_path)


def test_the_packaged_default_weights_carry_an_interval_and_the_ceiling_falls_below_perfect():
    """A board without a weights file of its own (the demo's, the bundled example's) redraws its gold from the
    interval the package derived for the default weights (config/weights_default.json): its second rank interval
    is drawn against moved labels and its noise ceiling is below perfect. The interval is narrow (a weight moves by
    1 to 5 points), so runs as far apart as these keep their ranks: the labels are known better than they differ."""
    from scitaste_hf.weights import default_config

    draws = default_draws()
    stored = default_config()["weights_interval"]
    assert not draws.trivial and dict(draws.intervals) == {k: tuple(v) for k, v in stored.items()}
    assert all(lo < DEFAULT_WEIGHTS[k] < hi for k, (lo, hi) in draws.intervals.items())
    G = _matrix(GOLD)
    F = np.tile(G.mean(axis=0), (len(G), 1))
    P = np.clip(G + np.random.default_rng(11).normal(0, 14, G.shape), 0, 100)
    papers = replicates(P, G, F, weights=DEFAULT_WEIGHTS)
    redrawn = gold_replicates(P, G, F, draws, weights=DEFAULT_WEIGHTS, n_resamples=RANK_RESAMPLES)
    assert not np.allclose(papers, redrawn) and np.allclose(papers, redrawn, atol=0.05)
    ceiling = noise_ceiling(G, F, draws, weights=DEFAULT_WEIGHTS, n_draws=40)
    for key, perfect in (("scheme1_skill", 1.0), ("scheme2_skill", 1.0), ("scheme1", 100.0), ("scheme2", 100.0)):
        low, high = ceiling[key]["interval"]
        assert low < ceiling[key]["value"] < perfect and high <= perfect, key
