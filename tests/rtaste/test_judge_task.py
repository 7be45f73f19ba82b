"""The rtaste_judge lm-eval task: prompt and parsing, its documents, and a real lm-eval run against a
deterministic chat server on 127.0.0.1."""

import importlib.util
import json
import subprocess
import sys

import pytest

from scitaste_hf.resources import bundled_dir
from scitaste_hf.rtaste.judge import judge_prompt, parse_probabilities
from scitaste_hf.rtaste.release import load_release

pytestmark = pytest.mark.slow

TASKS = bundled_dir("lm_eval_tasks")


def _utils():
    spec = importlib.util.spec_from_file_location("rtaste_judge_utils", TASKS / "rtaste_judge" / "utils.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_prompt_shows_registrations_not_the_agents_forecasts():
    release = load_release()
    rows = next(iter(release.by_condition().values()))
    prompt = judge_prompt(rows[0].seed_summary, [r.registration for r in rows])
    assert rows[0].seed_summary in prompt and "MVE 5" in prompt and '{"probabilities": [p1, p2, p3, p4, p5]}' in prompt
    assert all(r.registration.hypothesis in prompt for r in rows)
    assert "is greater than" in prompt or "is less than" in prompt
    assert "rank" not in prompt.lower()


@pytest.mark.parametrize(("reply", "expected"), [
    ('{"probabilities": [0.1, 0.2, 0.3, 0.4, 1]}', [0.1, 0.2, 0.3, 0.4, 1.0]),
    ('Thinking...\n```json\n{"probabilities": [0, 0, 0, 0, 0]}\n```', [0.0] * 5),
    ('e.g. {"probabilities": [0.5, 0.5, 0.5, 0.5, 0.5]}; final: {"probabilities": [0.9, 0.1, 0.9, 0.1, 0.9]}',
     [0.9, 0.1, 0.9, 0.1, 0.9]),
    ('{"probabilities": [0.1, 0.2, 0.3, 0.4]}', None),  # four, not five
    ('{"probabilities": [0.1, 0.2, 0.3, 0.4, 1.2]}', None),  # not a probability
    ('{"probabilities": [0.1, 0.2, 0.3, 0.4, "0.5"]}', None),
    ("no idea", None),
])
def test_parse_probabilities(reply, expected):
    assert parse_probabilities(reply) == expected


def test_task_documents_and_scoring():
    utils = _utils()
    docs = utils.load_docs(version=1.0)["test"]  # lm-eval passes the task's metadata along
    assert docs.num_rows == 24
    doc = docs[0]
    assert utils.doc_to_text(doc).startswith("You are judging") and len(doc["outcomes"]) == 5
    outcomes = [1, 0, None, 1, 0]
    result = utils.process_results({"outcomes": outcomes}, ['{"probabilities": [1, 0.5, 0.3, 0.5, 0]}'])
    assert result == {"brier": (0.5, 4), "coverage": 1.0}
    failed = utils.process_results({"outcomes": outcomes}, ["sorry"])
    assert failed == {"brier": (0.0, 0), "coverage": 0.0}
    # Events weigh the same whatever their document: (0.5 + 1.0) / (4 + 1)
    assert utils.brier_aggregate([(0.5, 4), (1.0, 1), (0.0, 0)]) == pytest.approx(0.3)
    assert json.loads(utils.doc_to_target({"outcomes": outcomes})) == outcomes


@pytest.mark.timeout(240)
def test_lm_eval_run_against_a_local_chat_server(tmp_path, chat_server, make_condition):
    """A real lm-eval run: the server answers 0.5 for every event (Brier exactly 0.25) and no JSON for the
    conditions of one seed paper (coverage 4/6 over the release given with --metadata)."""
    pytest.importorskip("lm_eval", reason="the judge task needs lm-eval: pip install 'lm-eval[api]'")
    rows = []
    for paper in ("synthetic-seed-1", "synthetic-seed-2", chat_server.failing_seed):
        for k in (1, 2):
            rows += make_condition(f"{paper}/c{k}", occurred=[1, 0, 1, k % 2, 0], probabilities=[0.3] * 5,
                                   seed_paper=paper)
    rows[-1]["outcome"].update(status="failed", rerun_value=None, executor_value=None)
    data = tmp_path / "release.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    port = chat_server.server_address[1]
    proc = subprocess.run(
        [sys.executable, "-m", "lm_eval", "--model", "local-chat-completions",
         "--model_args", f"model=stub,base_url=http://127.0.0.1:{port}/v1/chat/completions,num_concurrent=1,"
                         "max_retries=1,tokenizer_backend=None",
         "--apply_chat_template", "--include_path", str(TASKS), "--tasks", "rtaste_judge",
         "--metadata", json.dumps({"data_dir": str(data)}), "--output_path", str(tmp_path / "out")],
        cwd=tmp_path, capture_output=True, text=True, timeout=220)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())["results"]["rtaste_judge"]
    assert results["brier,none"] == 0.25
    assert results["coverage,none"] == pytest.approx(4 / 6)
    assert len(chat_server.prompts) == 6
    assert all("summary of synthetic-seed" in p for p in chat_server.prompts)
