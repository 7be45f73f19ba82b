"""The lm-eval task scitaste_pure_qa: plain lm_eval over a local dataset, against a scripted chat server."""

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scitaste_hf.adapters.lmeval.tasks import BOUNDS, METRICS, OVERALL, SKILL_METRICS, process_results, scheme2, wape
from scitaste_hf.records import load_records
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.scoring import score_run
from scitaste_hf.scoring.bootstrap import skill

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SCITASTE = str(Path(sys.executable).with_name("scitaste"))
GOLD = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")


def _gold_vector(record):
    return [record["innovation_score"], *(record["dimension_scores"][k] for k in DIMENSIONS)]


def _answer(record, shift):
    return {"innovation_score": min(100.0, record["innovation_score"] + shift),
            "dimension_scores": {k: min(100.0, v + shift) for k, v in record["dimension_scores"].items()}}


def _dataset(tmp_path, records, backup):
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.schema import record_features
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    def full(rows):
        return [{**dict.fromkeys(record_features()), **r} for r in rows]

    return write_dataset(tmp_path / "ds", {"selected": full(records), "backup": full(backup)}, DEFAULT_WEIGHTS,
                         synthetic=True)


def test_tasks_path_points_at_the_task_folders():
    out = subprocess.run([SCITASTE, "tasks-path"], capture_output=True, text=True, check=True).stdout.strip()
    assert (Path(out) / "scitaste" / "scitaste_pure_qa.yaml").is_file()


def test_aggregations_equal_score_run():
    items = []
    predictions = {}
    from scitaste_hf.schema import Answer, Failure

    for k, record in enumerate(GOLD[:60]):
        reply = "no idea" if k % 10 == 0 else "```json\n" + json.dumps(_answer(record, 4.0)) + "\n```"
        items.append(process_results(record, [reply])["scheme2"])
        predictions[record["bibcode"]] = (Failure("no_json") if k % 10 == 0
                                          else Answer.model_validate(_answer(record, 4.0)))
    expected = score_run(GOLD[:60], predictions, n_resamples=0)["overall"]
    assert scheme2(items) == pytest.approx(expected["scheme2"]["score"])
    assert wape(items) == pytest.approx(expected["scheme2"]["wape"])
    # the overall metrics, and of the per-discipline ones the sample's own discipline's only
    assert set(process_results(GOLD[0], ["{}"])) == set(OVERALL) | {f"scheme2_{GOLD[0]['discipline']}"}
    assert set(OVERALL) < set(METRICS)
    # the interval bounds are score_run's bootstrap (1,000 resamples, seed 0) of the same run
    with_ci = score_run(GOLD[:60], predictions)["overall"]
    assert [BOUNDS[f"scheme2_ci_{e}"](items) for e in ("low", "high")] == pytest.approx(
        with_ci["scheme2"]["ci"]["score"])
    assert [BOUNDS[f"scheme1_ci_{e}"](items) for e in ("low", "high")] == pytest.approx(
        with_ci["scheme1"]["ci"]["scheme1"])
    assert BOUNDS["scheme2_ci_low"](items) < scheme2(items) < BOUNDS["scheme2_ci_high"](items)
    # skill over the floor each item carries (here the gold mean): the scoring package's own, on the scored items
    floor = np.mean([_gold_vector(r) for r in GOLD[:60]], axis=0).tolist()
    floored = [{**item, "floor": floor} for item in items]
    scored = [(i["pred"], i["gold"]) for i in floored if i["pred"] is not None]
    expected_skill = skill(np.array([p for p, _ in scored]), np.array([floor] * len(scored)),
                           np.array([g for _, g in scored]))
    for scheme in ("scheme1", "scheme2"):
        assert SKILL_METRICS[f"{scheme}_skill"](floored) == pytest.approx(expected_skill[scheme]["skill"])
        assert [SKILL_METRICS[f"{scheme}_skill_ci_{e}"](floored) for e in ("low", "high")] == pytest.approx(
            expected_skill[scheme]["interval"])
    assert math.isnan(SKILL_METRICS["scheme1_skill"](items))  # items without a floor: no skill, never a 0


def test_lm_eval_run_against_a_scripted_chat_server(tmp_path, servers, scripted_chat):
    pytest.importorskip("lm_eval", reason="needs lm-eval: pip install 'scitaste-hf[lmeval]'")
    physics = [r for r in GOLD if r["discipline"] == "physics"]
    finance = [r for r in GOLD if r["discipline"] == "finance"]
    records = physics[:6] + finance[:6]
    data = _dataset(tmp_path, records, physics[6:8])
    rules = [{"contains": f"Identifier: {r['bibcode']}",
              "reply": "After reading the abstract:\n```json\n" + json.dumps(_answer(r, 5.0)) + "\n```"}
             for r in records[:10]]
    rules.append({"contains": f"Identifier: {records[10]['bibcode']}", "reply": '{"innovation_score": 300, '
                  '"dimension_scores": ' + json.dumps(dict.fromkeys(DIMENSIONS, 50)) + "}"})
    proc, url, log = scripted_chat({"rules": rules, "default": "I would rather not say."}, tmp_path)
    try:
        tasks = subprocess.run([SCITASTE, "tasks-path"], capture_output=True, text=True, check=True).stdout.strip()
        run = subprocess.run(
            [sys.executable, "-m", "lm_eval", "--model", "local-chat-completions",
             "--model_args", f"model=scripted,base_url={url}/v1/chat/completions,num_concurrent=2,max_retries=1,"
                             "tokenizer_backend=None",
             "--apply_chat_template", "--include_path", tasks, "--tasks", "scitaste_pure_qa",
             "--metadata", json.dumps({"data_dir": str(data)}), "--output_path", str(tmp_path / "out"),
             "--log_samples"],
            cwd=tmp_path, capture_output=True, text=True, timeout=300)
    finally:
        servers[1](proc)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())["results"]["scitaste_pure_qa"]
    assert results["coverage,none"] == pytest.approx(10 / 12)  # one out-of-range answer, one without JSON
    gold = [r["innovation_score"] for r in records[:10]]
    expected_wape = sum(min(100.0, g + 5.0) - g for g in gold) / sum(gold)
    assert results["wape,none"] == pytest.approx(expected_wape)
    assert results["scheme1,none"] > 50 and 0 < results["scheme2,none"] <= 100
    assert results["scheme2_physics,none"] > 0 and results["scheme2_finance,none"] > 0
    # the disciplines the run's papers hold, not a NaN for each other discipline of the packaged taxonomies
    from scitaste_hf.taxonomy import packaged_disciplines

    assert {d for d in packaged_disciplines() if any(k.startswith(f"scheme2_{d},") for k in results)} == {
        "physics", "finance"}
    sent = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(sent) == 12
    prompt = sent[0]["messages"][-1]["content"]
    assert prompt.startswith("Discipline: ") and "\nIdentifier: " in prompt and "innovation_score" in prompt


def test_scitaste_eval_with_the_baseline(tmp_path):
    """`scitaste eval` passes lm_eval's arguments through, adds the tasks and registers scitaste-baseline."""
    pytest.importorskip("lm_eval", reason="needs lm-eval: pip install 'scitaste-hf[lmeval]'")
    from scitaste_hf.schema import Answer
    from scitaste_hf.scoring.floors import PriorBaseline

    selected = [r for k, r in enumerate(GOLD) if k % 5 == 0]
    backup = [r for k, r in enumerate(GOLD) if k % 5 != 0]
    data = _dataset(tmp_path, selected, backup)
    run = subprocess.run([SCITASTE, "eval", "--model", "scitaste-baseline", "--model_args", f"data_dir={data}",
                          "--tasks", "scitaste_pure_qa", "--metadata", json.dumps({"data_dir": str(data)}),
                          "--output_path", str(tmp_path / "out")], cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())["results"]["scitaste_pure_qa"]
    baseline = PriorBaseline.fit(backup)
    expected = score_run(selected, {r["bibcode"]: Answer.model_validate(baseline.answer(r)) for r in selected},
                         n_resamples=0)
    assert results["coverage,none"] == 1.0
    assert results["wape,none"] == pytest.approx(expected["overall"]["scheme2"]["wape"])
    assert results["scheme1,none"] == pytest.approx(expected["overall"]["scheme1"]["scheme1"])
    with_ci = score_run(selected, {r["bibcode"]: Answer.model_validate(baseline.answer(r)) for r in selected})
    assert [results[f"scheme2_ci_{e},none"] for e in ("low", "high")] == pytest.approx(
        with_ci["overall"]["scheme2"]["ci"]["score"])
    # skill over the constant floor learned from the backup split, as the scoring package computes it
    floor = np.mean([_gold_vector(r) for r in backup], axis=0).tolist()
    expected_skill = skill(np.array([Answer.model_validate(baseline.answer(r)).vector() for r in selected]),
                           np.array([floor] * len(selected)), np.array([_gold_vector(r) for r in selected]))
    assert results["scheme1_skill,none"] == pytest.approx(expected_skill["scheme1"]["skill"])
    assert results["scheme2_skill,none"] == pytest.approx(expected_skill["scheme2"]["skill"])
    # lm-eval names the run after the model, not a random string
    assert json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())["model_name"] == \
        "scitaste-baseline"
    # one prior per discipline: no ranking within a discipline, so little correlation to reward
    assert results["scheme1,none"] < 60
