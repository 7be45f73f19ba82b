"""The benchmark's Inspect tasks: one per evaluation mode, named by the mode's ``task`` (``scitaste_pure_qa``,
``scitaste_dimagent``, ...), each with the parameters ``data_dir`` (a dataset folder or Hub id), ``split``,
``evidence_dir``, ``disciplines``, ``limit`` and ``withhold`` (one tool's evidence withheld in a tool mode, as the
lm-eval tasks' ``withhold``) (``inspect eval scitaste_hf/scitaste_dimagent -T data_dir=DIR``).

The papers, their order, the frozen evidence and the no-information floor are those of the lm-eval tasks
(:func:`scitaste_hf.adapters.lmeval.tasks.load_docs`); so are the conversations: a fixed round 1 reaches the model
as tool messages (:func:`~scitaste_hf.adapters.lmeval.tasks.doc_to_messages`), and the live loop follows
:func:`scitaste_hf.agent.loop.run_item`. The scorer reads a reply as ``process_results`` does and the metrics are
the lm-eval aggregations, computed over the whole set of samples (never a mean of per-sample values); a failed
answer is a counted failure that lowers coverage, not a zero.

With ``--epochs K`` each epoch is a run of its own: the task's reducer (:func:`by_epoch`) keeps every epoch's
answer of a paper, and the metrics give each epoch's Scheme 1, Scheme 2, WAPE and coverage, their mean over the
epochs and their sample standard deviation over the epochs (the repeat-run spread, :data:`EPOCH_FIGURES`); the
unsuffixed figures are those of epoch 1, the run a one-epoch eval makes.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    Model,
    ModelName,
    ModelOutput,
    get_model,
)
from inspect_ai.scorer import NOANSWER, SampleScore, Score, ScoreReducer, Target, metric, score_reducer, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import Tool, ToolCall, ToolDef, ToolParams, web_search

from scitaste_hf.adapters.inspect.generation import generate_or_fail
from scitaste_hf.adapters.inspect.rtaste import rtaste_judge
from scitaste_hf.adapters.lmeval.tasks import (
    ANY_MODEL,
    aggregations,
    doc_to_messages,
    doc_to_target,
    doc_toolbox,
    load_docs,
    per_discipline_metric,
    process_results,
)
from scitaste_hf.agent.loop import MAX_CALLS, ROUND_TWO, opening, tool_turn
from scitaste_hf.agent.tools import TOOL_SCHEMAS
from scitaste_hf.errors import ScitasteError, TaskUnavailable, first_line
from scitaste_hf.modes import MODE_SPECS
from scitaste_hf.prompts import paper_prompt
from scitaste_hf.schema import Answer, failure_of, failure_text
from scitaste_hf.scoring import parse_answer
from scitaste_hf.taxonomy import discipline_order

#: Inspect's model providers that have a web search of their own, and the name of that search among
#: ``web_search``'s internal providers. Another provider would need an external search service (an API key of
#: its own), which is not the paper's setting.
NATIVE_SEARCH = {"openai": "openai", "anthropic": "anthropic", "google": "gemini", "grok": "grok",
                 "mistral": "mistral", "perplexity": "perplexity"}
#: Where a sample's trace of the live loop is kept in its store (and the score's metadata).
TRACE = "scitaste_trace"
#: The figures that a run of several epochs reports for each epoch (``scheme1_epoch2``), with their mean
#: (``scheme1_epoch_mean``) and sample standard deviation (``scheme1_epoch_sd``, n - 1 in the denominator) over
#: the epochs whose figure is defined.
EPOCH_FIGURES = ("scheme1", "scheme2", "wape", "coverage")


def scitaste_task(mode: str, data_dir: str | None = None, split: str = "selected", evidence_dir: str | None = None,
                  disciplines: str | Sequence[str] | None = None, limit: int | None = None, withhold: str = ""
                  ) -> Task:
    """The Inspect task of ``mode``; the parameters are those of every registered task (see the module).

    Raises
    ------
    TaskUnavailable
        Before any sample is sent: no frozen evidence for a tool mode, an unknown discipline, or a search mode
        with a model whose provider has no web search of its own.
    """
    spec = MODE_SPECS[mode]
    if spec.search:
        _check_search(mode, _active_model())
    # The lm-eval loader's documents, of the mode that needs the same evidence (its own check of the model is
    # lm-eval's: a live or search mode needs scitaste-agent there, but runs under any Inspect model here).
    base = next(m for m, s in MODE_SPECS.items()
                if not s.search and s.tools == ("none" if spec.tools == "none" else "fixed"))
    try:
        docs = [{**doc, "scitaste_mode": mode} for doc in load_docs(
            data_dir, split, scitaste_task_mode=base, evidence_dir=evidence_dir, withhold=withhold)["test"]]
    except ScitasteError as exc:
        raise TaskUnavailable(first_line(exc)) from None
    docs = _only(docs, disciplines)[:limit]
    samples = [Sample(id=doc["bibcode"], input=_input(doc), target=doc_to_target(doc), metadata=doc) for doc in docs]
    solve = live_loop() if spec.tools == "live" else answer(mode)
    return Task(dataset=MemoryDataset(samples, name=f"scitaste-{split}"), solver=solve, scorer=scitaste_scorer(),
                epochs=Epochs(1, by_epoch()), name=spec.task, metadata={"scitaste_mode": mode, "split": split})


def _only(docs: list[dict[str, Any]], disciplines: str | Sequence[str] | None) -> list[dict[str, Any]]:
    """The documents of ``disciplines`` (a list, or names separated by commas as ``-T`` passes them)."""
    if not disciplines:
        return docs
    wanted = [d.strip() for d in (disciplines.split(",") if isinstance(disciplines, str) else disciplines)]
    present = discipline_order(doc["discipline"] for doc in docs)
    unknown = [d for d in wanted if d not in present]
    if unknown:
        raise TaskUnavailable(f"no papers of discipline {unknown[0]!r} here; the disciplines are {', '.join(present)}")
    return [doc for doc in docs if doc["discipline"] in wanted]


def _input(doc: Mapping[str, Any]) -> str | list[ChatMessage]:
    """What the model is sent first: the paper's prompt; a fixed round 1 as tool messages; round 1's request in
    the live loop."""
    tools = MODE_SPECS[doc["scitaste_mode"]].tools
    if tools == "none":
        return paper_prompt(doc)
    return as_inspect(doc_to_messages(doc) if tools == "fixed" else opening(doc))


def as_inspect(messages: Sequence[Mapping[str, Any]]) -> list[ChatMessage]:
    """OpenAI-style chat messages (as :mod:`scitaste_hf.agent.loop` builds them) as Inspect's messages."""
    names: dict[str, str] = {}
    out: list[ChatMessage] = []
    for m in messages:
        if m["role"] == "system":
            out.append(ChatMessageSystem(content=m["content"]))
        elif m["role"] == "user":
            out.append(ChatMessageUser(content=m["content"]))
        elif m["role"] == "assistant":
            calls = [ToolCall(id=c["id"], function=c["function"]["name"], arguments=json.loads(c["function"]
                                                                                                ["arguments"]))
                     for c in m.get("tool_calls") or []]
            names |= {c.id: c.function for c in calls}
            out.append(ChatMessageAssistant(content=m.get("content") or "", tool_calls=calls or None))
        else:
            out.append(ChatMessageTool(content=m["content"], tool_call_id=m["tool_call_id"],
                                       function=names.get(m["tool_call_id"])))
    return out


def _active_model() -> Model | None:
    """The model of the run being set up (Inspect creates a task named on its command line, or by name in
    ``eval()``, under the run's model); None for a task object made before the run."""
    from inspect_ai.model._model import active_model

    return active_model()


def _check_search(mode: str, model: Model | None, stop: type[BaseException] = TaskUnavailable) -> str | None:
    """The name of the model provider's own search among ``web_search``'s providers; raises ``stop`` with one
    line that names what to use instead when it has none. None when no model is known yet (a task object made
    before the run: its solver checks again at the first sample, before any request)."""
    if model is None:
        return None
    api = ModelName(model).api
    if api not in NATIVE_SEARCH:
        raise stop(f"{MODE_SPECS[mode].task} needs the provider's own web search, which {api}/ models cannot "
                   f"switch on here: run it with a model of {', '.join(f'{p}/...' for p in NATIVE_SEARCH)}; with "
                   f"this model, run {' or '.join(ANY_MODEL)}")
    return NATIVE_SEARCH[api]


@solver
def answer(mode: str) -> Solver:
    """One generation, with the provider's own web search offered in a search mode: the answer."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        tools: list[Tool | ToolDef] = []
        if MODE_SPECS[mode].search:
            tools.append(web_search([_check_search(mode, model, ScitasteError)]))
        state.output = await generate_or_fail(model, state.messages, tools)
        state.messages.append(state.output.message)
        return state

    return solve


def live_tools(box: Any) -> list[ToolDef]:
    """The nine tools as Inspect tools, with their descriptions and schemas, answered from the frozen evidence
    ``box`` (:class:`~scitaste_hf.agent.evidence.FrozenToolBox`; a bad call answers ``{"error": ...}``)."""

    def tool(schema: Mapping[str, Any]) -> ToolDef:
        name = schema["function"]["name"]

        async def call(bibcode: str) -> str:
            return json.dumps(box.call(name, {"bibcode": bibcode}))

        return ToolDef(call, name=name, description=schema["function"]["description"],
                       parameters=ToolParams.model_validate(schema["function"]["parameters"]))

    return [tool(schema) for schema in TOOL_SCHEMAS]


@solver
def live_loop() -> Solver:
    """The live DimAgent-v3 loop (:func:`scitaste_hf.agent.loop.run_item`): round 1 offers the nine tools and runs
    up to :data:`~scitaste_hf.agent.loop.MAX_CALLS` of the model's calls on the frozen evidence, as the agent's
    loop does (an unknown tool or bad arguments answer the model ``{"error": ...}``, as the tools do, and are
    counted; Inspect's own tool loop would answer them with its own errors); round 2 asks for the answer with no tools,
    and a model that calls tools again there fails the paper (``other``). Two generations a paper, never more."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        box = doc_toolbox(state.metadata)
        trace: dict[str, Any] = {"calls": [], "tool_errors": 0, "calls_cut": 0}
        try:
            return await rounds(state, model, box, trace)
        finally:
            state.store.set(TRACE, trace)

    async def rounds(state: TaskState, model: Model, box: Any, trace: dict[str, Any]) -> TaskState:
        first = await generate_or_fail(model, state.messages, live_tools(box))
        calls = first.message.tool_calls or []
        # a failed request ends the paper, as in the agent's loop; an answer given in round 1 is kept
        if failure_of(first.completion) or (not calls and isinstance(parse_answer(first.completion), Answer)):
            trace["no_tool_calls"] = not calls
            state.output = first
            state.messages.append(first.message)
            return state
        if not calls:
            trace["no_tool_calls"] = True
            state.messages.append(first.message)
        else:
            kept = calls[:MAX_CALLS]
            trace["calls_cut"] = len(calls) - len(kept)
            # a call whose arguments were not JSON is answered as bad arguments (None is no JSON object)
            results = [box.call(c.function, None if c.parse_error else c.arguments) for c in kept]
            trace["calls"] = [{"name": c.function, "error": r.get("error")} for c, r in zip(kept, results)]
            trace["tool_errors"] = sum("error" in r for r in results)
            state.messages.append(first.message.model_copy(update={"tool_calls": kept}))
            as_calls = [{"id": c.id, "name": c.function, "arguments": json.dumps(c.arguments)} for c in kept]
            state.messages += as_inspect(tool_turn(as_calls, results))[1:]  # the results: the calls are the model's
        state.messages.append(ChatMessageUser(content=ROUND_TWO))
        reply = await generate_or_fail(model, state.messages, [])
        if reply.message.tool_calls and not reply.completion:
            reply = ModelOutput.from_content(model.name, failure_text("other", "the model kept calling tools in "
                                                                               "round 2"))
        state.output = reply
        state.messages.append(reply.message)
        return state

    return solve


@metric
def scitaste() -> Callable[[list[SampleScore]], dict[str, float]]:
    """Every figure of the benchmark over the whole set of scored samples (lm-eval's aggregations): Scheme 1,
    Scheme 2, WAPE, coverage, the 95% bootstrap intervals, skill over the constant floor with its interval, and
    Scheme 2 per discipline. A figure that cannot be computed (no answer scored) is NaN, never 0. With several
    epochs these are epoch 1's, and :data:`EPOCH_FIGURES` come for each epoch, with their mean and spread."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        runs: dict[int, list[dict[str, Any]]] = {}  # epoch -> its scored answers
        for s in scores:
            if s.score.metadata:
                for epoch, item in (s.score.metadata.get("epochs") or {"1": s.score.metadata["item"]}).items():
                    runs.setdefault(int(epoch), []).append(item)
        if not runs:  # Inspect's running display asks before the first sample is scored
            return dict.fromkeys(aggregations([]), math.nan)
        figures = run_figures(runs[min(runs)])
        if len(runs) > 1:
            per_epoch = {epoch: run_figures(items, EPOCH_FIGURES) for epoch, items in sorted(runs.items())}
            for name in EPOCH_FIGURES:
                figures |= {f"{name}_epoch{epoch}": f[name] for epoch, f in per_epoch.items()}
                defined = [f[name] for f in per_epoch.values() if not math.isnan(f[name])]
                figures[f"{name}_epoch_mean"] = statistics.fmean(defined) if defined else math.nan
                figures[f"{name}_epoch_sd"] = statistics.stdev(defined) if len(defined) > 1 else math.nan
        return figures

    return compute


def run_figures(items: list[dict[str, Any]], names: Sequence[str] | None = None) -> dict[str, float]:
    """The task's aggregations (or only ``names``) over one run's scored answers; a discipline's figure over its
    own papers."""
    present = discipline_order(i["discipline"] for i in items)
    own = {per_discipline_metric(d): d for d in present}
    return {name: aggregate([i for i in items if i["discipline"] == own[name]] if name in own else items)
            for name, aggregate in aggregations(present).items() if names is None or name in names}


@score_reducer(name="scitaste_epochs")
def by_epoch() -> ScoreReducer:
    """The tasks' reducer of a paper's epochs: epoch 1's score, with every epoch's scored answer kept in its
    metadata (``epochs``: epoch -> item), so that the metrics score each epoch as a run instead of a mean of
    values. Inspect hands the scores over in the order they finished, not by epoch."""

    def reduce(scores: list[Score]) -> Score:
        ordered = sorted(scores, key=lambda s: (s.metadata or {}).get("epoch", 1))
        first = ordered[0]
        kept = {str(s.metadata["epoch"]): s.metadata["item"] for s in ordered if s.metadata and "epoch" in s.metadata}
        return first.model_copy(update={"metadata": {**(first.metadata or {}), "epochs": kept}})

    return reduce


@scorer(metrics=[scitaste()])
def scitaste_scorer() -> Callable[[TaskState, Target], Any]:
    """The answer of one sample, read as the lm-eval task reads a reply (``process_results``): the value is the
    predicted innovation score, or Inspect's no-answer value (``N``) with the failure's reason as the explanation;
    the metadata carries what the metrics need, which count a failure against coverage."""

    async def score(state: TaskState, target: Target) -> Score:
        reply = state.output.completion
        item = next(iter(process_results(state.metadata, [reply]).values()))
        trace = state.store.get(TRACE)
        return Score(value=item["pred"][0] if item["pred"] is not None else NOANSWER, answer=reply,
                     explanation=item["reason"] or "scored",
                     metadata={"item": item, "epoch": state.epoch,
                               **({"trace": trace} if trace is not None else {})})

    return score


def _registered(mode: str):
    """The registered task of ``mode``, named by its ``task``, taking the parameters of :func:`scitaste_task`."""

    def make(data_dir: str | None = None, split: str = "selected", evidence_dir: str | None = None,
             disciplines: str | list[str] | None = None, limit: int | None = None, withhold: str = "") -> Task:
        return scitaste_task(mode, data_dir, split, evidence_dir, disciplines, limit, withhold)

    make.__name__ = make.__qualname__ = MODE_SPECS[mode].task
    make.__doc__ = f"SciTaste-Bench, mode {mode}: {MODE_SPECS[mode].about}."
    return task(name=MODE_SPECS[mode].task)(make)


#: mode -> its registered task (``scitaste_hf/<task>`` in Inspect's registry).
TASKS = {mode: _registered(mode) for mode in MODE_SPECS}
#: rTaste's judge task (``scitaste_hf/rtaste_judge``), registered with Inspect when this module is imported.
JUDGE = rtaste_judge
