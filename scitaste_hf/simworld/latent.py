"""The hidden traits of the simulated candidates, from which the world draws their raw evidence.

Every candidate has a standard-normal trait per dimension B..F that shares a common factor ``q`` (a paper that
cites broadly also tends to be novel, disruptive, conceptually rich and written by a larger team), a citation
trait (dimension A's evidence) and a journal trait (dimension G's). The two last ones also share a venue factor:
the part of a paper's citations that B..F do not explain goes with the journal it appears in, while the journal
alone tells little about the rest. With these loadings the index computed over the world has the regression
structure that :mod:`scitaste_hf.simworld.calibration` checks against the paper.

The world turns each trait into counts, scores and links (:mod:`scitaste_hf.simworld.world`); nothing here is a
dimension score.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Loading of each trait B..F on the common factor (disruption's evidence, the disruptive citations, also grows
#: with the citation count, so its trait needs less of the factor).
COMMON = {"breadth": 0.82, "novelty": 0.97, "disruption": 0.68, "concepts": 0.81, "team": 0.88}
#: Citation trait: loadings on the common factor and on the venue factor (the rest is its own noise).
CITATION_COMMON, CITATION_VENUE = 0.91, 0.34
#: Journal trait: loadings on the common factor and on the venue factor (the rest is its own noise).
JOURNAL_COMMON, JOURNAL_VENUE = -0.13, 0.97
#: The traits B..F, in the order of the index's dimensions.
TRAITS = tuple(COMMON)


@dataclass(frozen=True)
class Traits:
    """Standard-normal traits of ``n`` candidates."""

    breadth: np.ndarray
    novelty: np.ndarray
    disruption: np.ndarray
    concepts: np.ndarray
    team: np.ndarray
    citation: np.ndarray
    journal: np.ndarray


def _mix(rng: np.random.Generator, n: int, loadings: tuple[float, ...], factors: tuple[np.ndarray, ...]
         ) -> np.ndarray:
    own = np.sqrt(max(0.0, 1.0 - sum(x * x for x in loadings)))
    return sum(w * f for w, f in zip(loadings, factors)) + own * rng.standard_normal(n)


def draw(rng: np.random.Generator, n: int) -> Traits:
    """The traits of ``n`` candidates (each standard normal)."""
    common, venue = rng.standard_normal(n), rng.standard_normal(n)
    b_f = {name: _mix(rng, n, (COMMON[name],), (common,)) for name in TRAITS}
    return Traits(**b_f, citation=_mix(rng, n, (CITATION_COMMON, CITATION_VENUE), (common, venue)),
                  journal=_mix(rng, n, (JOURNAL_COMMON, JOURNAL_VENUE), (common, venue)))
