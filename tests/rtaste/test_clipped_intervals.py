"""With two seed papers the t-interval (t on 1 degree of freedom) is wider than a Brier score's or a hit rate's
range; the intervals are clipped to what each statistic can take, and the result and the report say so."""

import pytest

from scitaste_hf.cli.rtaste import CLIPPED_MARK, CLIPPED_NOTE, report_tables
from scitaste_hf.rtaste.metrics import ABOVE_RANDOM, UNIT, UNIT_DIFFERENCE, grouped_mean
from scitaste_hf.rtaste.summaries import brier_summary, ranking_summary


def test_the_unclipped_interval_of_two_seed_papers_leaves_the_range_and_is_clipped_to_it():
    values, groups = [0.81, 0.01, 0.64, 0.04], ["a", "a", "b", "b"]
    wide = grouped_mean(values, groups)
    assert wide["interval"][0] < 0 and not wide["clipped"]  # no bounds given: the t-interval as it is
    clipped = grouped_mean(values, groups, bounds=UNIT)
    assert clipped["clipped"] and clipped["interval"] == [0.0, pytest.approx(wide["interval"][1])]
    assert clipped["estimate"] == wide["estimate"]
    # an interval inside the range is left as it is
    many = grouped_mean([0.2, 0.3, 0.25, 0.35, 0.3, 0.2], ["a", "a", "b", "b", "c", "c"], bounds=UNIT)
    assert not many["clipped"] and 0 < many["interval"][0] < many["interval"][1] < 1


def test_every_rtaste_interval_lies_in_its_statistics_range():
    brier = brier_summary([0.9, 0.1, 0.8, 0.2], [1, 1, 0, 0], ["a", "a", "b", "b"])
    assert brier["ci_clipped"] and UNIT[0] <= brier["ci"][0] <= brier["brier"] <= brier["ci"][1] <= UNIT[1]
    ranking = ranking_summary([[1, 2, 3, 4, 5], [2, 1, 3, 4, 5], [1, 2, 3, 4, 5]],
                              [[3, 0, 0, 0, 0], [0, 0, 0, 0, 3], [0, 3, 0, 0, 0]], ["a", "b", "b"])
    ranges = {"top1_hit_rate": UNIT, "first_written_hit_rate": UNIT, "top1_minus_random": ABOVE_RANDOM,
              "top1_minus_first_written": UNIT_DIFFERENCE}
    for name, (low, high) in ranges.items():
        ci = ranking["ci"][name]
        assert low <= ci[0] <= ranking[name] <= ci[1] <= high, name
    assert ranking["ci_clipped"] == ["first_written_hit_rate", "top1_hit_rate", "top1_minus_random"]


def test_the_report_marks_a_clipped_interval_and_says_why(tmp_path):
    from rich.console import Console

    def block(estimate, interval, clipped):
        return {"estimate": estimate, "interval": interval, "clipped": clipped, "n": 4, "n_groups": 2}

    result = {"rerun_agreement": {"n_same_value": 1, "n_compared": 1}, "n_mves": 10, "n_conditions": 2,
              "n_seed_papers": 2, "n_delivered": 10, "yield": [],
              "brier": {"n_scored": 4, "event_rate": 0.5, "agent": block(0.375, [0.0, 0.82], True),
                        "same_model_judge": None, "judge_mean": None, "base_rate": block(0.25, [0.1, 0.4], False),
                        "agent_minus_judge": None},
              "top1": {"n_conditions": 2, "agent": block(0.5, [0.2, 0.8], False),
                       "first_written": block(0.5, [0.2, 0.8], False), "random": 0.2,
                       "agent_minus_random": block(0.3, [0.0, 0.6], False),
                       "agent_minus_first_written": block(0.0, [-0.3, 0.3], False)},
              "agreement": {}}
    console = Console(width=200, record=True)
    for table in report_tables(result):
        console.print(table)
    text = console.export_text()
    assert f"0.375 [0.000, 0.820]{CLIPPED_MARK}" in text and f"0.250 [0.100, 0.400]{CLIPPED_MARK}" not in text
    # the Brier table's caption says what the mark means; the top-1 table, with nothing clipped, has none
    assert text.count("(clipped)") == 2 and " ".join(CLIPPED_NOTE.split()) in " ".join(text.split())
