"""`scitaste preflight` against scripted endpoints: a good one, and one that rejects temperature with tools."""

import json
import re
from pathlib import Path

import pytest

from scitaste_hf.agent.tools import TOOL_NAMES
from scitaste_hf.cli import main
from scitaste_hf.schema import DIMENSIONS

ROOT = Path(__file__).resolve().parents[2]
ANSWER = json.dumps({"innovation_score": 55.0, "dimension_scores": dict.fromkeys(DIMENSIONS, 55.0)})


def _evidence_dataset(tmp_path):
    """A dataset folder with frozen evidence for the first three example papers (hand-written payloads)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scitaste_hf.agent.evidence import FILE
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import record_features
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    gold = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")
    full = [{**dict.fromkeys(record_features()), **r} for r in gold[:6]]
    data = write_dataset(tmp_path / "ds", {"selected": full[:3], "backup": full[3:]}, DEFAULT_WEIGHTS, synthetic=True)
    rows = [{"bibcode": r["bibcode"], "tool": t, "payload": json.dumps({"tool": t}), "fetched_at": "2026-11-30"}
            for r in gold[:3] for t in TOOL_NAMES]
    (data / "tool_evidence").mkdir()
    pq.write_table(pa.Table.from_pylist(rows), data / "tool_evidence" / FILE)
    return data


def test_preflight_reports_per_mode(servers, scripted_chat, tmp_path, capsys):
    proc, url, _ = scripted_chat({
        "rules": [{"contains": "Identifier", "tools": True,
                   "reply": {"tool_calls": [{"name": n, "arguments": {"bibcode": "x"}} for n in TOOL_NAMES[:2]]}}],
        "default": ANSWER}, tmp_path)
    try:
        code = main(["preflight", "--base-url", f"{url}/v1", "--model", "m", "--data-dir",
                     str(_evidence_dataset(tmp_path))])
    finally:
        servers[1](proc)
    out = capsys.readouterr().out
    assert code == 0
    assert "pure_qa" in out and "3/3" in out and "no web search switch" in out
    # the model's two tool calls for each of three papers in the live loop, the harness's nine in dimagent_v3
    assert re.search(r"dimagent_v3_live\s+│\s+3\s+│\s+6\s+│\s+3/3", out), out
    assert re.search(r"dimagent_v3\s+│\s+3\s+│\s+27 \(harness\)\s+│\s+3/3", out), out


def test_preflight_finds_rejected_temperature(servers, scripted_chat, tmp_path, capsys):
    proc, url, _ = scripted_chat({"reject_temperature_with_tools": True, "rules": [], "default": ANSWER},
                                 tmp_path)
    try:
        code = main(["preflight", "--base-url", f"{url}/v1", "--model", "m", "--data-dir",
                     str(_evidence_dataset(tmp_path))])
    finally:
        servers[1](proc)
    out = capsys.readouterr().out
    assert code == 1 and "rejects temperature together with tools" in out and "api_error 3" in out


def test_preflight_takes_the_agents_model_args_as_they_are(servers, scripted_chat, tmp_path, capsys):
    proc, url, log = scripted_chat({"rules": [], "default": ANSWER}, tmp_path)
    data = _evidence_dataset(tmp_path)
    try:
        code = main(["preflight", "--model", "scitaste-agent", "--model_args",
                     f"base_url={url}/v1,model=m,num_concurrent=8,max_gen_toks=321,profile=openai,data_dir={data}"])
    finally:
        servers[1](proc)
    out = capsys.readouterr().out
    assert code == 0 and "preflight of m at" in out
    # The openai profile has a search switch, so the native modes ran instead of being skipped.
    assert "no web search switch" not in out and re.search(r"dimagent_v3_native\s+│\s+3\s+│", out), out
    bodies = [json.loads(line) for line in log.read_text().splitlines()]
    assert bodies and {b["max_tokens"] for b in bodies} == {321}


@pytest.mark.parametrize("argv, message", [
    (["--model_args", "base_url=http://127.0.0.1:9/v1,model=m,num_concurent=8"],
     "does not take num_concurent in --model_args"),
    (["--model", "local-chat-completions", "--model_args", "base_url=http://127.0.0.1:9/v1,model=m"],
     "--model is scitaste-agent"),
    (["--model_args", "model=m"], "needs base_url=URL and model=NAME"),
    (["--model", "m"], "needs --base-url and --model"),
    (["--model_args", "base_url=http://127.0.0.1:9/v1,model=m,profile=nope"], "unknown profile 'nope'"),
])
def test_preflight_settings_errors_are_one_line(argv, message, capsys):
    assert main(["preflight", *argv]) != 0
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1


def test_agent_model_refuses_a_mistyped_model_arg_and_honours_max_gen_toks():
    from scitaste_hf.adapters.lmeval.models import AgentLM, BaselineLM
    from scitaste_hf.errors import ScitasteError

    with pytest.raises(ScitasteError, match="scitaste-agent does not take num_concurent in --model_args; it takes "
                                            "base_url, model, num_concurrent"):
        AgentLM.create_from_arg_string("base_url=http://127.0.0.1:9/v1,model=m,num_concurent=4")
    # lm-eval's runner adds batch_size (and device, max_batch_size when given) to every model's arguments.
    lm = AgentLM.create_from_arg_string("base_url=http://127.0.0.1:9/v1,model=m,max_gen_toks=777",
                                        {"batch_size": 1, "max_batch_size": None, "device": None})
    assert lm.chat.__self__.profile.max_tokens == 777
    with pytest.raises(ScitasteError, match="scitaste-baseline does not take base_url"):
        BaselineLM.create_from_arg_string("base_url=http://127.0.0.1:9/v1")
