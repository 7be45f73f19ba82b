"""What the ``rtaste_brier`` and ``rtaste_ranking`` evaluate modules return, as plain functions (the modules are
thin wrappers over these), and example inputs from the bundled synthetic release for their Spaces."""

from __future__ import annotations

from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.events import resolve
from scitaste_hf.rtaste.metrics import (
    ABOVE_RANDOM,
    RANDOM_TOP1,
    UNIT,
    UNIT_DIFFERENCE,
    base_rate_forecast,
    brier_score,
    check_outcomes,
    check_probabilities,
    grouped_mean,
    top1_credit,
)
from scitaste_hf.rtaste.schema import N_MVES, VALUE_MAX
from scitaste_hf.scoring.bootstrap import N_RESAMPLES, SEED


def _group_labels(groups: list[Any] | None, n: int) -> list[str]:
    if groups is None:
        return [str(i) for i in range(n)]
    if len(groups) != n:
        raise ScitasteError(f"groups has {len(groups)} entries for {n} items")
    return [str(g) for g in groups]


def brier_summary(predictions: list[Any], references: list[Any], groups: list[Any] | None = None, *,
                  n_resamples: int = N_RESAMPLES, seed: int = SEED) -> dict[str, Any]:
    """The Brier score of forecasts with coverage, an interval and the base-rate forecast's score.

    A ``None`` (or NaN) prediction is an unanswered forecast: left out and counted in coverage, never scored
    as 0.5. Any other prediction must be a probability within 0-1, and every reference 0 or 1.

    Parameters
    ----------
    predictions : list of float or None
        Probability that each event occurs.
    references : list of {0, 1}
        Whether each event occurred.
    groups : list of str, optional
        Each event's seed paper: the interval resamples seed papers (default: each event on its own), and with
        two or more seed papers ``base_rate_brier`` scores the forecast that gives each event the event rate of
        the other seed papers.
    n_resamples : int
        0 skips the 95% interval (:func:`~scitaste_hf.rtaste.metrics.grouped_mean`); otherwise not used.
    seed : int
        Not used by the intervals (kept for callers that pass it).

    Returns
    -------
    dict
        ``brier`` and ``ci`` (``None`` when nothing was answered; clipped to 0-1, and then ``ci_clipped`` is
        true), ``base_rate_brier``, ``event_rate``, ``n_scored``, ``n_total``, ``coverage``.
    """
    if len(predictions) != len(references):
        raise ScitasteError(f"predictions and references differ in length: {len(predictions)} vs {len(references)}")
    outcomes = check_outcomes(references)
    labels = _group_labels(groups, len(references))
    answered = np.array([p is not None and not (isinstance(p, float) and np.isnan(p)) for p in predictions])
    result = {"brier": None, "ci": None, "ci_clipped": False, "base_rate_brier": None,
              "event_rate": float(outcomes.mean()), "n_scored": int(answered.sum()), "n_total": len(references),
              "coverage": float(answered.mean())}
    if not answered.any():
        return result
    p = check_probabilities([x for x, a in zip(predictions, answered) if a])
    o = outcomes[answered]
    result["brier"] = brier_score(p, o)
    interval = grouped_mean((p - o) ** 2, [g for g, a in zip(labels, answered) if a], n_resamples=n_resamples,
                            seed=seed, bounds=UNIT)
    result["ci"], result["ci_clipped"] = interval["interval"], interval["clipped"]
    if groups is not None and len(set(labels)) > 1:
        result["base_rate_brier"] = brier_score(base_rate_forecast(outcomes, labels)[answered], o)
    return result


def ranking_summary(predictions: list[Any], references: list[Any], groups: list[Any] | None = None, *,
                    n_resamples: int = N_RESAMPLES, seed: int = SEED) -> dict[str, Any]:
    """Top-1 hit rates of the agents' rankings against random choice and the first-written MVE.

    Parameters
    ----------
    predictions : list of list of int
        Per condition, the agent's ranks of its five MVEs in written order: a permutation of 1-5.
    references : list of list of float
        Per condition, the auditors' aggregated (median) value 0-3 of each MVE, in written order.
    groups : list of str, optional
        Each condition's seed paper; intervals resample these (default: each condition on its own).
    n_resamples : int
        0 skips the 95% intervals (:func:`~scitaste_hf.rtaste.metrics.grouped_mean`); otherwise not used.
    seed : int
        Not used by the intervals (kept for callers that pass it).

    Returns
    -------
    dict
        ``top1_hit_rate``, ``first_written_hit_rate``, ``random_hit_rate`` (0.2),
        ``top1_minus_random``, ``top1_minus_first_written``, each with its interval in ``ci`` (clipped to what
        the statistic can take: 0-1, -0.2-0.8, -1-1; ``ci_clipped`` names those that were), and
        ``n_conditions``. Ties at the highest value share the credit
        (:func:`~scitaste_hf.rtaste.metrics.top1_credit`).
    """
    if len(predictions) != len(references):
        raise ScitasteError(f"predictions and references differ in length: {len(predictions)} vs {len(references)}")
    if not predictions:
        raise ScitasteError("no conditions to score")
    for i, ranks in enumerate(predictions):
        if ranks is None or sorted(ranks) != list(range(1, N_MVES + 1)):
            raise ScitasteError(f"predictions[{i}] = {ranks} is not a permutation of the ranks 1-{N_MVES}")
    for i, values in enumerate(references):
        if values is None or len(values) != N_MVES or any(
                isinstance(v, bool) or not isinstance(v, int | float) or not 0 <= v <= VALUE_MAX for v in values):
            raise ScitasteError(f"references[{i}] = {values} must be the {N_MVES} MVEs' values within 0-{VALUE_MAX}")
    labels = _group_labels(groups, len(predictions))
    values = np.array(references, dtype=np.float64)
    agent = top1_credit(np.array([list(r).index(1) for r in predictions]), values)
    first = top1_credit(np.zeros(len(predictions), dtype=int), values)
    options = {"n_resamples": n_resamples, "seed": seed}
    stats = {"top1_hit_rate": grouped_mean(agent, labels, **options, bounds=UNIT),
             "first_written_hit_rate": grouped_mean(first, labels, **options, bounds=UNIT),
             "top1_minus_random": grouped_mean(agent - RANDOM_TOP1, labels, **options, bounds=ABOVE_RANDOM),
             "top1_minus_first_written": grouped_mean(agent - first, labels, **options, bounds=UNIT_DIFFERENCE)}
    return {**{name: s["estimate"] for name, s in stats.items()}, "random_hit_rate": RANDOM_TOP1,
            "ci": {name: s["interval"] for name, s in stats.items()},
            "ci_clipped": sorted(name for name, s in stats.items() if s["clipped"]), "n_conditions": len(predictions)}


def example_inputs(name: str, n: int = 6) -> dict[str, list[Any]]:
    """Inputs for ``rtaste_brier`` or ``rtaste_ranking`` from ``n`` conditions of the bundled synthetic release,
    spread over its seed papers (predictions and references only, as the metric Space's editor takes them).

    Parameters
    ----------
    name : str
        ``rtaste_brier`` (the agent's probabilities of the conditions' resolved events) or ``rtaste_ranking``
        (the conditions' ranks and median values).
    n : int
        Number of conditions.
    """
    from scitaste_hf.rtaste.release import load_release
    from scitaste_hf.rtaste.report import labels

    groups = list(load_release().by_condition().values())
    chosen = groups[:: max(1, len(groups) // n)][:n]
    if name == "rtaste_brier":
        rows = [r for rows in chosen for r in rows if resolve(r) is not None]
        return {"predictions": [r.probability for r in rows], "references": [int(resolve(r)) for r in rows]}
    if name == "rtaste_ranking":
        return {"predictions": [[r.rank for r in rows] for rows in chosen],
                "references": [labels(rows)["value"].tolist() for rows in chosen]}
    raise ScitasteError(f"no rTaste example inputs for {name!r}")
