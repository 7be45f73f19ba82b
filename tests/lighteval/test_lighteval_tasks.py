"""Opt-in (`pytest -m lighteval`): lighteval 0.13 runs scitaste_dimagent from the custom task module
(`--custom-tasks scitaste_hf.adapters.lighteval.tasks`) through its litellm backend against the scripted
OpenAI-compatible server on 127.0.0.1, and reports every figure stock lm_eval reports for the same answers. lighteval
needs torch and transformers, so it runs in an environment of its own: the interpreter named by
SCITASTE_LIGHTEVAL_PYTHON, else one built here: torch first, pinned (the CPU-only build from PyTorch's CPU index where
that index is reached, which pip prefers there for its +cpu local version, or a local file of the same release), so
that lighteval's own requirement adds no CUDA build; about 1 GB.

lighteval 0.13.0 needs three workarounds with today's packages, applied here and written in
docs/guide-evaluate.md#with-lighteval: litellm below 1.80 (its disk cache type is gone from 1.110), xxhash below 3.6
(4.x refuses the str lighteval hashes), and its mt_bench task module, imported with every registry, calls
`HfApi.list_models(model_name=...)`, an argument huggingface_hub 1.x (which scitaste-hf needs) no longer takes: the
run patches that call, and an empty tinyBenchmarks.pkl keeps another task module from downloading it."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from stock_samples import metrics, rules

from scitaste_hf.records import load_records

pytestmark = pytest.mark.lighteval

ROOT = Path(__file__).resolve().parents[2]
#: The torch release the environment takes (2026-12-02: run with 2.13.0+cpu).
TORCH = "torch==2.13.0"
PACKAGES = ["lighteval[litellm]==0.13.0", "litellm>=1.79,<1.80", "xxhash<3.6", TORCH]
#: lighteval's command line, with the one call of its mt_bench module that huggingface_hub 1.x refuses answered.
SHIM = ("import sys; from huggingface_hub import HfApi; HfApi.list_models = lambda self, **kwargs: [kwargs]; "
        "from lighteval.__main__ import app; sys.argv[0] = 'lighteval'; app()")


def _python(once) -> str:
    """An interpreter with lighteval and scitaste-hf: SCITASTE_LIGHTEVAL_PYTHON, else a venv built once per run."""
    if os.environ.get("SCITASTE_LIGHTEVAL_PYTHON"):
        return os.environ["SCITASTE_LIGHTEVAL_PYTHON"]

    def build(folder):
        subprocess.run([sys.executable, "-m", "venv", str(folder / "venv")], check=True)
        pip = [str(folder / "venv" / "bin" / "pip"), "install", "-q"]
        subprocess.run([*pip, TORCH, "--extra-index-url", "https://download.pytorch.org/whl/cpu"], check=True,
                       timeout=3600)
        subprocess.run([*pip, *PACKAGES], check=True, timeout=3600)
        subprocess.run([*pip, str(ROOT)], check=True, timeout=900)
        return str(folder / "venv" / "bin" / "python")

    return once("lighteval-venv", build)


def _tiny_benchmarks(python):
    """The empty tinyBenchmarks.pkl that keeps lighteval's tiny_benchmarks module from downloading it at import."""
    tasks = subprocess.run([python, "-c", "import lighteval, pathlib; print(pathlib.Path(lighteval.__file__).parent)"],
                           capture_output=True, text=True, check=True).stdout.strip()
    (Path(tasks) / "tasks" / "tasks" / "tinyBenchmarks.pkl").touch()


@pytest.mark.timeout(1800)  # the environment built once (several minutes), then lighteval's 300 requests
def test_lighteval_runs_dimagent_with_lm_evals_figures(once, stock_samples, scripted_chat, servers, tmp_path):
    """All 300 papers (lighteval's --max-samples takes a shuffle's first N, not the tasks' order that lm_eval's
    --limit takes), against the replies of the run's shared stock lm_eval run (tests/fixtures/stock_samples.py)."""
    data, _, stock_results, _ = stock_samples
    python = _python(once)
    _tiny_benchmarks(python)
    proc, url, requests = scripted_chat({"rules": rules(load_records(data, "selected")), "default": "no rule"},
                                        tmp_path)
    env = {**os.environ, "SCITASTE_DATA_DIR": str(data), "PYTHONPATH": str(ROOT), "OPENAI_API_KEY": "x",
           "LITELLM_LOCAL_MODEL_COST_MAP": "True", "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    try:
        light = subprocess.run(
            [python, "-c", SHIM, "endpoint", "litellm", f"model_name=openai/scripted,base_url={url}/v1,api_key=x",
             "scitaste_dimagent|0", "--custom-tasks", "scitaste_hf.adapters.lighteval.tasks",
             "--output-dir", str(tmp_path / "light")], cwd=tmp_path, capture_output=True, text=True, timeout=900,
            env=env)
    finally:
        servers[1](proc)
    assert light.returncode == 0, light.stderr[-3000:]
    assert len(requests.read_text().splitlines()) == 300
    ours = json.loads(next((tmp_path / "light").rglob("results_*.json")).read_text())["results"]["scitaste_dimagent|0"]
    theirs = metrics(stock_results)
    theirs = {k: v for k, v in theirs.items() if "_stderr" not in k}
    assert set(ours) == set(theirs)
    assert {k: (v, theirs[k]) for k, v in ours.items() if not ((v is None or math.isnan(v)) and math.isnan(theirs[k]))
            and not math.isclose(v, theirs[k], rel_tol=1e-9)} == {}
    assert ours["coverage"] == pytest.approx(0.7)  # three replies in ten cannot be scored
