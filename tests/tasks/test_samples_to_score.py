"""From a stock lm_eval run to a score and a submission: its samples log, as lm_eval writes it with --log_samples,
is read by `scitaste score` and by the leaderboard's submission service, and both report lm-eval's own figures."""

import json
import subprocess

import pytest
from stock_samples import SCITASTE, metrics

from scitaste_hf.records import load_records

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture(scope="module")
def stock(stock_samples):
    """The run's stock lm_eval samples log (tests/conftest.py) and lm-eval's figures of scitaste_dimagent."""
    data, samples, results, _ = stock_samples
    return data, samples, metrics(results)


def test_scitaste_score_reads_the_samples_log_as_lm_eval_scored_it(stock, tmp_path):
    data, samples, lm = stock
    assert lm["coverage"] == pytest.approx(0.7)
    out = tmp_path / "score.json"
    run = subprocess.run([SCITASTE, "score", "--predictions", str(samples), "--gold", str(data), "--json", str(out)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    overall = json.loads(out.read_text())["overall"]
    s1, s2, skill = overall["scheme1"], overall["scheme2"], overall["skill"]
    ours = {"scheme1": s1["scheme1"], "scheme2": s2["score"], "wape": s2["wape"], "coverage": overall["coverage"],
            "scheme1_ci_low": s1["ci"]["scheme1"][0], "scheme1_ci_high": s1["ci"]["scheme1"][1],
            "scheme2_ci_low": s2["ci"]["score"][0], "scheme2_ci_high": s2["ci"]["score"][1],
            "scheme1_skill": skill["scheme1"]["skill"], "scheme2_skill": skill["scheme2"]["skill"]}
    assert ours == pytest.approx({k: lm[k] for k in ours}, abs=1e-9)
    assert overall["n_scored"] == 210 and overall["n_total"] == 300
    by_discipline = json.loads(out.read_text())["by_discipline"]
    assert {d: b["scheme2"]["score"] for d, b in by_discipline.items()} == pytest.approx(
        {k.removeprefix("scheme2_"): v for k, v in lm.items() if k.startswith("scheme2_")
         and k.removeprefix("scheme2_") in by_discipline}, abs=1e-9)


def test_the_submission_service_takes_the_samples_log_and_scores_it_as_lm_eval(stock, tmp_path):
    from scitaste_hf.leaderboard import Leaderboard

    data, samples, lm = stock
    board = Leaderboard(tmp_path, load_records(data, "selected"), backup=load_records(data, "backup"))
    log = samples.read_bytes()
    # the log as the predictions and as their evidence: the answers it records are the ones submitted
    result = board.submit(log, "scripted", "dimagent_v3", samples=log)
    assert not result.duplicate and result.status == "evidence-consistent", result.message
    row = next(r for r in board.rows() if r["run"] == result.run_id)
    assert (row["scheme1"], row["scheme2"], row["wape"]) == pytest.approx(
        (lm["scheme1"], lm["scheme2"], lm["wape"]), abs=1e-9)
    assert (row["n_scored"], row["n_total"]) == (210, 300)
    # the same answers as a compact predictions file are the same run
    from scitaste_hf.predictions import prediction_lines, read_predictions

    again = board.submit(prediction_lines(read_predictions(samples)).encode(), "scripted", "dimagent_v3")
    assert again.duplicate and again.run_id == result.run_id
