"""``propose``: an agent reads a seed paper and registers five MVEs, then forecasts and ranks them.

The single-researcher organisation, in one context (docs/rtaste-protocol.md#propose): the agent writes its
understanding of the paper and the directions it opens; searches the literature with an ``arxiv_search`` tool
(the package's arXiv client, so the offline mirror serves it in tests); registers exactly five MVEs in the
release schema (:class:`~scitaste_hf.rtaste.schema.MVERegistration`); then gives each a probability and a rank.
A reply that does not validate is asked for once more with the reason; a second invalid reply makes the
condition ``failed`` with that reason. Nothing is ever repaired: a sixth registration is not dropped, a
probability of 1.7 is not clipped. Every call's tokens are recorded, and the condition's cost is priced from them.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from scitaste_hf.agent.chat import ChatClient, ChatError, Reply
from scitaste_hf.errors import InvalidInput, first_line
from scitaste_hf.rtaste.release import _validation_message  # the release's one-line wording of a schema error
from scitaste_hf.rtaste.schema import N_MVES, Condition, MVERegistration
from scitaste_hf.rtaste_protocol.seal import seals
from scitaste_hf.rtaste_protocol.study import Study, condition_id, write
from scitaste_hf.scoring.answers import last_json_object

ORGANISATION = "single_researcher"
#: Searches the single researcher may make; past them the tool is no longer offered.
MAX_SEARCHES = 4
#: Results one search returns to the agent.
SEARCH_RESULTS = 5
#: Characters of the seed paper's full text the agent is given.
FULL_TEXT_CHARS = 30_000

SYSTEM = ("You are a research scientist. You read a new paper and propose minimal viable experiments (MVEs): small, "
          "cheap experiments that follow up the paper, each of which registers, before it runs, an event that its "
          "evaluation will decide.")
UNDERSTAND = ("First write your understanding of the paper and the research directions it opens, in prose (no JSON "
              "yet).")
SEARCH = (f"Now search the literature for the work nearest to your directions with the arxiv_search tool (at most "
          f"{MAX_SEARCHES} searches), then say in prose which works are nearest.")
_EVENT_SHAPE = ('"event": {"statistic": TEXT, "relation": "greater" | "less" | "in_interval", '
                '"threshold": NUMBER or [LOW, HIGH] for in_interval, "unit": TEXT}')
REGISTER = (f"Register exactly {N_MVES} MVEs. Reply with one JSON object: {{\"registrations\": [{N_MVES} objects, "
            "each with the keys \"hypothesis\", \"nearest_prior_work\", \"inputs\", \"method\", "
            f"{_EVENT_SHAPE}, \"evaluation_plan\", \"resources\", \"follow_up\" (the larger study it would "
            "justify)]}. The event's statistic is the one number the evaluation prints.")
FORECAST = (f"For each of the {N_MVES} MVEs, in the order you wrote them, give the probability (0 to 1) that its "
            f"registered event occurs, and rank them 1-{N_MVES} by which you would run first (1 = first choice, "
            'each rank once). Reply with one JSON object: {"probabilities": [p1, ..., p5], "ranks": [r1, ..., r5]}.')
AGAIN = "Your reply was not valid: {reason}. Reply again, with the JSON object only."

ARXIV_TOOL = {"type": "function", "function": {
    "name": "arxiv_search",
    "description": f"Search arXiv; returns the {SEARCH_RESULTS} best matches (id, title, summary). The query is "
                   "arXiv's syntax, e.g. 'all:graph AND ti:transformer'.",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"],
                   "additionalProperties": False}}}


@dataclass(frozen=True)
class Prices:
    """US dollars per million prompt and completion tokens (0: the cost is reported as 0)."""

    prompt: float = 0.0
    completion: float = 0.0

    def cost(self, calls: list[dict[str, Any]]) -> float:
        """The cost of ``calls`` (each with ``prompt_tokens`` and ``completion_tokens``)."""
        return (sum(c["prompt_tokens"] for c in calls) * self.prompt
                + sum(c["completion_tokens"] for c in calls) * self.completion) / 1e6


def ask(client: ChatClient, messages: list[dict[str, Any]], turn: str, calls: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None) -> Reply:
    """One chat call, its tokens and latency appended to ``calls``, its reply to ``messages``."""
    reply = client.chat(messages, tools=tools)
    usage = reply.usage
    calls.append({"turn": turn, "model": client.model, "prompt_tokens": int(usage.get("prompt_tokens") or 0),
                  "completion_tokens": int(usage.get("completion_tokens") or 0), "latency_s": round(reply.latency, 3)})
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [{"id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": c["arguments"]}}
                                 for c in reply.tool_calls]
    messages.append(message)
    return reply


def ask_valid(client: ChatClient, messages: list[dict[str, Any]], turn: str, calls: list[dict[str, Any]],
              check: Callable[[str], Any]) -> Any:
    """``check(reply)`` of the reply to the last message; an invalid reply (``check`` raises ``InvalidInput``)
    is asked for once more with the reason, and a second invalid one raises its reason."""
    for attempt in range(2):
        reply = ask(client, messages, turn, calls)
        try:
            return check(reply.content)
        except InvalidInput as exc:
            if attempt:
                raise
            messages.append({"role": "user", "content": AGAIN.format(reason=exc)})
    raise AssertionError("unreachable")


def seed_summary(paper: dict[str, str]) -> str:
    """What a judge sees of the seed paper: its title and abstract."""
    return f"{paper['title'].strip()}. {paper['abstract'].strip()}"


def _seed_block(paper: dict[str, str]) -> str:
    text = (paper.get("full_text") or "").strip()
    block = f"Seed paper\nTitle: {paper['title'].strip()}\nAbstract: {paper['abstract'].strip()}"
    if text:
        block += f"\nFull text:\n{text[:FULL_TEXT_CHARS]}" + (" ..." if len(text) > FULL_TEXT_CHARS else "")
    return block


def _json(text: str, key: str) -> Any:
    obj, any_json = last_json_object(text or "", lambda o: key in o)
    if obj is None:
        raise InvalidInput(f"the reply holds no JSON object with {key!r}" if any_json else "the reply is not JSON")
    return obj[key]


def parse_registrations(text: str) -> tuple[MVERegistration, ...]:
    """Exactly five registrations of a reply, each valid, or ``InvalidInput`` saying what is wrong."""
    found = _json(text, "registrations")
    if not isinstance(found, list):
        raise InvalidInput("'registrations' is not a list")
    if len(found) != N_MVES:
        raise InvalidInput(f"exactly {N_MVES} registrations are needed, got {len(found)}")
    registrations = []
    for number, item in enumerate(found, start=1):
        try:
            registrations.append(MVERegistration.model_validate(item))
        except ValidationError as exc:
            raise InvalidInput(f"registration {number}: {_validation_message(exc)}") from None
    return tuple(registrations)


def forecast_checker(cid: str, model: str, seed: str,
                     registrations: tuple[MVERegistration, ...]) -> Callable[[str], Condition]:
    """The check of the forecast reply: the :class:`Condition` it completes (probabilities 0-1, ranks a
    permutation), cost 0 until priced."""
    def check(text: str) -> Condition:
        probabilities, ranks = _json(text, "probabilities"), _json(text, "ranks")
        try:
            return Condition(condition_id=cid, model=model, organisation=ORGANISATION, seed_paper=seed,
                             registrations=registrations, probabilities=probabilities, ranks=ranks, cost_usd=0.0)
        except ValidationError as exc:
            raise InvalidInput(_validation_message(exc)) from None
    return check


def _search_tool(arxiv: Any) -> Callable[[str], dict[str, Any]]:
    def search(arguments: str) -> dict[str, Any]:
        try:
            query = json.loads(arguments or "{}").get("query")
        except (ValueError, AttributeError):
            query = None
        if not isinstance(query, str) or not query.strip():
            return {"error": "arxiv_search needs {\"query\": TEXT}"}
        try:
            entries = list(arxiv.search(query, page_size=SEARCH_RESULTS, limit=SEARCH_RESULTS))
        except Exception as exc:  # the tool's failure is the agent's evidence, not the run's end
            return {"error": first_line(exc)}
        return {"query": query, "results": [{"id": e.id, "title": e.title, "summary": e.summary[:400]}
                                            for e in entries]}
    return search


def propose_one(client: ChatClient, seed: str, paper: dict[str, str], *, arxiv: Any = None,
                prices: Prices = Prices()) -> dict[str, Any]:
    """One single-researcher condition on one seed paper: the proposal record that ``propose`` writes.

    Parameters
    ----------
    client : ChatClient
        The agent's model.
    seed : str
        The seed paper's id.
    paper : dict
        ``title``, ``abstract`` and, optionally, ``full_text``.
    arxiv : ArxivClient, optional
        The literature tool's client; without one the search turn is skipped (and recorded as skipped).
    prices : Prices
        For the condition's ``cost_usd``.
    """
    cid = condition_id(seed, client.model, ORGANISATION)
    calls: list[dict[str, Any]] = []
    searches: list[dict[str, Any]] = []
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"{_seed_block(paper)}\n\n{UNDERSTAND}"}]
    base = {"condition_id": cid, "seed_paper": seed, "model": client.model, "organisation": ORGANISATION}
    stage = "understanding"
    try:
        ask(client, messages, stage, calls)
        stage = "literature"
        if arxiv is not None:
            tool = _search_tool(arxiv)
            messages.append({"role": "user", "content": SEARCH})
            reply = ask(client, messages, stage, calls, tools=[ARXIV_TOOL])
            while reply.tool_calls:
                for call in reply.tool_calls:
                    result = (tool(call["arguments"]) if call["name"] == "arxiv_search" and len(searches) < MAX_SEARCHES
                              else {"error": f"no such tool, or more than {MAX_SEARCHES} searches"})
                    searches.append({"arguments": call["arguments"], "result": result})
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
                more = len(searches) < MAX_SEARCHES
                reply = ask(client, messages, stage, calls, tools=[ARXIV_TOOL] if more else None)
        stage = "registrations"
        messages.append({"role": "user", "content": REGISTER})
        registrations = ask_valid(client, messages, stage, calls, parse_registrations)
        stage = "forecast"
        messages.append({"role": "user", "content": FORECAST})
        condition = ask_valid(client, messages, stage, calls,
                              forecast_checker(cid, client.model, seed, registrations))
    except (InvalidInput, ChatError) as exc:
        reason = f"{exc.reason}: {exc}" if isinstance(exc, ChatError) else str(exc)
        return {**base, "status": "failed", "stage": stage, "reason": reason, "calls": calls,
                "searches": searches, "messages": messages, "cost_usd": prices.cost(calls)}
    condition = condition.model_copy(update={"cost_usd": prices.cost(calls)})
    return {**base, "status": "ok", "condition": condition.model_dump(mode="json"), "seed_summary": seed_summary(paper),
            "calls": calls, "searches": searches, "messages": messages, "cost_usd": condition.cost_usd}


def propose(study: Study, client: ChatClient, *, arxiv: Any = None, prices: Prices = Prices(),
            force: bool = False) -> dict[str, int]:
    """Propose a single-researcher condition for every seed paper of the study, writing
    ``conditions/CONDITION.json``; a condition already proposed (or failed) is kept unless ``force``, and a sealed
    one is never replaced, ``force`` or not.

    Returns
    -------
    dict
        ``ok``, ``failed``, ``skipped`` and ``sealed`` (kept because sealed) counts.
    """
    counts = {"ok": 0, "failed": 0, "skipped": 0, "sealed": 0}
    sealed = seals(study)
    for seed, paper in study.seeds().items():
        cid = condition_id(seed, client.model, ORGANISATION)
        path = study.condition_path(cid)
        if cid in sealed:
            counts["sealed"] += 1
            continue
        if path.exists() and not force:
            counts["skipped"] += 1
            continue
        record = propose_one(client, seed, paper, arxiv=arxiv, prices=prices)
        write(path, record)
        counts[record["status"]] += 1
    return counts
