"""Shared by the task tests: the 300 example papers with frozen evidence, and chat templates as tokenizers carry
them."""

import json
from pathlib import Path

import pytest

from scitaste_hf.agent.tools import TOOL_NAMES
from scitaste_hf.records import load_records

ROOT = Path(__file__).resolve().parents[2]
GOLD = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")


class Evidence:
    """A stand-in for the services behind `evidence freeze`: a distinct payload per paper and tool."""

    def call(self, name, arguments):
        bibcode = json.loads(arguments)["bibcode"] if isinstance(arguments, str) else arguments["bibcode"]
        return {"tool": name, "bibcode": bibcode, "count": len(bibcode) * (TOOL_NAMES.index(name) + 1)}



@pytest.fixture(scope="session")
def stand_in_evidence():
    """The stand-in of the services whose answers :func:`evidence_dataset` froze."""
    return Evidence()


@pytest.fixture(scope="session")
def evidence_dataset(tmp_path_factory):
    """The 300 example papers with a backup split, and their frozen evidence written by `freeze`."""
    from scitaste_hf.agent.evidence import EVIDENCE_DIR, freeze
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.schema import record_features
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    tmp = tmp_path_factory.mktemp("anybackend")
    rows = [{**dict.fromkeys(record_features()), **r} for r in GOLD]
    data = write_dataset(tmp / "ds", {"selected": rows, "backup": rows[::3]}, DEFAULT_WEIGHTS, synthetic=True)
    freeze(Evidence(), [r["bibcode"] for r in GOLD], data / EVIDENCE_DIR, source="a test stand-in", workers=2)
    return data


# Chat templates as Hugging Face tokenizers carry them (rendered with jinja2 as transformers does): one with tool
# roles in the style of Qwen2.5's, one that allows only alternating user/assistant turns, one that drops tool turns.
_TOOL = (
    "{% for m in messages %}<|{{ m.role }}|>{% if m.tool_calls %}{% for c in m.tool_calls %}<tool_call>"
    "{{ {'name': c.function.name, 'arguments': c.function.arguments} | tojson }}</tool_call>{% endfor %}"
    "{% elif m.role == 'tool' %}<tool_response>{{ m.content }}</tool_response>{% else %}{{ m.content }}{% endif %}"
    "<|end|>{% endfor %}{% if add_generation_prompt %}<|assistant|>{% endif %}")
_STRICT = (
    "{% for m in messages %}{% if m.role not in ['system', 'user', 'assistant'] %}"
    "{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}"
    "<{{ m.role }}>{{ m.content }}{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}")
_DROPPING = (
    "{% for m in messages %}{% if m.role in ['system', 'user'] %}<{{ m.role }}>{{ m.content }}{% endif %}"
    "{% endfor %}{% if add_generation_prompt %}<assistant>{% endif %}")




@pytest.fixture(scope="session")
def chat_templates():
    """Jinja chat templates: ``tools`` (tool roles), ``strict`` (raises on them), ``dropping`` (leaves them out)."""
    return {"tools": _TOOL, "strict": _STRICT, "dropping": _DROPPING}
