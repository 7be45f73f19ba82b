"""``release``: the stages' records joined into the release table that ``scitaste rtaste report`` reads.

One row per MVE of every sealed condition (each checked against its seal): the condition and registration from
propose, the judges' probabilities, the outcome from the protected re-run, and the labels: ``audits/CONDITION.json``
(five :class:`~scitaste_hf.rtaste.schema.Audit` objects in written order) where the study's own auditors wrote
one, else those the ``audit`` and ``novelty`` stages recorded (:func:`~scitaste_hf.rtaste_protocol.labels.audits_of`).
The rows are validated by the release loader's own check (:func:`scitaste_hf.rtaste.release.validate_rows`) before
``release.jsonl`` is written, whole or not at all. Failed proposals have no row in the release schema; they are
counted and listed.
"""

from __future__ import annotations

import json
from typing import Any

from scitaste_hf.errors import ScitasteError
from scitaste_hf.output import write_bytes_atomic
from scitaste_hf.rtaste.release import validate_rows
from scitaste_hf.rtaste.schema import N_MVES
from scitaste_hf.rtaste_protocol.labels import audits_of
from scitaste_hf.rtaste_protocol.rerun import rerun_outcome_fields
from scitaste_hf.rtaste_protocol.seal import sealed_conditions
from scitaste_hf.rtaste_protocol.study import (
    AUDITS,
    JUDGES,
    RELEASE,
    RERUNS,
    Study,
    condition_digest,
    mve_digest,
    read_json,
)


def release_rows(study: Study) -> list[dict[str, Any]]:
    """The release rows of every sealed condition.

    Raises
    ------
    ScitasteError
        On an unsealed or changed study, an MVE without a re-run record for its sealed registration, or a
        condition without its five audits.
    """
    rows = []
    for cid, (condition, summary) in sealed_conditions(study).items():
        judges_path = study.path(JUDGES, f"{cid}.json")
        judged = read_json(judges_path, "judges", missing_ok=True)
        if judged and judged.get("digest") != condition_digest(condition)["digest"]:
            raise ScitasteError(f"{judges_path} was written for another registration of {cid}: run judge again")
        answered = {m: j["probabilities"] for m, j in judged.get("judges", {}).items() if j["probabilities"]}
        written = study.path(AUDITS, f"{cid}.json")
        audits = (read_json(written, f"the audits of {cid}", list) if written.exists()
                  else audits_of(study, cid, condition_digest(condition)["digest"]))
        if not isinstance(audits, list) or len(audits) != N_MVES:
            raise ScitasteError(f"{study.path(AUDITS, f'{cid}.json')}: needs a list of {N_MVES} audits, in written "
                                "order")
        for position in range(1, N_MVES + 1):
            record = read_json(study.path(RERUNS, cid, f"{position}.json"), f"the re-run of {cid}/{position}")
            if record.get("digest") != mve_digest(condition, position):
                raise ScitasteError(f"the re-run of {cid}/{position} was made for another registration: run rerun "
                                    "again")
            k = position - 1
            rows.append({
                "mve_id": f"{cid}/{position}", "condition_id": cid, "seed_paper": condition.seed_paper,
                "seed_summary": summary, "model": condition.model, "organisation": condition.organisation,
                "cost_usd": condition.cost_usd, "position": position,
                "registration": condition.registrations[k].model_dump(mode="json"),
                "probability": condition.probabilities[k], "rank": condition.ranks[k],
                "judge_predictions": [{"judge_model": m, "probability": p[k]} for m, p in answered.items()],
                "outcome": rerun_outcome_fields(record), "audit": audits[k]})
    return rows


def write_release(study: Study) -> dict[str, Any]:
    """Validate the rows and write ``release.jsonl``; returns ``rows``, ``conditions`` and the ``failed``
    proposals (condition id -> reason)."""
    rows = release_rows(study)
    release = validate_rows(rows, str(study.path(RELEASE)))
    text = "".join(json.dumps(r.to_row(), allow_nan=False) + "\n" for r in release.records)
    write_bytes_atomic(study.path(RELEASE), text.encode("utf-8"))
    failed = {cid: r.get("reason", "") for cid, r in study.proposals().items() if r.get("status") != "ok"}
    return {"rows": len(rows), "conditions": len(release.conditions), "failed": failed}
