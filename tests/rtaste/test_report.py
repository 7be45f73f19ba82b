"""The headline report on a hand-built release of two conditions on two seed papers, computed by hand."""

import math

import numpy as np
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.events import resolve
from scitaste_hf.rtaste.release import load_release, validate_rows
from scitaste_hf.rtaste.report import ONE_SEED_PAPER, labels, report


def _rows(make_condition):
    # Condition A on paper p1: the agent says 0.5 throughout, judge m1 is perfect, judge m2 always wrong.
    a = make_condition("A", occurred=[1, 0, 1, 0, 1], probabilities=[0.5] * 5, ranks=(2, 1, 3, 4, 5),
                       judges={"m1": [1, 0, 1, 0, 1], "m2": [0, 1, 0, 1, 0]}, values=(1, 3, 2, 0, 0),
                       seed_paper="p1", model="m1", organisation="single_researcher", cost=10.0)
    # Condition B on paper p2: the agent is perfect, both judges say 0.5.
    b = make_condition("B", occurred=[0, 0, 0, 0, 1], probabilities=[0, 0, 0, 0, 1],
                       judges={"m1": [0.5] * 5, "m2": [0.5] * 5}, values=(2, 2, 0, 0, 1),
                       seed_paper="p2", model="m1", organisation="research_team", cost=30.0)
    a[1]["audit"]["novelty"] = ["equivalent", "distinct"]  # A's MVE 2 is valuable but not new
    b[0]["audit"]["faithful"] = [False, False, True]  # B's MVE 1 is valuable but not sound
    return a + b


def test_brier_table_by_hand(make_condition):
    brier = report(validate_rows(_rows(make_condition)), n_resamples=2000)["brier"]
    assert (brier["n_scored"], brier["n_resolved"], brier["event_rate"]) == (10, 10, 0.4)
    assert brier["agent"]["estimate"] == pytest.approx(1.25 / 10)  # 5 x 0.25 on A, 0 on B
    assert brier["same_model_judge"]["estimate"] == pytest.approx(1.25 / 10)  # 0 on A, 5 x 0.25 on B
    assert brier["judge_mean"]["estimate"] == pytest.approx(0.25)  # the judges' mean is 0.5 everywhere
    # p1's events get p2's rate 1/5: 3 x 0.8^2 + 2 x 0.2^2 = 2.0; p2's get p1's 3/5: 4 x 0.6^2 + 0.4^2 = 1.6
    assert brier["base_rate"]["estimate"] == pytest.approx(3.6 / 10)
    difference = brier["agent_minus_judge"]
    assert difference["estimate"] == pytest.approx(0.0)
    # Per seed paper the difference is +0.25 (A) and -0.25 (B), five MVEs each: the t-interval over the two
    # papers' means, standard error 0.25 and t on 1 degree of freedom, tan(0.475 pi) = 12.706.
    # That is -/+ 3.18, past what a difference of two squared errors can take: clipped to -1, 1.
    half = 0.25 * math.tan(math.pi * 0.475)
    assert half > 1 and difference["interval"] == [-1.0, 1.0] and difference["clipped"]
    assert difference["n_groups"] == 2


def test_failed_mves_leave_the_brier_scores(make_condition):
    rows = _rows(make_condition)
    rows[7]["outcome"].update(status="failed", rerun_value=None, executor_value=None)  # B's MVE 3
    brier = report(validate_rows(rows), n_resamples=0)["brier"]
    assert (brier["n_scored"], brier["n_resolved"]) == (9, 9)
    assert brier["agent"]["estimate"] == pytest.approx(1.25 / 9)
    assert brier["same_model_judge"]["estimate"] == pytest.approx(1.0 / 9)
    # p1: others' rate 1/4 -> 3 x 0.75^2 + 2 x 0.25^2; p2 (4 resolved): 3/5 -> 3 x 0.6^2 + 0.4^2
    assert brier["base_rate"]["estimate"] == pytest.approx((3 * 0.5625 + 2 * 0.0625 + 3 * 0.36 + 0.16) / 9)
    assert brier["agent"]["interval"] is None


def test_top1_yield_and_labels_by_hand(make_condition):
    result = report(validate_rows(_rows(make_condition)), n_resamples=0)
    top1 = result["top1"]
    # A: rank 1 is MVE 2, the unique best (value 3): 1; first-written MVE 1: 0.
    # B: rank 1 is MVE 1, tied best with MVE 2 (value 2): 1/2 for both choices.
    assert top1["agent"]["estimate"] == pytest.approx(0.75)
    assert top1["first_written"]["estimate"] == pytest.approx(0.25)
    assert top1["agent_minus_random"]["estimate"] == pytest.approx(0.55)
    assert top1["agent_minus_first_written"]["estimate"] == pytest.approx(0.5)
    # Valuable (median >= 2): A's MVEs 2 and 3, B's 1 and 2; A's 2 is not new, B's 1 is not sound.
    assert result["n_sound_valuable_new"] == 2
    assert result["yield"] == [
        {"model": "m1", "organisation": "research_team", "n_conditions": 1, "svn_total": 1,
         "svn_per_condition": 1.0, "cost_usd_per_condition": 30.0, "svn_per_100_usd": pytest.approx(100 / 30)},
        {"model": "m1", "organisation": "single_researcher", "n_conditions": 1, "svn_total": 1,
         "svn_per_condition": 1.0, "cost_usd_per_condition": 10.0, "svn_per_100_usd": pytest.approx(10.0)},
    ]
    assert result["agreement"]["faithful"]["fleiss"] is not None
    assert result["agreement"]["value"]["cohen"]["auditor1~auditor2"] == 1.0  # identical auditors


def test_a_release_of_one_seed_paper_is_reported_with_its_caveat(make_condition):
    result = report(validate_rows(_rows(make_condition)[:5]), n_resamples=2000)
    assert result["caveats"] == [ONE_SEED_PAPER] and result["n_seed_papers"] == 1
    brier = result["brier"]
    assert brier["agent"]["estimate"] == pytest.approx(0.25) and brier["same_model_judge"]["estimate"] == 0.0
    assert brier["base_rate"] is None and brier["agent"]["interval"] is None
    assert result["top1"]["agent"]["estimate"] == 1.0  # A's rank 1 is MVE 2, valued 3
    assert report(validate_rows(_rows(make_condition)), n_resamples=0)["caveats"] == []


def test_release_without_the_same_model_judge(make_condition):
    rows = _rows(make_condition)
    for row in rows:
        row["judge_predictions"] = [j for j in row["judge_predictions"] if j["judge_model"] != "m1"]
    with pytest.raises(ScitasteError, match="judge of the agent's own model"):
        report(validate_rows(rows), n_resamples=0)


def test_release_without_judges_scores_agent_and_base_rate(make_condition):
    rows = _rows(make_condition)
    for row in rows:
        row["judge_predictions"] = []
    brier = report(validate_rows(rows), n_resamples=0)["brier"]
    assert brier["agent"]["estimate"] == pytest.approx(0.125)
    assert brier["same_model_judge"] is brier["judge_mean"] is brier["agent_minus_judge"] is None


def test_bundled_release_report_matches_direct_computation():
    release = load_release()
    result = report(release, n_resamples=200)
    resolved = [(r, resolve(r)) for r in release.records if resolve(r) is not None]
    p = np.array([r.probability for r, _ in resolved])
    o = np.array([o for _, o in resolved], dtype=float)
    assert result["brier"]["agent"]["estimate"] == pytest.approx(np.mean((p - o) ** 2))
    assert result["n_sound_valuable_new"] == int(labels(release.records)["svn"].sum())
    assert sum(row["n_conditions"] for row in result["yield"]) == 24
    for key in ("agent", "same_model_judge", "judge_mean", "base_rate", "agent_minus_judge"):
        lo, hi = result["brier"][key]["interval"]
        assert lo <= result["brier"][key]["estimate"] <= hi


def test_reviewers_answers_need_two_of_three(make_condition):
    rows = _rows(make_condition)
    rows[0]["audit"]["reviewer_answers"] = [["yes", "no"], ["yes", "yes"], ["no", "unclear"]]
    rows[1]["audit"]["reviewer_answers"] = [["no", "no"], ["yes", "no"], ["unclear", "yes"]]
    reviews = report(validate_rows(rows), n_resamples=0)["reviews"]
    assert reviews == {"n_reviewed": 2, "questions": [{"no_agreement": 1, "yes": 1}, {"no": 1, "no_agreement": 1}]}


def test_release_without_resolved_events(make_condition):
    rows = _rows(make_condition)
    for row in rows:
        row["outcome"].update(status="failed", rerun_value=None, executor_value=None)
    with pytest.raises(ScitasteError, match="no MVE has a resolved event"):
        report(validate_rows(rows), n_resamples=0)


def test_repeated_runs_give_each_metrics_spread_between_runs(make_condition):
    # p1 run twice: the agent says 0.5 (Brier 0.25), then knows the outcomes (0); p2 run twice alike (0.25, 0.25).
    occurred = [1, 0, 1, 0, 1]
    rows = (make_condition("A1", occurred=occurred, probabilities=[0.5] * 5, seed_paper="p1", cost=10.0)
            + make_condition("A2", occurred=occurred, probabilities=occurred, seed_paper="p1", cost=14.0)
            + make_condition("B1", occurred=occurred, probabilities=[0.5] * 5, seed_paper="p2", cost=10.0)
            + make_condition("B2", occurred=occurred, probabilities=[0.5] * 5, seed_paper="p2", cost=10.0))
    spread = report(validate_rows(rows), n_resamples=0)["repeats"]
    assert spread["n_repeated"] == 2
    brier = spread["metrics"]["agent_brier"]
    # squared deviations from each cell's mean: 2 x 0.125^2 on p1, 0 on p2; two degrees of freedom
    assert brier["estimate"] == pytest.approx(math.sqrt(2 * 0.125**2 / 2)) and brier["df"] == 2
    # the chi-square quantiles of 2 degrees of freedom are -2 ln(tail): 0.0506 and 7.378
    assert brier["interval"] == pytest.approx([math.sqrt(0.03125 / (-2 * math.log(0.025))),
                                               math.sqrt(0.03125 / (-2 * math.log(0.975)))])
    assert spread["metrics"]["cost_usd"]["estimate"] == pytest.approx(math.sqrt(2 * 2.0**2 / 2))
    assert spread["metrics"]["svn"]["estimate"] == 0.0 and spread["metrics"]["same_model_judge_brier"] is None
    assert report(validate_rows(rows[:5] + rows[10:15]), n_resamples=0)["repeats"] is None  # each run once
