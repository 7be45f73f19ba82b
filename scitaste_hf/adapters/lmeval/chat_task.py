"""The lm-eval task class of the scitaste modes (``class:`` in the task YAMLs): a ``ConfigurableTask`` that
supplies its metrics itself, and that, under ``--apply_chat_template``, renders a tool mode's fixed round 1 as chat
messages with tool roles where the model's chat template is seen to render them, and as text
(:func:`scitaste_hf.adapters.lmeval.tasks.doc_to_text`) where it is not.

The metrics are those of :func:`scitaste_hf.adapters.lmeval.tasks.aggregations` for the disciplines of the task's
documents: lm-eval aggregates every key that ``process_results`` returns with ``Task.aggregation()[key]``, and
reports ``Task.higher_is_better()``, so a YAML ``metric_list`` (a fixed list) would only repeat them, and would
leave out a custom taxonomy's disciplines.

Which rendering a document gets follows its ``evidence_as`` (``--metadata '{"evidence_as": ...}'``):

- ``auto`` (default): messages when the model's own chat template (``hf``, ``vllm``) renders every tool result;
  text for an API model (``local-chat-completions``), whose template lives on the server where it cannot be seen;
- ``messages``: always messages (an API model then gets them as OpenAI tool messages); a local template that
  drops them stops the run with one line;
- ``text``: always text.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable, Mapping
from typing import Any

from lm_eval.api.task import ConfigurableTask

from scitaste_hf.adapters.lmeval import tasks
from scitaste_hf.errors import TaskUnavailable
from scitaste_hf.modes import MODE_SPECS
from scitaste_hf.taxonomy import discipline_order

#: lm-eval's hint, logged for every task with a custom dataset, that such a task takes keys through --metadata.
METADATA_HINT = "Custom kwargs can be passed to `--metadata`"


class ScitasteTask(ConfigurableTask):
    """A scitaste mode task; everything but its metrics and the rendering of a fixed round 1 is lm-eval's own."""

    #: The disciplines of the task's documents, in reporting order (set when they are loaded).
    disciplines: tuple[str, ...] = ()

    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        # lm-eval hands the YAML's `class` key to the class it names; TaskConfig has no such field
        super().__init__(config={k: v for k, v in (config or {}).items() if k != "class"}, **kwargs)

    def download(self, dataset_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """lm-eval's download; its :data:`METADATA_HINT` is left out when ``--metadata`` (or ``--model_args``,
        which lm-eval merges into it) gave the task keys, since the run already passes them."""
        given = set(getattr(self.config, "metadata", None) or {}) - {"version"}
        logger = logging.getLogger("lm_eval.api.task")
        hint = _Without(METADATA_HINT)
        if given:
            logger.addFilter(hint)
        try:
            super().download(dataset_kwargs, **kwargs)
        finally:
            logger.removeFilter(hint)
        self.disciplines = tuple(discipline_order(d for d in self.dataset["test"]["discipline"] if d))

    def aggregation(self) -> dict[str, Callable[..., float]]:
        """The aggregation of each metric (:func:`~scitaste_hf.adapters.lmeval.tasks.aggregations`): the overall
        ones, then Scheme 2 of every discipline of the documents."""
        return tasks.aggregations(self.disciplines)

    def higher_is_better(self) -> dict[str, bool]:
        """Whether a higher value is better, for each metric of :meth:`aggregation`."""
        return tasks.higher_is_better(self.disciplines)

    def fewshot_context(self, doc, num_fewshot, **kwargs):
        """lm-eval's context, or the fixed round 1 rendered by the model's chat template as tool messages.

        Raises
        ------
        TaskUnavailable
            For ``--num_fewshot`` above 0: the benchmark is zero-shot, and its only other split's papers would
            come with their gold labels.
        """
        if num_fewshot:
            raise TaskUnavailable(f"{self.config.task} is zero-shot: examples would be other papers with their gold "
                                  "labels; drop --num_fewshot")
        template = kwargs.get("chat_template")
        if kwargs.get("apply_chat_template") and template is not None and doc.get("evidence_as") != "text":
            rendered = _as_messages(doc, template, kwargs.get("system_instruction"))
            if rendered is not None:
                return rendered
        return super().fewshot_context(doc, num_fewshot=num_fewshot, **kwargs)

    def construct_requests(self, doc, ctx, **kwargs):
        """lm-eval's request; in a mode only scitaste's models run, the mode joins its generation arguments, and in
        a search mode under another model, the web-search switch of the document's ``search`` profile does
        (``local-chat-completions`` sends generation arguments as fields of the request's body).

        lm-eval keys its ``--use_cache`` store by a request's arguments alone, and these modes share their prompt
        with another mode (``native_search`` and ``dimagent_v3_live`` with ``pure_qa``, ``dimagent_v3_native``
        with ``dimagent_v3``): without the mode (or the switch), one mode's cached answers would be replayed for
        another. So does the withheld tool, where there is one: the live loop's first prompt does not show it.
        """
        from scitaste_hf.agent.chat import PROFILES

        models = sys.modules.get("scitaste_hf.adapters.lmeval.models")  # registered if one of them runs

        request = super().construct_requests(doc, ctx, **kwargs)
        mode = doc.get("scitaste_mode") or "pure_qa"
        spec = MODE_SPECS[mode]
        if spec.search or spec.tools == "live":
            context, gen_kwargs, *rest = request.arguments
            switch = spec.search and doc.get("search") and not (models is not None and models.can_run(mode))
            withheld = {"scitaste_withheld": doc["withheld"]} if doc.get("withheld") and not switch else {}
            request.arguments = (context, {**gen_kwargs, **(PROFILES[doc["search"]].search if switch else
                                                            {"scitaste_mode": mode}), **withheld}, *rest)
        return request


def _as_messages(doc: Mapping[str, Any], template: Callable[..., Any], system_instruction: str | None):
    """The chat template's rendering of the fixed round as tool messages, or None where text is the rendering."""
    forced = doc.get("evidence_as") == "messages"
    messages = tasks.doc_to_messages(doc)
    if messages is None:
        return None
    if system_instruction:
        messages[0] = {**messages[0], "content": f"{system_instruction}\n\n{messages[0]['content']}"}
    try:
        rendered = template(messages)
        if not isinstance(rendered, str):  # an API model's JSON chat: the server applies the template
            return rendered if forced else None
        # A local template (Hugging Face convention: arguments as objects): kept if every result shows in it.
        objects = _with_object_arguments(messages)
        rendered = template(objects)
    except Exception as exc:  # a template without tool roles raises (e.g. "roles must alternate")
        if forced:
            raise TaskUnavailable(f"this model's chat template cannot render tool messages ({exc}); run with "
                                  "--metadata '{\"evidence_as\": \"text\"}'") from None
        return None
    results = [m["content"] for m in objects if m["role"] == "tool"]
    if all(r in rendered or json.dumps(r)[1:-1] in rendered for r in results):
        return rendered
    if forced:
        raise TaskUnavailable("this model's chat template drops tool calls or results; run with --metadata "
                              "'{\"evidence_as\": \"text\"}'")
    return None


def _with_object_arguments(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with each tool call's arguments as a mapping, as Hugging Face chat templates expect them
    (OpenAI-compatible endpoints take the JSON string)."""
    def with_objects(call: dict[str, Any]) -> dict[str, Any]:
        return {**call, "function": {**call["function"], "arguments": json.loads(call["function"]["arguments"])}}

    return [{**m, "tool_calls": [with_objects(c) for c in m["tool_calls"]]} if m.get("tool_calls") else m
            for m in messages]


class _Without(logging.Filter):
    """Drops the log records whose message holds ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()
