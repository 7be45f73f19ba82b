"""What a rater can learn of the other raters' ratings from the agreement report the Space shows (issue 27): she
knows her own ratings, her pseudonym (from her status line) and the public gold, and watches the report after every
rating. Two channels read the others' ratings from a report that moves with every panel: her own bias (her ratings
minus the others' mean), and the change in the consensus's MAE against the gold when one paper's panel completes
(|consensus - gold| of that paper). Both are tried here, first against what the report used to show (they work), then
against the released report (they do not)."""

import itertools
import re

import numpy as np
import pytest

from scitaste_hf.ratings import NUMBERS, Ratings
from scitaste_hf.ratings.agreement import MIN_PAPERS, MIN_RATERS, agreement
from scitaste_hf.ratings.report import report_tables

pytestmark = pytest.mark.slow

N_PAPERS = 30
RATERS = ("local:ann", "local:bob", "local:cy")  # ann is the one watching
ATTACKER = RATERS[0]


def _gold():
    rng = np.random.default_rng(3)
    return [{"bibcode": f"2010Phys..{i:03d}....X", "discipline": "physics", "title": f"Paper {i}", "abstract": "a",
             "year": 2010, "journal_name": "J", "innovation_score": round(float(rng.uniform(10, 90)), 1),
             "dimension_scores": {d: round(float(rng.uniform(10, 90)), 1) for d in NUMBERS[1:]}}
            for i in range(N_PAPERS)]


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """Three raters taking turns through the service until every paper has three ratings; after every rating, the
    report as the Space shows it (public tables) and, for the attack on the old behaviour, the ratings so far."""
    gold = _gold()
    service = Ratings(tmp_path_factory.mktemp("ratings"), gold)
    rng = np.random.default_rng(8)
    views = []
    for k in range(MIN_RATERS * N_PAPERS):
        rater = RATERS[k % len(RATERS)]
        paper = service.next_paper(rater, "physics")
        service.rate(rater, paper["bibcode"], [float(v) for v in rng.uniform(0, 100, len(NUMBERS)).round()])
        report = service.report(n_resamples=0)
        views.append((report, report_tables(report, public=True), service.store.ratings()))
    pseudonym = service.pseudonym(ATTACKER)
    service.close()
    return gold, views, pseudonym


def _others_sum(stored, bibcode, number="innovation_score"):
    return sum(r[number] for r in stored if r["bibcode"] == bibcode and r["rater"] != ATTACKER)


def _own(stored, bibcode, number="innovation_score"):
    return next(r[number] for r in stored if r["bibcode"] == bibcode and r["rater"] == ATTACKER)


def _mae_attack(gold, sequence):
    """The MAE-difference attack over a sequence of (papers rated enough, consensus MAE of the innovation score,
    ratings stored): at each change, the attacker takes the change of the MAE's sum as |consensus - gold| of a paper
    of hers that entered, and reads the others' sum for it (two candidates, a sign apart). Returns, per paper she
    tried, the error of her nearer candidate."""
    truth = {r["bibcode"]: r["innovation_score"] for r in gold}
    errors = {}
    for (n0, m0, before), (n1, m1, after) in itertools.pairwise(sequence):
        if n1 == n0 or m0 is None or m1 is None:
            continue
        difference = n1 * m1 - n0 * m0
        complete = lambda stored: {b for b in truth if sum(r["bibcode"] == b for r in stored) >= MIN_RATERS}  # noqa: E731
        for bibcode in complete(after) - complete(before):
            own, g = _own(after, bibcode), truth[bibcode]
            candidates = [MIN_RATERS * (g + s * difference) - own for s in (1, -1)]
            errors[bibcode] = min(abs(c - _others_sum(after, bibcode)) for c in candidates)
    return errors


def test_the_mae_difference_channel_reads_the_others_ratings_from_a_report_that_moves_per_panel(history):
    """What the report used to be (every complete panel at once): the attack reads the two other raters' sum on
    each of her papers to within a rounding error."""
    gold, views, _ = history
    sequence = []
    for _, _, stored in views:
        report = agreement([{**r} for r in stored], gold, n_resamples=0)
        numbers = report["numbers"].get("innovation_score")
        sequence.append((report["n_papers_enough"], numbers and numbers["mae"]["estimate"], stored))
    errors = _mae_attack(gold, sequence)
    assert len(errors) >= N_PAPERS - MIN_PAPERS - 1 and max(errors.values()) < 1e-6


def test_the_released_report_moves_only_by_whole_releases_and_the_mae_channel_fails(history):
    gold, views, _ = history
    # the view changes only when another MIN_PAPERS panels are complete, never with one paper
    shown = [(report["n_papers_enough"], tuple(map(tuple, tables[1].rows))) for report, tables, _ in views]
    changes = [(a, b) for a, b in itertools.pairwise(shown) if a != b]
    assert changes and all(b[0] - a[0] == MIN_PAPERS for a, b in changes)
    counts = [report["n_ratings"] for report, _, _ in views]
    assert sorted(set(counts)) == [MIN_RATERS * MIN_PAPERS * k for k in range(N_PAPERS // MIN_PAPERS + 1)]
    # the attack on the public view (the MAE as printed, one decimal)
    sequence = []
    for report, tables, stored in views:
        mae = tables[1].rows[0][2] if tables[1].rows else None
        sequence.append((report["n_papers_enough"], None if mae is None else float(mae.split()[0]), stored))
    errors = _mae_attack(gold, sequence)
    assert errors  # she tried every paper that entered
    assert np.median(list(errors.values())) > 10, errors  # the others' sum on a paper spans 0-200


def test_the_bias_channel_is_closed(history):
    """Her own bias would give the others' mean over her papers (issue: +13.2 gave 43.7 for a true 43.69); the
    Space's raters table shows no number derived from anyone's scores: pseudonym, counts and whether flagged."""
    _, views, pseudonym = history
    report, _, stored = views[-1]
    # the operator's view (scitaste ratings report) has it, and the attack works there
    full = report_tables(report)[2]
    bias = float(next(row for row in full.rows if row[0] == pseudonym)[full.columns.index("bias")])
    mine = [r for r in stored if r["rater"] == ATTACKER]
    own_mean = np.mean([[r[n] for n in NUMBERS] for r in mine])
    others_mean = np.mean([[r[n] for n in NUMBERS] for r in stored
                           if r["rater"] != ATTACKER and r["bibcode"] in {m["bibcode"] for m in mine}])
    assert abs((own_mean - bias) - others_mean) < 0.06
    for _, tables, _ in views:
        raters = tables[2]
        assert raters.columns == ["rater", "ratings", "judged", "flagged"]
        for row in raters.rows:
            assert re.fullmatch(r"rater-[0-9a-f]{16}", row[0]) and row[1].isdigit() and row[2].isdigit()
            assert row[3] in ("no", "FLAGGED", "not judged")
        assert [row[0] for row in raters.rows] == sorted(row[0] for row in raters.rows)  # not by disagreement
