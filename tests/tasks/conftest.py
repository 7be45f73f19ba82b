"""Shared by the task tests: the stand-in of the services whose answers the run's ``evidence_dataset``
(tests/conftest.py) froze, and chat templates as tokenizers carry them."""

import pytest
from stock_samples import Evidence


@pytest.fixture(scope="session")
def stand_in_evidence():
    """The stand-in of the services whose answers ``evidence_dataset`` froze."""
    return Evidence()


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
