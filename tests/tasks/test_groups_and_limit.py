"""The group stock lm_eval runs whole (`scitaste_any_model`), and `--limit N` taking papers from N disciplines."""

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from scitaste_hf.adapters.lmeval.tasks import ANY_MODEL, PER_DISCIPLINE_NAMES, doc_order, load_docs
from scitaste_hf.records import load_records
from scitaste_hf.schema import DIMENSIONS

ROOT = Path(__file__).resolve().parents[2]
SCITASTE = str(Path(sys.executable).with_name("scitaste"))
GOLD = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_the_any_model_group_is_the_modes_without_provider_search():
    group = yaml.safe_load((ROOT / "lm_eval_tasks" / "scitaste" / "scitaste_any_model.yaml").read_text())
    assert group["group"] == "scitaste_any_model" and tuple(group["task"]) == ANY_MODEL
    readme = (ROOT / "lm_eval_tasks" / "scitaste" / "README.md").read_text()
    assert "* `scitaste_any_model`:" in readme


def test_the_documents_go_round_the_disciplines_in_a_fixed_order():
    order = doc_order(GOLD)
    assert sorted(order) == list(range(len(GOLD)))
    disciplines = [GOLD[k]["discipline"] for k in order]
    # every run of six consecutive documents holds the six disciplines, each discipline's turn in the same place
    assert all(len(set(disciplines[k:k + 6])) == 6 for k in range(0, len(GOLD), 6))
    assert disciplines[:6] == disciplines[6:12]
    # it depends on the records only, not on the order they are read in, and the physics papers are not taken
    # in bibcode order
    assert [GOLD[::-1][k]["bibcode"] for k in doc_order(GOLD[::-1])] == [GOLD[k]["bibcode"] for k in order]
    physics = [GOLD[k]["bibcode"] for k in order if GOLD[k]["discipline"] == "physics"]
    assert physics != sorted(physics)
    # a discipline with fewer papers runs out first, and the others go on round
    finance = [r for r in GOLD if r["discipline"] == "finance"]
    uneven = [r for r in GOLD if r["discipline"] != "finance"] + finance[:3]
    counts = Counter(uneven[k]["discipline"] for k in doc_order(uneven)[:28])
    assert counts == {**dict.fromkeys(set(counts) - {"finance"}, 5), "finance": 3}


def test_the_task_documents_follow_doc_order(evidence_dataset):
    docs = load_docs(str(evidence_dataset), scitaste_task_mode="pure_qa")["test"]
    records = load_records(evidence_dataset, "selected")
    assert docs["bibcode"] == [records[k]["bibcode"] for k in doc_order(records)]


@pytest.mark.slow
def test_stock_lm_eval_runs_the_group_and_a_limit_spans_disciplines(evidence_dataset, scripted_chat, servers,
                                                                   tmp_path):
    pytest.importorskip("lm_eval", reason="needs lm-eval: pip install '.[lmeval]'")
    answer = json.dumps({"innovation_score": 50, "dimension_scores": dict.fromkeys(DIMENSIONS, 50)})
    proc, url, log = scripted_chat({"rules": [], "default": answer}, tmp_path)
    include = subprocess.run([SCITASTE, "tasks-path"], capture_output=True, text=True, check=True).stdout.strip()
    try:
        run = subprocess.run(
            [sys.executable, "-m", "lm_eval", "--model", "local-chat-completions",
             "--model_args", f"model=scripted,base_url={url}/v1/chat/completions,num_concurrent=4,max_retries=1,"
                             "tokenizer_backend=None",
             "--apply_chat_template", "--include_path", include, "--tasks", "scitaste_any_model", "--limit", "6",
             "--metadata", json.dumps({"data_dir": str(evidence_dataset)}), "--output_path", str(tmp_path / "out"),
             "--log_samples"], cwd=tmp_path, capture_output=True, text=True, timeout=400)
    finally:
        servers[1](proc)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Custom kwargs can be passed" not in run.stderr  # lm-eval's hint, left out: --metadata was given
    assert len(log.read_text().splitlines()) == 12  # 6 papers in each of the group's two tasks
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())["results"]
    assert set(ANY_MODEL) <= set(results)
    for task in ANY_MODEL:
        samples = [json.loads(line) for p in (tmp_path / "out").rglob(f"samples_{task}_2*.jsonl")
                   for line in p.read_text().splitlines()]
        assert len({s["doc"]["discipline"] for s in samples}) == 6, task
        assert len({f"{name},none" for name in PER_DISCIPLINE_NAMES} & set(results[task])) == 6
