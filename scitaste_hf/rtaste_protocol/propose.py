"""``propose``: an agent reads a seed paper and registers five MVEs, then forecasts and ranks them.

Two organisations (docs/rtaste-protocol.md#propose). The single researcher works in one context: it writes its
understanding of the paper and the directions it opens; searches the literature with an ``arxiv_search`` tool
(the package's arXiv client, so the offline mirror serves it in tests); registers exactly five MVEs in the
release schema (:class:`~scitaste_hf.rtaste.schema.MVERegistration`); then gives each a probability and a rank.
The research team has two proposers who each do the same up to their registrations, independently; a critic
without tools who reviews both drafts; and a lead without tools who keeps, changes or merges them down to five
and then, in its context, forecasts and ranks them. Every role is played by the same model.

A reply that does not validate is asked for once more with the reason; a second invalid reply makes the condition
``failed`` with that reason. Nothing is ever repaired: a sixth registration is not dropped, a probability of 1.7 is
not clipped. Every call's tokens are recorded, and the condition's cost is priced from them.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from scitaste_hf.agent.chat import ChatClient, ChatError, Reply
from scitaste_hf.errors import InvalidInput, first_line
from scitaste_hf.rtaste.release import validation_message
from scitaste_hf.rtaste.schema import N_MVES, ORGANISATIONS, Condition, MVERegistration
from scitaste_hf.rtaste_protocol.seal import seals
from scitaste_hf.rtaste_protocol.study import Study, condition_id, read_json, write
from scitaste_hf.schema import TRANSIENT_FAILURES
from scitaste_hf.scoring.answers import last_json_object

#: Searches each researcher (or proposer) may make; past them the tool is no longer offered.
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
# Each proposer is told its place, so that the two contexts differ even at temperature 0 with one model.
PROPOSER = ("You are proposer {n} of two in a research team: the other drafts on its own, and a critic and a lead "
            "will read both drafts.")
CRITIC = ("You are a critic in a research team. You have no tools. Two proposers have each drafted minimal viable "
          "experiments (MVEs) that follow up a new paper.")
CRITIQUE = ("Review both drafts: which MVEs are sound, valuable and new, which are weak and why, and which overlap. "
            "Write prose; do not register anything.")
LEAD = ("You lead a research team. You have no tools. Two proposers have drafted minimal viable experiments (MVEs) "
        "that follow up a new paper, and a critic has reviewed them.")
MERGE = f"Keep, change or merge the drafts' MVEs down to the team's final {N_MVES}. " + REGISTER


def _array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items, "minItems": N_MVES, "maxItems": N_MVES}


def _registrations_schema() -> dict[str, Any]:
    item = MVERegistration.model_json_schema()
    definitions = item.pop("$defs", {})  # at the root, where the item's references point
    return {"type": "object", "properties": {"registrations": _array(item)}, "required": ["registrations"],
            "$defs": definitions}


#: The JSON schemas a constrained endpoint (a profile with ``answer_schema``, llama.cpp's) is held to.
REGISTRATIONS_SCHEMA = _registrations_schema()
PROBABILITIES_SCHEMA = {"type": "object", "properties": {
    "probabilities": _array({"type": "number", "minimum": 0, "maximum": 1})}, "required": ["probabilities"]}
FORECAST_SCHEMA = {"type": "object", "properties": {
    **PROBABILITIES_SCHEMA["properties"], "ranks": _array({"type": "integer", "minimum": 1, "maximum": N_MVES})},
    "required": ["probabilities", "ranks"]}

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

    def __post_init__(self) -> None:
        if not all(math.isfinite(p) and p >= 0 for p in (self.prompt, self.completion)):
            raise InvalidInput("token prices must be finite numbers >= 0")

    def cost(self, calls: list[dict[str, Any]]) -> float:
        """The cost of ``calls`` (each with ``prompt_tokens`` and ``completion_tokens``)."""
        return (sum(c["prompt_tokens"] for c in calls) * self.prompt
                + sum(c["completion_tokens"] for c in calls) * self.completion) / 1e6


def ask(client: ChatClient, messages: list[dict[str, Any]], turn: str, calls: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None, schema: dict[str, Any] | None = None) -> Reply:
    """One chat call, its tokens and latency appended to ``calls``, its reply to ``messages``.

    A profile that constrains replies (``answer_schema``) is held to ``schema`` here, or left free for a prose
    turn, never to SciTaste's answer schema; other endpoints get the instruction only."""
    format_ = None
    if client.profile.answer_schema:
        client = client.with_profile(dataclasses.replace(client.profile, answer_schema=False))
        format_ = {"type": "json_object", "schema": schema} if schema else None
    reply = client.chat(messages, tools=tools, response_format=format_)
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
              check: Callable[[str], Any], schema: dict[str, Any] | None = None) -> Any:
    """``check(reply)`` of the reply to the last message; an invalid reply (``check`` raises ``InvalidInput``)
    is asked for once more with the reason, and a second invalid one raises its reason."""
    for attempt in range(2):
        reply = ask(client, messages, turn, calls, schema=schema)
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


def seed_block(paper: dict[str, str]) -> str:
    """What a proposer or novelty judge reads of the seed paper: its title, abstract and full text (cut at
    ``FULL_TEXT_CHARS``)."""
    text = (paper.get("full_text") or "").strip()
    block = f"Seed paper\nTitle: {paper['title'].strip()}\nAbstract: {paper['abstract'].strip()}"
    if text:
        block += f"\nFull text:\n{text[:FULL_TEXT_CHARS]}" + (" ..." if len(text) > FULL_TEXT_CHARS else "")
    return block


def reply_field(text: str, key: str) -> Any:
    """``key`` of the last JSON object of a model's reply that has it, or ``InvalidInput`` in one line (no such
    object, or no JSON at all)."""
    obj, any_json = last_json_object(text or "", lambda o: key in o)
    if obj is None:
        raise InvalidInput(f"the reply holds no JSON object with {key!r}" if any_json else "the reply is not JSON")
    return obj[key]


def parse_registrations(text: str) -> tuple[MVERegistration, ...]:
    """Exactly five registrations of a reply, each valid, or ``InvalidInput`` saying what is wrong."""
    found = reply_field(text, "registrations")
    if not isinstance(found, list):
        raise InvalidInput("'registrations' is not a list")
    if len(found) != N_MVES:
        raise InvalidInput(f"exactly {N_MVES} registrations are needed, got {len(found)}")
    registrations = []
    for number, item in enumerate(found, start=1):
        try:
            registrations.append(MVERegistration.model_validate(item))
        except ValidationError as exc:
            raise InvalidInput(f"registration {number}: {validation_message(exc)}") from None
    return tuple(registrations)


def forecast_checker(cid: str, model: str, seed: str, organisation: str,
                     registrations: tuple[MVERegistration, ...]) -> Callable[[str], Condition]:
    """The check of the forecast reply: the :class:`Condition` it completes (probabilities 0-1, ranks a
    permutation), cost 0 until priced."""
    def check(text: str) -> Condition:
        probabilities, ranks = reply_field(text, "probabilities"), reply_field(text, "ranks")
        try:
            return Condition(condition_id=cid, model=model, organisation=organisation, seed_paper=seed,
                             registrations=registrations, probabilities=probabilities, ranks=ranks, cost_usd=0.0)
        except ValidationError as exc:
            raise InvalidInput(validation_message(exc)) from None
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


class ConditionRun:
    """One condition's calls, searches, conversations and the stage it is at, for the record either way."""

    def __init__(self, client: ChatClient, arxiv: Any) -> None:
        self.client, self.arxiv = client, arxiv
        self.calls: list[dict[str, Any]] = []
        self.searches: list[dict[str, Any]] = []
        self.conversations: dict[str, list[dict[str, Any]]] = {}
        self.stage = ""

    def open(self, role: str, system: str, text: str) -> list[dict[str, Any]]:
        messages = self.conversations[role] = [{"role": "system", "content": system},
                                               {"role": "user", "content": text}]
        return messages

    def at(self, stage: str) -> str:
        self.stage = stage
        return stage

    def draft(self, role: str, paper: dict[str, str], system: str = SYSTEM) -> tuple[MVERegistration, ...]:
        """A researcher's context: understanding and directions, the literature search, five registrations."""
        messages = self.open(role, system, f"{seed_block(paper)}\n\n{UNDERSTAND}")
        ask(self.client, messages, self.at(f"{role}: understanding"), self.calls)
        if self.arxiv is not None:
            self.search(role, messages)
        messages.append({"role": "user", "content": REGISTER})
        return ask_valid(self.client, messages, self.at(f"{role}: registrations"), self.calls, parse_registrations,
                         schema=REGISTRATIONS_SCHEMA)

    def search(self, role: str, messages: list[dict[str, Any]]) -> None:
        tool, stage = _search_tool(self.arxiv), self.at(f"{role}: literature")
        messages.append({"role": "user", "content": SEARCH})
        reply = ask(self.client, messages, stage, self.calls, tools=[ARXIV_TOOL])
        made = 0
        while reply.tool_calls:
            if made >= MAX_SEARCHES:  # it called again though no tool was offered: its calls go unanswered
                messages[-1].pop("tool_calls")  # and unsent, as an endpoint refuses a call without its result
                break
            for call in reply.tool_calls:
                made += 1
                result = (tool(call["arguments"]) if call["name"] == "arxiv_search" and made <= MAX_SEARCHES
                          else {"error": f"no such tool, or more than {MAX_SEARCHES} searches"})
                self.searches.append({"by": role, "arguments": call["arguments"], "result": result})
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)})
            reply = ask(self.client, messages, stage, self.calls, tools=[ARXIV_TOOL] if made < MAX_SEARCHES else None)

    def forecast(self, messages: list[dict[str, Any]], cid: str, seed: str, organisation: str,
                 registrations: tuple[MVERegistration, ...]) -> Condition:
        messages.append({"role": "user", "content": FORECAST})
        return ask_valid(self.client, messages, self.at("forecast"), self.calls,
                         forecast_checker(cid, self.client.model, seed, organisation, registrations),
                         schema=FORECAST_SCHEMA)


def _drafts_text(drafts: list[tuple[MVERegistration, ...]]) -> str:
    return "\n\n".join(f"Draft {n}:\n" + json.dumps({"registrations": [r.model_dump(mode="json") for r in d]})
                       for n, d in enumerate(drafts, start=1))


def _team(run: ConditionRun, paper: dict[str, str]) -> tuple[list[dict[str, Any]], tuple[MVERegistration, ...]]:
    """The research team: two proposers draft independently, a critic without tools reviews both drafts, and a
    lead without tools keeps, changes or merges them down to five; the lead's context then forecasts."""
    drafts = [run.draft(f"proposer {n}", paper, f"{SYSTEM} {PROPOSER.format(n=n)}") for n in (1, 2)]
    seed_and_drafts = f"{seed_block(paper)}\n\n{_drafts_text(drafts)}"
    critic = run.open("critic", CRITIC, f"{seed_and_drafts}\n\n{CRITIQUE}")
    critique = ask(run.client, critic, run.at("critic"), run.calls).content
    lead = run.open("lead", LEAD, f"{seed_and_drafts}\n\nThe critic's review:\n{critique}\n\n{MERGE}")
    return lead, ask_valid(run.client, lead, run.at("lead: registrations"), run.calls, parse_registrations,
                           schema=REGISTRATIONS_SCHEMA)


def propose_one(client: ChatClient, seed: str, paper: dict[str, str], *, organisation: str = ORGANISATIONS[0],
                arxiv: Any = None, prices: Prices = Prices(), repeat: int = 1) -> dict[str, Any]:
    """One condition on one seed paper: the proposal record that ``propose`` writes.

    Parameters
    ----------
    client : ChatClient
        The agent's model (every role of a research team is played by it, each in a context of its own).
    seed : str
        The seed paper's id.
    paper : dict
        ``title``, ``abstract`` and, optionally, ``full_text``.
    organisation : str
        ``single_researcher`` or ``research_team``.
    arxiv : ArxivClient, optional
        The literature tool's client; without one the search turns are skipped.
    prices : Prices
        For the condition's ``cost_usd``.
    repeat : int
        Which run of this seed paper, model and organisation it is (1 for the first; see ``propose``'s ``repeats``).
    """
    if organisation not in ORGANISATIONS:
        raise InvalidInput(f"unknown organisation {organisation!r}; use one of {', '.join(ORGANISATIONS)}")
    cid = condition_id(seed, client.model, organisation, repeat)
    run = ConditionRun(client, arxiv)
    base = {"condition_id": cid, "seed_paper": seed, "model": client.model, "organisation": organisation}
    try:
        if organisation == "research_team":
            messages, registrations = _team(run, paper)
        else:
            registrations = run.draft("researcher", paper)
            messages = run.conversations["researcher"]
        condition = run.forecast(messages, cid, seed, organisation, registrations)
    except (InvalidInput, ChatError) as exc:
        reason = f"{exc.reason}: {exc}" if isinstance(exc, ChatError) else str(exc)
        # the endpoint's failure, not the model's reply: asked again when the stage is resumed
        transient = isinstance(exc, ChatError) and exc.reason in TRANSIENT_FAILURES
        return {**base, "status": "failed", "stage": run.stage, "reason": reason, "transient": transient,
                "calls": run.calls,
                "searches": run.searches, "messages": run.conversations, "cost_usd": prices.cost(run.calls)}
    condition = condition.model_copy(update={"cost_usd": prices.cost(run.calls)})
    return {**base, "status": "ok", "condition": condition.model_dump(mode="json"), "seed_summary": seed_summary(paper),
            "calls": run.calls, "searches": run.searches, "messages": run.conversations,
            "cost_usd": condition.cost_usd}


def check_repeats(repeats: int) -> None:
    """Refuse a number of repeat runs that is not a whole number >= 1, in one line."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise InvalidInput(f"repeats must be a whole number >= 1, got {repeats!r}")


def propose(study: Study, client: ChatClient, *, organisation: str = ORGANISATIONS[0], arxiv: Any = None,
            prices: Prices = Prices(), force: bool = False, repeats: int = 1) -> dict[str, int]:
    """Propose ``repeats`` conditions of ``organisation`` for every seed paper of the study (each an independent run
    in fresh contexts; the report gives the spread between them), writing ``conditions/CONDITION.json``; a
    condition already proposed (or failed) is kept unless ``force``, and a sealed one is never replaced, ``force``
    or not. A condition that failed because the endpoint did not answer (a transient failure: no reply to judge) is
    asked again.

    Returns
    -------
    dict
        ``ok``, ``failed``, ``skipped`` and ``sealed`` (kept because sealed) counts.
    """
    check_repeats(repeats)
    counts = {"ok": 0, "failed": 0, "skipped": 0, "sealed": 0}
    sealed = seals(study)
    for seed, paper in study.seeds().items():
        for repeat in range(1, repeats + 1):
            cid = condition_id(seed, client.model, organisation, repeat)
            path = study.condition_path(cid)
            if cid in sealed:
                counts["sealed"] += 1
                continue
            if path.exists() and not force and not read_json(path, "proposal").get("transient"):
                counts["skipped"] += 1
                continue
            record = propose_one(client, seed, paper, organisation=organisation, arxiv=arxiv, prices=prices,
                                 repeat=repeat)
            write(path, record)
            counts[record["status"]] += 1
    return counts
