"""The DimAgent-v3 loop (docs/evaluation.md#agent-protocol). Round 1 gathers the nine tools' evidence for the
paper; round 2 asks for the JSON answer (docs/answers.md#answer-format). In the paper's tool modes the harness makes
round 1 itself (all nine calls, answered from frozen evidence) and the model answers round 2; in
``dimagent_v3_live`` the model is offered the tools and every call it makes is run, concurrently. Tool-free modes
are a single turn.

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
from scitaste_hf.agent.tools import TOOL_NAMES, TOOL_SCHEMAS
from scitaste_hf.modes import MODE_SPECS
from scitaste_hf.prompts import ANSWER_INSTRUCTION, paper_prompt

ROLE = "You are a senior academic reviewer assessing the innovativeness of scientific papers."
REVIEWER = (f"{ROLE} You have nine bibliometric tools. Run all nine for the paper, analyse the evidence, score each "
            "of the seven dimensions from 0 to 100 and compute the weighted composite innovation score.")
ROUND_ONE = "Call the tools for this paper now (all nine, with its Identifier as bibcode)."
ROUND_TWO = "You have the tools' evidence. " + ANSWER_INSTRUCTION
#: Heads the tools' results where round 1 is rendered as text, for a model whose chat template has no tool roles.
EVIDENCE_HEADER = "The nine bibliometric tools were run for this paper. Their raw evidence, one result per tool:"
#: Modes with tools, and the modes that switch the provider's own search on.
TOOL_MODES = tuple(m for m, spec in MODE_SPECS.items() if spec.tools != "none")
SEARCH_MODES = tuple(m for m, spec in MODE_SPECS.items() if spec.search)
#: Most tool calls executed for one paper (a model that keeps calling is cut off here).
MAX_CALLS = 18

@dataclass
class Outcome:
    """The result of one paper: the final reply text, or a failure reason; and its trace."""

    text: str
    failure: str | None = None
    trace: dict[str, Any] = field(default_factory=dict)


def run_item(chat: Callable[..., Reply], tools: Any, record: Mapping[str, Any], mode: str, *,
             workers: int = 9, time_budget: float | None = None, evidence_as_text: bool = False) -> Outcome:
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
        One of :data:`~scitaste_hf.modes.MODES`.
    workers : int
        Tool calls executed concurrently.
    time_budget : float, optional
        Seconds the whole paper may take, every round and retry included; past it the paper is a ``timeout``
        failure.
    evidence_as_text : bool
        Send a round 1 made by the harness as one text prompt (:func:`evidence_text`) instead of tool messages,
        for an endpoint whose chat template has no tool roles.
    """
    if mode not in MODE_SPECS:
        return Outcome("", "other", {"error": f"unknown mode {mode!r}"})
    trace: dict[str, Any] = {"bibcode": record["bibcode"], "mode": mode, "calls": [], "usage": [], "latency": 0.0}
    spec = MODE_SPECS[mode]
    started = time.perf_counter()
    deadline = None if time_budget is None else time.monotonic() + time_budget
    try:
        if spec.tools == "none":
            messages = [{"role": "user", "content": paper_prompt(record)}]
        elif spec.tools == "fixed":
            calls, results = fixed_round(record, tools)
            messages = ([{"role": "user", "content": evidence_text(record, calls, results)}] if evidence_as_text else
                        [*opening(record), *tool_turn(calls, results), {"role": "user", "content": ROUND_TWO}])
            _trace_calls(trace, calls, results)
        else:
            messages = list(opening(record))
            first = chat(messages, tools=TOOL_SCHEMAS, search=spec.search, deadline=deadline)
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
                messages += tool_turn(calls, results)
                _trace_calls(trace, calls, results)
            messages.append({"role": "user", "content": ROUND_TWO})
        # no tools offered: this round must answer
        reply = chat(messages, search=spec.search, deadline=deadline)
        trace["usage"].append(reply.usage)
        if reply.tool_calls and not reply.content:
            return _done(Outcome("", "other", {**trace, "error": "the model kept calling tools in round 2"}),
                         messages, reply, started)
        return _done(Outcome(reply.content, None, trace), messages, reply, started)
    except ChatError as exc:
        trace["error"] = str(exc)
        trace["latency"] = round(time.perf_counter() - started, 3)
        return Outcome("", exc.reason, trace)


def opening(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The system and user messages that open a tool mode's conversation (round 1's request)."""
    return [{"role": "system", "content": REVIEWER},
            {"role": "user", "content": f"{_paper_block(record)}\n\n{ROUND_ONE}"}]


def fixed_round(record: Mapping[str, Any], tools: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Round 1 as the harness makes it: one call of each of the nine tools with the paper's bibcode, and their
    results from ``tools`` (frozen evidence). Returns ``(calls, results)``; each call is
    ``{"id", "name", "arguments"}`` with the arguments as a JSON string, as a model's call would carry them."""
    arguments = json.dumps({"bibcode": record["bibcode"]})
    calls = [{"id": f"call_{k}", "name": name, "arguments": arguments} for k, name in enumerate(TOOL_NAMES)]
    return calls, [tools.call(c["name"], c["arguments"]) for c in calls]


def tool_turn(calls: list[dict[str, Any]], results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Round 1 as chat messages: the assistant's tool calls, then one ``tool`` message per result."""
    return [{"role": "assistant", "content": "", "tool_calls": [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for c in calls]},
        *({"role": "tool", "tool_call_id": c["id"], "content": json.dumps(r)} for c, r in zip(calls, results))]


def evidence_text(record: Mapping[str, Any], calls: list[dict[str, Any]], results: list[dict[str, Any]]) -> str:
    """The fixed round and the request for the answer as one prompt, for a model whose chat template has no tool
    roles (or no chat template): the same paper, the same results as :func:`tool_turn`'s, the same instruction."""
    blocks = "\n\n".join(f"{c['name']}({c['arguments']}):\n{json.dumps(r)}" for c, r in zip(calls, results))
    return f"{ROLE}\n\n{_paper_block(record)}\n\n{EVIDENCE_HEADER}\n\n{blocks}\n\n{ROUND_TWO}"


def _trace_calls(trace: dict[str, Any], calls: list[dict[str, Any]], results: list[dict[str, Any]]) -> None:
    trace["calls"] += [{"name": c["name"], "arguments": c["arguments"], "error": r.get("error")}
                       for c, r in zip(calls, results)]


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
