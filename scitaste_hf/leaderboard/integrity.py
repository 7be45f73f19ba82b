"""Integrity checks of a submission.

The gold labels of the ``selected`` split are public, so a score alone proves nothing. A run is
*reproducible* when the evidence attached to it (lm-eval's samples log, the agent trace) yields exactly the
submitted answers; otherwise it is *self-reported*. A run that matches the gold labels almost exactly is
*flagged* and not ranked.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scitaste_hf.records import jsonl_lines
from scitaste_hf.schema import Answer, Failure
from scitaste_hf.scoring import parse_answer

#: A run is flagged when at least this share of its scored papers has all eight numbers within
#: NEAR_GOLD_TOLERANCE of the gold labels: no real model judges that closely, a copy of the labels does.
NEAR_GOLD_SHARE = 0.9
NEAR_GOLD_TOLERANCE = 0.5


def near_gold(predictions: Mapping[str, Answer | Failure], gold: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the answers reproduce the gold labels almost exactly (see :data:`NEAR_GOLD_SHARE`)."""
    from scitaste_hf.scoring._arrays import as_answer_matrix

    pairs = [(predictions[r["bibcode"]], r) for r in gold if isinstance(predictions.get(r["bibcode"]), Answer)]
    if not pairs:
        return False
    P = np.array([a.vector() for a, _ in pairs])
    G = as_answer_matrix([r for _, r in pairs], "gold")
    close = np.all(np.abs(P - G) <= NEAR_GOLD_TOLERANCE, axis=1)
    return bool(close.mean() >= NEAR_GOLD_SHARE)


def _response_text(obj: Mapping[str, Any]) -> str | None:
    """The model's reply in an evidence line: an agent trace's ``response``, or lm-eval's filtered/raw reply."""
    if isinstance(obj.get("response"), str):
        return obj["response"]
    for key in ("filtered_resps", "resps"):
        value = obj.get(key)
        while isinstance(value, list) and value:
            value = value[0]
        if isinstance(value, str):
            return value
    return None


def _bibcode(obj: Mapping[str, Any]) -> str | None:
    doc = obj.get("doc")
    if isinstance(doc, Mapping) and isinstance(doc.get("bibcode"), str):
        return doc["bibcode"]
    return obj.get("bibcode") if isinstance(obj.get("bibcode"), str) else None


def _same(a: Answer | Failure, b: Answer | Failure) -> bool:
    if isinstance(a, Answer) and isinstance(b, Answer):
        return np.allclose(a.vector(), b.vector(), rtol=0, atol=1e-9)
    return isinstance(a, Failure) and isinstance(b, Failure)


def verify_evidence(evidence: bytes, predictions: Mapping[str, Answer | Failure]) -> str | None:
    """Check that an evidence log (lm-eval samples JSONL, or an agent trace JSONL of ``{"bibcode", "response"}``)
    reproduces the submitted answers: the same bibcodes, and each reply parses to the same answer.

    Returns
    -------
    str or None
        None when it reproduces them, else the first discrepancy, in words.
    """
    seen: dict[str, Answer | Failure] = {}
    try:
        lines = jsonl_lines(evidence.decode("utf-8"))
    except UnicodeDecodeError:
        return "the evidence is not UTF-8 text"
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            return f"evidence line {number} is not JSON"
        bibcode = _bibcode(obj) if isinstance(obj, dict) else None
        text = _response_text(obj) if isinstance(obj, dict) else None
        if bibcode is None or text is None:
            return f"evidence line {number} has no bibcode and model reply"
        seen[bibcode] = parse_answer(text)
    missing = sorted(set(predictions) - set(seen))
    extra = sorted(set(seen) - set(predictions))
    if missing or extra:
        return f"the evidence covers other papers ({len(missing)} missing, {len(extra)} extra)"
    for bibcode, answer in predictions.items():
        if not _same(answer, seen[bibcode]):
            return f"the evidence's answer for {bibcode} differs from the submitted one"
    return None
