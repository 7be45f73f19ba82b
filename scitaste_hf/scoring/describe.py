"""The scoring constants stated in words, for the metric modules' descriptions, their cards and docs/: written
from :data:`~scitaste_hf.schema.SCHEME1_POINTS`, :data:`~scitaste_hf.schema.SCHEME1_GRADES` and
:data:`~scitaste_hf.schema.WAPE_BANDS`, so that no text states other numbers than the code uses."""

from __future__ import annotations

import math

from scitaste_hf.schema import SCHEME1_GRADES, SCHEME1_PARTS, SCHEME1_POINTS, WAPE_BANDS

#: How the components of :data:`SCHEME1_POINTS` read in a sentence.
_COMPONENT_NAMES = {
    "s_rho": "Spearman",
    "s_r": "Pearson",
    "s_err": "error (MAE and MSE relative to predicting the gold mean)",
    "s_bias": "|bias| relative to the gold SD",
    "weighted_dimension_spearman": "weighted Spearman",
    "weighted_dimension_accuracy": "weighted accuracy 1 - MAE_d / MAE0_d",
}


def _g(x: float) -> str:
    return f"{x:g}"


def scheme1_text() -> str:
    """Scheme 1's parts, their components' points and the grades, in one paragraph."""
    shares = " + ".join(f"{_g(share)} {part.replace('_', ' ').title()}" for part, share in SCHEME1_PARTS.items())
    a = ", ".join(f"{_COMPONENT_NAMES[k]} {p}" for k, p in SCHEME1_POINTS["part_a"].items())
    b = ", ".join(f"{_COMPONENT_NAMES[k]} {p}" for k, p in SCHEME1_POINTS["part_b"].items())
    grades = ", ".join(f">= {_g(t)} {g}" if t > -math.inf else f"else {g}" for t, g in SCHEME1_GRADES)
    return (f"Scheme 1 = {shares}. Part A (innovation score), out of {sum(SCHEME1_POINTS['part_a'].values())} "
            f"points: {a}. Part B (seven dimensions, weighted by the Academic Taste Index weights), out of "
            f"{sum(SCHEME1_POINTS['part_b'].values())} points: {b}. Grades: {grades}.")


def _pct(x: float) -> str:
    return f"{100 * x:g}%"


def wape_bands_text() -> str:
    """Scheme 2's bands in one line: ``A [0, 5%) 100->90, ..., F [50, 100%] 20->0 and 0 beyond``."""
    parts = []
    for i, band in enumerate(WAPE_BANDS):
        last = i == len(WAPE_BANDS) - 1
        parts.append(f"{band.grade} [{_pct(band.low) if band.low else '0'}, {_pct(band.high)}{']' if last else ')'} "
                     f"{_g(band.score_at_low)}->{_g(band.score_at_high)}" + (" and 0 beyond" if last else ""))
    return ", ".join(parts)
