"""The one generation call of every Inspect task here: a provider that still fails after Inspect's retries costs
the sample its answer (a counted failure), not the whole run."""

from __future__ import annotations

from inspect_ai.model import ChatMessage, Model, ModelOutput
from inspect_ai.tool import Tool, ToolDef

from scitaste_hf.errors import first_line
from scitaste_hf.schema import failure_text


async def generate_or_fail(model: Model, messages: list[ChatMessage], tools: list[Tool | ToolDef]) -> ModelOutput:
    """The model's reply, or a reply that carries an ``api_error`` failure (:func:`scitaste_hf.schema.failure_text`,
    which no answer parser reads as an answer)."""
    try:
        return await model.generate(messages, tools=tools)
    except Exception as exc:  # whatever the provider's client raises
        return ModelOutput.from_content(model.name, failure_text("api_error", first_line(exc)))
