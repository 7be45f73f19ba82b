"""The Inspect tasks against the scripted OpenAI-compatible server (a real process on 127.0.0.1, reached as Inspect's
``openai-api`` provider): the metrics equal `scitaste score` of the same log, round 1 reaches the model as tool
messages, the live loop counts what goes wrong and keeps its round limit, a search mode without the provider's
own search sends nothing, and a log is evidence exactly when it records the submitted answers."""

import json
import math
import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from extras import needs
from stock_samples import Evidence  # the stand-in of the services behind `evidence freeze`

from scitaste_hf.agent.evidence import EVIDENCE_DIR, freeze
from scitaste_hf.agent.loop import MAX_CALLS, ROUND_TWO
from scitaste_hf.agent.tools import TOOL_NAMES
from scitaste_hf.builder.layout import write_dataset
from scitaste_hf.errors import ScitasteError, TaskUnavailable
from scitaste_hf.modes import MODE_SPECS
from scitaste_hf.predictions import prediction_lines, read_predictions
from scitaste_hf.records import load_records
from scitaste_hf.schema import record_features
from scitaste_hf.weights import DEFAULT_WEIGHTS

pytestmark = [pytest.mark.slow, needs("inspect_ai", "inspect")]

ROOT = Path(__file__).resolve().parents[2]
MODEL = "openai-api/scripted/judge"
TASKS = {mode: MODE_SPECS[mode].task for mode in ("pure_qa", "dimagent_v3", "dimagent_v3_live")}


def _answer(record, seed):
    """An answer with an honest judge's errors (SD 12 points on each number), drawn from ``seed``."""
    noise = iter(np.random.default_rng(seed).normal(0, 12, 8))
    near = lambda value: round(float(np.clip(value + next(noise), 0, 100)), 1)  # noqa: E731
    return json.dumps({"innovation_score": near(record["innovation_score"]),
                       "dimension_scores": {k: near(v) for k, v in record["dimension_scores"].items()}})


@pytest.fixture(scope="module")
def run(tmp_path_factory, scripted_chat, servers, monkeypatch_module):
    """The three modes run once, in one Inspect eval, against a scripted model on a dozen papers of three
    disciplines: each paper answered near its gold labels, but for one reply without JSON; in the live loop one
    paper calls an unknown tool and one with bad arguments, one calls too many tools, one keeps calling tools in
    round 2, one answers in round 1."""
    from inspect_ai import eval as inspect_eval

    tmp = tmp_path_factory.mktemp("inspect")
    gold = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")
    rows = [{**dict.fromkeys(record_features()), **r}
            for d in ("physics", "biology", "finance") for r in [g for g in gold if g["discipline"] == d][:4]]
    data = write_dataset(tmp / "ds", {"selected": rows, "backup": rows[::2]}, DEFAULT_WEIGHTS, synthetic=True)
    freeze(Evidence(), [r["bibcode"] for r in rows], data / EVIDENCE_DIR, source="a test stand-in", workers=2)
    b = [r["bibcode"] for r in rows]
    call = lambda name, bibcode: {"name": name, "arguments": {"bibcode": bibcode}}  # noqa: E731
    first_round = [  # the live loop's round 1 (tools offered), by paper
        {"tool_calls": [call("no_such_tool", b[0]), call("references", "X"), call("paper_metadata", b[0])]},
        {"tool_calls": [call(TOOL_NAMES[k % 9], b[1]) for k in range(25)]},
        {"tool_calls": [call("citing_works", b[2])]},
        _answer(rows[3], 99),
        *({"tool_calls": [call(name, bibcode) for name in TOOL_NAMES[:2]]} for bibcode in b[4:])]
    # b[2]'s round 2 in the live loop: its one result right before the request for the answer (in the fixed
    # round, citing_works is followed by the other tools' results)
    alone = json.dumps(Evidence().call("citing_works", {"bibcode": b[2]}), sort_keys=True) + "\n" + ROUND_TWO
    script = {"rules": [
        *({"contains": bibcode, "tools": True, "reply": reply} for bibcode, reply in zip(b, first_round)),
        {"contains": alone, "tools": False, "reply": {"tool_calls": [call("citing_works", b[2])]}},
        {"contains": b[5], "reply": "I cannot judge this paper."},
        *({"contains": bibcode, "reply": _answer(r, k)} for k, (bibcode, r) in enumerate(zip(b, rows)))],
        "default": "no answer"}
    proc, url, requests = scripted_chat(script, tmp)
    monkeypatch_module.setenv("SCRIPTED_BASE_URL", f"{url}/v1")
    monkeypatch_module.setenv("SCRIPTED_API_KEY", "scripted")
    logs = inspect_eval([f"scitaste_hf/{t}" for t in TASKS.values()], model=MODEL, task_args={"data_dir": str(data)},
                        log_dir=str(tmp / "logs"), display="none", max_tasks=3)
    servers[1](proc)
    by_task = {log.eval.task: log for log in logs}
    return {"data": data, "rows": rows, "requests": requests, "tmp": tmp,
            "logs": {mode: by_task[task] for mode, task in TASKS.items()}}


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        yield patch


def _scored(log_path, data, out):
    """`scitaste score` of a log, as its JSON result."""
    from scitaste_hf.cli import main

    assert main(["score", "--predictions", str(log_path), "--gold", str(data), "--json", str(out)]) == 0
    return json.loads(out.read_text())


def _figures(result):
    """`scitaste score`'s result under the names of the task's metrics."""
    o = result["overall"]
    figures = {"scheme1": o["scheme1"]["scheme1"], "scheme2": o["scheme2"]["score"], "wape": o["scheme2"]["wape"],
               "coverage": o["coverage"]}
    for scheme, ci in (("scheme1", o["scheme1"]["ci"]["scheme1"]), ("scheme2", o["scheme2"]["ci"]["score"])):
        figures |= {f"{scheme}_ci_low": ci[0], f"{scheme}_ci_high": ci[1]}
        skill = o["skill"][scheme]
        figures |= {f"{scheme}_skill": skill["skill"], f"{scheme}_skill_ci_low": skill["interval"][0],
                    f"{scheme}_skill_ci_high": skill["interval"][1]}
    # a discipline none of whose papers was answered has no Scheme 2 (the task's NaN)
    return figures | {f"scheme2_{d}": (block["scheme2"] or {}).get("score") for d, block in
                      result["by_discipline"].items()}


def _same(a, b):
    return ((a is None or math.isnan(a)) and (b is None or math.isnan(b))) or math.isclose(a, b, rel_tol=1e-9)


@pytest.mark.parametrize("mode", TASKS)
def test_the_metrics_are_scitaste_score_of_the_same_log(run, mode):
    log = run["logs"][mode]
    assert log.status == "success"
    metrics = {m.name: m.value for s in log.results.scores for m in s.metrics.values()}
    expected = _figures(_scored(log.location, run["data"], run["tmp"] / f"{mode}.json"))
    assert set(metrics) == set(expected)
    assert {k: v for k, v in metrics.items() if not _same(v, expected[k])} == {}
    # the paper without an answer counts against coverage, not as a zero
    assert metrics["coverage"] == pytest.approx((11 if mode != "dimagent_v3_live" else 10) / 12)
    assert 0 < metrics["scheme2"] < 100 and metrics["scheme2_physics"] > 0


def test_the_fixed_round_reaches_the_model_as_tool_messages(run):
    from scitaste_hf.adapters.lmeval.tasks import doc_to_messages

    sent = [json.loads(line) for line in run["requests"].read_text().splitlines()]
    fixed = [r for r in sent if any(m["role"] == "tool" for m in r["messages"]) and len(r["messages"]) == 13]
    assert len(fixed) == 12 and not any(r.get("tools") for r in fixed)
    doc = {**run["rows"][0], "scitaste_mode": "dimagent_v3", "evidence": str(run["data"])}
    mine = next(r for r in fixed if run["rows"][0]["bibcode"] in r["messages"][1]["content"])["messages"]
    expected = doc_to_messages(doc)
    assert [m["role"] for m in mine] == [m["role"] for m in expected]
    assert [m["content"] for m in mine if m["role"] == "tool"] == [m["content"] for m in expected
                                                                  if m["role"] == "tool"]
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in mine[2]["tool_calls"]] == \
        [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in expected[2]["tool_calls"]]
    assert mine[-1]["content"] == ROUND_TWO


def test_the_live_loop_counts_bad_calls_and_keeps_its_round_limit(run):
    log = run["logs"]["dimagent_v3_live"]
    b = [r["bibcode"] for r in run["rows"]]
    trace = {s.id: s.scores["scitaste_scorer"].metadata.get("trace") for s in log.samples}
    assert trace[b[0]]["tool_errors"] == 2 and [c["name"] for c in trace[b[0]]["calls"]] == [
        "no_such_tool", "references", "paper_metadata"]
    assert trace[b[1]]["calls_cut"] == 25 - MAX_CALLS and len(trace[b[1]]["calls"]) == MAX_CALLS
    assert trace[b[3]].get("no_tool_calls") is True
    kept_calling = next(s for s in log.samples if s.id == b[2])
    assert (kept_calling.scores["scitaste_scorer"].value, kept_calling.scores["scitaste_scorer"].explanation) == \
        ("N", "other")
    # two requests a paper at most: round 1 with the tools, round 2 without (one that answered in round 1: one)
    sent = [json.loads(line) for line in run["requests"].read_text().splitlines()]
    live = [r for r in sent if r["messages"][0]["content"].startswith("You are") and "Call the tools" in
            r["messages"][1]["content"] and len(r["messages"]) != 13]
    per_paper = {bibcode: sum(bibcode in r["messages"][1]["content"] for r in live) for bibcode in b}
    assert per_paper == {bibcode: 1 if bibcode == b[3] else 2 for bibcode in b}
    assert all(not r.get("tools") for r in live if r["messages"][-1]["content"] == ROUND_TWO)


def test_a_log_is_evidence_exactly_when_it_records_the_answers(run, tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    from scitaste_hf.leaderboard.integrity import verify_evidence

    log = run["logs"]["dimagent_v3"]
    data = Path(log.location).read_bytes()
    predictions = read_predictions(log.location)
    assert len(predictions) == 12
    assert verify_evidence(data, predictions) is None
    changed = dict(predictions)
    bibcode = next(b for b, a in predictions.items() if hasattr(a, "innovation_score"))
    changed[bibcode] = predictions[bibcode].model_copy(update={"innovation_score": 1.0})
    assert verify_evidence(data, changed) == f"the evidence's answer for {bibcode} differs from the submitted one"
    # the JSON log format too, and a log whose reply was edited after its score no longer agrees with itself
    edited = read_eval_log(log.location)
    sample = next(s for s in edited.samples if s.id == bibcode)
    sample.output.completion = _answer(next(r for r in run["rows"] if r["bibcode"] == bibcode), 100)
    write_eval_log(edited, str(tmp_path / "edited.json"))
    assert verify_evidence((tmp_path / "edited.json").read_bytes(), read_predictions(tmp_path / "edited.json")) == \
        f"the Inspect log's score of {bibcode} is not what its reply parses to"
    # and a compact predictions file of the log scores the same answers
    (tmp_path / "compact.jsonl").write_text(prediction_lines(predictions))
    assert read_predictions(tmp_path / "compact.jsonl") == predictions


def test_a_search_mode_without_the_providers_search_sends_nothing(run, scripted_chat, servers, tmp_path):
    from inspect_ai import eval as inspect_eval

    proc, url, requests = scripted_chat({"rules": [], "default": "{}"}, tmp_path)
    try:
        env = {"SCRIPTED_BASE_URL": f"{url}/v1", "SCRIPTED_API_KEY": "scripted"}
        with pytest.MonkeyPatch.context() as patch:
            for key, value in env.items():
                patch.setenv(key, value)
            with pytest.raises(TaskUnavailable) as raised:
                inspect_eval("scitaste_hf/scitaste_native_search", model=MODEL,
                             task_args={"data_dir": str(run["data"])}, log_dir=str(tmp_path / "logs"), display="none")
            # a task object made before the run knows no model yet: its first sample stops the run, unsent
            from scitaste_hf.adapters.inspect.tasks import TASKS as REGISTERED

            log, = inspect_eval(REGISTERED["native_search"](data_dir=str(run["data"]), limit=2), model=MODEL,
                                log_dir=str(tmp_path / "logs"), display="none")
        line = str(raised.value)
        assert "\n" not in line and "openai-api/ models" in line and "openai/..." in line
        assert "scitaste_pure_qa or scitaste_dimagent" in line
        assert log.status == "error" and line in log.error.message
        # the command line: one line, no traceback, before any request
        done = subprocess.run([str(Path(sys.executable).parent / "inspect"), "eval",
                               "scitaste_hf/scitaste_dimagent_native", "--model", MODEL, "-T",
                               f"data_dir={run['data']}", "--log-dir", str(tmp_path / "logs")],
                              capture_output=True, text=True, timeout=120, env={**os.environ, **env})
        assert done.returncode != 0 and "Traceback" not in done.stderr
        assert [line for line in done.stderr.splitlines() if line.strip()] == [
            line.replace("scitaste_native_search", "scitaste_dimagent_native")]
        assert requests.read_text() == ""
    finally:
        servers[1](proc)


def test_an_inspect_log_without_inspect_installed_is_one_line(run, monkeypatch):
    import importlib.util


    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "inspect_ai" else
                        find_spec(name, *a))
    log = run["logs"]["pure_qa"].location
    with pytest.raises(ScitasteError) as raised:
        read_predictions(log)
    assert str(raised.value) == f"{log} is an Inspect log; reading it needs inspect-ai: pip install '.[inspect]' " \
                                "in the scitaste-hf repository"


@contextmanager
def _submitted(run, mode, folder):
    """A board over the run's papers with the mode's Inspect log submitted as the run and as its evidence: the log,
    the board and the submission's result."""
    from scitaste_hf.leaderboard.service import Leaderboard

    log = run["logs"][mode]
    data = Path(log.location).read_bytes()
    board = Leaderboard(folder / "lb", run["rows"], rate_limit=None)
    try:
        yield log, board, board.submit(data, "scripted judge", mode, samples=data)
    finally:
        board.close()


def test_the_space_takes_an_inspect_log_as_the_run_and_as_its_evidence(run, tmp_path):
    from scitaste_hf.leaderboard.store import EVIDENCE_CONSISTENT

    with _submitted(run, "dimagent_v3", tmp_path) as (log, board, result):
        assert result.status == EVIDENCE_CONSISTENT, result.message
        metrics = {m.name: m.value for s in log.results.scores for m in s.metrics.values()}
        assert board.result(result.run_id)["overall"]["scheme2"]["score"] == pytest.approx(metrics["scheme2"])


def test_the_papers_tab_shows_an_inspect_logs_conversation_with_its_tool_calls(run, tmp_path):
    from scitaste_hf.leaderboard.details import Details

    with _submitted(run, "dimagent_v3_live", tmp_path) as (log, board, result):
        details = Details(board)
        details.sync()
        b = [r["bibcode"] for r in run["rows"]]
        sample = next(s for s in log.samples if s.id == b[0])
        shown = details.conversation(result.run_id, b[0])
        # each assistant turn is a round: its reply and its tool calls, each with the result Inspect sent back
        turns = [m for m in sample.messages if m.role == "assistant"]
        assert [r["reply"] for r in shown[:len(turns)]] == [m.text for m in turns]
        calls = [c for r in shown for c in r["tool_calls"]]
        assert [c["name"] for c in calls] == ["no_such_tool", "references", "paper_metadata"]
        results = {m.tool_call_id: m.text for m in sample.messages if m.role == "tool"}
        assert [c["result"] for c in calls] == [results[c.id] for m in turns for c in m.tool_calls or []]
        assert shown[0]["sent"][0]["role"] == "system" and b[0] in shown[0]["sent"][1]["content"]
        assert details.conversation(result.run_id, "no such paper") is None


def test_the_parameters_choose_the_papers(run, tmp_path):
    from scitaste_hf.adapters.inspect.tasks import TASKS as REGISTERED
    from scitaste_hf.adapters.lmeval.tasks import doc_order

    rows, data = run["rows"], str(run["data"])
    task = REGISTERED["dimagent_v3"](data_dir=data, disciplines="finance,physics", limit=5)
    wanted = [rows[k]["bibcode"] for k in doc_order(rows) if rows[k]["discipline"] in ("finance", "physics")]
    assert [s.id for s in task.dataset] == wanted[:5]
    with pytest.raises(TaskUnavailable, match="no papers of discipline 'chemistry' here; the disciplines are "
                                              "physics, biology, finance"):
        REGISTERED["pure_qa"](data_dir=data, disciplines="chemistry")
    bare = write_dataset(tmp_path / "bare", {"selected": rows}, DEFAULT_WEIGHTS, synthetic=True)
    with pytest.raises(TaskUnavailable, match="need frozen tool evidence"):
        REGISTERED["dimagent_v3_live"](data_dir=str(bare))


def test_each_epoch_is_scored_as_a_run_with_the_spread_between_them(run, scripted_chat, servers, tmp_path, capsys):
    """Three epochs of four papers: each paper answered differently each time (one of the answers fails), the
    figures of each epoch equal `scitaste score` of that epoch taken out of the log, the spread is their sample
    SD, and `scitaste score` of the whole log refuses with one line that says how to take an epoch out."""
    import statistics

    from inspect_ai import eval as inspect_eval

    from scitaste_hf.adapters.inspect import logs
    from scitaste_hf.adapters.inspect.tasks import EPOCH_FIGURES
    from scitaste_hf.adapters.inspect.tasks import TASKS as REGISTERED
    from scitaste_hf.cli import main
    from scitaste_hf.leaderboard.integrity import verify_evidence

    task = REGISTERED["pure_qa"](data_dir=str(run["data"]), limit=4)
    papers = [s.id for s in task.dataset]
    by_id = {r["bibcode"]: r for r in run["rows"]}
    answers = {b: [_answer(by_id[b], 10 * k + e) if (k, e) != (2, 1) else "no answer" for e in range(3)]
               for k, b in enumerate(papers)}
    proc, url, requests = scripted_chat({"rules": [{"contains": b, "reply": {"cycle": answers[b]}} for b in papers],
                                         "default": "no rule"}, tmp_path)
    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("SCRIPTED_BASE_URL", f"{url}/v1")
            patch.setenv("SCRIPTED_API_KEY", "scripted")
            # the base URL given: Inspect keeps the module's model, whose server is gone, under the same name
            log, = inspect_eval(task, model=MODEL, model_base_url=f"{url}/v1", epochs=3,
                                log_dir=str(tmp_path / "logs"), display="none")
    finally:
        servers[1](proc)
    assert log.status == "success" and len(requests.read_text().splitlines()) == 12
    metrics = {m.name: m.value for s in log.results.scores for m in s.metrics.values()}
    # `scitaste score` of the whole log: one line, naming the command that takes one epoch out
    out = tmp_path / "whole.json"
    capsys.readouterr()
    assert main(["score", "--predictions", log.location, "--gold", str(run["data"]), "--json", str(out)]) == 2
    assert not out.exists()
    line = (f"{log.location} holds 3 epochs of each paper (inspect eval --epochs); a run is one answer a paper: take "
            f"one epoch out with python -m scitaste_hf.adapters.inspect.logs {log.location} --epoch N --out RUN.eval")
    assert line in capsys.readouterr().err.splitlines()[-1]
    with pytest.raises(ScitasteError, match="holds 3 epochs"):
        read_predictions(log.location)
    per_epoch = {}
    gold = tmp_path / "gold.jsonl"  # the four papers: coverage is over the papers evaluated
    gold.write_text("".join(json.dumps(by_id[b], default=str) + "\n" for b in papers))
    for epoch in (1, 2, 3):
        path = tmp_path / f"epoch{epoch}.eval"
        assert logs.main([log.location, "--epoch", str(epoch), "--out", str(path)]) == 0
        scored = _figures(_scored(path, gold, tmp_path / f"epoch{epoch}.json"))
        per_epoch[epoch] = scored
        assert {name: metrics[f"{name}_epoch{epoch}"] for name in EPOCH_FIGURES} == pytest.approx(
            {name: scored[name] for name in EPOCH_FIGURES}, nan_ok=True)
        # the epoch taken out is evidence for its own answers
        assert verify_evidence(path.read_bytes(), read_predictions(path)) is None
    # the unsuffixed figures are epoch 1's, intervals and skill included (its floor from the dataset's backup
    # split; coverage over the papers evaluated, above)
    whole = _figures(_scored(tmp_path / "epoch1.eval", run["data"], tmp_path / "epoch1-dataset.json"))
    assert {k: v for k, v in (whole | {"coverage": per_epoch[1]["coverage"]}).items()
            if not _same(metrics[k], v)} == {}
    assert sorted({per_epoch[e]["coverage"] for e in per_epoch}) == [0.75, 1.0]
    for name in EPOCH_FIGURES:
        values = [per_epoch[e][name] for e in (1, 2, 3)]
        assert metrics[f"{name}_epoch_sd"] == pytest.approx(statistics.stdev(values))
        assert metrics[f"{name}_epoch_mean"] == pytest.approx(statistics.fmean(values))
    assert metrics["scheme1_epoch_sd"] > 0
    # a missing epoch and a missing folder: one line each, nothing written
    assert logs.main([log.location, "--epoch", "4", "--out", str(tmp_path / "e4.eval")]) == 1
    assert logs.main([log.location, "--epoch", "1", "--out", str(tmp_path / "no" / "e1.eval")]) == 1
    assert not (tmp_path / "e4.eval").exists()
