"""The DimAgent-v3 loop: round 1 offers the nine tools and runs every call the model makes, concurrently;
round 2 asks for the JSON answer of DESIGN.md section 9. Tool-free modes are a single turn.

Every path ends in a reply text or a counted failure, never an exception that stops a run, and every item
leaves a trace (messages, tool calls and results, latency, token usage).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from scitaste_hf.agent.chat import ChatError, Reply
from scitaste_hf.agent.tools import TOOL_SCHEMAS
from scitaste_hf.prompts import ANSWER_INSTRUCTION, paper_prompt
from scitaste_hf.schema import MODES

REVIEWER = ("You are a senior academic reviewer assessing the innovativeness of scientific papers. You have nine "
            "bibliometric tools. Run all nine for the paper, analyse the evidence, score each of the seven dimensions "
            "from 0 to 100 and compute the weighted composite innovation score.")
ROUND_ONE = "Call the tools for this paper now (all nine, with its Identifier as bibcode)."
ROUND_TWO = "You have the tools' evidence. " + ANSWER_INSTRUCTION
#: Tool modes and the modes that switch the provider's own search on.
TOOL_MODES = ("dimagent_v3", "dimagent_v3_native")
SEARCH_MODES = ("native_search", "dimagent_v3_native")
#: Most tool calls executed for one paper (a model that keeps calling is cut off here).
MAX_CALLS = 18
#: How a failed item reaches lm-eval's ``process_results``: the reply text starts with this, then the reason.
FAILURE_PREFIX = "[scitaste failure: "
#: Failures of the endpoint rather than of the model's answer: asking again later may succeed.
TRANSIENT_FAILURES = ("api_error", "timeout")


def failure_text(reason: str, detail: str = "") -> str:
    """The reply text that carries a failure and its reason through lm-eval to ``process_results``."""
    return f"{FAILURE_PREFIX}{reason}] {detail}".strip()


def failure_of(text: str) -> str | None:
    """The reason carried by :func:`failure_text`, or None for an ordinary reply."""
    if not text.startswith(FAILURE_PREFIX):
        return None
    return text[len(FAILURE_PREFIX):].split("]", 1)[0]


@dataclass
class Outcome:
    """The result of one paper: the final reply text, or a failure reason; and its trace."""

    text: str
    failure: str | None = None
    trace: dict[str, Any] = field(default_factory=dict)


def run_item(chat: Callable[..., Reply], tools: Any, record: Mapping[str, Any], mode: str, *,
             workers: int = 9, time_budget: float | None = None) -> Outcome:
    """Run one paper through the loop of ``mode``.

    Parameters
    ----------
    chat : callable
        ``chat(messages, tools=None, search=False, deadline=None) -> Reply`` (a
        :class:`~scitaste_hf.agent.chat.ChatClient`'s ``chat`` or a stand-in such as the baseline).
    tools : object with ``call(name, arguments) -> dict``
        Live :class:`~scitaste_hf.agent.tools.ToolBox` or frozen evidence; unused in tool-free modes.
    record : mapping
        The benchmark record (``bibcode``, ``discipline``, ``title``, ``abstract``).
    mode : str
        One of :data:`~scitaste_hf.schema.MODES`.
    workers : int
        Tool calls executed concurrently.
    time_budget : float, optional
        Seconds the whole paper may take, every round and retry included; past it the paper is a ``timeout``
        failure.
    """
    if mode not in MODES:
        return Outcome("", "other", {"error": f"unknown mode {mode!r}"})
    trace: dict[str, Any] = {"bibcode": record["bibcode"], "mode": mode, "calls": [], "usage": [], "latency": 0.0}
    search = mode in SEARCH_MODES
    started = time.perf_counter()
    deadline = None if time_budget is None else time.monotonic() + time_budget
    try:
        if mode not in TOOL_MODES:
            messages = [{"role": "user", "content": paper_prompt(record)}]
            reply = chat(messages, search=search, deadline=deadline)
            trace["usage"].append(reply.usage)
            return _done(Outcome(reply.content, None, trace), messages, reply, started)
        messages = [{"role": "system", "content": REVIEWER},
                    {"role": "user", "content": f"{_paper_block(record)}\n\n{ROUND_ONE}"}]
        first = chat(messages, tools=TOOL_SCHEMAS, search=search, deadline=deadline)
        trace["usage"].append(first.usage)
        if not first.tool_calls:
            trace["no_tool_calls"] = True
            if _has_answer(first.content):  # answered in round 1: keep it, record that it used no tools
                return _done(Outcome(first.content, None, trace), messages, first, started)
            messages.append({"role": "assistant", "content": first.content})
        else:
            calls = first.tool_calls[:MAX_CALLS]
            trace["calls_cut"] = len(first.tool_calls) - len(calls)
            with ThreadPoolExecutor(max_workers=workers) as pool:
                results = list(pool.map(lambda c: tools.call(c["name"], c["arguments"]), calls))
            messages.append({"role": "assistant", "content": "", "tool_calls": [
                {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
                for c in calls]})
            for call, result in zip(calls, results):
                trace["calls"].append({"name": call["name"], "arguments": call["arguments"],
                                       "error": result.get("error")})
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
        messages.append({"role": "user", "content": ROUND_TWO})
        second = chat(messages, search=search, deadline=deadline)  # no tools offered: round 2 must answer
        trace["usage"].append(second.usage)
        if second.tool_calls and not second.content:
            return _done(Outcome("", "other", {**trace, "error": "the model kept calling tools in round 2"}),
                         messages, second, started)
        return _done(Outcome(second.content, None, trace), messages, second, started)
    except ChatError as exc:
        trace["error"] = str(exc)
        trace["latency"] = round(time.perf_counter() - started, 3)
        return Outcome("", exc.reason, trace)


def _paper_block(record: Mapping[str, Any]) -> str:
    return paper_prompt(record).split("\n\n" + ANSWER_INSTRUCTION)[0]


def _has_answer(text: str) -> bool:
    from scitaste_hf.schema import Answer
    from scitaste_hf.scoring import parse_answer

    return isinstance(parse_answer(text), Answer)


def _done(outcome: Outcome, messages: list[dict[str, Any]], reply: Reply, started: float) -> Outcome:
    outcome.trace["messages"] = [*messages, {"role": "assistant", "content": reply.content}]
    outcome.trace["latency"] = round(time.perf_counter() - started, 3)
    return outcome
