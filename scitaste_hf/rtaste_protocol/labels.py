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
from scitaste_hf.rtaste.schema import (
    N_AUDITORS,
    N_MVES,
    N_NOVELTY_JUDGES,
    N_REVIEWERS,
    NOVELTY_LABELS,
    VALUE_MAX,
    MVERegistration,
)
from scitaste_hf.rtaste_protocol.propose import ConditionRun, ask_valid, reply_field, seed_block
from scitaste_hf.rtaste_protocol.rerun import MVE_FILE
from scitaste_hf.rtaste_protocol.seal import sealed_conditions
from scitaste_hf.rtaste_protocol.study import MVES, RERUNS, Study, condition_digest, read_json, write

AUDITORS, NOVELTY, REVIEWS = "auditors", "novelty", "reviews"
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
#: The reviewers' fixed questions, asked of every MVE, and the answers they may give.
REVIEW_QUESTIONS = (
    "Does the delivered experiment test the hypothesis it registered?",
    "Does the evaluation alone decide the registered event, with no choice left to make after the result?",
    "Is the MVE cheap enough to run before the larger study it would justify?",
    "Would either outcome change what the larger study does?",
)
REVIEW_ANSWERS = ("yes", "no", "unclear")
REVIEWER = ("You are a reviewer of minimal viable experiments (MVEs) that follow up a new paper. You have no tools. "
            "You are not told who proposed them or how they were ranked.")
REVIEW = ("Answer these questions for each MVE, in order, each with one of " + ", ".join(REVIEW_ANSWERS) + ":\n"
          + "\n".join(f"{n}. {q}" for n, q in enumerate(REVIEW_QUESTIONS, start=1))
          + f'\nReply with one JSON object: {{"answers": [{N_MVES} lists of {len(REVIEW_QUESTIONS)} answers]}}.')


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


def delivered_text(summary: str, registrations, folders, reruns: list[dict[str, Any]]) -> str:
    """What an auditor or a reviewer reads of a condition: the seed paper's summary and, per MVE, its registration,
    its delivered code and what the protected re-run gave (nothing of the proposer, its forecasts or ranks)."""
    parts = [f"Seed paper: {summary}", ""]
    for number, (registration, folder, record) in enumerate(zip(registrations, folders, reruns), start=1):
        parts += [*_mve_block(number, registration), f"Delivered code:\n{_code(folder)}",
                  f"Protected re-run: {_rerun_text(record)}", ""]
    return "\n".join(parts) + "\n"


def answer_fresh(client: ChatClient, system: str, text: str, check, turn: str, run: ConditionRun | None = None,
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


def check_review(text: str) -> list[list[str]]:
    """A reviewer's reply: per MVE one answer of :data:`REVIEW_ANSWERS` to each fixed question, or ``InvalidInput``."""
    found = reply_field(text, "answers")
    if not isinstance(found, list) or len(found) != N_MVES or not all(
            isinstance(a, list) and len(a) == len(REVIEW_QUESTIONS) for a in found):
        raise InvalidInput(f"'answers' must be {N_MVES} lists of {len(REVIEW_QUESTIONS)} answers")
    unknown = [a for answers in found for a in answers if a not in REVIEW_ANSWERS]
    if unknown:
        raise InvalidInput(f"unknown answer {unknown[0]!r}; use one of {', '.join(REVIEW_ANSWERS)}")
    return found


def reruns_of(study: Study, cid: str) -> list[dict[str, Any]] | None:
    """The five re-run records of condition ``cid``, in written order, or ``None`` until all five exist."""
    paths = [study.path(RERUNS, cid, f"{p}.json") for p in range(1, N_MVES + 1)]
    return [read_json(p, "re-run") for p in paths] if all(p.exists() for p in paths) else None


def _count(counts: dict[str, int], answer: dict[str, Any]) -> None:
    counts["answered" if answer["answer"] is not None else "failed"] += 1


def _resumed(path, digest: str, key: str) -> dict[str, Any]:
    done = read_json(path, key, missing_ok=True)
    return done.get(key, {}) if done.get("digest") == digest else {}


def audit(study: Study, auditors: dict[str, ChatClient], *, force: bool = False) -> dict[str, int]:
    """Audit every re-run condition with the three auditors, writing ``auditors/CONDITION.json``.

    Returns ``answered``, ``failed``, ``skipped`` (auditor, condition) counts and ``not_rerun`` conditions.
    """
    if len(auditors) != N_AUDITORS:
        raise ScitasteError(f"the study has {N_AUDITORS} auditors; {len(auditors)} given")
    return _labelled(study, AUDITORS, "audit", auditors, AUDITOR, AUDIT, check_audit, force)


def _labelled(study: Study, stage: str, turn: str, models: dict[str, ChatClient], system: str, question: str,
              check, force: bool) -> dict[str, int]:
    """Ask every model of a stage that reads the delivered MVEs (the auditors, the reviewers) about every re-run
    condition, writing ``STAGE/CONDITION.json``; a model that answered is not asked again unless ``force``."""
    counts = {"answered": 0, "failed": 0, "skipped": 0, "not_rerun": 0}
    for cid, (condition, summary) in sealed_conditions(study).items():
        reruns = reruns_of(study, cid)
        if reruns is None:
            counts["not_rerun"] += 1
            continue
        prompt = delivered_text(summary, condition.registrations,
                                [study.path(MVES, cid, str(p)) for p in range(1, N_MVES + 1)], reruns) + question
        path, digest = study.path(stage, f"{cid}.json"), condition_digest(condition)["digest"]
        done = _resumed(path, digest, stage)
        for name, client in models.items():
            if not force and (done.get(name) or {}).get("answer") is not None:
                counts["skipped"] += 1
                continue
            done[name] = answer_fresh(client, system, prompt, check, turn)
            _count(counts, done[name])
        write(path, {"digest": digest, stage: done})
    return counts


def review(study: Study, reviewers: dict[str, ChatClient], *, force: bool = False) -> dict[str, int]:
    """The three reviewers' answers to the fixed questions (:data:`REVIEW_QUESTIONS`) for every re-run condition,
    writing ``reviews/CONDITION.json``; each reads what an auditor reads, in a fresh context without tools.

    Returns ``answered``, ``failed``, ``skipped`` (reviewer, condition) counts and ``not_rerun`` conditions.
    """
    if len(reviewers) != N_REVIEWERS:
        raise ScitasteError(f"the study has {N_REVIEWERS} reviewers; {len(reviewers)} given")
    return _labelled(study, REVIEWS, "review", reviewers, REVIEWER, REVIEW, check_review, force)


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
                done[key] = answer_fresh(client, LISTER, f"{paper}\n\n{LIST}", _check_list, "obvious list")
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
            done[key] = answer_fresh(client, system, prompt, check, key.split(":")[0], run, key)
            _count(counts, done[key])
        write(path, {"digest": digest, NOVELTY: done})
    return counts


def _stage_record(study: Study, stage: str, cid: str, digest: str) -> dict[str, Any]:
    """A labelling stage's answers for condition ``cid``, each model's answer there."""
    path = study.path(stage, f"{cid}.json")
    record = read_json(path, f"the {stage} of {cid}")
    if record.get("digest") != digest:
        raise ScitasteError(f"{path} was made for another registration of {cid}: run its stage again")
    failed = [k for k, v in record[stage].items() if v["answer"] is None and not k.startswith("list:")]
    if failed:
        raise ScitasteError(f"{path}: {failed[0]} did not answer ({record[stage][failed[0]]['reason']})")
    return record[stage]


def audits_of(study: Study, cid: str, digest: str) -> list[dict[str, Any]]:
    """The five :class:`~scitaste_hf.rtaste.schema.Audit` objects of a condition, from the audit and novelty
    stages' records (the auditors' labels in the order given, the novelty judges' labels, the matcher's flags) and,
    where the review stage ran, the reviewers' answers.

    Raises
    ------
    ScitasteError
        When a stage is missing, was made for another registration, or has a model that did not answer.
    """
    found = {stage: _stage_record(study, stage, cid, digest) for stage in (AUDITORS, NOVELTY)}
    reviewed = (_stage_record(study, REVIEWS, cid, digest) if study.path(REVIEWS, f"{cid}.json").exists() else {})
    auditors = [a["answer"]["mves"] for a in found[AUDITORS].values()]
    judged = [v["answer"] for k, v in found[NOVELTY].items() if k.startswith("judge:")]
    reviews = [r["answer"] for r in reviewed.values()]
    if (len(auditors) != N_AUDITORS or len(judged) != N_NOVELTY_JUDGES or "match" not in found[NOVELTY]
            or len(reviews) not in (0, N_REVIEWERS)):
        raise ScitasteError(f"the labels of {cid} are incomplete: run audit, novelty and review")
    obvious = found[NOVELTY]["match"]["answer"]
    return [{"faithful": [a[k]["faithful"] for a in auditors], "valid": [a[k]["valid"] for a in auditors],
             "value": [a[k]["value"] for a in auditors], "novelty": [j[k] for j in judged], "obvious": obvious[k],
             "reviewer_answers": [r[k] for r in reviews]} for k in range(N_MVES)]
