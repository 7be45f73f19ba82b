"""The judge's side of rTaste: the prompt a judge sees (the seed paper's summary and the five registrations,
nothing of the agent's reasoning) and the parsing of its five probabilities. The lm-eval task
``rtaste_judge`` builds its documents and scores its replies with these functions.
"""

from __future__ import annotations

from typing import Any

from scitaste_hf.rtaste.events import resolve
from scitaste_hf.rtaste.release import Release
from scitaste_hf.rtaste.schema import N_MVES, MVERegistration

# The SciTaste answer parser's JSON finder (fenced blocks, then objects in prose) serves judges' replies too.
from scitaste_hf.scoring.answers import last_json_object

_RELATION_WORDS = {"greater": "is greater than", "less": "is less than", "in_interval": "lies in the interval"}


def event_text(registration: MVERegistration) -> str:
    """A registered event in words, as the judges and the novelty matcher read it: ``statistic relation threshold
    (unit)``."""
    event = registration.event
    threshold = (f"[{event.threshold[0]:g}, {event.threshold[1]:g}]" if event.relation == "in_interval"
                 else f"{event.threshold:g}")
    return f"{event.statistic} {_RELATION_WORDS[event.relation]} {threshold} ({event.unit})"


def judge_prompt(seed_summary: str, registrations: tuple[MVERegistration, ...] | list[MVERegistration]) -> str:
    """The judge's prompt for one condition.

    Parameters
    ----------
    seed_summary : str
        The seed paper's summary.
    registrations : sequence of MVERegistration
        The condition's five registrations, in written order.
    """
    parts = ["You are judging minimal viable experiments (MVEs) proposed as follow-ups to a new research paper. "
             "Each MVE registered, before it ran, an event that its re-run evaluation will decide.",
             "", f"Seed paper: {seed_summary}", ""]
    for number, registration in enumerate(registrations, start=1):
        parts += [f"MVE {number}",
                  f"Hypothesis: {registration.hypothesis}",
                  f"Nearest prior work: {registration.nearest_prior_work}",
                  f"Inputs: {registration.inputs}",
                  f"Method: {registration.method}",
                  f"Evaluation plan: {registration.evaluation_plan}",
                  f"Resources: {registration.resources}",
                  f"Registered event: {event_text(registration)}", ""]
    parts.append(f"For each of the {N_MVES} MVEs, give the probability (0 to 1) that its registered event occurs. "
                 f'Reply with one JSON object: {{"probabilities": [p1, p2, p3, p4, p5]}}, in MVE order.')
    return "\n".join(parts)


def parse_probabilities(text: str) -> list[float] | None:
    """The five probabilities of a judge's reply, or ``None`` when the reply has none that are valid.

    The last JSON object with a ``probabilities`` key counts (code fences and prose around it are fine);
    it must hold exactly five numbers within 0-1.

    Parameters
    ----------
    text : str
        The judge's reply.
    """
    obj, _ = last_json_object(text or "", lambda o: "probabilities" in o)
    found = obj["probabilities"] if obj is not None else None
    if not isinstance(found, list) or len(found) != N_MVES:
        return None
    if any(isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0 for p in found):
        return None
    return [float(p) for p in found]


def condition_docs(release: Release) -> list[dict[str, Any]]:
    """One judge document per condition: ids, the prompt, and the resolved events in written order.

    Parameters
    ----------
    release : Release
        The validated release.

    Returns
    -------
    list of dict
        ``condition_id``, ``seed_paper``, ``model``, ``prompt`` and ``outcomes`` (1 occurred, 0 did not,
        ``None`` unresolved: a failed MVE or one without a re-run value).
    """
    docs = []
    for condition_id, rows in release.by_condition().items():
        condition = release.conditions[condition_id]
        outcomes = [resolve(r) for r in rows]
        docs.append({"condition_id": condition_id, "seed_paper": condition.seed_paper, "model": condition.model,
                     "prompt": judge_prompt(rows[0].seed_summary, condition.registrations),
                     "outcomes": [None if o is None else int(o) for o in outcomes]})
    return docs
