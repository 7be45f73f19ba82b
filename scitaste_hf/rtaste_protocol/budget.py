"""``budget``: the agent spends a fixed budget on its own MVEs, in rounds, seeing the first results before the next.

The rTaste study gave every MVE the same execution; its authors propose, as the next step, an agent that allocates a
fixed budget itself. Here each sealed condition's own model, in a fresh context without tools, reads the seed paper
and its five registrations (not its own forecasts or ranks) and spends ``units`` budget units over ``rounds``
rounds: in each it puts whole units on MVEs, exactly the round's share, and is then shown what the protected re-run
gave for every MVE it has funded so far. The re-runs are the study's own (every MVE is still run, so that each gets
its labels); the budget decides only what the agent sees and where its units go. An invalid allocation is asked for
once more, then recorded as the condition's failure with its reason.

:func:`budget_summary` then asks whether the budget went to MVEs later labelled sound, valuable and new: per
condition the share of its units on such MVEs against the share such MVEs are of its five (what an even spread
would give), with intervals across seed papers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scitaste_hf.agent.chat import ChatClient, ChatError
from scitaste_hf.errors import InvalidInput, ScitasteError
from scitaste_hf.rtaste.judge import event_text
from scitaste_hf.rtaste.metrics import UNIT, UNIT_DIFFERENCE, grouped_mean
from scitaste_hf.rtaste.release import validate_rows
from scitaste_hf.rtaste.report import labels
from scitaste_hf.rtaste.schema import N_MVES
from scitaste_hf.rtaste_protocol.assemble import release_rows
from scitaste_hf.rtaste_protocol.labels import reruns_of
from scitaste_hf.rtaste_protocol.propose import SYSTEM, ask_valid, reply_field, seed_block
from scitaste_hf.rtaste_protocol.seal import sealed_conditions
from scitaste_hf.rtaste_protocol.study import Study, condition_digest, read_json, write

BUDGET = "budget"
#: The summary of the budget mode in the study folder.
SUMMARY_FILE = "budget.json"
ALLOCATE = ("You have {left} budget units left for your {n} MVEs, to spend over {rounds} more round(s). In this round "
            "spend exactly {spend} units: put whole units on the MVEs you want run now, to learn from their results "
            '(0 on the others). Reply with one JSON object: {{"units": [u1, ..., u{n}]}}, in MVE order.')
RESULTS = "What the protected re-run gave for the MVEs you have funded so far:\n{results}"


def _allocation_checker(spend: int):
    def check(text: str) -> list[int]:
        units = reply_field(text, "units")
        if (not isinstance(units, list) or len(units) != N_MVES
                or any(isinstance(u, bool) or not isinstance(u, int) or u < 0 for u in units)):
            raise InvalidInput(f"'units' must be {N_MVES} whole numbers >= 0")
        if sum(units) != spend:
            raise InvalidInput(f"the units add up to {sum(units)}; this round spends exactly {spend}")
        return units
    return check


def _result(number: int, record: dict[str, Any]) -> str:
    if record["status"] != "resolved":
        return f"MVE {number}: no value ({record.get('reason') or 'the executor failed'})"
    occurred = "occurred" if record["occurred"] else "did not occur"
    return f"MVE {number}: {record['rerun_value']:g} ({record['value_unit']}); its registered event {occurred}"


def shares(units: int, rounds: int) -> list[int]:
    """The units each round spends: ``units // rounds``, the last round the remainder as well."""
    if units < 1 or rounds < 1 or units < rounds:
        raise InvalidInput(f"a budget of {units} units cannot be spent in {rounds} rounds (at least one unit each)")
    return [units // rounds] * (rounds - 1) + [units - (units // rounds) * (rounds - 1)]


def budget_one(client: ChatClient, paper: dict[str, str], registrations, reruns: list[dict[str, Any]],
               units: int, rounds: int) -> dict[str, Any]:
    """One condition's budget rounds: ``rounds`` (each its ``units`` and the results ``shown`` after it), or
    ``None`` and the ``reason``, and the ``calls``."""
    calls: list[dict[str, Any]] = []
    mves = "\n".join(f"MVE {n}: {r.hypothesis} Registered event: {event_text(r)}."
                     for n, r in enumerate(registrations, start=1))
    messages = [{"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"{seed_block(paper)}\n\nYour registered MVEs:\n{mves}"}]
    done: list[dict[str, Any]] = []
    funded: set[int] = set()
    left = units
    try:
        for number, spend in enumerate(shares(units, rounds)):
            messages[-1]["content"] += "\n\n" + ALLOCATE.format(left=left, n=N_MVES, rounds=rounds - number,
                                                                spend=spend)
            given = ask_valid(client, messages, f"budget round {number + 1}", calls, _allocation_checker(spend))
            left -= spend
            funded |= {k for k, u in enumerate(given) if u}
            shown = [_result(k + 1, reruns[k]) for k in sorted(funded)]
            done.append({"units": given, "shown": shown})
            messages.append({"role": "user", "content": RESULTS.format(results="\n".join(shown))})
    except (InvalidInput, ChatError) as exc:
        reason = f"{exc.reason}: {exc}" if isinstance(exc, ChatError) else str(exc)
        return {"rounds": None, "reason": reason, "done": done, "calls": calls}
    return {"rounds": done, "reason": None, "calls": calls}


def budget(study: Study, clients: dict[str, ChatClient], *, units: int = 10, rounds: int = 2,
           force: bool = False) -> dict[str, int]:
    """Have each re-run condition's own model spend ``units`` over ``rounds``, writing ``budget/CONDITION.json``.

    Returns ``spent``, ``failed`` and ``skipped`` condition counts and ``not_rerun`` conditions.

    Raises
    ------
    ScitasteError
        On an unsealed or changed study, or when a condition's model is not among ``clients``.
    """
    shares(units, rounds)
    conditions = sealed_conditions(study)
    missing = sorted({c.model for c, _ in conditions.values()} - set(clients))
    if missing:
        raise ScitasteError(f"the budget is spent by the condition's own model: add {missing[0]}")
    seeds = study.seeds()
    counts = {"spent": 0, "failed": 0, "skipped": 0, "not_rerun": 0}
    for cid, (condition, _) in conditions.items():
        reruns = reruns_of(study, cid)
        if reruns is None:
            counts["not_rerun"] += 1
            continue
        path, digest = study.path(BUDGET, f"{cid}.json"), condition_digest(condition)["digest"]
        done = read_json(path, "budget", missing_ok=True)
        if (not force and done.get("digest") == digest and done.get("rounds") is not None
                and (done["units"], len(done["rounds"])) == (units, rounds)):
            counts["skipped"] += 1
            continue
        record = budget_one(clients[condition.model], seeds[condition.seed_paper], condition.registrations, reruns,
                            units, rounds)
        write(path, {"digest": digest, "units": units, **record})
        counts["spent" if record["rounds"] is not None else "failed"] += 1
    return counts


def budget_summary(study: Study) -> dict[str, Any]:
    """Whether the budget went to MVEs later labelled sound, valuable and new (and to each label alone): per label the
    mean share of a condition's units on MVEs that carry it, the share such MVEs are of its five, and their
    difference, each a :func:`~scitaste_hf.rtaste.metrics.grouped_mean` across seed papers; written to
    ``budget.json``.

    Raises
    ------
    ScitasteError
        When the study cannot be released yet (its labels are incomplete) or no condition has spent its budget.
    """
    release = validate_rows(release_rows(study), str(study.root))
    rows: dict[str, list[tuple[str, float, float]]] = {k: [] for k in ("svn", "sound", "valuable", "new")}
    for cid, records in release.by_condition().items():
        path = study.path(BUDGET, f"{cid}.json")
        done = read_json(path, "budget", missing_ok=True)
        if done.get("digest") != condition_digest(release.conditions[cid])["digest"] or not done.get("rounds"):
            continue
        spent = np.sum([r["units"] for r in done["rounds"]], axis=0, dtype=np.float64)
        found = labels(records)
        for label, table in rows.items():
            table.append((release.conditions[cid].seed_paper, float(spent[found[label]].sum() / spent.sum()),
                          float(found[label].mean())))
    if not rows["svn"]:
        raise ScitasteError(f"no condition of {study.root} has spent its budget: run `scitaste rtaste budget` first")
    summary: dict[str, Any] = {"n_conditions": len(rows["svn"])}
    for label, table in rows.items():
        groups = [g for g, _, _ in table]
        spent_share, even = np.array([s for _, s, _ in table]), np.array([e for _, _, e in table])
        summary[label] = {"budget_share": grouped_mean(spent_share, groups, bounds=UNIT),
                          "even_share": grouped_mean(even, groups, bounds=UNIT),
                          "difference": grouped_mean(spent_share - even, groups, bounds=UNIT_DIFFERENCE)}
    write(study.path(SUMMARY_FILE), summary)
    return summary
