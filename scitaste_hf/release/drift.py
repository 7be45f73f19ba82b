"""How the papers of two releases differ (docs/releases.md): which papers are in and out of each split, how their
citation counts changed, how each dimension and the composite drifted (as distributions over each release, and
paper by paper over the papers both hold), and how stable the ranking is.

Every statistic comes with a percentile bootstrap interval: papers are resampled with replacement with the counts
of :func:`scitaste_hf.scoring.bootstrap.resample_counts`, the same resampling the scores use; a paper-by-paper
statistic resamples the shared papers (old and new value together), a distribution shift resamples each release
on its own.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.release.folder import Release
from scitaste_hf.schema import DIMENSIONS, SPLITS
from scitaste_hf.scoring.bootstrap import CONFIDENCE, percentile_interval, resample_counts

#: The scores compared: the composite, then the seven dimensions.
SCORES = ("innovation_score", *DIMENSIONS)
#: Papers listed per score as the largest movers.
TOP_MOVERS = 5


def score_quartiles(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """The quartile (0 the lowest .. 3 the highest) of each score among ``scores``: the rule by which the sampler
    stratifies a pool (:mod:`scitaste_hf.builder.sample`), so that a paper that moves quartile here would have
    been drawn from another stratum."""
    values = np.asarray(scores, dtype=float)
    return np.searchsorted(np.quantile(values, [0.25, 0.5, 0.75]), values, side="right")


def _value(record: Mapping[str, Any], score: str) -> float:
    return float(record[score] if score == "innovation_score" else record["dimension_scores"][score])


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho; NaN when either side is constant (it has no ranking: undefined, not a warning)."""
    from scipy.stats import spearmanr

    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return float("nan")
    return float(spearmanr(x, y).statistic)


def _boot(n: int, statistic: Callable[[np.ndarray], float], n_resamples: int, seed: int) -> list[float] | None:
    """The percentile interval of ``statistic(counts)`` over resamples of ``n`` papers (None when it is undefined
    on too many of them); ``counts`` says how often each paper is drawn."""
    if not n_resamples:
        return None
    values = np.array([statistic(c) for c in resample_counts(n, n_resamples, seed)])
    return percentile_interval(values, CONFIDENCE)


def _weighted_mean(x: np.ndarray) -> Callable[[np.ndarray], float]:
    return lambda c: float(c @ x / c.sum())


def _drawn(c: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(c.size), c)


def _resampled_spearman(x: np.ndarray, y: np.ndarray) -> Callable[[np.ndarray], float]:
    return lambda c: _spearman(x[_drawn(c)], y[_drawn(c)])


def shared_papers(old: Release, new: Release) -> list[str]:
    """The bibcodes both releases hold (in either split), sorted.

    Raises
    ------
    ScitasteError
        When they share none: there is nothing to compare paper by paper.
    """
    shared = sorted(set(old.records()) & set(new.records()))
    if not shared:
        raise ScitasteError(f"{old.path} and {new.path} share no paper: nothing to compare paper by paper")
    return shared


def membership(old: Release, new: Release) -> dict[str, Any]:
    """Papers in and out of each split.

    Returns
    -------
    dict
        Per split: ``old`` and ``new`` (papers), ``stayed``, ``left`` (``to_other_split``, ``out_of_release``) and
        ``joined`` (``from_other_split``, ``new_to_release``); and ``published_after_old_as_of``: the papers of
        the new release from a year after the old release's as-of year (``in_new``), and how many of them the old
        one holds (``in_old``; 0 when it is a true as-of release). None when the old release has no as-of date.
    """
    a, b = old.records(), new.records()
    out: dict[str, Any] = {}
    for split in SPLITS:
        was = {k for k, r in a.items() if r["split"] == split}
        now = {k for k, r in b.items() if r["split"] == split}
        out[split] = {"old": len(was), "new": len(now), "stayed": len(was & now),
                      "left": {"to_other_split": len((was - now) & set(b)), "out_of_release": len(was - set(b))},
                      "joined": {"from_other_split": len((now - was) & set(a)), "new_to_release": len(now - set(a))}}
    if old.as_of is None:
        out["published_after_old_as_of"] = None
    else:
        year = old.as_of.year
        # a paper without a year is not known to be later
        out["published_after_old_as_of"] = {"year_after": year,
                                            "in_new": sum((r["year"] or 0) > year for r in b.values()),
                                            "in_old": sum((r["year"] or 0) > year for r in a.values())}
    return out


def citations(old: Release, new: Release, shared: Sequence[str], *, n_resamples: int, seed: int
              ) -> dict[str, Any] | None:
    """How the shared papers' citation counts changed (new minus old); None when either release has no counts.

    Returns
    -------
    dict
        ``n``, ``grew``, ``same``, ``fell`` (papers), ``total_old`` and ``total_new``, the ``mean_change`` and
        ``median_change`` (``value`` and ``interval``), and each release's citation ``graph`` as its card records
        it (None for a release that does not).
    """
    keys = [k for k in shared if k in old.citations and k in new.citations]
    if not keys:
        return None
    x = np.array([old.citations[k] for k in keys], dtype=float)
    y = np.array([new.citations[k] for k in keys], dtype=float)
    d = y - x
    return {"n": len(keys), "grew": int((d > 0).sum()), "same": int((d == 0).sum()), "fell": int((d < 0).sum()),
            "total_old": int(x.sum()), "total_new": int(y.sum()),
            "mean_change": {"value": float(d.mean()), "interval": _boot(len(d), _weighted_mean(d), n_resamples, seed)},
            "median_change": {"value": float(np.median(d)),
                              "interval": _boot(len(d), lambda c: float(np.median(d[_drawn(c)])), n_resamples,
                                                seed)},
            "graph": {"old": old.provenance.get("graph"), "new": new.provenance.get("graph")}}


def drift(old: Release, new: Release, shared: Sequence[str], *, n_resamples: int, seed: int) -> dict[str, Any]:
    """Each score's drift, as distributions and paper by paper.

    Returns
    -------
    dict
        Per score of :data:`SCORES`: ``distribution`` (over every paper of each release: ``mean_old``,
        ``mean_new``, ``shift`` with its ``interval``, the Kolmogorov-Smirnov ``ks`` statistic and its
        ``ks_p_value``) and ``per_paper`` (over the shared papers: ``mean_change`` and ``mean_abs_change`` with
        intervals, ``spearman`` of old and new with its interval, and the ``largest`` movers).
    """
    from scipy.stats import ks_2samp

    a, b = old.records(), new.records()
    out = {}
    for score in SCORES:
        xa = np.array([_value(r, score) for r in a.values()])
        xb = np.array([_value(r, score) for r in b.values()])
        shift = None
        if n_resamples:
            # Each release is resampled on its own (the new one with the next seed): two samples, not pairs.
            means_a = resample_counts(len(xa), n_resamples, seed) @ xa / len(xa)
            means_b = resample_counts(len(xb), n_resamples, seed + 1) @ xb / len(xb)
            shift = percentile_interval(means_b - means_a, CONFIDENCE)
        ks = ks_2samp(xa, xb)
        x = np.array([_value(a[k], score) for k in shared])
        y = np.array([_value(b[k], score) for k in shared])
        d = y - x
        order = np.argsort(-np.abs(d), kind="stable")[:TOP_MOVERS]
        out[score] = {
            "distribution": {"mean_old": float(xa.mean()), "mean_new": float(xb.mean()),
                             "shift": float(xb.mean() - xa.mean()), "interval": shift,
                             "ks": float(ks.statistic), "ks_p_value": float(ks.pvalue)},
            "per_paper": {
                "n": len(shared),
                "mean_change": {"value": float(d.mean()),
                                "interval": _boot(len(d), _weighted_mean(d), n_resamples, seed)},
                "mean_abs_change": {"value": float(np.abs(d).mean()),
                                    "interval": _boot(len(d), _weighted_mean(np.abs(d)), n_resamples, seed)},
                "spearman": {"value": None if np.isnan(rho := _spearman(x, y)) else rho,
                             "interval": _boot(len(d), _resampled_spearman(x, y), n_resamples, seed)},
                "largest": [{"bibcode": shared[i], "old": float(x[i]), "new": float(y[i])} for i in order]}}
    return out


def quartile_moves(old: Release, new: Release, shared: Sequence[str], *, n_resamples: int, seed: int
                   ) -> dict[str, Any]:
    """How many of the old release's selected papers that the new one still holds would move composite quartile
    (:func:`score_quartiles`, within the paper's discipline in each release, both splits together).

    Returns
    -------
    dict
        ``n`` (selected papers still held), ``moved`` and ``share`` with its ``interval``, and ``transitions``:
        ``[old quartile][new quartile]`` counts, quartile 1 the lowest.
    """
    a, b = old.records(), new.records()

    def quartiles(records: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
        out: dict[str, int] = {}
        for discipline in {r["discipline"] for r in records.values()}:
            keys = [k for k, r in records.items() if r["discipline"] == discipline]
            out.update(zip(keys, score_quartiles([records[k]["innovation_score"] for k in keys]).tolist()))
        return out

    qa, qb = quartiles(a), quartiles(b)
    keys = [k for k in shared if a[k]["split"] == "selected"]
    moved = np.array([qa[k] != qb[k] for k in keys], dtype=float)
    transitions = np.zeros((4, 4), dtype=int)
    for k in keys:
        transitions[qa[k], qb[k]] += 1
    return {"n": len(keys), "moved": int(moved.sum()), "share": float(moved.mean()) if keys else None,
            "interval": _boot(len(keys), _weighted_mean(moved), n_resamples, seed) if keys else None,
            "transitions": transitions.tolist()}
