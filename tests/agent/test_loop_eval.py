"""The DimAgent-v3 loop against a scripted OpenAI-compatible server, and `scitaste eval` over every mode."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scitaste_hf.adapters.lmeval.tasks import TASKS
from scitaste_hf.agent.chat import ChatClient, Profile
from scitaste_hf.agent.loop import run_item
from scitaste_hf.agent.tools import TOOL_NAMES
from scitaste_hf.schema import DIMENSIONS, Answer, failure_of
from scitaste_hf.scoring import parse_answer

ROOT = Path(__file__).resolve().parents[2]
SCITASTE = str(Path(sys.executable).with_name("scitaste"))
ANSWER = {"innovation_score": 61.5, "dimension_scores": dict.fromkeys(DIMENSIONS, 61.5)}


class _Tools:
    """Records the calls; answers each with a small payload (the frozen evidence stands in here)."""

    def __init__(self):
        self.calls = []

    def call(self, name, arguments):
        self.calls.append((name, arguments))
        return {"tool": name, "ok": True} if name in TOOL_NAMES else {"error": f"unknown tool {name!r}"}


def _calls(names, bibcode="P1"):
    return {"tool_calls": [{"name": n, "arguments": {"bibcode": bibcode}} for n in names]}


CASES = {
    # paper id: (round-1 reply, round-2 reply, expected failure, tool calls executed)
    "ALLTOOLS": (_calls(TOOL_NAMES), "```json\n" + json.dumps(ANSWER) + "\n```", None, 9),
    "SOMETOOLS": (_calls(TOOL_NAMES[:3]), "Verdict: " + json.dumps(ANSWER) + " done.", None, 3),
    "NOTOOLS": ("I will just think.", json.dumps(ANSWER), None, 0),
    "UNKNOWNTOOL": (_calls(["rank_paper", "references"]), json.dumps(ANSWER), None, 2),
    "ROUNDONEANSWER": (json.dumps(ANSWER), "unused", None, 0),
    "TRUNCATED": (_calls(TOOL_NAMES[:1]), '{"innovation_score": 61.5, "dimension_scores": {"cit', "no_json", 1),
    "WRONGKEYS": (_calls(TOOL_NAMES[:1]), json.dumps({"innovation_score": 50, "dimension_scores": {"novelty": 5}}),
                  "schema", 1),
    "OUTOFRANGE": (_calls(TOOL_NAMES[:1]), json.dumps({**ANSWER, "innovation_score": 250}), "out_of_range", 1),
    "SERVERERROR": ({"status": 500}, "unused", "api_error", 0),
    "EMPTYBODY": ({"empty": True}, "unused", "api_error", 0),
}


@pytest.fixture(scope="module")
def scripted(servers, scripted_chat, tmp_path_factory):
    rules = []
    for paper, (first, second, _, _) in CASES.items():
        rules.append({"contains": f"Identifier: {paper}\n", "tools": True, "reply": first})
        rules.append({"contains": f"Identifier: {paper}\n", "tools": False, "reply": second})
    rules.append({"contains": "Identifier: RATELIMITED\n", "reply": {"status": 429, "headers": {"Retry-After": "0"}}})
    rules.append({"contains": "Identifier: SLOW\n", "delay": 2, "reply": json.dumps(ANSWER)})
    proc, url, log = scripted_chat({"rules": rules, "default": json.dumps(ANSWER)}, tmp_path_factory.mktemp("scripted"))
    yield url, log
    servers[1](proc)


def _record(bibcode):
    return {"bibcode": bibcode, "discipline": "physics", "title": "A paper", "abstract": "It studies things."}


@pytest.mark.parametrize("paper", list(CASES))
def test_loop_handles_every_kind_of_reply(scripted, paper):
    url, _ = scripted
    client = ChatClient(f"{url}/v1", "scripted", max_retries=1, profile=Profile(temperature_with_tools=False))
    tools = _Tools()
    outcome = run_item(client.chat, tools, _record(paper), "dimagent_v3_live")
    _, _, failure, n_calls = CASES[paper]
    assert len(tools.calls) == n_calls
    if outcome.failure:
        assert outcome.failure == failure
    else:
        result = parse_answer(outcome.text)
        assert (result.reason if not isinstance(result, Answer) else None) == failure
    assert outcome.trace["bibcode"] == paper and outcome.trace["latency"] >= 0
    if paper == "UNKNOWNTOOL":
        assert [c["error"] is not None for c in outcome.trace["calls"]] == [True, False]


def test_the_harness_makes_round_one_in_dimagent_v3(scripted):
    """In the paper's tool mode the model is never offered the tools: one request carries the nine calls and their
    results, as the live loop's second request does after a model that called all nine."""
    url, log = scripted
    client = ChatClient(f"{url}/v1", "scripted", max_retries=1, profile=Profile(temperature_with_tools=False))
    before = len(log.read_text().splitlines())
    fixed, live = _Tools(), _Tools()
    outcome = run_item(client.chat, fixed, _record("ALLTOOLS"), "dimagent_v3")
    sent = [json.loads(line) for line in log.read_text().splitlines()[before:]]
    assert len(sent) == 1 and "tools" not in sent[0]
    assert [name for name, _ in fixed.calls] == list(TOOL_NAMES) and outcome.failure is None
    assert [m["role"] for m in sent[0]["messages"]] == ["system", "user", "assistant", *["tool"] * 9, "user"]
    assert parse_answer(outcome.text) == Answer.model_validate(ANSWER)
    run_item(client.chat, live, _record("ALLTOOLS"), "dimagent_v3_live")
    second = json.loads(log.read_text().splitlines()[-1])
    # the same conversation, but for the ids the model gave its calls
    assert [{k: v for k, v in m.items() if k not in ("tool_calls", "tool_call_id")} for m in second["messages"]] == \
        [{k: v for k, v in m.items() if k not in ("tool_calls", "tool_call_id")} for m in sent[0]["messages"]]
    # for an endpoint without tool roles, the same round as one text prompt; scitaste-agent decides by profile
    # and by the task's evidence_as
    run_item(client.chat, _Tools(), _record("ALLTOOLS"), "dimagent_v3", evidence_as_text=True)
    as_text = json.loads(log.read_text().splitlines()[-1])["messages"]
    assert len(as_text) == 1 and as_text[0]["content"].count('"ok": true') == 9
    from scitaste_hf.adapters.lmeval.models import AgentLM

    plain, llama = AgentLM(f"{url}/v1", "m"), AgentLM(f"{url}/v1", "m", profile="llama-cpp")
    assert [(m.evidence_as_text({"evidence_as": e}), e) for m in (plain, llama) for e in ("auto", "text", "messages")] \
        == [(False, "auto"), (True, "text"), (False, "messages"), (True, "auto"), (True, "text"), (False, "messages")]


def test_timeout_is_a_counted_failure(scripted):
    url, _ = scripted
    client = ChatClient(f"{url}/v1", "scripted", max_retries=0, timeout=0.5)
    outcome = run_item(client.chat, _Tools(), _record("SLOW"), "pure_qa")
    assert outcome.failure == "timeout" and outcome.text == ""


def test_rate_limit_is_retried_then_counted(scripted):
    url, log = scripted
    before = len(log.read_text().splitlines())
    client = ChatClient(f"{url}/v1", "scripted", max_retries=2)
    outcome = run_item(client.chat, _Tools(), _record("RATELIMITED"), "pure_qa")
    assert outcome.failure == "api_error" and "429" in outcome.trace["error"]
    assert len(log.read_text().splitlines()) - before == 3  # the first try and two retries


def test_profiles_shape_the_request():
    body = ChatClient("http://127.0.0.1:1/v1", "m", profile=Profile(temperature_with_tools=False,
                                                                    search={"enable_search": True}))
    with_tools = body.payload([{"role": "user", "content": "x"}], [{"type": "function"}], search=True)
    assert "temperature" not in with_tools and with_tools["enable_search"] is True
    assert body.payload([], None)["temperature"] == 0.0


def test_failure_text_round_trip():
    from scitaste_hf.adapters.lmeval.tasks import process_results
    from scitaste_hf.schema import failure_text

    text = failure_text("timeout", "no reply")
    assert failure_of(text) == "timeout" and failure_of("{}") is None
    record = {**_record("P"), "innovation_score": 50.0, "dimension_scores": dict.fromkeys(DIMENSIONS, 50.0)}
    assert process_results(record, [text])["coverage"]["reason"] == "timeout"


def _world_dataset(world, tmp_path):
    """Selected: two papers per discipline of the shared mirror's world; backup: two more each."""
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.schema import DISCIPLINES, record_features
    from scitaste_hf.weights import DEFAULT_WEIGHTS, composite

    rng = np.random.default_rng(0)
    splits = {"selected": [], "backup": []}
    for discipline in DISCIPLINES:
        mine = [i for i in range(world.n_candidates) if world.discipline(i) == discipline][:4]
        for k, i in enumerate(mine):
            dims = {d: round(float(rng.uniform(10, 90)), 2) for d in DIMENSIONS}
            bibcode = world.bibcode.get(i, f"SYN{i:05d}")
            record = {**dict.fromkeys(record_features()), "bibcode": bibcode, "discipline": discipline,
                      "openalex_id": None if i in world.bibcode else world.work_id(i), "doi": world.doi(i),
                      "title": world.titles[i], "abstract": world.abstracts[i], "year": world.pub_date(i).year,
                      "innovation_score": composite(dims), "dimension_scores": dims}
            splits["selected" if k < 2 else "backup"].append(record)
    return write_dataset(tmp_path / "dataset", splits, DEFAULT_WEIGHTS, synthetic=True)


@pytest.mark.slow
def test_scitaste_eval_every_mode_with_the_baseline(world, mirror, tmp_path):
    pytest.importorskip("lm_eval", reason="needs lm-eval: pip install 'scitaste-hf[lmeval]'")
    from scitaste_hf.cli import main

    data = _world_dataset(world, tmp_path)
    assert main(["evidence", "freeze", "--dataset", str(data), "--out", str(data / "tool_evidence"),
                 "--mirror-url", mirror]) == 0
    run = subprocess.run([SCITASTE, "eval", "--model", "scitaste-baseline", "--model_args", f"data_dir={data}",
                          "--tasks", ",".join(TASKS.values()), "--metadata", json.dumps({"data_dir": str(data)}),
                          "--output_path", str(tmp_path / "out")], cwd=tmp_path, capture_output=True, text=True,
                         timeout=400)
    assert run.returncode == 0, run.stderr[-3000:]
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())["results"]
    for task in TASKS.values():
        for metric in ("scheme1", "scheme2", "wape", "coverage"):
            assert f"{metric},none" in results[task], (task, metric)
        assert results[task]["coverage,none"] == 1.0
    assert results["scitaste_pure_qa"]["wape,none"] == results["scitaste_native_search"]["wape,none"]
    assert results["scitaste_dimagent"]["wape,none"] != results["scitaste_pure_qa"]["wape,none"]
    # the baseline calls all nine tools when it may choose: the live loop gives the harness's answers
    assert results["scitaste_dimagent_live"]["wape,none"] == results["scitaste_dimagent"]["wape,none"]
    # scitaste eval puts the traces beside lm-eval's output
    traces = [json.loads(line) for line in (tmp_path / "out" / "scitaste-traces.jsonl").read_text().splitlines()]
    for mode in ("dimagent_v3", "dimagent_v3_live"):
        tool_traces = [t for t in traces if t["mode"] == mode]
        assert len(tool_traces) == 12 and all(len(t["calls"]) == 9 for t in tool_traces)
