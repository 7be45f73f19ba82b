"""The double commitment: ``seal`` records a digest of every registration, probability and rank of a study before
anything runs, and every later stage takes a condition only through :func:`sealed_conditions`, which refuses one
that was never sealed or whose digest differs from its seal.
"""

from __future__ import annotations

from typing import Any

from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.schema import Condition
from scitaste_hf.rtaste_protocol.study import SEAL, Study, condition_digest, read_json, seed_digest, write

#: The key of a seal's seed-paper digest (:func:`~scitaste_hf.rtaste_protocol.study.seed_digest`); a seal made
#: before it was recorded has none, and its seed paper is then not checked.
SEED = "seed"


def seals(study: Study) -> dict[str, Any]:
    """The study's seals by condition id (empty when it has none)."""
    path = study.path(SEAL)
    return read_json(path, "seal", missing_ok=True)


def seal(study: Study) -> dict[str, int]:
    """Seal every proposed condition not sealed yet; a sealed one is never sealed again.

    Returns
    -------
    dict
        ``sealed`` (new seals), ``kept`` (already sealed, unchanged), ``failed`` (failed proposals, not sealed).

    Raises
    ------
    ScitasteError
        When a sealed condition, or the seed paper it was proposed on, has changed since, or a seed paper changed
        between a proposal and its seal (the study is then refused whole, and nothing is written).
    """
    sealed = seals(study)
    conditions = study.conditions()
    seeds = study.seeds() if conditions else {}
    for cid, (condition, summary) in conditions.items():
        if cid in sealed:
            _check(cid, sealed[cid], condition, summary, seeds, "; a sealed registration cannot be replaced")
    from scitaste_hf.rtaste_protocol.propose import seed_summary  # propose imports this module

    new = {}
    for cid, (condition, summary) in conditions.items():
        if cid in sealed:
            continue
        paper = seeds.get(condition.seed_paper)
        if paper is None or seed_summary(paper) != summary:
            raise ScitasteError(f"seed paper {condition.seed_paper} of condition {cid} is not the one it was "
                                "proposed on (missing or changed in seeds/): propose it again with --force")
        new[cid] = {**condition_digest(condition), SEED: seed_digest(paper, summary)}
    if new:
        write(study.path(SEAL), {**sealed, **new})
    failed = sum(1 for r in study.proposals().values() if r.get("status") != "ok")
    return {"sealed": len(new), "kept": len(conditions) - len(new), "failed": failed}


def _check(cid: str, sealed: dict[str, Any], condition: Condition, summary: str, seeds: dict[str, Any],
           more: str = "") -> None:
    """Refuse a condition, or the seed paper and summary it was proposed on, that differ from its seal."""
    if not isinstance(sealed, dict) or {k: v for k, v in sealed.items() if k != SEED} != condition_digest(condition):
        raise ScitasteError(f"condition {cid} changed after it was sealed: its digest differs from seal.json{more}")
    if SEED in sealed and sealed[SEED] != seed_digest(seeds.get(condition.seed_paper), summary):
        raise ScitasteError(f"seed paper {condition.seed_paper} of condition {cid} changed after it was sealed (the "
                            "paper in seeds/ or the summary its judges are shown): the judges must see what the "
                            "proposer saw")


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
    seeds = study.seeds() if conditions else {}
    for cid, (condition, summary) in conditions.items():
        if cid not in sealed:
            raise ScitasteError(f"condition {cid} is not sealed: run `scitaste rtaste seal` first")
        _check(cid, sealed[cid], condition, summary, seeds)
    missing = sorted(set(sealed) - set(conditions))
    if missing:
        raise ScitasteError(f"sealed condition {missing[0]} is missing from {study.path('conditions')}")
    return conditions
