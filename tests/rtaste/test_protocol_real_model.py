"""Opt-in (`pytest -m llm`): a real small model (SmolLM2-135M-Instruct behind llama-cpp-python's server, started with
the guide's command line, tests/fixtures/llama_recipe.py) proposes for one seed paper of the bundled synthetic study.
Whatever it writes is validated against the release schema, and a failure is recorded with its reason in one line."""

import json
import shutil

import pytest
from llama_recipe import llama, recipe_servers

from scitaste_hf.agent.chat import PROFILES, ChatClient
from scitaste_hf.rtaste.schema import Condition
from scitaste_hf.rtaste_protocol.propose import propose
from scitaste_hf.rtaste_protocol.study import Study
from scitaste_hf.rtaste_protocol.toy import example_study_dir

pytestmark = [pytest.mark.llm, pytest.mark.timeout(3600)]  # a real model on a shared CPU: minutes a condition


def test_a_real_small_model_proposes_and_is_validated_or_failed_with_its_reason(servers, tmp_path):
    python, gguf = llama()
    start, stop = servers
    (tmp_path / "study" / "seeds").mkdir(parents=True)
    shutil.copy(example_study_dir() / "seeds" / "toy-shift.json", tmp_path / "study" / "seeds")
    proc, url = start(recipe_servers(python, gguf)[0], log=tmp_path / "llama.log", ready="/v1/models", timeout=300)
    try:
        client = ChatClient(f"{url}v1", "local", profile=PROFILES["llama-cpp"], timeout=600, max_retries=1)
        counts = propose(Study(tmp_path / "study"), client)
    finally:
        stop(proc)
    assert counts["ok"] + counts["failed"] == 1
    (path,) = (tmp_path / "study" / "conditions").glob("*.json")
    record = json.loads(path.read_text())
    assert record["calls"] and all(c["completion_tokens"] >= 0 for c in record["calls"])
    if record["status"] == "ok":
        Condition.model_validate(record["condition"])
    else:
        assert record["reason"] and "\n" not in record["reason"] and record["stage"], record
    print(f"SmolLM2-135M: {record['status']} at {record.get('stage') or 'the end'}: {record.get('reason')}")
