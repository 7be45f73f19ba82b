"""The rTaste judge as an Inspect task against the scripted OpenAI-compatible server (a real process on 127.0.0.1):
the prompts are the lm-eval task's, and its Brier score and coverage are what the lm-eval task's own
``process_results`` and aggregation give for the same replies, whatever their kind."""

import json
import math
import runpy
from pathlib import Path

import pytest
from extras import needs

from scitaste_hf.rtaste.judge import condition_docs
from scitaste_hf.rtaste.release import load_release

pytestmark = [pytest.mark.slow, needs("inspect_ai", "inspect")]

ROOT = Path(__file__).resolve().parents[2]
N = 8  # conditions: two seed papers, so the base-rate forecast is defined


def _replies():
    """One reply of each kind a judge sends, in turn: valid, fenced, four numbers, out of range, the wrong key, no
    JSON (the first seed paper's six conditions), in prose, an error answer (the second's two)."""
    valid = {"probabilities": [0.1, 0.9, 0.5, 0.3, 0.7]}
    return [json.dumps(valid), "```json\n" + json.dumps({"probabilities": [0, 1, 0.2, 0.4, 1.0]}) + "\n```",
            json.dumps({"probabilities": [0.1, 0.2, 0.3, 0.4]}), json.dumps({"probabilities": [0.1, 1.5, 0, 0, 0]}),
            json.dumps({"probability": [0.5] * 5}), "I cannot tell.",
            f"My forecast: {json.dumps({'probabilities': [0.6, 0.6, 0.6, 0.6, 0.6]})}.", {"status": 400}]


def test_the_inspect_judge_scores_as_the_lm_eval_task(scripted_chat, servers, tmp_path, monkeypatch):
    from inspect_ai import eval as inspect_eval

    from scitaste_hf.adapters.inspect.tasks import JUDGE

    docs = condition_docs(load_release(None))[:N]
    assert len({d["seed_paper"] for d in docs}) == 2
    # each condition by the hypothesis of its first MVE, which no other condition's prompt holds
    marks = [d["prompt"].split("Hypothesis: ", 1)[1].split("\n", 1)[0] for d in docs]
    assert all(sum(m in d["prompt"] for d in docs) == 1 for m in marks)
    proc, url, requests = scripted_chat({"rules": [{"contains": m, "reply": r} for m, r in zip(marks, _replies())],
                                         "default": "no rule"}, tmp_path)
    monkeypatch.setenv("SCRIPTED_API_KEY", "scripted")
    try:
        log, = inspect_eval(JUDGE(limit=N), model="openai-api/scripted/judge", model_base_url=f"{url}/v1",
                            log_dir=str(tmp_path / "logs"), display="none", max_retries=0)
    finally:
        servers[1](proc)
    assert log.status == "success"
    sent = [json.loads(line)["messages"] for line in requests.read_text().splitlines()]
    # the lm-eval task's hooks, loaded by path as lm-eval loads them (here: at collection they would import datasets)
    hooks = runpy.run_path(str(ROOT / "lm_eval_tasks" / "rtaste_judge" / "utils.py"))
    assert sorted(m[-1]["content"] for m in sent) == sorted(hooks["doc_to_text"](d) for d in docs)
    metrics = {m.name: m.value for s in log.results.scores for m in s.metrics.values()}
    # lm-eval's own hooks on the replies that Inspect recorded
    reply = {s.id: s.output.completion for s in log.samples}
    items = [hooks["process_results"](d, [reply[d["condition_id"]]]) for d in docs]
    assert metrics["brier"] == pytest.approx(hooks["brier_aggregate"]([i["brier"] for i in items]))
    assert metrics["coverage"] == pytest.approx(sum(i["coverage"] for i in items) / N) == 3 / 8
    assert metrics["brier_ci_low"] <= metrics["brier"] <= metrics["brier_ci_high"]
    assert 0 <= metrics["base_rate_brier"] <= 1
    # a reply that did not parse is no answer (N), never 0.5; a parsed one shows its own condition's Brier score
    values = {s.id: s.scores["judge_scorer"].value for s in log.samples}
    assert [values[d["condition_id"]] == "N" for d in docs] == [False, False, True, True, True, True, False, True]
    first = docs[0]
    pairs = [(p, o) for p, o in zip([0.1, 0.9, 0.5, 0.3, 0.7], first["outcomes"]) if o is not None]
    assert values[first["condition_id"]] == pytest.approx(sum((p - o) ** 2 for p, o in pairs) / len(pairs))


def test_no_parsed_reply_is_nan_not_zero():
    from inspect_ai.scorer import SampleScore, Score

    from scitaste_hf.adapters.inspect.rtaste import rtaste_brier

    docs = condition_docs(load_release(None))[:2]
    scores = [SampleScore(score=Score(value="N", metadata={"probabilities": None, "outcomes": d["outcomes"],
                                                             "seed_paper": d["seed_paper"]})) for d in docs]
    figures = rtaste_brier()(scores)
    assert figures["coverage"] == 0 and all(math.isnan(v) for k, v in figures.items() if k != "coverage")
