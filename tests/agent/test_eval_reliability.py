"""`scitaste eval` with scitaste-agent against a hostile endpoint: every reply shape a counted failure or an
answer, every wait bounded, no key in any file, and `--use_cache` that survives `kill -9` and forgets outages."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from extras import needs

from scitaste_hf.schema import DIMENSIONS

pytestmark = [pytest.mark.slow, needs("lm_eval", "lmeval")]


ROOT = Path(__file__).resolve().parents[2]
SCITASTE = str(Path(sys.executable).with_name("scitaste"))
KEY = "sk-test-0123456789abcdefSECRET"
ANSWER = json.dumps({"innovation_score": 61.5, "dimension_scores": dict.fromkeys(DIMENSIONS, 61.5)})


def _message(**fields):
    return {"message": {"role": "assistant", "content": None, **fields}}


#: One reply per paper: (reply, scoreable). Every shape a server can get wrong, and a few it gets right in
#: unusual ways. Papers without a rule here get a plain answer.
SHAPES = [
    ({"message": None}, False),
    ({"message": "text"}, False),
    ({"message": [1, 2]}, False),
    (_message(tool_calls="oops"), False),
    (_message(tool_calls=["x"]), False),
    (_message(tool_calls=[None]), False),
    (_message(tool_calls={"function": {"name": "citation_metrics", "arguments": "{}"}}), False),
    (_message(tool_calls=[{"function": "citation_metrics"}]), False),
    (_message(tool_calls=[{"function": None}]), False),
    (_message(tool_calls=[{"function": {"name": 5, "arguments": "{}"}}]), False),
    (_message(tool_calls=[{"function": {"name": "citation_metrics", "arguments": 7}}]), False),
    (_message(content=[1, 2]), False),
    (_message(content=42), False),
    (_message(content={"text": ANSWER}), False),
    (_message(content=True), False),
    (_message(content=[{"type": "text", "text": 5}]), False),
    ({"raw": "not json at all"}, False),
    ({"raw": "[]"}, False),
    ({"raw": "null"}, False),
    ({"raw": '"a string"'}, False),
    ({"raw": '{"choices": []}'}, False),
    ({"raw": '{"choices": null}'}, False),
    ({"raw": '{"choices": [5]}'}, False),
    ({"raw": "[" * 200_000}, False),
    ({"raw": '{"choices": [{"message": {"content": "' + ANSWER[:40]}, False),
    ({"empty": True}, False),
    (_message(content=""), False),                                   # a well-formed empty answer: no_json
    ({"status": 401, "echo_auth": True}, False),                     # the key echoed back, not retried
    ({"status": 429, "headers": {"Retry-After": "3600"}}, False),    # always busy, asks for an hour
    ({"status": 500, "headers": {"Retry-After": "Wed, 21 Oct 2099 07:28:00 GMT"}}, False),
    ({"status": 503, "headers": {"Retry-After": "nan"}}, False),
    ({"slow": True}, False),                                         # longer than the request timeout
    ({"cycle": [{"status": 429, "headers": {"Retry-After": "86400"}}, ANSWER]}, True),
    (_message(content=[{"type": "text", "text": "Here: "}, {"type": "text", "text": ANSWER}]), True),
    (_message(content=f"My key is {KEY}. " + ANSWER), True),         # the key echoed in an answer
    ({"message": {"role": "assistant", "content": ANSWER, "tool_calls": None}, "usage": "weird"}, True),
]


def _dataset(tmp_path, n):
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import record_features
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    gold = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")
    full = [{**dict.fromkeys(record_features()), **r} for r in gold[:n + 5]]
    return write_dataset(tmp_path / "ds", {"selected": full[:n], "backup": full[n:]}, DEFAULT_WEIGHTS,
                         synthetic=True), [r["bibcode"] for r in full[:n]]


def _eval_args(url, data, out, *, model_args="", cache=None, task="scitaste_pure_qa"):
    args = [SCITASTE, "eval", "--model", "scitaste-agent", "--model_args",
            f"base_url={url}/v1,model=scripted,data_dir={data}{model_args}", "--tasks", task,
            "--metadata", json.dumps({"data_dir": str(data)}), "--output_path", str(out), "--log_samples"]
    return args + (["--use_cache", str(cache)] if cache else [])


def _requested(log):
    """The paper identifiers of the requests a scripted server received, in order."""
    found = []
    for line in log.read_text().splitlines():
        text = "\n".join(m.get("content") or "" for m in json.loads(line)["messages"])
        found.append(text.split("Identifier: ", 1)[1].split("\n", 1)[0])
    return found


def test_every_reply_shape_is_counted_and_no_key_is_written(servers, scripted_chat, tmp_path):
    data, bibcodes = _dataset(tmp_path, len(SHAPES))
    rules = []
    for bibcode, (reply, _) in zip(bibcodes, SHAPES):
        if reply.get("slow"):
            rules.append({"contains": f"Identifier: {bibcode}\n", "delay": 6, "reply": ANSWER})
        elif "usage" in reply:
            rules.append({"contains": f"Identifier: {bibcode}\n", "reply": {"raw": json.dumps(
                {"choices": [{"message": reply["message"]}], "usage": reply["usage"]})}})
        else:
            rules.append({"contains": f"Identifier: {bibcode}\n", "reply": reply})
    proc, url, log = scripted_chat({"rules": rules, "default": ANSWER}, tmp_path)
    out = tmp_path / "out"
    started = time.monotonic()
    try:
        run = subprocess.run(_eval_args(url, data, out, cache=tmp_path / "cache" / "db",
                                        model_args=",num_concurrent=4,timeout=2,max_retry_after=1,item_timeout=8"),
                             cwd=tmp_path, capture_output=True, text=True, timeout=300,
                             env={**os.environ, "OPENAI_API_KEY": KEY})
    finally:
        servers[1](proc)
    elapsed = time.monotonic() - started
    assert run.returncode == 0, run.stderr[-3000:]
    assert elapsed < 240  # a bound, not a benchmark: an hour-long Retry-After used to hold the run
    results = json.loads(next(out.rglob("results_*.json")).read_text())["results"]["scitaste_pure_qa"]
    scoreable = sum(ok for _, ok in SHAPES)
    assert results["coverage,none"] == pytest.approx(scoreable / len(SHAPES))
    samples = [json.loads(line) for line in next(out.rglob("samples_scitaste_pure_qa_*.jsonl")).read_text()
               .splitlines()]
    assert sorted(s["doc"]["bibcode"] for s in samples) == sorted(bibcodes)  # every paper counted once
    reasons = {s["doc"]["bibcode"]: s["scheme1"]["reason"] for s in samples}
    for bibcode, (reply, ok) in zip(bibcodes, SHAPES):
        assert (reasons[bibcode] is None) == ok, (reply, reasons[bibcode])
    assert reasons[bibcodes[[r.get("slow") for r, _ in SHAPES].index(True)]] == "timeout"
    traces = [json.loads(line) for line in (out / "scitaste-traces.jsonl").read_text().splitlines()]
    assert sorted(t["bibcode"] for t in traces) == sorted(bibcodes)
    # the slow paper was asked twice at most (a timed-out request is retried once), the 401 once
    asked = _requested(log)
    assert asked.count(bibcodes[[r.get("slow") for r, _ in SHAPES].index(True)]) == 2
    assert asked.count(bibcodes[[r.get("status") == 401 for r, _ in SHAPES].index(True)]) == 1
    # the server echoed the key (redacted in the trace); nothing the run wrote holds it
    echoed = bibcodes[[r.get("echo_auth", False) for r, _ in SHAPES].index(True)]
    assert "Bearer ***" in next(t["error"] for t in traces if t["bibcode"] == echoed)
    for path in [*out.rglob("*"), *(tmp_path / "cache").rglob("*")]:
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in run.stdout + run.stderr


def test_kill_during_use_cache_resumes_with_unfinished_papers(servers, scripted_chat, tmp_path):
    data, _ = _dataset(tmp_path, 20)
    proc, url, log = scripted_chat({"rules": [], "default": ANSWER, "latency": 0.2}, tmp_path)
    out, cache = tmp_path / "out", tmp_path / "cache" / "db"
    args = _eval_args(url, data, out, cache=cache, model_args=",num_concurrent=1")
    try:
        first = subprocess.Popen(args, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                 start_new_session=True)
        trace = out / "scitaste-traces.jsonl"
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and first.poll() is None:
            if trace.exists() and len(trace.read_text().splitlines()) >= 16:
                break
            time.sleep(0.05)
        assert first.poll() is None, "the run ended before it could be killed"
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
        done = {json.loads(line)["bibcode"] for line in trace.read_text().splitlines()}
        assert 16 <= len(done) < 20
        sent_before = len(log.read_text().splitlines())
        second = subprocess.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    finally:
        servers[1](proc)
    assert second.returncode == 0, second.stderr[-3000:]
    asked_again = _requested(log)[sent_before:]
    assert asked_again and not set(asked_again) & done  # only the papers the killed run had not finished
    assert len(asked_again) == len(set(asked_again)) <= 20 - len(done)
    results = json.loads(next(out.rglob("results_*.json")).read_text())["results"]["scitaste_pure_qa"]
    assert results["coverage,none"] == 1.0


def _requests(records, mode="pure_qa"):
    """lm-eval's requests for ``records``, as the task builds them."""
    from lm_eval.api.instance import Instance

    from scitaste_hf.adapters.lmeval.tasks import doc_to_text

    return [Instance("generate_until", {**r, "scitaste_mode": mode}, (doc_to_text(r), {"until": []}), k)
            for k, r in enumerate(records)]


def test_outages_are_not_replayed_from_the_cache(servers, scripted_chat, tmp_path):
    # lm-eval's own cache wrapper around the model, in process, over a server that is down and then up
    from lm_eval.api.model import CachingLM

    from scitaste_hf.adapters.lmeval.models import AgentLM
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import failure_of

    records = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")[:6]
    cache, trace = str(tmp_path / "cache.db"), str(tmp_path / "trace.jsonl")
    down, down_url, down_log = scripted_chat({"rules": [], "default": {"status": 503}}, tmp_path, "down")
    try:
        replies = CachingLM(AgentLM(f"{down_url}/v1", "m", max_retries=0, trace_path=trace),
                            cache).generate_until(_requests(records))
    finally:
        servers[1](down)
    assert [failure_of(r) for r in replies] == ["api_error"] * 6 and len(down_log.read_text().splitlines()) == 6
    up, up_url, up_log = scripted_chat({"rules": [], "default": ANSWER}, tmp_path, "up")
    try:
        replies = CachingLM(AgentLM(f"{up_url}/v1", "m", trace_path=trace), cache).generate_until(_requests(records))
        again = CachingLM(AgentLM(f"{up_url}/v1", "m", trace_path=trace), cache).generate_until(_requests(records))
    finally:
        servers[1](up)
    assert sorted(_requested(up_log)) == sorted(r["bibcode"] for r in records)  # each asked again, once
    assert replies == again == [ANSWER] * 6  # and the answers, unlike the outage, are replayed


def test_tool_mode_without_evidence_stops_before_any_request(servers, scripted_chat, tmp_path):
    from scitaste_hf.adapters.lmeval.models import AgentLM
    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.records import load_records

    records = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")[:3]
    proc, url, log = scripted_chat({"rules": [], "default": ANSWER}, tmp_path)
    try:
        model = AgentLM(f"{url}/v1", "m", data_dir=str(tmp_path / "no-such-dataset"),
                        trace_path=str(tmp_path / "trace.jsonl"))
        with pytest.raises(ScitasteError, match="the tool modes need frozen evidence"):
            model.generate_until(_requests(records, "dimagent_v3"))
        assert model.generate_until(_requests(records))  # the tool-free mode needs none
    finally:
        servers[1](proc)
    assert len(_requested(log)) == 3  # only the tool-free requests were sent


def test_a_trickled_reply_is_cut_at_the_request_timeout(servers, scripted_chat, tmp_path, caplog):
    from scitaste_hf.agent.chat import ChatClient, ChatError

    proc, url, _ = scripted_chat({"rules": [
        {"contains": "TRICKLE", "reply": {"trickle": ANSWER, "interval": 0.2}},
        {"contains": "BUSY", "reply": {"cycle": [{"status": 429, "headers": {"Retry-After": "3600"}}, ANSWER]}},
    ], "default": ANSWER}, tmp_path)
    try:
        client = ChatClient(f"{url}/v1", "scripted", timeout=1, max_retry_after=0.5)
        # each byte comes well within the read timeout; the reply as a whole does not (it would take ~40 s)
        with pytest.raises(ChatError) as caught:
            client.chat([{"role": "user", "content": "TRICKLE"}])
        assert caught.value.reason == "timeout"
        # an hour asked for is capped, said, and the retry then answers
        with caplog.at_level("WARNING", logger="scitaste_hf.agent.chat"):
            assert client.chat([{"role": "user", "content": "BUSY"}]).content == ANSWER
        assert "asked to wait 3600 s before retrying; waiting 0.5 s (max_retry_after)" in caplog.text
        # a paper whose deadline has passed sends nothing more
        with pytest.raises(ChatError, match="time budget"):
            client.chat([{"role": "user", "content": "x"}], deadline=time.monotonic() - 1)
    finally:
        servers[1](proc)
