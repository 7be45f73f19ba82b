"""Percentile bootstrap intervals, the paired bootstrap test, and skill over a no-information floor.

The paper reports no uncertainty; with 50 papers per discipline we must. Papers are resampled with
replacement; every statistic is evaluated on the resample counts with the same code as the point estimate
(see :mod:`scitaste_hf.scoring._arrays`), so an interval can never disagree with its point.

*Skill* says how much of what a predictor that knows nothing about the papers gets wrong a run gets right, on
the same papers (:func:`skill`): for Scheme 2, ``1 - WAPE / WAPE_floor``, the share of the floor's error that
the run removes; for Scheme 1, ``(S1 - S1_floor) / (100 - S1_floor)``, the share of the floor's distance to a
perfect Scheme 1 that the run closes. Both are 0 for the floor itself and 1 for a perfect run, and negative for a
run worse than the floor. The floors are defined in :mod:`scitaste_hf.scoring.floors`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.scoring.inputs import as_answer_matrix, as_scores, check_same_length
from scitaste_hf.scoring.scheme1 import scheme1_batch
from scitaste_hf.scoring.stats import Counts
from scitaste_hf.scoring.wape import check_defined, wape_batch, wape_scores
from scitaste_hf.weights import DEFAULT_WEIGHTS, validate_weights

#: Resamples of the papers behind every interval, unless a caller asks for another number: the default of every
#: ``n_resamples`` (the functions here, the evaluate modules, the leaderboard, the CLI's --n-resamples).
N_RESAMPLES = 1000
#: The most resamples :func:`bootstrap` accepts: far beyond what a stable 95% interval needs (a few thousand),
#: and still minutes, not hours, on the 5,700 papers of the full benchmark.
MAX_RESAMPLES = 100_000
CONFIDENCE = 0.95
SEED = 0
#: An interval needs at least this share of resamples on which its statistic is defined (WAPE is not on a
#: resample that drew only papers with a gold score of 0); below it the interval is None.
MIN_DEFINED = 0.5
# Resample counts are evaluated this many cells (resamples x papers) at a time, so that memory stays bounded
# for any allowed n_resamples; 1,000 resamples of 5,700 papers still fit in one block.
_BLOCK_CELLS = 1 << 23


def _check_resampling(n_resamples: int, seed: int) -> None:
    """Refuse what numpy would reject with a traceback (a negative seed) or what would run for hours."""
    for name, value, low, high in (("n_resamples", n_resamples, 1, MAX_RESAMPLES), ("seed", seed, 0, None)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low or (
                high is not None and value > high):
            bounds = f"between {low} and {high:,}" if high is not None else f">= {low}"
            raise ScitasteError(f"{name} must be a whole number {bounds}, got {value!r}")


def _count_blocks(n: int, n_resamples: int, seed: int) -> Iterator[np.ndarray]:
    """:func:`resample_counts` in blocks of rows; the blocks stacked are exactly ``resample_counts``."""
    _check_resampling(n_resamples, seed)
    rng = np.random.default_rng(seed)
    rows = max(1, _BLOCK_CELLS // n)
    for start in range(0, n_resamples, rows):
        b = min(rows, n_resamples - start)
        picks = rng.integers(0, n, size=(b, n))
        picks += np.arange(b)[:, None] * n
        yield np.bincount(picks.ravel(), minlength=b * n).reshape(b, n)


def resample_counts(n: int, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> np.ndarray:
    """How often each of ``n`` papers appears in each of ``n_resamples`` resamples, shape (B, n).

    Deterministic for a given ``seed``: the same input always gets the same interval.

    Raises
    ------
    ScitasteError
        When ``n_resamples`` is not within 1-:data:`MAX_RESAMPLES` or ``seed`` is negative.
    """
    return np.vstack(list(_count_blocks(n, n_resamples, seed)))


#: The correlations :func:`_statistics` adds when asked (``correlations``): the innovation score's Spearman and each
#: dimension's, which Scheme 1 computes on the way.
CORRELATIONS = ("spearman", *(f"spearman_{k}" for k in DIMENSIONS))


def _statistics(P: np.ndarray, G: np.ndarray, counts: Counts, weights: Mapping[str, float],
                correlations: bool = False) -> dict[str, np.ndarray]:
    """The bootstrapped statistics: WAPE and the Scheme-2 score always, Scheme 1 when ``P`` has dimensions, and
    with ``correlations`` its :data:`CORRELATIONS` too."""
    w = wape_batch(P[:, 0], G[:, 0], counts.f)
    out = {"wape": w, "scheme2": wape_scores(w)}
    if P.shape[1] > 1:
        parts = scheme1_batch(P, G, counts, weights)
        out["scheme1"] = parts["scheme1"]
        if correlations:
            out.update({k: parts[k] for k in CORRELATIONS})
    return out


def resampled_statistics(runs: list[np.ndarray], G: np.ndarray, weights: Mapping[str, float], n_resamples: int,
                         seed: int, correlations: bool = False) -> list[dict[str, np.ndarray]]:
    """Every statistic of each run in ``runs`` (answer matrices against the gold ``G``), on the same
    ``n_resamples`` resamples of the papers drawn from ``seed``, one block of counts at a time: the resamples
    that paired intervals and re-scoring on another gold share (``correlations``: as :func:`_statistics`, for the
    first run)."""
    blocks: list[list[dict[str, np.ndarray]]] = [[] for _ in runs]
    for block in _count_blocks(G.shape[0], n_resamples, seed):
        counts = Counts(block)
        for i, (out, P) in enumerate(zip(blocks, runs)):
            out.append(_statistics(P, G, counts, weights, correlations and i == 0))
    return [{k: np.concatenate([b[k] for b in out]) for k in out[0]} for out in blocks]


def percentile_interval(values: np.ndarray, confidence: float) -> list[float] | None:
    """The percentile interval of the resamples on which the statistic is defined (finite); None when fewer
    than :data:`MIN_DEFINED` of them are, so that no NaN ever reaches a result."""
    defined = values[np.isfinite(values)]
    if defined.size == 0 or defined.size < MIN_DEFINED * values.size:
        return None
    alpha = (1.0 - confidence) / 2.0
    lo, hi = np.percentile(defined, [100 * alpha, 100 * (1 - alpha)])
    return [float(lo), float(hi)]


def _matrices(predictions: Any, references: Any) -> tuple[np.ndarray, np.ndarray]:
    """Answers as (n, 8) matrices, or bare innovation scores as (n, 1)."""
    first = predictions[0] if len(predictions) else None
    if (isinstance(predictions, np.ndarray) and predictions.ndim == 1) or isinstance(first, int | float):
        P = as_scores(predictions, "predictions")[:, None]
        G = as_scores(references, "references")[:, None]
    else:
        P = as_answer_matrix(predictions, "predictions")
        G = as_answer_matrix(references, "references")
    check_same_length(P, G)
    return P, G


def bootstrap(predictions: Any, references: Any, *, weights: Mapping[str, float] | None = None,
              n_resamples: int = N_RESAMPLES, seed: int = SEED, confidence: float = CONFIDENCE
              ) -> dict[str, list[float]]:
    """Percentile bootstrap intervals of WAPE, the Scheme-2 score and (for full answers) Scheme 1.

    Parameters
    ----------
    predictions, references : sequences
        Innovation scores (floats) for WAPE and Scheme 2 only, or answers (dicts, ``Answer`` objects or an
        (n, 8) array) for all three. Scored items only.
    weights : mapping, optional
        Part-B weights of Scheme 1; default :data:`~scitaste_hf.weights.DEFAULT_WEIGHTS`.
    n_resamples : int
        Number of resamples of the papers (default 1,000).
    seed : int
        Seed of the resampling; the same input and seed give the same interval.
    confidence : float
        Coverage of the interval (default 0.95).

    Returns
    -------
    dict
        ``{"wape": [lo, hi], "scheme2": [lo, hi], "scheme1": [lo, hi]}`` (``scheme1`` only for answers).
        Resamples on which a statistic is undefined (WAPE of a resample that drew only gold scores of 0)
        are left out of its interval; with fewer than :data:`MIN_DEFINED` of them defined, it is None.

    Raises
    ------
    ScitasteError
        On invalid scores, ``n_resamples`` outside 1-:data:`MAX_RESAMPLES`, a negative ``seed``, or
        reference scores that are all 0 (WAPE is undefined, as in :func:`~scitaste_hf.scoring.wape`).
    """
    _check_resampling(n_resamples, seed)  # here 0 resamples is no interval to give: an error
    P, G = _matrices(predictions, references)
    return intervals_and_skill(P, G, None, weights=weights, n_resamples=n_resamples, seed=seed,
                               confidence=confidence)[0]


def _skill_values(run: Mapping[str, np.ndarray], floor: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Skill over the floor, element by element (a point estimate or one value per resample); NaN where the
    floor leaves nothing to improve (a WAPE of 0, a Scheme 1 of 100)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        out = {"scheme2": np.where(floor["wape"] > 0, 1.0 - run["wape"] / floor["wape"], np.nan)}
        if "scheme1" in run:
            out["scheme1"] = np.where(floor["scheme1"] < 100.0,
                                      (run["scheme1"] - floor["scheme1"]) / (100.0 - floor["scheme1"]), np.nan)
    return out


def skill(predictions: Any, floor: Any, references: Any, *, weights: Mapping[str, float] | None = None,
          n_resamples: int = N_RESAMPLES, seed: int = SEED, confidence: float = CONFIDENCE
          ) -> dict[str, dict[str, Any]]:
    """Skill of a run over a no-information floor on the same papers, with paired-bootstrap intervals.

    Parameters
    ----------
    predictions, floor, references : sequences
        The run's answers, the floor predictor's answers for the same papers, and the gold, aligned (scored
        papers only); innovation scores for Scheme 2 only, or answers for both schemes, as in :func:`bootstrap`.
    weights, seed, confidence
        As in :func:`bootstrap`.
    n_resamples : int
        Resamples of the papers, the run and the floor resampled together; 0 skips the interval.

    Returns
    -------
    dict
        Per scheme (``scheme2``, and ``scheme1`` for answers): ``skill`` (None where the floor leaves nothing to
        improve), its ``interval`` and ``above_floor``: whether the interval excludes 0 from above (None without
        an interval). A run whose interval reaches 0 is *not above the floor*.
    """
    P, G = _matrices(predictions, references)
    F, _ = _matrices(floor, references)
    return intervals_and_skill(P, G, F, weights=weights, n_resamples=n_resamples, seed=seed,
                               confidence=confidence)[1]


def intervals_and_skill(P: np.ndarray, G: np.ndarray, F: np.ndarray | None, *,
                        weights: Mapping[str, float] | None = None, n_resamples: int = N_RESAMPLES,
                        seed: int = SEED, confidence: float = CONFIDENCE, correlations: bool = False
                        ) -> tuple[dict[str, list[float] | None], dict[str, dict[str, Any]] | None]:
    """:func:`bootstrap`'s intervals and :func:`skill` over the floor ``F`` from one set of resamples, in which
    the run and the floor are resampled together (a summary needs both; resampling the run once saves half).

    Parameters
    ----------
    P, G : ndarray, shape (n, 8) or (n, 1)
        The run's and the gold rows of the scored papers.
    F : ndarray or None
        The floor's rows for the same papers; None for no skill.
    weights, n_resamples, seed, confidence
        As in :func:`skill`; ``n_resamples=0`` gives no intervals (an empty dict) and skill without one.
    correlations : bool
        Also the intervals of the run's :data:`CORRELATIONS` (for answers), from the same resamples.
    """
    if not 0 < confidence < 1:
        raise ScitasteError(f"confidence must be between 0 and 1, got {confidence}")
    w = DEFAULT_WEIGHTS if weights is None else validate_weights(weights)
    check_defined(G[:, 0])  # no resample could have a WAPE: an error, as for the point estimate
    runs = [P] if F is None else [P, F]
    resampled = resampled_statistics(runs, G, w, n_resamples, seed, correlations) if n_resamples else None
    intervals = {} if resampled is None else {k: percentile_interval(v, confidence) for k, v in resampled[0].items()}
    if F is None:
        return intervals, None
    ones = Counts(np.ones((1, G.shape[0])))
    points = _skill_values(_statistics(P, G, ones, w), _statistics(F, G, ones, w))
    spread = {} if resampled is None else _skill_values(*resampled)
    skills = {}
    for name, point in points.items():
        interval = percentile_interval(spread[name], confidence) if spread else None
        skills[name] = {"skill": float(point[0]) if np.isfinite(point[0]) else None, "interval": interval,
                        "above_floor": None if interval is None else bool(interval[0] > 0)}
    return intervals, skills


def paired_bootstrap(predictions_a: Any, predictions_b: Any, references: Any, *,
                     weights: Mapping[str, float] | None = None, n_resamples: int = N_RESAMPLES,
                     seed: int = SEED, confidence: float = CONFIDENCE) -> dict[str, dict[str, Any]]:
    """Paired bootstrap comparison of two runs on the same papers (run A minus run B).

    Both runs are resampled with the same counts, so paper difficulty cancels out. Pass only the papers
    that both runs scored, in the same order as ``references``; parameters as in :func:`bootstrap`.

    Returns
    -------
    dict
        Per statistic (``wape``, ``scheme2`` and, for answers, ``scheme1``): ``difference`` (A - B on all
        papers), ``interval`` of the difference, and ``p_value``, the two-sided bootstrap p-value of no
        difference (twice the smaller tail share of resampled differences on either side of 0, at most 1).
        Both come from the resamples on which the statistic is defined; as in :func:`bootstrap`, they are
        None when fewer than :data:`MIN_DEFINED` of the resamples are.
    """
    if not 0 < confidence < 1:
        raise ScitasteError(f"confidence must be between 0 and 1, got {confidence}")
    PA, G = _matrices(predictions_a, references)
    PB, _ = _matrices(predictions_b, references)
    w = DEFAULT_WEIGHTS if weights is None else validate_weights(weights)
    check_defined(G[:, 0])
    ones = Counts(np.ones((1, G.shape[0])))
    point_a, point_b = _statistics(PA, G, ones, w), _statistics(PB, G, ones, w)
    boot_a, boot_b = resampled_statistics([PA, PB], G, w, n_resamples, seed)
    out = {}
    for name in point_a:
        diff = boot_a[name] - boot_b[name]
        interval = percentile_interval(diff, confidence)
        diff = diff[np.isfinite(diff)]
        tail = None if interval is None else min(np.mean(diff <= 0), np.mean(diff >= 0))
        out[name] = {
            "difference": float(point_a[name][0] - point_b[name][0]),
            "interval": interval,
            "p_value": None if tail is None else float(min(1.0, 2.0 * tail)),
        }
    return out
