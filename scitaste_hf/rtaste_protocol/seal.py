"""The double commitment: ``seal`` records a digest of every registration, probability and rank of a study before
anything runs, and every later stage takes a condition only through :func:`sealed_conditions`, which refuses one
that was never sealed or whose digest differs from its seal.
"""

from __future__ import annotations

from typing import Any

from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.schema import Condition
from scitaste_hf.rtaste_protocol.study import SEAL, Study, condition_digest, read_json, write


def seals(study: Study) -> dict[str, Any]:
    """The study's seals by condition id (empty when it has none)."""
    path = study.path(SEAL)
    return read_json(path, "seal") if path.exists() else {}


def seal(study: Study) -> dict[str, int]:
    """Seal every proposed condition not sealed yet; a sealed one is never sealed again.

    Returns
    -------
    dict
        ``sealed`` (new seals), ``kept`` (already sealed, unchanged), ``failed`` (failed proposals, not sealed).

    Raises
    ------
    ScitasteError
        When a sealed condition has changed since (the study is then refused whole, and nothing is written).
    """
    sealed = seals(study)
    conditions = study.conditions()
    for cid, (condition, _) in conditions.items():
        if cid in sealed and sealed[cid] != condition_digest(condition):
            raise ScitasteError(f"condition {cid} changed after it was sealed: its digest differs from seal.json; "
                                "a sealed registration cannot be replaced")
    new = {cid: condition_digest(c) for cid, (c, _) in conditions.items() if cid not in sealed}
    if new:
        write(study.path(SEAL), {**sealed, **new})
    failed = sum(1 for r in study.proposals().values() if r.get("status") != "ok")
    return {"sealed": len(new), "kept": len(conditions) - len(new), "failed": failed}


def sealed_conditions(study: Study) -> dict[str, tuple[Condition, str]]:
    """The study's sealed conditions (with their seed summaries), each checked against its seal.

    Raises
    ------
    ScitasteError
        When the study has no seal, when a proposed condition is not sealed, or when one differs from its seal:
        nothing runs on an unsealed or changed study.
    """
    sealed = seals(study)
    if not sealed:
        raise ScitasteError(f"{study.root} is not sealed: run `scitaste rtaste seal {study.root}` before any later "
                            "stage")
    conditions = study.conditions()
    for cid, (condition, _) in conditions.items():
        if cid not in sealed:
            raise ScitasteError(f"condition {cid} is not sealed: run `scitaste rtaste seal` first")
        if sealed[cid] != condition_digest(condition):
            raise ScitasteError(f"condition {cid} changed after it was sealed: its digest differs from seal.json")
    missing = sorted(set(sealed) - set(conditions))
    if missing:
        raise ScitasteError(f"sealed condition {missing[0]} is missing from {study.path('conditions')}")
    return conditions
