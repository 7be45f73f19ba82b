"""Per-tool attribution in `scitaste report`: each withheld tool's effect on skill and Spearman is the direct
difference of the two runs' figures computed here (scoring.skill, scipy's Spearman), with a paired interval and its
detectable difference; a samples log records its withheld tool; the tables name the run without its tool."""

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from scitaste_hf.analysis import Run, analyse
from scitaste_hf.analysis.render import markdown
from scitaste_hf.cli import main
from scitaste_hf.errors import InvalidInput
from scitaste_hf.records import load_records
from scitaste_hf.schema import DIMENSIONS, Answer
from scitaste_hf.scoring.bootstrap import skill
from scitaste_hf.scoring.ranks import detectable_difference

GOLD = Path(__file__).resolve().parents[2] / "scitaste_hf" / "data" / "examples" / "gold.jsonl"
B = 40


def _answers(gold, M):
    return {r["bibcode"]: Answer.model_validate({"innovation_score": float(row[0]),
                                                 "dimension_scores": dict(zip(DIMENSIONS, map(float, row[1:])))})
            for r, row in zip(gold, M)}


@pytest.fixture(scope="module")
def runs():
    """A full run close to the gold, and the same run with journal impact at the middle (its tool withheld)."""
    gold = load_records(GOLD)
    G = np.array([[r["innovation_score"], *(r["dimension_scores"][k] for k in DIMENSIONS)] for r in gold])
    full = np.clip(G + np.random.default_rng(3).normal(0, 10, G.shape), 0, 100).round(2)
    without = full.copy()
    without[:, 1 + DIMENSIONS.index("journal_impact")] = 50.0
    without[:, 0] = np.clip(full[:, 0] - 4.0, 0, 100)
    return gold, G, full, without


def test_the_effect_is_the_full_run_minus_the_run_without_the_tool(runs):
    gold, G, full, without = runs
    report = analyse([Run("m", "dimagent_v3", _answers(gold, full)),
                      Run("m", "dimagent_v3", _answers(gold, without), withheld="journal_profile")],
                     gold, n_resamples=B)
    (effect,) = report["attribution"]
    assert (effect["tool"], effect["n"], effect["mode"]) == ("journal_profile", len(gold), "dimagent_v3")
    stats = effect["statistics"]
    floor = np.tile(G.mean(axis=0), (len(G), 1))  # the constant floor, learned from the gold without a backup
    a, b = skill(full, floor, G, n_resamples=0), skill(without, floor, G, n_resamples=0)
    for scheme in ("scheme1", "scheme2"):
        assert stats[f"{scheme}_skill"]["difference"] == pytest.approx(a[scheme]["skill"] - b[scheme]["skill"])
        low, high = stats[f"{scheme}_skill"]["interval"]
        assert low <= stats[f"{scheme}_skill"]["difference"] <= high
        assert stats[f"{scheme}_skill"]["detectable"] == pytest.approx(detectable_difference([low, high]))
    k = 1 + DIMENSIONS.index("journal_impact")
    # without the tool the dimension is constant: no association, so the effect is the full run's own Spearman
    assert stats["spearman_journal_impact"]["difference"] == pytest.approx(spearmanr(full[:, k], G[:, k])[0])
    assert stats["spearman_journal_impact"]["interval"][0] > 0.3
    assert stats["spearman_citation_impact"] == {"difference": 0.0, "interval": [0.0, 0.0], "detectable": 0.0}
    assert stats["spearman"]["difference"] == pytest.approx(spearmanr(full[:, 0], G[:, 0])[0]
                                                            - spearmanr(without[:, 0], G[:, 0])[0])
    text = markdown(report)
    assert "## Per-tool attribution" in text and "| m | dimagent_v3 without journal_profile |" in text


def test_a_withheld_run_needs_its_full_run_and_is_no_second_copy_of_it(runs):
    gold, _, full, without = runs
    alone = analyse([Run("m", "dimagent_v3", _answers(gold, without), withheld="references")], gold, n_resamples=0)
    assert alone["attribution"] == [] and "no per-tool attribution" in markdown(alone)
    with pytest.raises(InvalidInput, match="two runs are m / dimagent_v3 without references"):
        analyse([Run("m", "dimagent_v3", _answers(gold, full), "a", "references"),
                 Run("m", "dimagent_v3", _answers(gold, without), "b", "references")], gold, n_resamples=0)


def test_scitaste_report_reads_the_withheld_tool_from_a_samples_log_or_the_run(runs, tmp_path):
    gold, _, full, without = runs

    def log(name, M, withheld):
        path = tmp_path / name
        path.write_text("".join(json.dumps({"doc": {"bibcode": r["bibcode"], "scitaste_mode": "dimagent_v3",
                                                    "withheld": withheld},
                                            "filtered_resps": [json.dumps(a.model_dump())]}) + "\n"
                                for r, a in zip(gold, _answers(gold, M).values())))
        return str(path)

    full_log, cut_log = log("samples_full.jsonl", full, ""), log("samples_cut.jsonl", without, "journal_profile")
    assert main(["report", full_log, cut_log, "--model", "m", "--gold", str(GOLD), "--out", str(tmp_path / "r"),
                 "--n-resamples", "0"]) == 0
    report = json.loads((tmp_path / "r" / "report.json").read_text())
    assert [a["tool"] for a in report["attribution"]] == ["journal_profile"]
    # a predictions file records nothing: withheld= names it; a name that is no tool is one line
    assert main(["report", full_log, f"model=m,mode=dimagent_v3,withheld=authorship,path={full_log}", "--model", "m",
                 "--gold", str(GOLD), "--out", str(tmp_path / "s"), "--n-resamples", "0"]) == 0
    report = json.loads((tmp_path / "s" / "report.json").read_text())
    assert report["attribution"][0]["tool"] == "authorship"
    assert all(v["difference"] == 0.0 for v in report["attribution"][0]["statistics"].values())
    assert main(["report", f"model=m,mode=dimagent_v3,withheld=cites,path={full_log}", "--gold", str(GOLD),
                 "--out", str(tmp_path / "t")]) == 2


def test_the_spaces_report_pairs_a_stored_run_with_its_run_without_a_tool(runs, tmp_path):
    import runpy

    from scitaste_hf.leaderboard import Leaderboard
    from scitaste_hf.resources import bundled_dir

    gold, _, full, without = runs

    def log(M, withheld):
        return "".join(json.dumps({"doc": {"bibcode": r["bibcode"], "scitaste_mode": "dimagent_v3",
                                           "withheld": withheld}, "filtered_resps": [json.dumps(a.model_dump())]})
                       + "\n" for r, a in zip(gold, _answers(gold, M).values())).encode()

    app = runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="test")
    board = Leaderboard(tmp_path / "board", gold, rate_limit=None, background_upgrade=False)
    try:
        first = board.submit(log(full, ""), "m", "dimagent_v3").run_id
        second = board.submit(log(without, "journal_profile"), "m", "dimagent_v3").run_id
        assert (board.withheld(first), board.withheld(second)) == ("", "journal_profile")
        line, text, _, report = app["report_view"](board, runs=[first, second])
        assert line == "Report on 2 of 2 picked runs."
        assert [a["tool"] for a in report["attribution"]] == ["journal_profile"]
        assert [r["model"] for r in report["runs"]] == ["m", "m"] and "## Per-tool attribution" in text
        direct = analyse([Run("m", "dimagent_v3", _answers(gold, full)),
                          Run("m", "dimagent_v3", _answers(gold, without), withheld="journal_profile")], gold)
        assert report["attribution"][0]["statistics"] == direct["attribution"][0]["statistics"]
    finally:
        board.close()
