"""What the simulated world must reproduce of the paper, and the report that checks a record set against it.

:data:`TARGETS` is the one place the paper's figures live: the regression structure of the Academic Taste Index
over the benchmark's papers (paper section 6 and Table 4) and what the offline default needs to teach the right
lessons (journal impact spanning 0-100, dimensions B-F that are not discipline labels).
:func:`report` runs the paper's dual-target derivation (:func:`scitaste_hf.index.weights.derive_weights` with
:data:`METHOD`, 80/20 split, seed 42, five-fold CV) on a record set's dimension scores and sets each figure beside
its target. The record set the paper's figures come from is the one it published, so the world is checked on a
build's released records (``selected`` + ``backup``, as ``scitaste weights derive --records`` reads them).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scitaste_hf.schema import DIMENSIONS


@dataclass(frozen=True)
class Target:
    """One calibration row: the paper's value, how far the world may be from it, and where it comes from."""

    key: str
    label: str
    paper: float
    tolerance: float
    source: str
    #: ``"within"``: |world - paper| <= tolerance; ``"below"``: world < tolerance (paper is what the paper says).
    kind: str = "within"


#: The derivation the paper's weights come from: Table 4 gives the random forest's (``--method rf``), whose impurity
#: importances spread differently from the linear models' coefficients that the ensemble averages in.
METHOD = "rf"
_WEIGHT_SOURCE = "paper section 6, dual-target derivation (weights of Table 4, renormalised)"
#: The calibration targets, each with its source in the paper.
TARGETS: tuple[Target, ...] = (
    Target("r2.citation_impact", "RF test R2 predicting A from B-G", 0.736, 0.08,
           "paper section 6, analysis 1 (random forest, test split)"),
    Target("r2.journal_impact", "RF test R2 predicting G from A-F", 0.170, 0.08,
           "paper section 6, analysis 2 (random forest, test split)"),
    Target("weight.citation_impact", "derived weight of A (%)", 29.5, 3.0, _WEIGHT_SOURCE),
    *(Target(f"weight.{d}", f"derived weight of {d} (%)", 11.0, 4.0, _WEIGHT_SOURCE) for d in DIMENSIONS[1:-1]),
    Target("weight.journal_impact", "derived weight of G (%)", 15.3, 3.0, _WEIGHT_SOURCE),
    Target("range.journal_impact", "largest journal impact (0-100 scale)", 100.0, 10.0,
           "paper section 5, dimension G: 0.70 x IF percentile + 0.15 x JCR + 0.15 x CAS reaches 100"),
    *(Target(f"eta2.{d}", f"share of {d} explained by discipline (eta2)", 0.0, 0.15,
             "paper section 5: dimensions B-F are not discipline labels", kind="below") for d in DIMENSIONS[1:-1]),
)


def eta_squared(values: np.ndarray, groups: np.ndarray) -> float:
    """Share of the variance of ``values`` between the ``groups`` (0 when ``values`` is constant)."""
    values = np.asarray(values, dtype=float)
    groups = np.asarray(groups)
    total = float(((values - values.mean()) ** 2).sum())
    if total == 0:
        return 0.0
    between = sum(float((groups == g).sum()) * (values[groups == g].mean() - values.mean()) ** 2
                  for g in np.unique(groups))
    return between / total


def measure(dims: np.ndarray, disciplines: np.ndarray) -> dict[str, float]:
    """The world's value of every target from a record set.

    Parameters
    ----------
    dims : ndarray of float, shape (n, 7)
        Dimension scores in :data:`~scitaste_hf.schema.DIMENSIONS` order.
    disciplines : ndarray of str, shape (n,)
        Each record's discipline.
    """
    from scitaste_hf.index.weights import derive_weights

    derived = derive_weights(dims, METHOD)
    out = {f"r2.{target}": models["random_forest"]["test"] for target, models in derived["r2"].items()}
    out.update({f"weight.{d}": 100 * w for d, w in derived["weights"].items()})
    out["range.journal_impact"] = float(dims[:, DIMENSIONS.index("journal_impact")].max())
    out.update({f"eta2.{d}": eta_squared(dims[:, k], disciplines) for k, d in enumerate(DIMENSIONS) if 0 < k < 6})
    return out


def report(dims: np.ndarray, disciplines: np.ndarray) -> list[dict]:
    """Each target with the world's value and whether it passes.

    Returns
    -------
    list of dict
        ``key``, ``label``, ``paper``, ``world``, ``tolerance``, ``kind``, ``passed``, ``source``, in
        :data:`TARGETS` order.
    """
    values = measure(dims, disciplines)
    rows = []
    for t in TARGETS:
        world = values[t.key]
        passed = world < t.tolerance if t.kind == "below" else abs(world - t.paper) <= t.tolerance
        rows.append({"key": t.key, "label": t.label, "paper": t.paper, "world": world, "tolerance": t.tolerance,
                     "kind": t.kind, "passed": bool(passed), "source": t.source})
    return rows
