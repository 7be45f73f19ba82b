"""The no-information floors of every score: predictors that know nothing about any one paper.

A score means little until it is set beside what knowing nothing earns. WAPE in particular rewards answering
the mean: a predictor that gives every paper the same answer can earn a middling Scheme-2 grade (C on the
bundled example, E on the demo's build: it depends on how spread the gold is).
Every score is therefore reported beside two floors, computed on the same papers:

- ``constant``: the mean of each of the eight numbers over the public ``backup`` split, the same answer for
  every paper;
- ``discipline_prior``: the offline baseline's answer in the tool-free modes
  (:class:`PriorBaseline`): the median of each number over the ``backup`` papers of the
  paper's discipline (the constant where the split has none of that discipline).

Without a ``backup`` split (a bare gold file, an ``evaluate`` metric given only references) both come from
the gold set itself: its mean, and its median per discipline. Each paper's own label then weighs 1/n in its
floor, which makes the floor a little harder to beat, never easier; leaving the paper out instead would make
the "constant" vary against each paper's own label (perfectly anti-correlated with it). Skill over the constant
floor is :func:`scitaste_hf.scoring.bootstrap.skill`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS

#: The floors, in the order they are reported; skill is measured over the first.
FLOORS = ("constant", "discipline_prior")


def discipline_medians(M: np.ndarray, disciplines: Sequence[str]) -> dict[str, np.ndarray]:
    """The median row of ``M`` per discipline (the offline baseline's priors, before rounding).

    Parameters
    ----------
    M : ndarray, shape (n, k)
    disciplines : sequence of str, shape (n,)
    """
    labels = np.asarray(disciplines)
    return {str(d): np.median(M[labels == d], axis=0) for d in np.unique(labels)}


def floor_matrices(G: np.ndarray, disciplines: Sequence[str] | None = None,
                   backup: Sequence[Mapping[str, Any]] | None = None) -> dict[str, np.ndarray]:
    """Each floor's answers for the papers of ``G``.

    Parameters
    ----------
    G : ndarray, shape (n, 8) or (n, 1)
        The gold rows (innovation score, then the dimensions; or the innovation score alone).
    disciplines : sequence of str, optional
        Each paper's discipline; without it there is no ``discipline_prior`` floor.
    backup : sequence of records, optional
        The ``backup`` split; without it the floors are the mean and the per-discipline medians of ``G``.

    Returns
    -------
    dict
        :data:`FLOORS` name -> ndarray shaped like ``G``.
    """
    from scitaste_hf.scoring.inputs import as_answer_matrix

    if backup is not None:
        source = as_answer_matrix(list(backup), "backup")[:, :G.shape[1]]
        priors = {d: np.array(v[:G.shape[1]]) for d, v in PriorBaseline.fit(backup).priors.items()}
    else:
        source = G
        priors = {} if disciplines is None else discipline_medians(G, disciplines)
    constant = np.broadcast_to(source.mean(axis=0), G.shape).copy()
    if disciplines is None:
        return {"constant": constant}
    prior = np.array([priors.get(d, constant[0]) for d in disciplines], dtype=np.float64).reshape(G.shape)
    return {"constant": constant, "discipline_prior": prior}


class PriorBaseline:
    """Per-discipline medians of the innovation score and the seven dimensions."""

    def __init__(self, priors: Mapping[str, tuple[float, ...]]) -> None:
        self.priors = dict(priors)

    @classmethod
    def fit(cls, records: Iterable[Mapping[str, Any]]) -> PriorBaseline:
        """Learn the priors from records (the ``backup`` split)."""
        records = list(records)
        if not records:
            raise ScitasteError("the baseline needs records to learn its priors from (the backup split is empty)")
        M = np.array([[r["innovation_score"], *(r["dimension_scores"][k] for k in DIMENSIONS)] for r in records])
        medians = discipline_medians(M, [r["discipline"] for r in records])
        return cls({d: tuple(round(float(v), 2) for v in row) for d, row in medians.items()})

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
