"""`scitaste report` on the bundled example gold set: its schemes are score_run's (and the leaderboard's), its bias
and per-dimension figures equal a computation written here from the predictions files, its tool effect is the
direct difference of the two runs' statistics, and bad input is one line."""

import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import spearmanr

from scitaste_hf.analysis import compute
from scitaste_hf.analysis.compute import weighted_median
from scitaste_hf.cli import main
from scitaste_hf.predictions import read_predictions
from scitaste_hf.records import load_records
from scitaste_hf.schema import DIMENSIONS, Answer
from scitaste_hf.scoring import scheme1, score_run, wape, wape_score
from scitaste_hf.scoring.bootstrap import resample_counts
from scitaste_hf.scoring.ranks import detectable_difference
from scitaste_hf.scoring.stats import Counts

EXAMPLES = Path(__file__).resolve().parents[2] / "scitaste_hf" / "data" / "examples"
GOLD = EXAMPLES / "gold.jsonl"
#: Few resamples: the intervals are compared with score_run's on the same resamples, not judged for width.
B = 30


def _answer(row):
    return {"innovation_score": float(row[0]), "dimension_scores": dict(zip(DIMENSIONS, map(float, row[1:])))}


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Three runs of two models: the bundled example run as model m's dimagent_v3 (a predictions file), a noisier
    pure_qa run of m with two failures, and model n's pure_qa as an lm-eval samples log that records its mode."""
    folder = tmp_path_factory.mktemp("report")
    gold = load_records(GOLD)
    G = np.array([[r["innovation_score"], *(r["dimension_scores"][k] for k in DIMENSIONS)] for r in gold])
    rng = np.random.default_rng(7)
    pure = np.clip(G + rng.normal(8, 12, G.shape), 0, 100).round(1)
    lines = [json.dumps({"bibcode": r["bibcode"], **_answer(row)}) for r, row in zip(gold, pure)]
    lines[3] = json.dumps({"bibcode": gold[3]["bibcode"], "failure": "timeout"})
    lines[10] = json.dumps({"bibcode": gold[10]["bibcode"], "response": "I cannot say."})
    (folder / "pure.jsonl").write_text("\n".join(lines) + "\n")
    other = np.clip(G + rng.normal(-3, 15, G.shape), 0, 100).round(1)
    (folder / "samples_scitaste_pure_qa_2026.jsonl").write_text("".join(
        json.dumps({"doc": {"bibcode": r["bibcode"], "scitaste_mode": "pure_qa"},
                    "filtered_resps": [json.dumps(_answer(row))]}) + "\n" for r, row in zip(gold, other)))
    runs = {("m", "dimagent_v3"): EXAMPLES / "predictions.jsonl", ("m", "pure_qa"): folder / "pure.jsonl",
            ("n", "pure_qa"): folder / "samples_scitaste_pure_qa_2026.jsonl"}
    out = folder / "out"
    code = main(["report", f"model=m,mode=dimagent_v3,path={runs['m', 'dimagent_v3']}",
                 f"mode=pure_qa,path={runs['m', 'pure_qa']},model=m", f"model=n,path={runs['n', 'pure_qa']}",
                 "--gold", str(GOLD), "--out", str(out), "--n-resamples", str(B)])
    assert code == 0
    return {"gold": gold, "runs": runs, "out": out, "report": json.loads((out / "report.json").read_text())}


def _scored(made, model, mode):
    """The run's scored papers, in gold order: (records, predicted rows, gold rows)."""
    answers = read_predictions(made["runs"][model, mode])
    keep = [r for r in made["gold"] if isinstance(answers.get(r["bibcode"]), Answer)]
    P = np.array([answers[r["bibcode"]].vector() for r in keep])
    G = np.array([[r["innovation_score"], *(r["dimension_scores"][k] for k in DIMENSIONS)] for r in keep])
    return keep, P, G


def test_the_schemes_are_score_runs_for_every_run_and_scope(made):
    for run in made["report"]["runs"]:
        result = score_run(made["gold"], read_predictions(made["runs"][run["model"], run["mode"]]), n_resamples=B)
        for scope, block in {"overall": result["overall"], **result["by_discipline"]}.items():
            shown = run["scopes"][scope]
            assert (shown["n_scored"], shown["n_total"]) == (block["n_scored"], block["n_total"])
            assert shown["scheme1"]["score"] == block["scheme1"]["scheme1"]
            assert shown["scheme1"]["ci"] == block["scheme1"]["ci"]["scheme1"]
            assert shown["scheme1"]["grade"] == block["scheme1"]["grade"]
            assert shown["scheme2"]["score"] == block["scheme2"]["score"]
            assert shown["scheme2"]["ci"] == block["scheme2"]["ci"]["score"]
            assert shown["scheme2"]["wape_ci"] == block["scheme2"]["ci"]["wape"]
            assert shown["scheme2"]["grade"] == block["scheme2"]["grade"]
            assert shown["scheme2"]["skill"] == block["skill"]["scheme2"]
    assert made["report"]["runs"][1]["scopes"]["overall"]["failures"] == {"no_json": 1, "timeout": 1}


def test_table_8_equals_the_leaderboards_stored_numbers(made, tmp_path):
    from scitaste_hf.leaderboard.service import Leaderboard

    board = Leaderboard(tmp_path / "board", made["gold"], rate_limit=None, background_upgrade=False)
    try:
        path = made["runs"]["m", "pure_qa"]
        stored = board.result(board.submit(path.read_bytes(), "m", "pure_qa").run_id)
    finally:
        board.close()
    # The board's stored result, as the Space's Report tab passes it, gives the report the run's own scoring gives.
    from scitaste_hf.analysis import Run, analyse

    run = [Run("m", "pure_qa", read_predictions(path))]
    assert analyse(run, made["gold"], results=[stored]) == analyse(run, made["gold"])
    # The report takes each scope's Spearman intervals from the stored result, which resampled them with the same
    # counts; a result stored before it held them (its scheme1.ci has the Scheme-1 interval only) has the report
    # resample them itself, to the same numbers.
    older = copy.deepcopy(stored)
    for block in (older["overall"], *older["by_discipline"].values()):
        assert block["scheme1"]["ci"]["spearman"] is not None
        block["scheme1"]["ci"] = {"scheme1": block["scheme1"]["ci"]["scheme1"]}
    expected = analyse(run, made["gold"], results=[stored])
    compute._kept.clear()  # each scope's statistics are kept by its papers: resample them afresh
    assert analyse(run, made["gold"], results=[older]) == expected
    shown = made["report"]["runs"][1]["scopes"]
    for scope, block in {"overall": stored["overall"], **stored["by_discipline"]}.items():
        assert shown[scope]["scheme1"]["score"] == block["scheme1"]["scheme1"]
        assert shown[scope]["scheme2"]["score"] == block["scheme2"]["score"]
        assert shown[scope]["coverage"] == block["coverage"]


def test_bias_and_dimension_spearman_equal_an_independent_computation(made):
    for run in made["report"]["runs"]:
        keep, P, G = _scored(made, run["model"], run["mode"])
        disciplines = np.array([r["discipline"] for r in keep])
        for scope, shown in run["scopes"].items():
            m = np.ones(len(keep), bool) if scope == "overall" else disciplines == scope
            err = P[m, 0] - G[m, 0]
            stats = shown["statistics"]
            assert stats["mean_signed_error"]["value"] == pytest.approx(err.mean(), abs=1e-12)
            assert stats["over_rated"]["value"] == pytest.approx(np.mean(P[m, 0] > G[m, 0]), abs=1e-12)
            positive = G[m, 0] > 0
            relative = np.abs(err[positive]) / G[m, 0][positive]
            assert stats["median_relative_error"]["value"] == pytest.approx(np.median(relative), abs=1e-12)
            assert stats["spearman"]["value"] == pytest.approx(spearmanr(P[m, 0], G[m, 0]).statistic, abs=1e-12)
            for j, key in enumerate(DIMENSIONS, start=1):
                expected = spearmanr(P[m, j], G[m, j]).statistic
                assert stats[f"spearman_{key}"]["value"] == pytest.approx(expected, abs=1e-12)
        # The median's interval, from the package's resamples with each paper repeated as often as it was drawn.
        err = P[:, 0] - G[:, 0]
        counts = resample_counts(len(keep), B, 0)
        medians = [np.median(np.repeat(np.abs(err) / G[:, 0], c)) for c in counts]
        assert run["scopes"]["overall"]["statistics"]["median_relative_error"]["ci"] == pytest.approx(
            list(np.percentile(medians, [2.5, 97.5])), abs=1e-12)


def test_weighted_median_is_numpys_median_of_the_repeated_values():
    x = np.array([5.0, 1.0, 4.0, 2.0, 2.0, 9.0])
    counts = np.array([[1, 1, 1, 1, 1, 1], [0, 2, 1, 0, 0, 1], [0, 0, 0, 3, 0, 0], [0, 0, 0, 0, 0, 0]])
    got = weighted_median(x, Counts(counts))
    assert got[:3].tolist() == [np.median(np.repeat(x, c)) for c in counts[:3]]
    assert np.isnan(got[3])


def test_the_tool_effect_is_the_direct_difference_on_the_same_papers(made):
    (effect,) = made["report"]["tools"]  # model n has no tool mode: one pair only
    assert (effect["model"], effect["mode"], effect["baseline"]) == ("m", "dimagent_v3", "pure_qa")
    tool, base = read_predictions(made["runs"]["m", "dimagent_v3"]), read_predictions(made["runs"]["m", "pure_qa"])
    both = [r for r in made["gold"] if isinstance(tool.get(r["bibcode"]), Answer)
            and isinstance(base.get(r["bibcode"]), Answer)]
    assert effect["n"] == len(both) == 293
    a, b = [tool[r["bibcode"]] for r in both], [base[r["bibcode"]] for r in both]
    stats = effect["statistics"]
    assert stats["scheme1"]["difference"] == pytest.approx(scheme1(a, both)["scheme1"] - scheme1(b, both)["scheme1"],
                                                           abs=1e-9)
    gold_scores = [r["innovation_score"] for r in both]
    wa, wb = wape([x.innovation_score for x in a], gold_scores), wape([x.innovation_score for x in b], gold_scores)
    assert stats["wape"]["difference"] == pytest.approx(wa - wb, abs=1e-12)
    assert stats["scheme2"]["difference"] == pytest.approx(wape_score(wa) - wape_score(wb), abs=1e-9)
    gap = np.array([x.innovation_score - y.innovation_score for x, y in zip(a, b)])
    assert stats["mean_signed_error"]["difference"] == pytest.approx(gap.mean(), abs=1e-12)
    for numbers in stats.values():
        lo, hi = numbers["interval"]
        assert lo <= numbers["difference"] <= hi
        assert numbers["detectable"] == pytest.approx(detectable_difference(numbers["interval"]))


def test_the_files_are_written_and_the_pages_show_the_figure(made):
    out = made["out"]
    assert (out / "dimension_spearman.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page, md = (out / "report.html").read_text(), (out / "report.md").read_text()
    assert '<img src="dimension_spearman.png"' in page and "](dimension_spearman.png)" in md
    assert page.count("<table>") == 2 + 3 + 4  # Tables 8 and 10, Table 9 per run, bias, by discipline, dims, tools
    overall = made["report"]["runs"][0]["scopes"]["overall"]
    row = f"| m | dimagent_v3 | 295/300 | {overall['scheme1']['score']:.1f} ["
    assert row in md
    assert not list(out.glob(".*.tmp"))


def _one_line_error(capsys, pattern):
    err = capsys.readouterr().err
    assert err.startswith("scitaste: error: ") and err.count("\n") == 1, err
    assert re.search(pattern, err), err


@pytest.mark.parametrize(("args", "pattern"), [
    ([], r"no runs"),
    (["model=m,mode=pure_qa,path={missing}"], r"predictions file not found: .*missing\.jsonl"),
    (["model=m,mode=pure_qa,path={alien}"], r"run m / pure_qa \(.*alien\.jsonl\): 1 prediction\(s\) for bibcodes not "
                                            r"in the gold set, e\.g\. ALIEN"),
    (["{example}"], r"name its model"),
    (["model=m,path={example}"], r"records no mode; give it as mode=MODE"),
    (["model=m,mode=oracle,path={example}"], r"unknown mode 'oracle'"),
    (["model=m,mode=pure_qa,path={example}", "model=m,mode=pure_qa,path={example}"], r"two runs are m / pure_qa"),
    (["mode=pure_qa,model=m"], r"no path=FILE"),
])
def test_bad_runs_are_one_line_errors(tmp_path, capsys, args, pattern):
    (tmp_path / "alien.jsonl").write_text(json.dumps({"bibcode": "ALIEN", **_answer([50] * 8)}) + "\n")
    paths = {"missing": tmp_path / "missing.jsonl", "alien": tmp_path / "alien.jsonl",
             "example": EXAMPLES / "predictions.jsonl"}
    argv = ["report", *(a.format(**paths) for a in args), "--gold", str(GOLD), "--out", str(tmp_path / "out"),
            "--n-resamples", "0"]
    assert main(argv) == 2
    _one_line_error(capsys, pattern)
    assert not (tmp_path / "out").exists()


def test_an_out_that_is_a_file_and_no_gold_are_one_line_errors(tmp_path, capsys):
    run = f"model=m,mode=pure_qa,path={EXAMPLES / 'predictions.jsonl'}"
    (tmp_path / "taken").write_text("")
    assert main(["report", run, "--gold", str(GOLD), "--out", str(tmp_path / "taken")]) == 2
    _one_line_error(capsys, r"--out .*taken is a file")
    assert main(["report", run, "--out", str(tmp_path / "out")]) == 2
    _one_line_error(capsys, r"--gold FILE_OR_DATASET")


def test_an_inspect_log_gives_its_mode_and_an_unscored_run_is_shown_not_hidden(tmp_path, monkeypatch):
    """The mode of an Inspect log is its samples' (read through the log reader, stood in for here, so the test needs
    no Inspect run); a run with no scored paper is a row of n/a at coverage 0, and 0 resamples give no intervals."""
    import types

    import scitaste_hf.predictions as predictions

    gold = load_records(GOLD)
    text = "".join(json.dumps({"doc": {"bibcode": r["bibcode"], "scitaste_mode": "dimagent_v3"},
                               "filtered_resps": [json.dumps(_answer([r["innovation_score"]] * 8))]}) + "\n"
                   for r in gold[:40])
    monkeypatch.setattr(predictions, "log_reader", lambda source: types.SimpleNamespace(
        samples_text=lambda data, source: text))
    (tmp_path / "run.json").write_text('{"version": 2, "status": "success", "samples": []}')
    (tmp_path / "failed.jsonl").write_text(json.dumps({"bibcode": gold[0]["bibcode"], "failure": "timeout"}) + "\n")
    out = tmp_path / "out"
    assert main(["report", str(tmp_path / "run.json"), f"mode=pure_qa,path={tmp_path / 'failed.jsonl'}", "--model",
                 "m", "--gold", str(GOLD), "--out", str(out), "--n-resamples", "0"]) == 0
    report = json.loads((out / "report.json").read_text())
    logged, failed = report["runs"]
    assert (logged["mode"], logged["scopes"]["overall"]["n_scored"]) == ("dimagent_v3", 40)
    assert logged["scopes"]["overall"]["scheme2"]["ci"] is None
    assert logged["scopes"]["overall"]["statistics"]["mean_signed_error"] == {"value": 0.0, "ci": None}
    assert failed["scopes"]["overall"]["scheme1"] is None and failed["scopes"]["overall"]["n_scored"] == 0
    assert report["tools"] == [{"model": "m", "mode": "dimagent_v3", "baseline": "pure_qa", "n": 0,
                                "statistics": None}]
    assert "| m | pure_qa | 0/300 | n/a |" in (out / "report.md").read_text()


def test_precomputed_score_run_results_give_the_same_report(made):
    """The Space passes the board's stored score_run results (JSON, as the store keeps them): the report equals the
    CLI's, which scores each run itself; a second report of the same runs (its statistics kept) equals it too."""
    from scitaste_hf.analysis import Run, analyse
    from scitaste_hf.errors import InvalidInput

    runs = [Run(model, mode, read_predictions(path)) for (model, mode), path in made["runs"].items()]
    stored = [json.loads(json.dumps(score_run(made["gold"], r.predictions, n_resamples=B))) for r in runs]
    name = made["report"]["inputs"]["gold"]
    direct = analyse(runs, made["gold"], n_resamples=B, gold_name=name)
    assert analyse(runs, made["gold"], n_resamples=B, gold_name=name, results=[stored[0], None, stored[2]]) == direct
    assert analyse(runs, made["gold"], n_resamples=B, gold_name=name, results=stored) == direct
    assert {k: v for k, v in direct.items() if k != "runs"} == {k: v for k, v in made["report"].items() if k != "runs"}
    assert [r["scopes"] for r in direct["runs"]] == [r["scopes"] for r in made["report"]["runs"]]
    with pytest.raises(InvalidInput, match="2 precomputed results for 3 runs"):
        analyse(runs, made["gold"], n_resamples=B, results=stored[:2])
