"""The labels of the release's :class:`~scitaste_hf.rtaste.schema.Audit`, by models: ``audit`` and ``novelty``.

``audit``: three auditors, each in a fresh context without tools and blind to the proposer and to the agent's
probabilities and ranks, read the seed paper and each MVE (its registration, the delivered code and what the
protected re-run gave) and judge whether it is faithful to its registration and valid, give its research value
0-3, and rank the five by value. ``novelty``: each listing model writes the seed paper's ten obvious follow-ups; a
matching model marks each MVE that one of them names as obvious; two novelty judges, with the arXiv tool, label
each MVE ``equivalent``, ``close_variant`` or ``distinct`` against the literature. Each reply is checked strictly,
asked for once more when invalid, then recorded as that model's failure with the reason (docs/rtaste-protocol.md).
"""

from __future__ import annotations

from typing import Any

from scitaste_hf.agent.chat import ChatClient, ChatError
from scitaste_hf.errors import InvalidInput, ScitasteError
from scitaste_hf.rtaste.judge import event_text
from scitaste_hf.rtaste.schema import N_AUDITORS, N_MVES, N_NOVELTY_JUDGES, NOVELTY_LABELS, VALUE_MAX, MVERegistration
from scitaste_hf.rtaste_protocol.propose import ConditionRun, ask_valid, reply_field, seed_block
from scitaste_hf.rtaste_protocol.rerun import MVE_FILE
from scitaste_hf.rtaste_protocol.seal import sealed_conditions
from scitaste_hf.rtaste_protocol.study import MVES, RERUNS, Study, condition_digest, read_json, write

AUDITORS, NOVELTY = "auditors", "novelty"
#: Obvious follow-ups each listing model writes.
N_OBVIOUS = 10
#: Characters of an MVE's delivered code an auditor reads (its text files, in name order).
CODE_CHARS = 6000

AUDITOR = ("You are an auditor of minimal viable experiments (MVEs) that follow up a new paper. You have no tools. You "
           "are not told who proposed them or how they were ranked.")
AUDIT = (f"For each MVE, in order, judge whether the delivered experiment is faithful to its registration "
         f"(\"faithful\": true or false) and whether it is valid (\"valid\"), give its research value from 0 to "
         f"{VALUE_MAX} (\"value\"), and rank the {N_MVES} by value (1 = most valuable, each rank once). Reply with one "
         f'JSON object: {{"mves": [{N_MVES} objects {{"faithful", "valid", "value"}}], "ranks": [r1, ..., r5]}}.')
LISTER = "You are a research scientist. You have no tools."
LIST = (f"List the {N_OBVIOUS} most obvious follow-up experiments of this paper, the ones any researcher would think "
        f'of first. Reply with one JSON object: {{"follow_ups": [{N_OBVIOUS} short texts]}}.')
MATCHER = "You compare proposed experiments with lists of obvious follow-ups of a paper. You have no tools."
MATCH = (f"For each MVE, in order, say whether it is one of the listed obvious follow-ups (the same experiment, not "
         f'merely the same topic). Reply with one JSON object: {{"obvious": [{N_MVES} true or false]}}.')
NOVELTY_JUDGE = ("You judge whether proposed experiments are new against the literature. You may search arXiv with "
                 "the arxiv_search tool.")
LABEL = (f"For each MVE, in order, label it against the literature: {', '.join(NOVELTY_LABELS)}. Reply with one JSON "
         f'object: {{"labels": [{N_MVES} labels]}}.')


def _mve_block(number: int, registration: MVERegistration) -> list[str]:
    return [f"MVE {number}", f"Hypothesis: {registration.hypothesis}", f"Method: {registration.method}",
            f"Inputs: {registration.inputs}", f"Evaluation plan: {registration.evaluation_plan}",
            f"Registered event: {event_text(registration)}"]


def _code(folder) -> str:
    """The delivered folder's text files, in name order, at most :data:`CODE_CHARS` characters."""
    parts, left = [], CODE_CHARS
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink() and p.name != MVE_FILE):
        try:
            text = path.read_bytes()[:left].decode("utf-8")
        except UnicodeDecodeError:
            continue  # not text: the auditor reads code
        parts.append(f"--- {path.relative_to(folder)}\n{text}")
        left -= len(text)
        if left <= 0:
            break
    return "\n".join(parts) or "(no text files)"


def _rerun_text(record: dict[str, Any]) -> str:
    if record["status"] == "failed":
        return "the executor failed to deliver it"
    if record["status"] == "unresolved":
        return f"unresolved: {record['reason']}"
    occurred = "occurred" if record["occurred"] else "did not occur"
    return f"value {record['rerun_value']:g} ({record['value_unit']}); the registered event {occurred}"


def _answer(client: ChatClient, system: str, text: str, check, turn: str, run: ConditionRun | None = None,
            role: str = "") -> dict[str, Any]:
    """One model's checked reply in a fresh context (with the search turn first when ``run`` has the arXiv tool):
    ``answer`` (or None and the ``reason``), its ``calls`` and ``searches``."""
    run = run or ConditionRun(client, None)
    messages = run.open(role or turn, system, text)
    try:
        if run.arxiv is not None:
            run.search(role or turn, messages)
            messages.append({"role": "user", "content": text.rsplit("\n\n", 1)[-1]})
        answer, reason = ask_valid(client, messages, turn, run.calls, check), None
    except (InvalidInput, ChatError) as exc:
        answer, reason = None, f"{exc.reason}: {exc}" if isinstance(exc, ChatError) else str(exc)
    return {"answer": answer, "reason": reason, "calls": run.calls, "searches": run.searches}


def _flags(value: Any, key: str) -> list[bool]:
    if not isinstance(value, list) or len(value) != N_MVES or not all(isinstance(v, bool) for v in value):
        raise InvalidInput(f"{key!r} must be {N_MVES} true-or-false values")
    return value


def check_audit(text: str) -> dict[str, Any]:
    """An auditor's reply: five ``{faithful, valid, value}`` and ranks forming a permutation, or ``InvalidInput``."""
    mves, ranks = reply_field(text, "mves"), reply_field(text, "ranks")
    if not isinstance(mves, list) or len(mves) != N_MVES or not all(isinstance(m, dict) for m in mves):
        raise InvalidInput(f"'mves' must be {N_MVES} objects")
    labels = []
    for number, mve in enumerate(mves, start=1):
        value = mve.get("value")
        if not all(isinstance(mve.get(k), bool) for k in ("faithful", "valid")):
            raise InvalidInput(f"MVE {number}: 'faithful' and 'valid' must be true or false")
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= VALUE_MAX:
            raise InvalidInput(f"MVE {number}: value {value!r} is not an integer 0-{VALUE_MAX}")
        labels.append({"faithful": mve["faithful"], "valid": mve["valid"], "value": value})
    if (not isinstance(ranks, list) or any(isinstance(r, bool) or not isinstance(r, int) for r in ranks)
            or sorted(ranks) != list(range(1, N_MVES + 1))):
        raise InvalidInput(f"ranks {ranks!r} are not a permutation of 1-{N_MVES}")
    return {"mves": labels, "ranks": ranks}


def _check_list(text: str) -> list[str]:
    found = reply_field(text, "follow_ups")
    if not isinstance(found, list) or len(found) != N_OBVIOUS or not all(isinstance(f, str) and f.strip()
                                                                          for f in found):
        raise InvalidInput(f"'follow_ups' must be {N_OBVIOUS} non-empty texts")
    return found


def _check_labels(text: str) -> list[str]:
    found = reply_field(text, "labels")
    if not isinstance(found, list) or len(found) != N_MVES or not all(f in NOVELTY_LABELS for f in found):
        raise InvalidInput(f"'labels' must be {N_MVES} of {', '.join(NOVELTY_LABELS)}")
    return found


def _reruns(study: Study, cid: str) -> list[dict[str, Any]] | None:
    paths = [study.path(RERUNS, cid, f"{p}.json") for p in range(1, N_MVES + 1)]
    return [read_json(p, "re-run") for p in paths] if all(p.exists() for p in paths) else None


def _count(counts: dict[str, int], answer: dict[str, Any]) -> None:
    counts["answered" if answer["answer"] is not None else "failed"] += 1


def _resumed(path, digest: str, key: str) -> dict[str, Any]:
    done = read_json(path, key) if path.exists() else {}
    return done.get(key, {}) if done.get("digest") == digest else {}


def audit(study: Study, auditors: dict[str, ChatClient], *, force: bool = False) -> dict[str, int]:
    """Audit every re-run condition with the three auditors, writing ``auditors/CONDITION.json``.

    Returns ``answered``, ``failed``, ``skipped`` (auditor, condition) counts and ``not_rerun`` conditions.
    """
    if len(auditors) != N_AUDITORS:
        raise ScitasteError(f"the study has {N_AUDITORS} auditors; {len(auditors)} given")
    counts = {"answered": 0, "failed": 0, "skipped": 0, "not_rerun": 0}
    for cid, (condition, summary) in sealed_conditions(study).items():
        reruns = _reruns(study, cid)
        if reruns is None:
            counts["not_rerun"] += 1
            continue
        parts = [f"Seed paper: {summary}", ""]
        for number, (registration, record) in enumerate(zip(condition.registrations, reruns), start=1):
            code = _code(study.path(MVES, cid, str(number)))
            parts += [*_mve_block(number, registration), f"Delivered code:\n{code}",
                      f"Protected re-run: {_rerun_text(record)}", ""]
        prompt = "\n".join(parts) + "\n" + AUDIT
        path, digest = study.path(AUDITORS, f"{cid}.json"), condition_digest(condition)["digest"]
        done = _resumed(path, digest, AUDITORS)
        for name, client in auditors.items():
            if not force and (done.get(name) or {}).get("answer") is not None:
                counts["skipped"] += 1
                continue
            done[name] = _answer(client, AUDITOR, prompt, check_audit, "audit")
            _count(counts, done[name])
        write(path, {"digest": digest, AUDITORS: done})
    return counts


def novelty(study: Study, listers: dict[str, ChatClient], matcher: ChatClient, judges: dict[str, ChatClient], *,
            arxiv: Any = None, force: bool = False) -> dict[str, int]:
    """Obvious follow-ups and novelty labels of every sealed condition, writing ``novelty/CONDITION.json``
    (the listing models' lists, the matcher's ``obvious`` flags, each novelty judge's labels).

    Returns ``answered``, ``failed`` and ``skipped`` (model, condition) counts.
    """
    if len(judges) != N_NOVELTY_JUDGES:
        raise ScitasteError(f"the study has {N_NOVELTY_JUDGES} novelty judges; {len(judges)} given")
    if not listers:
        raise ScitasteError("novelty needs at least one listing model")
    counts = {"answered": 0, "failed": 0, "skipped": 0}
    seeds = study.seeds()
    for cid, (condition, _) in sealed_conditions(study).items():
        path, digest = study.path(NOVELTY, f"{cid}.json"), condition_digest(condition)["digest"]
        done = _resumed(path, digest, NOVELTY)
        paper = seed_block(seeds[condition.seed_paper]) if condition.seed_paper in seeds else ""
        mves = "\n".join(line for n, r in enumerate(condition.registrations, start=1)
                         for line in [*_mve_block(n, r), ""])
        for name, client in listers.items():
            key = f"list:{name}"
            if force or (done.get(key) or {}).get("answer") is None:
                done[key] = _answer(client, LISTER, f"{paper}\n\n{LIST}", _check_list, "obvious list")
                _count(counts, done[key])
            else:
                counts["skipped"] += 1
        lists = [done[f"list:{n}"]["answer"] for n in listers if done[f"list:{n}"]["answer"] is not None]
        steps = [("match", matcher, MATCHER, f"{paper}\n\nObvious follow-ups:\n"
                  + "\n".join(f"- {item}" for found in lists for item in found) + f"\n\n{mves}\n{MATCH}",
                  lambda text: _flags(reply_field(text, "obvious"), "obvious"), None)]
        steps += [(f"judge:{name}", client, NOVELTY_JUDGE, f"{paper}\n\n{mves}\n\n{LABEL}", _check_labels,
                   ConditionRun(client, arxiv)) for name, client in judges.items()]
        for key, client, system, prompt, check, run in steps:
            if key == "match" and not lists:
                continue  # nothing to match against: every listing model failed
            if not force and (done.get(key) or {}).get("answer") is not None:
                counts["skipped"] += 1
                continue
            done[key] = _answer(client, system, prompt, check, key.split(":")[0], run, key)
            _count(counts, done[key])
        write(path, {"digest": digest, NOVELTY: done})
    return counts


def audits_of(study: Study, cid: str, digest: str) -> list[dict[str, Any]]:
    """The five :class:`~scitaste_hf.rtaste.schema.Audit` objects of a condition, from the audit and novelty
    stages' records (the auditors' labels in the order given, the novelty judges' labels, the matcher's flags).

    Raises
    ------
    ScitasteError
        When a stage is missing, was made for another registration, or has a model that did not answer.
    """
    found = {}
    for stage in (AUDITORS, NOVELTY):
        path = study.path(stage, f"{cid}.json")
        record = read_json(path, f"the {stage} of {cid}")
        if record.get("digest") != digest:
            raise ScitasteError(f"{path} was made for another registration of {cid}: run its stage again")
        failed = [k for k, v in record[stage].items() if v["answer"] is None and not k.startswith("list:")]
        if failed:
            raise ScitasteError(f"{path}: {failed[0]} did not answer ({record[stage][failed[0]]['reason']})")
        found[stage] = record[stage]
    auditors = [a["answer"]["mves"] for a in found[AUDITORS].values()]
    judged = [v["answer"] for k, v in found[NOVELTY].items() if k.startswith("judge:")]
    if len(auditors) != N_AUDITORS or len(judged) != N_NOVELTY_JUDGES or "match" not in found[NOVELTY]:
        raise ScitasteError(f"the labels of {cid} are incomplete: run audit and novelty")
    obvious = found[NOVELTY]["match"]["answer"]
    return [{"faithful": [a[k]["faithful"] for a in auditors], "valid": [a[k]["valid"] for a in auditors],
             "value": [a[k]["value"] for a in auditors], "novelty": [j[k] for j in judged], "obvious": obvious[k],
             "reviewer_answers": []} for k in range(N_MVES)]
