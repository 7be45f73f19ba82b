"""Opt-in (`pytest -m hf`): scitaste_dimagent under stock `lm_eval --model hf` with a tiny random-weight model built
here, once with a chat template that has tool roles and once with one that has not. Whatever the model says, the run
completes; the prompt carries the nine results as tool turns in the first case and as text in the second. Needs
`pip install torch transformers accelerate` in this interpreter (or the one named by SCITASTE_HF_PYTHON)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.hf

ROOT = Path(__file__).resolve().parents[2]
SCITASTE = str(Path(sys.executable).with_name("scitaste"))
MAKE = """
import sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

out, template, corpus = sys.argv[1], open(sys.argv[2]).read(), open(sys.argv[3]).read()
tok = Tokenizer(models.BPE())
tok.pre_tokenizer, tok.decoder = pre_tokenizers.ByteLevel(add_prefix_space=False), decoders.ByteLevel()
tok.train_from_iterator([corpus], trainers.BpeTrainer(vocab_size=600, special_tokens=["<|end|>"],
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|end|>", pad_token="<|end|>")
fast.chat_template = template
fast.save_pretrained(out)
config = LlamaConfig(vocab_size=len(fast), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     num_key_value_heads=2, intermediate_size=64, max_position_embeddings=32768,
                     eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id)
LlamaForCausalLM(config).save_pretrained(out)
"""


@pytest.mark.parametrize("template, tool_turns", [("tools", 9), ("strict", 0)])
def test_lm_eval_hf_runs_scitaste_dimagent(evidence_dataset, chat_templates, tmp_path, template, tool_turns):
    python = os.environ.get("SCITASTE_HF_PYTHON", sys.executable)
    needs = "import torch, transformers, accelerate, lm_eval"
    if subprocess.run([python, "-c", needs], capture_output=True).returncode:
        pytest.skip("needs torch, transformers, accelerate and lm-eval in the interpreter")
    (tmp_path / "template.jinja").write_text(chat_templates[template])
    subprocess.run([python, "-c", MAKE, str(tmp_path / "model"), str(tmp_path / "template.jinja"),
                    str(ROOT / "README.md")], check=True, capture_output=True, timeout=300)
    tasks = subprocess.run([SCITASTE, "tasks-path"], capture_output=True, text=True, check=True).stdout.strip()
    run = subprocess.run(
        [python, "-m", "lm_eval", "--model", "hf", "--model_args", f"pretrained={tmp_path / 'model'},dtype=float32",
         "--device", "cpu", "--apply_chat_template", "--include_path", tasks, "--tasks", "scitaste_dimagent",
         "--metadata", json.dumps({"data_dir": str(evidence_dataset)}), "--limit", "3",
         "--gen_kwargs", "max_gen_toks=8",
         "--log_samples", "--output_path", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=900, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    samples = [json.loads(line) for line in next((tmp_path / "out").rglob("samples_scitaste_dimagent_*.jsonl"))
               .read_text().splitlines()]
    assert len(samples) == 3
    for sample in samples:
        prompt = sample["arguments"]["gen_args_0"]["arg_0"]
        assert prompt.count("<tool_response>") == tool_turns
        assert prompt.count('"bibcode": "' + sample["doc"]["bibcode"]) >= 9  # the nine calls, as turns or as text
    results = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())["results"]["scitaste_dimagent"]
    assert 0.0 <= results["coverage,none"] <= 1.0  # a random model's words are counted failures, never zeros
