"""``judge``: forecasts of the registered events by judge models.

Each judge sees only the seed paper (its title and abstract) and the five registrations, in a fresh context without
tools, with the prompt and the parser of the lm-eval judge task (:mod:`scitaste_hf.rtaste.judge`), and gives one
probability per event. The same-model judge is the proposer's own model, so every condition's model must be among
the judges. An invalid reply is asked for once more, then recorded as that judge's failure with its reason. The
mean of the judges that answered is kept beside each single judge.
"""

from __future__ import annotations

from typing import Any

from scitaste_hf.agent.chat import ChatClient, ChatError
from scitaste_hf.errors import InvalidInput, ScitasteError
from scitaste_hf.rtaste.judge import judge_prompt, parse_probabilities
from scitaste_hf.rtaste.schema import N_MVES
from scitaste_hf.rtaste_protocol.propose import PROBABILITIES_SCHEMA, ask_valid
from scitaste_hf.rtaste_protocol.seal import sealed_conditions
from scitaste_hf.rtaste_protocol.study import JUDGES, Study, condition_digest, read_json, write


def _check(text: str) -> list[float]:
    found = parse_probabilities(text)
    if found is None:
        raise InvalidInput(f"the reply holds no JSON object with {N_MVES} probabilities within 0-1")
    return found


def judge_one(client: ChatClient, seed_summary: str, registrations) -> dict[str, Any]:
    """One judge's forecast of one condition: ``probabilities`` (or None and the ``reason``) and its ``calls``."""
    calls: list[dict[str, Any]] = []
    messages = [{"role": "user", "content": judge_prompt(seed_summary, registrations)}]
    try:
        return {"probabilities": ask_valid(client, messages, "judge", calls, _check, schema=PROBABILITIES_SCHEMA),
                "reason": None, "calls": calls}
    except (InvalidInput, ChatError) as exc:
        reason = f"{exc.reason}: {exc}" if isinstance(exc, ChatError) else str(exc)
        return {"probabilities": None, "reason": reason, "calls": calls}


def judge(study: Study, clients: dict[str, ChatClient], *, force: bool = False) -> dict[str, int]:
    """Forecast every sealed condition with every judge, writing ``judges/CONDITION.json``.

    Parameters
    ----------
    study : Study
    clients : dict
        Judge model name -> its chat client; must hold every condition's own model (the same-model judge).
    force : bool
        Ask again a judge that already answered this condition as sealed.

    Returns
    -------
    dict
        ``answered``, ``failed`` and ``skipped`` (judge, condition) counts.

    Raises
    ------
    ScitasteError
        On an unsealed or changed study, or when a condition's own model is not among the judges.
    """
    conditions = sealed_conditions(study)
    missing = sorted({c.model for c, _ in conditions.values()} - set(clients))
    if missing:
        raise ScitasteError(f"the same-model judge is the proposer's model: add {missing[0]} to the judges")
    counts = {"answered": 0, "failed": 0, "skipped": 0}
    for cid, (condition, summary) in conditions.items():
        path = study.path(JUDGES, f"{cid}.json")
        digest = condition_digest(condition)["digest"]
        done = read_json(path, "judges", missing_ok=True)
        judged = done.get("judges", {}) if done.get("digest") == digest else {}
        for model, client in clients.items():
            if not force and judged.get(model, {}).get("probabilities") is not None:
                counts["skipped"] += 1
                continue
            judged[model] = judge_one(client, summary, condition.registrations)
            counts["answered" if judged[model]["probabilities"] else "failed"] += 1
        answered = [j["probabilities"] for j in judged.values() if j["probabilities"]]
        mean = [sum(p[k] for p in answered) / len(answered) for k in range(N_MVES)] if answered else None
        write(path, {"digest": digest, "same_model_judge": condition.model, "judges": judged, "mean": mean})
    return counts
