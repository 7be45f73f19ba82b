"""The agreement statistics: the textbook ICC on its published example, the kappa against scikit-learn, and simulated
raters with known noise whose report must show the reliability their noise implies and point out the random rater."""

import itertools
import math

import numpy as np
import pytest
from scipy.stats import spearmanr
from sklearn.metrics import cohen_kappa_score

from scitaste_hf.errors import ScitasteError
from scitaste_hf.ratings.agreement import (
    BIN_EDGES,
    FLAG_RATIO,
    TARGET_RELIABILITY,
    Table,
    agreement,
    consensus_records,
    icc,
    pair_confusions,
    pair_variances,
    papers_needed,
    quadratic_kappa,
    rater_pair_confusions,
    rater_pair_variances,
    ratings_needed,
)
from scitaste_hf.ratings.guide import NUMBERS
from scitaste_hf.records import load_records

#: Shrout and Fleiss (1979), Table 2: six targets rated by four judges.
SHROUT_FLEISS = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]], float)
#: The three honest simulated raters: (error SD, constant bias) in points.
RATERS = {"sharp": (8.0, 4.0), "fair": (12.0, 0.0), "loose": (16.0, -4.0)}


def _rows(matrix, names=None):
    """Long-form ratings of a papers x raters matrix (NaN: not rated), the same value for every number."""
    names = names or [f"j{j}" for j in range(matrix.shape[1])]
    return [{"rater": names[j], "bibcode": f"p{i}", **dict.fromkeys(NUMBERS, float(matrix[i, j]))}
            for i in range(matrix.shape[0]) for j in range(matrix.shape[1]) if not np.isnan(matrix[i, j])]


def _anova_icc(Y):
    """Shrout and Fleiss's ICC(2,1) and ICC(2,k) from the two-way ANOVA mean squares, written out independently."""
    n, k = Y.shape
    grand = Y.mean()
    bms = k * ((Y.mean(axis=1) - grand) ** 2).sum() / (n - 1)
    jms = n * ((Y.mean(axis=0) - grand) ** 2).sum() / (k - 1)
    ems = (((Y - grand) ** 2).sum() - bms * (n - 1) - jms * (k - 1)) / ((n - 1) * (k - 1))
    return (bms - ems) / (bms + (k - 1) * ems + k * (jms - ems) / n), (bms - ems) / (bms + (jms - ems) / n)


def test_icc_is_shrout_and_fleiss_on_their_published_example():
    t = Table.of(_rows(SHROUT_FLEISS), [f"p{i}" for i in range(6)])
    single, average = icc(*pair_variances(t, 0, np.ones((1, 6))), 4)
    assert (round(float(single[0]), 2), round(float(average[0]), 2)) == (0.29, 0.62)  # their Table 4
    assert np.allclose([single[0], average[0]], _anova_icc(SHROUT_FLEISS), rtol=0, atol=1e-12)


def test_icc_on_any_complete_table_is_the_anova_formula():
    rng = np.random.default_rng(3)
    Y = rng.normal(50, 15, (40, 1)) + rng.normal(0, 6, (1, 5)) + rng.normal(0, 9, (40, 5))
    t = Table.of(_rows(Y), [f"p{i}" for i in range(40)])
    single, average = icc(*pair_variances(t, 0, np.ones((1, 40))), 5)
    assert np.allclose([single[0], average[0]], _anova_icc(Y), rtol=0, atol=1e-12)


def test_a_paper_drawn_twice_counts_as_two_papers():
    """A resample's counts give the statistic of the table with each paper repeated that often."""
    counts = np.array([[2, 0, 1, 1, 3, 1]])
    repeated = np.repeat(SHROUT_FLEISS, counts[0], axis=0)
    t = Table.of(_rows(SHROUT_FLEISS), [f"p{i}" for i in range(6)])
    t_repeated = Table.of(_rows(repeated), [f"p{i}" for i in range(len(repeated))])
    assert np.allclose(pair_variances(t, 0, counts), pair_variances(t_repeated, 0, np.ones((1, len(repeated)))))


def test_quadratic_kappa_is_scikit_learns_on_the_pooled_pairs():
    rng = np.random.default_rng(1)
    scores = np.clip(rng.normal(50, 25, (60, 1)) + rng.normal(0, 15, (60, 5)), 0, 100)
    matrix = np.where(rng.random((60, 5)) < 0.4, np.nan, scores)  # an incomplete table, as assignment leaves it
    t = Table.of(_rows(matrix), [f"p{i}" for i in range(60)])
    bins = np.digitize(t.values[:, 0], BIN_EDGES)
    weights = rng.integers(0, 4, 60)
    first, second, sample_weight = [], [], []
    for p in range(60):
        mine = np.flatnonzero(t.paper == p)
        for a in mine:
            for b in mine:
                if a != b:
                    first.append(bins[a]), second.append(bins[b]), sample_weight.append(weights[p])
    C = pair_confusions(t, 0)
    assert quadratic_kappa(C.sum(axis=0)) == pytest.approx(cohen_kappa_score(first, second, weights="quadratic"),
                                                            abs=1e-12)
    assert quadratic_kappa(weights @ C) == pytest.approx(
        cohen_kappa_score(first, second, weights="quadratic", sample_weight=sample_weight), abs=1e-12)


@pytest.mark.parametrize(("reliability", "needed"), [(0.8, 1), (0.5, 4), (0.4, 6), (0.0, None), (-0.2, None)])
def test_ratings_needed_is_spearman_brown(reliability, needed):
    assert ratings_needed(reliability) == needed
    if needed:  # the smallest k whose Spearman-Brown reliability reaches the target
        assert needed * reliability / (1 + (needed - 1) * reliability) >= TARGET_RELIABILITY - 1e-12
        assert needed == 1 or (needed - 1) * reliability / (1 + (needed - 2) * reliability) < TARGET_RELIABILITY



@pytest.fixture(scope="module")
def gold():
    from importlib import resources

    return load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))


@pytest.mark.parametrize(("rho", "needed"), [(0.0, 388), (0.5, 247), (0.9, 23), (-0.9, 23), (None, None)])
def test_papers_needed_follow_bonett_and_wright(rho, needed):
    assert papers_needed(rho) == needed


def test_papers_needed_give_the_half_width_they_promise():
    """Spearman correlations of n = papers_needed(rho) pairs drawn with that correlation spread by about +/- 0.1 (the
    95% half-width), on 2,000 draws."""
    rng = np.random.default_rng(0)
    rho = 0.6
    n = papers_needed(rho)
    pearson = 2 * math.sin(math.pi * rho / 6)  # the normal correlation whose Spearman correlation is rho
    draws = []
    for _ in range(2000):
        x = rng.normal(size=n)
        y = pearson * x + math.sqrt(1 - pearson**2) * rng.normal(size=n)
        draws.append(spearmanr(x, y)[0])
    low, high = np.percentile(draws, [2.5, 97.5])
    assert (high - low) / 2 == pytest.approx(0.1, abs=0.01)


def _truth(gold):
    return np.array([[r["innovation_score"], *(r["dimension_scores"][d] for d in NUMBERS[1:])] for r in gold])


def _simulate(truth, rng):
    """The honest raters' ratings (truth + bias + noise) and the random rater's (uniform 0-100), per paper."""
    honest = {name: truth + bias + rng.normal(0, sd, truth.shape) for name, (sd, bias) in RATERS.items()}
    return honest, rng.uniform(0, 100, truth.shape)


@pytest.fixture(scope="module")
def simulated(gold):
    """Every paper of the example (300) rated by the three honest raters and the random one; the report."""
    truth = _truth(gold)
    honest, random = _simulate(truth, np.random.default_rng(2026))
    rows = [{"rater": name, "bibcode": r["bibcode"], **dict(zip(NUMBERS, map(float, values[i])))}
            for name, values in (*honest.items(), ("random", random)) for i, r in enumerate(gold)]
    return rows, agreement(rows, gold)


def _inside(value, interval):
    return interval[0] <= value <= interval[1]


def test_the_random_rater_is_the_one_flagged(simulated):
    _, report = simulated
    assert report["flagged"] == ["random"]
    raters = {r["rater"]: r for r in report["raters"]}
    assert raters["random"]["ratio"]["interval"][0] > FLAG_RATIO
    for name in RATERS:
        assert raters[name]["flagged"] is False and raters[name]["ratio"]["interval"][1] < FLAG_RATIO
    # the others' biases, measured against the leave-one-out consensus (which includes the random rater's mean of
    # 50 and the other honest raters' biases), keep their order: sharp rates high, loose low
    bias = {name: raters[name]["bias"]["estimate"] for name in RATERS}
    assert bias["sharp"] > bias["fair"] > bias["loose"]
    assert report["n_papers_enough"] == 300 and report["k"] == pytest.approx(3.0)


def test_reliability_is_what_the_noise_implies_within_the_intervals(simulated, gold):
    """ICC(2,k) of three raters with error SDs s_j and biases b_j is s_p / (s_p + (var(b) + mean(s_j^2)) / 3), s_p
    the variance of the true scores over these papers: the value must lie inside each number's interval."""
    _, report = simulated
    truth = _truth(gold)
    sds, biases = np.array([v[0] for v in RATERS.values()]), np.array([v[1] for v in RATERS.values()])
    rater_error = biases.var(ddof=1) + np.mean(sds**2)
    for j, number in enumerate(NUMBERS):
        papers = truth[:, j].var(ddof=1)
        stats = report["numbers"][number]
        for key, k in (("icc_21", 1), ("icc_2k", 3)):
            implied = papers / (papers + rater_error / k)
            assert _inside(implied, stats[key]["interval"]), (number, key, implied, stats[key])
            assert abs(stats[key]["estimate"] - implied) < 0.06, (number, key)
        needed = ratings_needed(papers / (papers + rater_error))
        low, high = stats["ratings_needed"]["interval"]
        assert low <= needed <= high, (number, needed, stats["ratings_needed"])
        # the flagged ratings would have lowered the reliability
        assert stats["icc_2k_all"]["estimate"] < stats["icc_2k"]["estimate"] - 0.1


def test_kappa_spearman_and_mae_are_what_the_noise_implies_within_the_intervals(simulated, gold):
    """Their values under the noise model, averaged over 100 fresh draws of the raters' noise on the same papers (an
    independent computation: scipy's Spearman, numpy's MAE, the kappa on the pooled pairs), lie inside the report's
    intervals; the MAE also has a closed form."""
    _, report = simulated
    truth = _truth(gold)
    rng = np.random.default_rng(7)
    kappas, rhos, maes = [], [], []
    for _ in range(100):
        honest, _ = _simulate(truth, rng)
        stack = np.stack(list(honest.values()), axis=1)  # papers, raters, numbers
        consensus = stack.mean(axis=1)
        maes.append(np.abs(consensus - truth).mean(axis=0))
        rhos.append([spearmanr(consensus[:, j], truth[:, j])[0] for j in range(len(NUMBERS))])
        bins = np.digitize(stack, BIN_EDGES)
        K = len(BIN_EDGES) + 1
        C = np.zeros((len(NUMBERS), K, K))
        for a in range(3):
            for b in range(3):
                if a != b:
                    for j in range(len(NUMBERS)):
                        np.add.at(C[j], (bins[:, a, j], bins[:, b, j]), 1)
        kappas.append(quadratic_kappa(C.reshape(len(NUMBERS), -1)))
    closed_mae = math.sqrt(np.sum(np.array([v[0] for v in RATERS.values()]) ** 2)) / 3 * math.sqrt(2 / math.pi)
    for j, number in enumerate(NUMBERS):
        stats = report["numbers"][number]
        for key, implied in (("kappa", np.mean(kappas, axis=0)[j]), ("spearman", np.mean(rhos, axis=0)[j]),
                             ("mae", np.mean(maes, axis=0)[j])):
            assert _inside(implied, stats[key]["interval"]), (number, key, implied, stats[key])
        assert np.mean(maes, axis=0)[j] == pytest.approx(closed_mae, rel=0.03)


def test_the_consensus_is_the_mean_of_the_raters_not_flagged(simulated, gold):
    rows, report = simulated
    records = consensus_records(rows, gold, report)
    assert [r["bibcode"] for r in records] == [r["bibcode"] for r in gold]
    first = [r for r in rows if r["bibcode"] == gold[0]["bibcode"] and r["rater"] != "random"]
    assert records[0]["innovation_score"] == pytest.approx(np.mean([r["innovation_score"] for r in first]))
    assert records[0]["dimension_scores"]["disruptiveness"] == pytest.approx(
        np.mean([r["disruptiveness"] for r in first]))
    assert records[0]["title"] == gold[0]["title"]


def test_too_few_papers_rated_enough_give_no_statistics(gold):
    rows = [{"rater": f"r{j}", "bibcode": gold[i]["bibcode"], **dict.fromkeys(NUMBERS, 50.0 + i + j)}
            for i in range(4) for j in range(3)]
    report = agreement(rows, gold, n_resamples=50)
    assert report["n_papers_enough"] == 4 and report["numbers"] == {} and report["k"] is None
    assert [r["flagged"] for r in report["raters"]] == [None] * 3  # 4 ratings each: too few to judge


def test_a_rating_of_a_paper_outside_the_gold_is_an_error(gold):
    with pytest.raises(ScitasteError, match=r"1 rated paper\(s\) not in the gold set, e.g. nope"):
        agreement([{"rater": "a", "bibcode": "nope", **dict.fromkeys(NUMBERS, 1.0)}], gold)


def test_no_resamples_give_estimates_without_intervals(simulated, gold):
    rows, with_intervals = simulated
    report = agreement(rows, gold, n_resamples=0)
    assert report["flagged"] == []  # no interval, no flag: a flag needs the whole interval above the ratio
    stats = report["numbers"]["citation_impact"]
    # so every rater is kept: the reliability is the one the full report gives with the flagged ratings
    everyone = with_intervals["numbers"]["citation_impact"]["icc_2k_all"]["estimate"]
    assert stats["icc_2k"]["estimate"] == pytest.approx(everyone) and stats["icc_2k"]["interval"] is None
    assert stats["ratings_needed"]["interval"] is None and stats["papers_needed"]["interval"] is None
    assert stats["papers_needed"]["estimate"] == papers_needed(stats["spearman"]["estimate"])


def test_resampled_raters_are_the_table_with_each_rater_repeated_as_one_rater():
    """rater_pair_variances with a rater drawn twice and one not drawn is the half mean squared difference over the
    pairs of rating copies, enumerated here one by one: copies of one rater are one rater (pairs of their ratings of
    two papers are same-rater pairs), the two copies of one rating form no pair between raters."""
    rng = np.random.default_rng(5)
    matrix = np.where(rng.random((12, 5)) < 0.3, np.nan, rng.uniform(0, 100, (12, 5)))
    t = Table.of(_rows(matrix), [f"p{i}" for i in range(12)])
    assert np.allclose(rater_pair_variances(t, 0, np.ones((1, 5))), pair_variances(t, 0, np.ones((1, 12))),
                       rtol=0, atol=1e-9)
    draws = np.array([2.0, 0.0, 1.0, 3.0, 1.0])
    copies = [(t.paper[m], t.rater[m], t.values[m, 0]) for m in range(len(t.paper))
              for _ in range(int(draws[t.rater[m]]))]
    apart, same_paper = [], []
    for (p1, r1, x1), (p2, r2, x2) in itertools.combinations(copies, 2):
        if r1 != r2:
            (same_paper if p1 == p2 else apart).append((x1 - x2) ** 2 / 2)
    d0, dp = rater_pair_variances(t, 0, draws[None, :])
    assert (d0[0], dp[0]) == (pytest.approx(np.mean(apart), abs=1e-9), pytest.approx(np.mean(same_paper), abs=1e-9))
    # and the kappa's confusions by pair of raters add up to the papers' confusions
    assert np.allclose(rater_pair_confusions(t, 0).sum(axis=(0, 1)), pair_confusions(t, 0).sum(axis=0))


@pytest.mark.slow
def test_reliability_intervals_cover_the_icc_of_raters_in_general():
    """Sixty simulated collections of 60 papers rated by four raters drawn from a population whose average scores
    differ (variance components: papers 100, raters 100, error 100, so ICC(2,1) = 1/3 and ICC(2,4) = 2/3). The 95%
    intervals must cover those values in at least 88% of the collections (measured: 93%). Resampling the papers
    alone held the four raters fixed and covered them in 75%; judging raters by their distance from the consensus
    with their offset left in also flagged a rater for being consistently high or low in 20 of the 60."""
    rng = np.random.default_rng(7)
    papers = [{"bibcode": f"p{i}", "discipline": "physics", "innovation_score": 50.0,
               "dimension_scores": dict.fromkeys(NUMBERS[1:], 50.0)} for i in range(60)]
    covered, flagged = {"icc_21": 0, "icc_2k": 0}, 0
    for it in range(60):
        matrix = 50 + rng.normal(0, 10, (60, 1)) + rng.normal(0, 10, (1, 4)) + rng.normal(0, 10, (60, 4))
        report = agreement(_rows(matrix), papers, n_resamples=200, seed=it)
        flagged += bool(report["flagged"])
        for key, truth in (("icc_21", 1 / 3), ("icc_2k", 2 / 3)):
            if report["numbers"]:  # none when too many raters were flagged: not covered
                low, high = report["numbers"]["innovation_score"][key]["interval"]
                covered[key] += low <= truth <= high
    assert min(covered.values()) >= 0.88 * 60, covered
    assert flagged <= 3, flagged  # honest raters, however far apart their averages


def test_an_honest_rater_who_rates_everything_high_is_not_flagged(gold):
    """Three honest raters and one as precise who rates every number 20 points high, on the 50 physics papers: no one
    is flagged (the offset shows as bias); with a random rater added, only the random one is."""
    physics = [r for r in gold if r["discipline"] == "physics"]
    truth = _truth(physics)
    rng = np.random.default_rng(12)
    raters = {"a": truth + rng.normal(0, 8, truth.shape), "b": truth + rng.normal(0, 12, truth.shape),
              "c": truth + rng.normal(0, 10, truth.shape), "high": truth + 20 + rng.normal(0, 8, truth.shape)}

    def rows(raters):
        return [{"rater": name, "bibcode": r["bibcode"], **dict(zip(NUMBERS, map(float, values[i])))}
                for name, values in raters.items() for i, r in enumerate(physics)]

    report = agreement(rows(raters), gold, n_resamples=300)
    assert report["flagged"] == []
    high = next(r for r in report["raters"] if r["rater"] == "high")
    assert high["flagged"] is False and high["bias"]["interval"][0] > 10
    report = agreement(rows({**raters, "random": rng.uniform(0, 100, truth.shape)}), gold, n_resamples=300)
    assert report["flagged"] == ["random"]


def test_the_summary_says_when_the_flagged_raters_leave_too_few_papers(gold):
    """Three raters, one at random: the random one is flagged, and the two left cannot give a paper three ratings.
    The summary says so, rather than that too few papers were rated."""
    from scitaste_hf.ratings.report import summary

    physics = [r for r in gold if r["discipline"] == "physics"]
    truth = _truth(physics)
    rng = np.random.default_rng(4)
    raters = {"a": truth + rng.normal(0, 8, truth.shape), "b": truth + rng.normal(0, 10, truth.shape),
              "random": rng.uniform(0, 100, truth.shape)}
    rows = [{"rater": name, "bibcode": r["bibcode"], **dict(zip(NUMBERS, map(float, values[i])))}
            for name, values in raters.items() for i, r in enumerate(physics)]
    report = agreement(rows, gold, n_resamples=300)
    assert report["flagged"] == ["random"] and report["numbers"] == {}
    assert (report["n_papers_enough"], report["n_papers_enough_with_flagged"]) == (0, 50)
    assert "Too few papers have 3 ratings once the flagged raters' are set aside (50 have with them)" in summary(report)
