"""``calibrate``: the auditors measured on flaws planted in copies of delivered MVEs.

For every audited condition and every flaw of the catalogue (:data:`FLAWS`), one MVE is copied and the flaw is
planted in the copy: a changed metric, a leaked test split, a threshold moved after the fact, a wrong baseline or a
dropped seed. The copy is re-run under protection, and the three auditors audit the condition with the flawed copy
in its place (the other four as delivered), in a fresh context, with the audit's own prompt, not told that anything
was planted. An auditor *catches* a planted flaw when it finds the flawed MVE not faithful or not valid; its *false
positives* are the delivered MVEs (the audit stage's records) it finds so. The same is measured for the auditors'
majority, the rule by which the report calls an MVE sound. Rates come with 95% intervals across seed papers
(:func:`~scitaste_hf.rtaste.metrics.grouped_mean`).

A flaw is planted where the MVE's code says the setting it changes, as a top-level assignment of a Python file or, for
the threshold, as a registered event in a JSON file (docs/rtaste-protocol.md#calibration); an MVE without it cannot
carry that flaw, and a condition none of whose MVEs can is left out of that flaw's rate.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from scitaste_hf.agent.chat import ChatClient
from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.aggregation import majority_vote
from scitaste_hf.rtaste.metrics import UNIT, grouped_mean
from scitaste_hf.rtaste.schema import N_AUDITORS, N_MVES
from scitaste_hf.rtaste_protocol.labels import (
    AUDIT,
    AUDITOR,
    AUDITORS,
    answer_fresh,
    check_audit,
    delivered_text,
    reruns_of,
)
from scitaste_hf.rtaste_protocol.limits import Limits
from scitaste_hf.rtaste_protocol.rerun import rerun_one
from scitaste_hf.rtaste_protocol.seal import sealed_conditions
from scitaste_hf.rtaste_protocol.study import MVES, Study, condition_digest, mve_digest, read_json, write

CALIBRATION = "calibration"
#: The summary of the calibration in the study folder.
SUMMARY_FILE = "calibration.json"


def _assignment(name: str, value: str) -> re.Pattern:
    return re.compile(rf"^({name}\s*=\s*){value}", re.MULTILINE | re.IGNORECASE)


def _setting(name: str, change: Callable[[str], str | None]) -> Callable[[str], str | None]:
    """A rewrite of a top-level string assignment ``NAME = "value"``; ``None`` where the text has none."""
    pattern = _assignment(name, r"([\"'])([^\"'\n]*)\2")

    def rewrite(text: str) -> str | None:
        found = pattern.search(text)
        if found is None or (new := change(found.group(3))) is None:
            return None
        return text[:found.start()] + f'{found.group(1)}"{new}"' + text[found.end():]
    return rewrite


def _dropped_seed(text: str) -> str | None:
    found = _assignment("SEEDS", r"\[([^\]\n]*)\]").search(text)
    seeds = [s.strip() for s in found.group(2).split(",") if s.strip()] if found else []
    if len(seeds) < 2:
        return None
    return text[:found.start()] + f"{found.group(1)}[{', '.join(seeds[:-1])}]" + text[found.end():]


def _moved(threshold: Any, relation: str) -> Any:
    """A threshold moved so that the event holds more easily, as if set after the result was seen."""
    if relation == "in_interval" and isinstance(threshold, list) and len(threshold) == 2:
        low, high = threshold
        margin = max((high - low) / 2, 0.1)
        return [low - margin, high + margin]
    value = threshold[0] if isinstance(threshold, list) and len(threshold) == 1 else threshold
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    step = max(abs(value) / 2, 0.1)
    return value + step if relation == "less" else value - step


def _moved_threshold(text: str) -> str | None:
    """The registered event of a JSON file (``{"event": {"relation", "threshold"}}``) with its threshold moved."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    event = data.get("event") if isinstance(data, dict) else None
    if not isinstance(event, dict) or "threshold" not in event:
        return None
    moved = _moved(event["threshold"], str(event.get("relation", "greater")))
    if moved is None:
        return None
    event["threshold"] = moved
    return json.dumps(data, indent=2) + "\n"


#: The flaws the calibration plants: name -> (what it does, the files it rewrites, the rewrite of one file's text).
FLAWS: dict[str, tuple[str, str, Callable[[str], str | None]]] = {
    "changed_metric": ("the metric of `METRIC = \"...\"` becomes another (accuracy becomes balanced_accuracy, any "
                       "other accuracy)", "*.py",
                       _setting("METRIC", lambda v: "balanced_accuracy" if v == "accuracy" else "accuracy")),
    "leaked_test_split": ("the training split of `TRAIN_SPLIT = \"...\"` takes in the test split (`+test`)", "*.py",
                          _setting("TRAIN_SPLIT", lambda v: None if "test" in v else f"{v}+test")),
    "moved_threshold": ("the threshold of the registered event in a JSON file moved by half its size (at least 0.1) "
                        "towards making the event hold", "*.json", _moved_threshold),
    "wrong_baseline": ("the baseline of `BASELINE = \"...\"` becomes another (majority becomes first_class, any "
                       "other majority)", "*.py", _setting("BASELINE", lambda v: "first_class" if v == "majority"
                                                           else "majority")),
    "dropped_seed": ("the last seed of `SEEDS = [...]` dropped", "*.py", _dropped_seed),
}


def plant(folder: Path, flaw: str) -> bool:
    """Plant ``flaw`` in the MVE folder ``folder`` (a copy: it is rewritten in place); whether it could be."""
    _, files, rewrite = FLAWS[flaw]
    planted = False
    for path in sorted(folder.rglob(files)):
        if path.is_file() and not path.is_symlink() and path.name != "mve.json":
            try:
                new = rewrite(path.read_text("utf-8"))
            except UnicodeDecodeError:
                continue
            if new is not None:
                path.write_text(new, "utf-8")
                planted = True
    return planted


def _flagged(answer: dict[str, Any]) -> list[bool]:
    """Per MVE, whether an auditor found it not faithful or not valid."""
    return [not (m["faithful"] and m["valid"]) for m in answer["mves"]]


def calibrate(study: Study, auditors: dict[str, ChatClient], limits: Limits | None = None, *,
              flaws: tuple[str, ...] = tuple(FLAWS), force: bool = False,
              work_parent: str | Path | None = None) -> dict[str, int]:
    """Plant each flaw in a copy of one MVE of every audited condition, re-run it, and have the auditors audit the
    condition with it, writing ``calibration/CONDITION/FLAW.json`` (and the flawed copy beside it).

    The flaw ``k`` of the catalogue goes into the first MVE from position ``k + 1`` on (cyclically) that can carry
    it, so each position carries some flaw. Returns ``planted``, ``answered``, ``failed`` and ``skipped`` counts
    and ``not_plantable`` (condition, flaw) pairs.
    """
    if len(auditors) != N_AUDITORS:
        raise ScitasteError(f"the study has {N_AUDITORS} auditors; {len(auditors)} given")
    unknown = [f for f in flaws if f not in FLAWS]
    if unknown:
        raise ScitasteError(f"unknown flaw {unknown[0]!r}; the catalogue has {', '.join(FLAWS)}")
    limits = limits or Limits()
    counts = {"planted": 0, "answered": 0, "failed": 0, "skipped": 0, "not_plantable": 0, "not_audited": 0}
    for cid, (condition, summary) in sealed_conditions(study).items():
        reruns = reruns_of(study, cid)
        if reruns is None or not study.path(AUDITORS, f"{cid}.json").exists():
            counts["not_audited"] += 1
            continue
        digest = condition_digest(condition)["digest"]
        for flaw in flaws:
            path = study.path(CALIBRATION, cid, f"{flaw}.json")
            done = read_json(path, "calibration", missing_ok=True)
            if done.get("digest") != digest or force:
                done = _planted(study, cid, condition, flaw, list(FLAWS).index(flaw), limits, work_parent)
                done["digest"] = digest
                counts["planted" if done["position"] else "not_plantable"] += 1
            if done["position"] is None:
                write(path, done)
                continue
            folders = [study.path(MVES, cid, str(p)) for p in range(1, N_MVES + 1)]
            folders[done["position"] - 1] = study.path(CALIBRATION, cid, flaw)
            shown = [*reruns]
            shown[done["position"] - 1] = done["rerun"]
            prompt = delivered_text(summary, condition.registrations, folders, shown) + AUDIT
            answers = done.setdefault(AUDITORS, {})
            for name, client in auditors.items():
                if not force and (answers.get(name) or {}).get("answer") is not None:
                    counts["skipped"] += 1
                    continue
                answers[name] = answer_fresh(client, AUDITOR, prompt, check_audit, "calibration audit")
                counts["answered" if answers[name]["answer"] is not None else "failed"] += 1
            write(path, done)
    return counts


def _planted(study: Study, cid: str, condition, flaw: str, k: int, limits: Limits,
             work_parent: str | Path | None) -> dict[str, Any]:
    """The flawed copy of condition ``cid``'s first MVE from position ``k + 1`` on that can carry ``flaw``, re-run:
    ``flaw``, ``position`` (None when no MVE can) and the copy's ``rerun`` record."""
    target = study.path(CALIBRATION, cid, flaw)
    for offset in range(N_MVES):
        position = (k + offset) % N_MVES + 1
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(study.path(MVES, cid, str(position)), target, symlinks=True)
        if plant(target, flaw):
            record = rerun_one(target, condition.registrations[position - 1].event, limits,
                               digest=mve_digest(condition, position), work_parent=work_parent)
            return {"flaw": flaw, "position": position, "rerun": record}
    shutil.rmtree(target, ignore_errors=True)
    return {"flaw": flaw, "position": None, "rerun": None}


def _rate(rows: list[tuple[str, bool]]) -> dict[str, Any] | None:
    """The share of ``True`` among (seed paper, flag) rows with its interval across seed papers; None if none."""
    if not rows:
        return None
    return grouped_mean(np.array([float(f) for _, f in rows]), [g for g, _ in rows], bounds=UNIT)


def _majority(answers: list[dict[str, Any]]) -> list[bool]:
    """Per MVE, whether the auditors' majority finds it not faithful or not valid (the report's rule for sound)."""
    faithful = majority_vote([[a["mves"][k]["faithful"] for a in answers] for k in range(N_MVES)])
    valid = majority_vote([[a["mves"][k]["valid"] for a in answers] for k in range(N_MVES)])
    return [not (f and v) for f, v in zip(faithful, valid)]


def calibration_summary(study: Study) -> dict[str, Any]:
    """Catch rates on the planted flaws (overall and per flaw) and false-positive rates on the delivered MVEs, of
    each auditor and of their majority, each a :func:`~scitaste_hf.rtaste.metrics.grouped_mean` across seed
    papers (``None`` where nothing was measured); written to ``calibration.json``."""
    caught: dict[str, list[tuple[str, bool]]] = {}
    by_flaw: dict[str, dict[str, list[tuple[str, bool]]]] = {}
    false: dict[str, list[tuple[str, bool]]] = {}

    def add(table: dict[str, list], name: str, seed: str, flags: list[bool]) -> None:
        table.setdefault(name, []).extend((seed, f) for f in flags)

    for cid, (condition, _) in sealed_conditions(study).items():
        digest, seed = condition_digest(condition)["digest"], condition.seed_paper
        audited = study.path(AUDITORS, f"{cid}.json")
        record = read_json(audited, "audit", missing_ok=True)
        if record.get("digest") == digest:
            answers = {n: a["answer"] for n, a in record[AUDITORS].items() if a["answer"] is not None}
            for name, answer in answers.items():
                add(false, name, seed, _flagged(answer))
            if len(answers) == N_AUDITORS:
                add(false, "majority", seed, _majority(list(answers.values())))
        for flaw in FLAWS:
            path = study.path(CALIBRATION, cid, f"{flaw}.json")
            done = read_json(path, "calibration", missing_ok=True)
            if done.get("digest") != digest or done.get("position") is None:
                continue
            k = done["position"] - 1
            answers = {n: a["answer"] for n, a in done.get(AUDITORS, {}).items() if a["answer"] is not None}
            flags = {n: _flagged(a)[k] for n, a in answers.items()}
            if len(answers) == N_AUDITORS:
                flags["majority"] = _majority(list(answers.values()))[k]
            for name, flag in flags.items():
                add(caught, name, seed, [flag])
                add(by_flaw.setdefault(name, {}), flaw, seed, [flag])
    names = [n for n in {**false, **caught} if n != "majority"] + ["majority"]
    summary = {"raters": {name: {"catch_rate": _rate(caught.get(name, [])),
                                 "catch_rate_by_flaw": {f: _rate(r) for f, r in by_flaw.get(name, {}).items()},
                                 "false_positive_rate": _rate(false.get(name, [])),
                                 "n_planted": len(caught.get(name, [])), "n_delivered": len(false.get(name, []))}
                          for name in names}}
    write(study.path(SUMMARY_FILE), summary)
    return summary
