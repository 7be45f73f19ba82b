"""The second rank interval, with the gold redrawn: equal to the first where the weights are known exactly, wider
as their intervals widen; the draws of the gold; the noise ceiling; the weights file's intervals."""

from pathlib import Path

import numpy as np
import pytest

from scitaste_hf.errors import InvalidInput
from scitaste_hf.records import load_records
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.scoring.gold_uncertainty import GOLD_DRAWS, GoldDraws, gold_replicates, noise_ceiling, weight_intervals
from scitaste_hf.scoring.ranks import RANK_RESAMPLES, rank_intervals, replicates
from scitaste_hf.scoring.scheme1 import scheme1
from scitaste_hf.scoring.wape import wape, wape_score
from scitaste_hf.weights import DEFAULT_WEIGHTS, composite

GOLD = Path(__file__).resolve().parents[2] / "scitaste_hf" / "data" / "examples" / "gold.jsonl"


@pytest.fixture(scope="module")
def board():
    """The example gold, its constant floor, and eight runs close to one another (noise around the gold)."""
    gold = load_records(GOLD)
    G = np.array([[r["innovation_score"], *(r["dimension_scores"][k] for k in DIMENSIONS)] for r in gold])
    F = np.tile(G.mean(axis=0), (len(G), 1))
    rng = np.random.default_rng(11)
    runs = [np.clip(G + rng.normal(0, 14 + k / 2, G.shape), 0, 100) for k in range(8)]
    return G, F, runs


def _around(width):
    return {k: (max(0.0, w - width / 2), w + width / 2) for k, w in DEFAULT_WEIGHTS.items()}


def _ranks(board, draws):
    G, F, runs = board
    paper = np.stack([replicates(P, G, F, weights=DEFAULT_WEIGHTS) for P in runs])
    both = np.stack([gold_replicates(P, G, F, draws, weights=DEFAULT_WEIGHTS, n_resamples=RANK_RESAMPLES)
                     for P in runs])
    return rank_intervals(paper), rank_intervals(both), paper, both


def test_with_weights_known_exactly_both_rank_intervals_are_equal(board):
    exact, redrawn, paper, both = _ranks(board, GoldDraws(DEFAULT_WEIGHTS, _around(0.0)))
    assert np.array_equal(paper, both) and np.array_equal(exact, redrawn)
    # the general path, with a width too small to move a score by more than it breaks the gold's ties, gives the
    # same ranks and nearly the same values
    exact, redrawn, paper, both = _ranks(board, GoldDraws(DEFAULT_WEIGHTS, _around(1e-12)))
    assert np.array_equal(exact, redrawn) and np.allclose(paper, both, atol=1e-3)


def test_wider_weight_intervals_widen_the_second_rank_interval(board):
    width = {}
    for w in (0.0, 0.1, 0.4):
        _, redrawn, _, _ = _ranks(board, GoldDraws(DEFAULT_WEIGHTS, _around(w)))
        width[w] = redrawn[:, 1] - redrawn[:, 0]
    # the board's rank intervals widen with the weights' uncertainty (a single run's may not: a percentile of
    # ranks can move either way by one)
    assert width[0.0].sum() <= width[0.1].sum() < width[0.4].sum()


def test_a_draw_moves_the_composite_by_what_its_weights_change_and_another_release_is_drawn_too(board):
    G, _, _ = board
    draws = GoldDraws(DEFAULT_WEIGHTS, _around(0.2))
    vectors, golds = draws.vectors(5), draws.golds(G, 5)
    assert np.allclose(vectors.sum(axis=1), 1.0) and (vectors >= 0).all()
    point = np.array([DEFAULT_WEIGHTS[k] for k in DIMENSIONS])
    expected = np.clip(G[:, 0] + G[:, 1:] @ (vectors[2] - point), 0, 100)
    assert np.allclose(golds[2][:, 0], expected) and np.array_equal(golds[2][:, 1:], G[:, 1:])
    # the composite of the drawn weights, where the gold's own score is its composite
    dims = dict(zip(DIMENSIONS, G[0, 1:]))
    moved = composite(dims, dict(zip(DIMENSIONS, vectors[2]))) - composite(dims, DEFAULT_WEIGHTS)
    assert golds[2][0, 0] == pytest.approx(np.clip(G[0, 0] + moved, 0, 100), abs=0.01)
    other = G.copy()
    other[:, 1] = np.clip(G[:, 1] + 7, 0, 100)
    picked = GoldDraws(DEFAULT_WEIGHTS, None, [other]).golds(G, 40)
    sources = {"board" if np.array_equal(g, G) else "other" if np.array_equal(g, other) else "?" for g in picked}
    assert sources == {"board", "other"}
    with pytest.raises(InvalidInput, match="same papers in the same order"):
        GoldDraws(DEFAULT_WEIGHTS, None, [other[:10]]).golds(G, 2)


def test_the_noise_ceiling_is_perfect_for_known_gold_and_falls_as_the_weights_are_less_known(board):
    G, F, _ = board
    exact = noise_ceiling(G, F, GoldDraws(DEFAULT_WEIGHTS), weights=DEFAULT_WEIGHTS)
    assert exact["scheme1"]["value"] == pytest.approx(100.0) and exact["scheme2"]["value"] == pytest.approx(100.0)
    assert exact["scheme1_skill"]["value"] == pytest.approx(1.0)
    loose = noise_ceiling(G, F, GoldDraws(DEFAULT_WEIGHTS, _around(0.1)), weights=DEFAULT_WEIGHTS, n_draws=60)
    looser = noise_ceiling(G, F, GoldDraws(DEFAULT_WEIGHTS, _around(0.4)), weights=DEFAULT_WEIGHTS, n_draws=60)
    for key in ("scheme1", "scheme2", "scheme1_skill", "scheme2_skill"):
        assert looser[key]["value"] < loose[key]["value"] < exact[key]["value"] + 1e-9
        low, high = loose[key]["interval"]
        assert low <= loose[key]["value"] <= high


@pytest.mark.parametrize("papers", [7, 60, 1200])
def test_the_noise_ceiling_is_each_draws_own_scheme1_and_wape_scored_one_at_a_time(board, papers):
    # the ceiling computes Part B once a release and Part A a draw; each value must still be what the public
    # functions give for that draw alone, with another release drawn too, on small and large sets of papers
    G, _, _ = board
    G = np.resize(G, (papers, 8)) if papers > len(G) else G[:papers]
    F = np.tile(G.mean(axis=0), (papers, 1))
    other = G.copy()
    other[:, 2] = np.clip(G[:, 2] + np.arange(papers) % 9 - 4, 0, 100)
    draws = GoldDraws(DEFAULT_WEIGHTS, _around(0.3), [other])
    ceiling = noise_ceiling(G, F, draws, weights=DEFAULT_WEIGHTS, n_draws=30)
    golds = draws.golds(G, 30)
    expected = golds.mean(axis=0)
    one = {k: [] for k in ("scheme1", "scheme2", "scheme1_skill", "scheme2_skill")}
    for gold in golds:
        best, floor = scheme1(expected, gold)["scheme1"], scheme1(F, gold)["scheme1"]
        wb, wf = wape(expected[:, 0], gold[:, 0]), wape(F[:, 0], gold[:, 0])
        one["scheme1"].append(best)
        one["scheme2"].append(wape_score(wb))
        one["scheme1_skill"].append((best - floor) / (100 - floor))
        one["scheme2_skill"].append(1 - wb / wf)
    assert {int(np.array_equal(g[:, 1:], G[:, 1:])) for g in golds} == {0, 1}  # both releases were drawn
    for key, values in one.items():
        assert ceiling[key]["value"] == pytest.approx(np.mean(values), rel=1e-12, abs=1e-12)
        assert ceiling[key]["interval"] == pytest.approx(list(np.percentile(values, [2.5, 97.5])), rel=1e-12)


def test_the_second_intervals_replicates_are_each_resamples_scheme1_skill_against_its_draw(board):
    # each resample of the papers, repeated as often as it drew them, scored by the public scheme1() against the
    # draw of the gold it is paired with, with another release drawn and a run that failed some papers
    from scitaste_hf.scoring.bootstrap import resample_counts

    G, F, runs = board
    P = runs[0].copy()
    P[::9] = np.nan
    other = G.copy()
    other[:, 5] = np.clip(G[:, 5] - 6, 0, 100)
    draws = GoldDraws(DEFAULT_WEIGHTS, _around(0.3), [other])
    n_resamples = 2 * GOLD_DRAWS
    values = gold_replicates(P, G, F, draws, weights=DEFAULT_WEIGHTS, n_resamples=n_resamples)
    scored = ~np.isnan(P).any(axis=1)
    counts = resample_counts(len(G), n_resamples)[:, scored]
    golds = draws.golds(G, GOLD_DRAWS)[:, scored]
    assert len({int(np.array_equal(g[:, 1:], G[scored, 1:])) for g in golds}) == 2
    for b in range(n_resamples):
        gold = np.repeat(golds[b * GOLD_DRAWS // n_resamples], counts[b], axis=0)
        run, floor = (scheme1(np.repeat(M[scored], counts[b], axis=0), gold)["scheme1"] for M in (P, F))
        assert values[b] == pytest.approx((run - floor) / (100 - floor), rel=1e-9, abs=1e-12)


def test_the_weights_files_intervals_are_read_and_checked():
    interval = {k: [0.1, 0.2] for k in DIMENSIONS}
    assert weight_intervals({"weights": dict(DEFAULT_WEIGHTS), "weights_interval": interval})["disruptiveness"] \
        == (0.1, 0.2)
    assert weight_intervals({"weights": dict(DEFAULT_WEIGHTS)}) is None
    with pytest.raises(InvalidInput, match=r"w\.json: weights_interval of journal_impact must be"):
        weight_intervals({"weights_interval": {**interval, "journal_impact": [0.3, 0.2]}}, "w.json")
    with pytest.raises(InvalidInput, match="for each of citation_impact"):
        weight_intervals({"weights_interval": {"citation_impact": [0, 1]}})
    with pytest.raises(InvalidInput, match="cannot be shared equally"):
        G = np.full((4, 8), 50.0)
        gold_replicates(G, G, G, GoldDraws(DEFAULT_WEIGHTS, _around(0.1)), weights=DEFAULT_WEIGHTS,
                        n_resamples=GOLD_DRAWS + 1)


def _predictions(gold, M) -> bytes:
    import json

    return "".join(json.dumps({"bibcode": r["bibcode"], "innovation_score": float(row[0]),
                               "dimension_scores": dict(zip(DIMENSIONS, map(float, row[1:])))}) + "\n"
                   for r, row in zip(gold, M)).encode()


@pytest.mark.parametrize("width", [0.0, 0.3])
def test_the_board_shows_both_rank_intervals_and_its_noise_ceiling(board, tmp_path, width):
    from scitaste_hf.leaderboard.service import Leaderboard
    from scitaste_hf.taxonomy import OVERALL

    G, _, runs = board
    gold = load_records(GOLD)
    draws = GoldDraws(DEFAULT_WEIGHTS, _around(width))
    lb = Leaderboard(tmp_path / "board", gold, rate_limit=None, background_upgrade=False, gold_draws=draws)
    try:
        for k, M in enumerate(runs[:4]):
            assert lb.submit(_predictions(gold, M), f"m{k}", "pure_qa").status
        rows = lb.rows()
        # the board's own numbers: its replicates are those of gold_replicates on its papers and floor
        paper = np.stack([replicates(M, G, lb._floor_answers["constant"], weights=DEFAULT_WEIGHTS)
                          for M in runs[:4]]).astype(np.float16).astype(np.float32)
        both = np.stack([gold_replicates(M, G, lb._floor_answers["constant"], draws, weights=DEFAULT_WEIGHTS,
                                         n_resamples=RANK_RESAMPLES) for M in runs[:4]])
        order = [int(r["model"][1:]) for r in rows]
        assert [tuple(r["rank"]) for r in rows] == [tuple(x) for x in rank_intervals(paper[order]).tolist()]
        assert [tuple(r["rank_gold"]) for r in rows] == \
            [tuple(x) for x in rank_intervals(both[order].astype(np.float16).astype(np.float32)).tolist()]
        if width == 0.0:
            assert all(r["rank_gold"] == r["rank"] for r in rows)
        ceiling = lb.noise_ceiling()
        assert ceiling == noise_ceiling(G, lb._floor_answers["constant"], draws, weights=DEFAULT_WEIGHTS)
        assert lb.noise_ceiling(OVERALL) is ceiling
        assert (ceiling["scheme1_skill"]["value"] == pytest.approx(1.0)) is (width == 0.0)
        assert all(r["s1_skill"] < ceiling["scheme1_skill"]["value"] for r in rows)
    finally:
        lb.close()
