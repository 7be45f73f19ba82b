"""The offline baseline's rules for the tool-free mode: per-discipline priors learned from the ``backup`` split.

Deterministic and transparent: every paper of a discipline gets that discipline's median innovation score and
median dimensions over the backup papers. It is the floor of the leaderboard: its Spearman is undefined (it does
not rank papers within a discipline), and its error is what knowing the discipline alone buys.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS


class PriorBaseline:
    """Per-discipline medians of the innovation score and the seven dimensions."""

    def __init__(self, priors: Mapping[str, tuple[float, ...]]) -> None:
        self.priors = dict(priors)

    @classmethod
    def fit(cls, records: Iterable[Mapping[str, Any]]) -> PriorBaseline:
        """Learn the priors from records (the ``backup`` split)."""
        rows: dict[str, list[list[float]]] = {}
        for r in records:
            rows.setdefault(r["discipline"], []).append(
                [r["innovation_score"], *(r["dimension_scores"][k] for k in DIMENSIONS)])
        if not rows:
            raise ScitasteError("the baseline needs records to learn its priors from (the backup split is empty)")
        return cls({d: tuple(round(float(v), 2) for v in np.median(np.array(v), axis=0)) for d, v in rows.items()})

    def answer(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """The answer for one paper: its discipline's priors."""
        prior = self.priors.get(record["discipline"])
        if prior is None:
            raise ScitasteError(f"the baseline has no prior for discipline {record['discipline']!r}")
        return {"innovation_score": prior[0], "dimension_scores": dict(zip(DIMENSIONS, prior[1:])),
                "reasoning": f"median of the {record['discipline']} papers of the backup split", "confidence": 0.1}

    def reply(self, record: Mapping[str, Any]) -> str:
        """The answer as a model would give it: one JSON object."""
        return json.dumps(self.answer(record))
