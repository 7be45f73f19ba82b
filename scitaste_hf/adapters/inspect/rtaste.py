"""The rTaste judge as an Inspect task, ``scitaste_hf/rtaste_judge``: the lm-eval task ``rtaste_judge``'s documents,
prompt and parsing (:mod:`scitaste_hf.rtaste.judge`), one sample a condition, and its Brier score over every
resolved event of the replies that parsed (:func:`scitaste_hf.rtaste.summaries.brier_summary`, with its 95%
interval over seed papers), so that the two harnesses report the same ``brier`` and ``coverage``.

``inspect eval scitaste_hf/rtaste_judge --model openai/gpt-4o -T data_dir=RELEASE`` (default: the bundled
synthetic release).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import get_model
from inspect_ai.scorer import NOANSWER, SampleScore, Score, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from scitaste_hf.adapters.inspect.generation import generate_or_fail
from scitaste_hf.errors import ScitasteError, TaskUnavailable, first_line
from scitaste_hf.rtaste.judge import condition_docs, parse_probabilities
from scitaste_hf.rtaste.metrics import brier_score
from scitaste_hf.rtaste.release import load_release
from scitaste_hf.rtaste.summaries import brier_summary

#: The judge task's metrics, in the order Inspect shows them.
FIGURES = ("brier", "brier_ci_low", "brier_ci_high", "base_rate_brier", "coverage")


@task(name="rtaste_judge")
def rtaste_judge(data_dir: str | None = None, limit: int | None = None) -> Task:
    """rTaste, the judge condition: the probability of each of a condition's five registered events, from the seed
    paper's summary and the five registrations; Brier score against the re-run outcomes.

    Parameters
    ----------
    data_dir : str, optional
        An rTaste release: a dataset folder with the ``rtaste`` config, or a ``.jsonl``/``.parquet`` file of rows;
        default the bundled synthetic release.
    limit : int, optional
        The first N conditions, in the release's order.

    Raises
    ------
    TaskUnavailable
        Before any sample is sent, for a release that cannot be read.
    """
    try:
        docs = condition_docs(load_release(data_dir))[:limit]
    except ScitasteError as exc:
        raise TaskUnavailable(first_line(exc)) from None
    samples = [Sample(id=doc["condition_id"], input=doc["prompt"], target=json.dumps(doc["outcomes"]), metadata=doc)
               for doc in docs]
    return Task(dataset=MemoryDataset(samples, name="rtaste"), solver=judge(), scorer=judge_scorer(),
                name="rtaste_judge")


@solver
def judge() -> Solver:
    """One generation without tools: the judge's reply (a provider that fails after Inspect's retries is a
    reply that does not parse, counted in coverage)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        state.output = await generate_or_fail(get_model(), state.messages, [])
        state.messages.append(state.output.message)
        return state

    return solve


@metric
def rtaste_brier() -> Callable[[list[SampleScore]], dict[str, float]]:
    """The Brier score over every resolved event of the replies that parsed (each event weighs the same), its 95%
    interval resampling seed papers, the base-rate forecast's Brier score, and coverage, the share of replies with
    five valid probabilities (a reply that did not parse is left out of the Brier score, never scored as 0.5). A
    figure that cannot be computed is NaN."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        docs = [s.score.metadata for s in scores if s.score.metadata]
        events = [(None if d["probabilities"] is None else d["probabilities"][k], o, d["seed_paper"])
                  for d in docs for k, o in enumerate(d["outcomes"]) if o is not None]
        figures = dict.fromkeys(FIGURES, math.nan)
        if docs:
            figures["coverage"] = sum(d["probabilities"] is not None for d in docs) / len(docs)
        if events:
            predictions, outcomes, seeds = map(list, zip(*events))
            summary = brier_summary(predictions, outcomes, seeds)
            figures |= {"brier": summary["brier"], "base_rate_brier": summary["base_rate_brier"],
                        **dict(zip(("brier_ci_low", "brier_ci_high"), summary["ci"] or (None, None)))}
        return {name: math.nan if value is None else value for name, value in figures.items()}

    return compute


@scorer(metrics=[rtaste_brier()])
def judge_scorer() -> Callable[[TaskState, Target], Any]:
    """A condition's reply read as the lm-eval task reads it (:func:`~scitaste_hf.rtaste.judge.parse_probabilities`):
    the value is the condition's own Brier score over its resolved events (NaN when none is resolved; shown per
    sample, never averaged into the metric), or Inspect's no-answer value (``N``) for a reply without five valid
    probabilities; the metadata carries the probabilities, outcomes and seed paper that the metric pools."""

    async def score(state: TaskState, target: Target) -> Score:
        reply = state.output.completion
        probabilities = parse_probabilities(reply)
        pairs = [(p, o) for p, o in zip(probabilities or [], state.metadata["outcomes"]) if o is not None]
        value = NOANSWER if probabilities is None else brier_score(*zip(*pairs)) if pairs else math.nan
        return Score(value=value, answer=reply,
                     explanation="scored" if probabilities is not None else "no five probabilities within 0-1",
                     metadata={"probabilities": probabilities, "outcomes": state.metadata["outcomes"],
                               "seed_paper": state.metadata["seed_paper"]})

    return score
