"""How well the gold labels themselves are known, carried into the ranks (docs/leaderboard.md#gold-redrawn).

The gold is an estimate. Its composite weights have intervals (``scitaste weights derive``), and a refreshed release
moves its citation-based dimensions (``scitaste release diff``). :class:`GoldDraws` redraws the gold: each draw
takes a weight vector from the weights' intervals (each weight normal around its point, with the standard error
its interval implies, cut at 0 and the vector renormalised to sum 1) and, where more than one release of the same
papers is given, one release's labels (the citation window), and moves every paper's innovation score by what the
drawn vector changes of its composite. A draw of the points themselves (intervals of zero width, one release) is
the gold exactly.

:func:`gold_replicates` is :func:`~scitaste_hf.scoring.ranks.replicates` against redrawn gold: the same resamples of
the papers, and each of :data:`GOLD_DRAWS` draws of the gold paired with an equal share of them, so that the
second rank interval holds both the papers' and the labels' uncertainty. :func:`noise_ceiling` is what a run
that knew the expected gold would score against the redrawn gold: the best a run can be told apart by.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scitaste_hf.errors import InvalidInput
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.scoring.bootstrap import CONFIDENCE, SEED, _skill_values, percentile_interval
from scitaste_hf.scoring.scheme1 import part_a_batch, part_b_batch, scheme1_of
from scitaste_hf.scoring.stats import Counts
from scitaste_hf.scoring.wape import wape_batch, wape_scores

#: Draws of the gold behind a board's second rank interval; each is paired with an equal share of the board's
#: resamples of the papers (RANK_RESAMPLES of them, which it must divide).
GOLD_DRAWS = 20
#: Draws of the gold behind the noise ceiling.
CEILING_DRAWS = 200
#: Seed of the gold's draws (apart from the papers' resampling seed, so that the two are independent).
GOLD_SEED = 1


def weight_intervals(data: Mapping[str, Any], source: str = "the weights") -> dict[str, tuple[float, float]] | None:
    """The per-dimension weight intervals of a weights file (``weights_interval``, as ``scitaste weights derive
    --json`` writes it: dimension -> [low, high], fractions); None when it has none.

    Raises
    ------
    InvalidInput
        For intervals that do not name the seven dimensions, or bounds that are not ``0 <= low <= high <= 1``.
    """
    raw = data.get("weights_interval") if isinstance(data, Mapping) else None
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or set(raw) != set(DIMENSIONS):
        raise InvalidInput(f"{source}: weights_interval must give [low, high] for each of {', '.join(DIMENSIONS)}")
    out = {}
    for key in DIMENSIONS:
        bounds = raw[key]
        ok = (isinstance(bounds, Sequence) and len(bounds) == 2
              and all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds))
        if not ok or not 0.0 <= bounds[0] <= bounds[1] <= 1.0:
            raise InvalidInput(f"{source}: weights_interval of {key} must be [low, high] with 0 <= low <= high <= 1, "
                               f"got {bounds!r}")
        out[key] = (float(bounds[0]), float(bounds[1]))
    return out


def default_draws() -> GoldDraws:
    """How a board without a weights file of its own redraws its gold: the packaged default weights with the
    interval the package derived for them (``weights_interval`` of ``config/weights_default.json``; the paper gives
    none, docs/weights.md#the-default-interval), and no other release."""
    from scitaste_hf.weights import DEFAULT_WEIGHTS, default_config

    return GoldDraws(DEFAULT_WEIGHTS, weight_intervals(default_config(), "config/weights_default.json"))


def release_rows(gold: Sequence[Mapping[str, Any]], other: Sequence[Mapping[str, Any]],
                 source: str = "the other release") -> np.ndarray:
    """Another release's gold rows of the board's papers, in the board's order, shape (n, 8) (innovation score then
    the dimensions): what :class:`GoldDraws` takes as ``releases``. A paper the other release lacks keeps the board's
    own row there (its citation window is drawn from the releases that hold it).

    Raises
    ------
    InvalidInput
        When the other release holds none of the board's papers, or a shared paper's gold is not within 0-100.
    """
    from scitaste_hf.scoring.inputs import as_answer_matrix

    own = {r["bibcode"]: i for i, r in enumerate(gold)}
    shared = [r for r in other if r.get("bibcode") in own]
    if not shared:
        raise InvalidInput(f"{source} holds none of the board's {len(gold)} papers: it is not a release of them")
    rows = as_answer_matrix(gold, "gold").copy()
    rows[[own[r["bibcode"]] for r in shared]] = as_answer_matrix(shared, source)
    return rows


@dataclass(frozen=True)
class GoldDraws:
    """Draws of the gold of one board.

    Parameters
    ----------
    weights : mapping
        The composite's weight vector the gold was built with (dimension -> weight).
    intervals : mapping, optional
        Its ``confidence`` interval per dimension (:func:`weight_intervals`); None: the weights are taken as known.
    releases : sequence of ndarray, optional
        Other releases' gold rows of the same papers, in the same order, shape (n, 8) each (innovation score then
        the dimensions): each draw takes the board's own gold or one of them, with equal chances.
    confidence : float
        The coverage of ``intervals``.
    """

    weights: Mapping[str, float]
    intervals: Mapping[str, tuple[float, float]] | None = None
    releases: Sequence[np.ndarray] = field(default_factory=tuple)
    confidence: float = CONFIDENCE

    @property
    def trivial(self) -> bool:
        """Whether every draw is the gold itself: intervals of zero width (or none) and no other release."""
        return not self.releases and (self.intervals is None or all(lo == hi for lo, hi in self.intervals.values()))

    def of(self, papers: np.ndarray) -> GoldDraws:
        """The draws restricted to some papers (a boolean mask or indices): the same weight vectors and releases
        drawn, for a board's scope."""
        return GoldDraws(self.weights, self.intervals, tuple(np.asarray(r)[papers] for r in self.releases),
                         self.confidence)

    def key(self) -> list[Any]:
        """What the draws depend on, JSON-safe (for a board's derived key)."""
        return [GOLD_DRAWS, CEILING_DRAWS, GOLD_SEED, self.confidence, dict(self.weights),
                None if self.intervals is None else {k: list(v) for k, v in self.intervals.items()},
                [np.round(np.asarray(r, dtype=np.float64), 9).tobytes().hex()[:64] for r in self.releases]]

    def vectors(self, n: int, seed: int = GOLD_SEED) -> np.ndarray:
        """``n`` weight vectors drawn from the intervals, shape (n, 7), each summing to 1 (the point vector, to the
        bit, where an interval has zero width)."""
        from scipy.special import ndtri  # the normal quantile, without importing scipy.stats

        point = np.array([self.weights[k] for k in DIMENSIONS], dtype=np.float64)
        if self.intervals is None:
            se = np.zeros(len(DIMENSIONS))
        else:
            z = ndtri(0.5 + self.confidence / 2)
            se = np.array([(self.intervals[k][1] - self.intervals[k][0]) / (2 * z) for k in DIMENSIONS])
        rng = np.random.default_rng(seed)
        drawn = np.maximum(0.0, point + se * rng.standard_normal((n, len(DIMENSIONS))))
        total = drawn.sum(axis=1, keepdims=True)
        # a draw that cut every weight to 0 keeps the point vector
        return np.where(total > 0, drawn / np.where(total > 0, total, 1.0), point / point.sum())

    def releases_of(self, G: np.ndarray) -> list[np.ndarray]:
        """The board's gold ``G`` (n, 8) and the other releases, as float64: what a draw takes its labels from."""
        releases = [np.asarray(G, dtype=np.float64), *(np.asarray(r, dtype=np.float64) for r in self.releases)]
        for r in releases[1:]:
            if r.shape != releases[0].shape:
                raise InvalidInput(f"another release's gold has shape {r.shape}, the board's {releases[0].shape}: "
                                   "give the same papers in the same order")
        return releases

    def picks(self, n: int, seed: int = GOLD_SEED) -> np.ndarray:
        """Which of :meth:`releases_of` each of ``n`` draws takes (0, the board's own, when there is no other)."""
        if not self.releases:
            return np.zeros(n, dtype=int)
        return np.random.default_rng(seed + 1).integers(0, 1 + len(self.releases), size=n)

    def golds(self, G: np.ndarray, n: int, seed: int = GOLD_SEED) -> np.ndarray:
        """``n`` draws of the gold of the papers of ``G`` (n, 8), shape (n_draws, papers, 8).

        A draw's innovation score is its release's plus what the drawn weights change of that release's composite,
        kept within 0-100; a draw of the point weights leaves it exactly as it is.
        """
        releases = self.releases_of(G)
        vectors = self.vectors(n, seed)
        point = np.array([self.weights[k] for k in DIMENSIONS], dtype=np.float64)
        point = point / point.sum()
        picks = self.picks(n, seed)
        out = np.empty((n, *releases[0].shape))
        for d in range(n):
            base = releases[picks[d]]
            out[d] = base
            out[d, :, 0] = np.clip(base[:, 0] + base[:, 1:] @ (vectors[d] - point), 0.0, 100.0)
        return out


def gold_replicates(P: np.ndarray, G: np.ndarray, F: np.ndarray, draws: GoldDraws, *,
                    weights: Mapping[str, float], n_resamples: int, seed: int = SEED) -> np.ndarray:
    """Scheme-1 skill over the floor ``F`` on each resample of the papers, each against a draw of the gold.

    The resamples are :func:`~scitaste_hf.scoring.ranks.replicates`' (the same ``n_resamples`` and ``seed``), so
    the two are paired; resample ``b`` is scored against draw ``b * GOLD_DRAWS // n_resamples`` of
    :meth:`GoldDraws.golds` (the same for every run of a board). Where the draws are trivial (:attr:`GoldDraws.trivial`)
    the values are exactly those of ``replicates``.

    Parameters
    ----------
    P, G, F : ndarray, shape (n, 8)
        The run's answers (NaN rows for failures), the gold and the floor's answers.
    draws : GoldDraws
        How the gold is redrawn.
    weights : mapping
        Part-B weights of Scheme 1 (the scoring rule's, not redrawn).
    """
    from scitaste_hf.scoring.bootstrap import resample_counts
    from scitaste_hf.scoring.ranks import replicates

    if draws.trivial:
        return replicates(P, G, F, weights=weights, n_resamples=n_resamples, seed=seed)
    scored = ~np.isnan(P).any(axis=1)
    if not scored.any():
        return np.full(n_resamples, np.nan)
    if n_resamples % GOLD_DRAWS:
        raise InvalidInput(f"{n_resamples} resamples cannot be shared equally by {GOLD_DRAWS} draws of the gold")
    counts = resample_counts(G.shape[0], n_resamples, seed)[:, scored]
    golds = draws.golds(G, GOLD_DRAWS)[:, scored]
    releases = [r[scored] for r in draws.releases_of(G)]
    rows = np.arange(n_resamples)
    with np.errstate(divide="ignore", invalid="ignore"):  # a resample that draws none of them is NaN
        run, floor = (_against_draws(M[scored], counts, rows, rows * GOLD_DRAWS // n_resamples, golds, releases,
                                     draws.picks(GOLD_DRAWS), weights) for M in (P, F))
        return _skill_values(run, floor)["scheme1"]


def noise_ceiling(G: np.ndarray, F: np.ndarray, draws: GoldDraws, *, weights: Mapping[str, float],
                  n_draws: int = CEILING_DRAWS, confidence: float = CONFIDENCE) -> dict[str, dict[str, Any]]:
    """The best a run can score when the gold is only known this well: a predictor of the expected gold (the mean
    of the draws) scored against each of ``n_draws`` draws of the gold, on all the papers.

    Returns
    -------
    dict
        For ``scheme1``, ``scheme2``, ``scheme1_skill`` and ``scheme2_skill`` (over the floor ``F``): ``value``, the
        mean over the draws, and ``interval``, their ``confidence`` percentile interval. With trivial draws:
        Scheme 1 and Scheme 2 of 100 and a skill of 1.
    """
    # every draw of trivial draws is the gold itself: one is all of them
    n_draws = 1 if draws.trivial else n_draws
    golds = draws.golds(G, n_draws)
    releases, picks = draws.releases_of(G), draws.picks(n_draws)
    expected = golds.mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        best, floor = (_against_draws(M, np.ones((1, G.shape[0])), np.zeros(n_draws, dtype=int), np.arange(n_draws),
                                      golds, releases, picks, weights) for M in (expected, F))
        skill = _skill_values(best, floor)
    schemes = ("scheme1", "scheme2")
    values = {**{k: best[k] for k in schemes}, **{f"{k}_skill": skill[k] for k in schemes}}
    out = {}
    for key, arr in values.items():
        finite = arr[np.isfinite(arr)]
        out[key] = {"value": float(finite.mean()) if finite.size else None,
                    "interval": percentile_interval(arr, confidence)}
    return out


def _against_draws(P: np.ndarray, counts: np.ndarray, count_of: np.ndarray, draw_of: np.ndarray, golds: np.ndarray,
                   releases: Sequence[np.ndarray], picks: np.ndarray,
                   weights: Mapping[str, float]) -> dict[str, np.ndarray]:
    """WAPE, Scheme 2 and Scheme 1 of the answers ``P`` (n, 8) on the resample counts ``counts[count_of[i]]``
    against the draw ``golds[draw_of[i]]`` of the gold, for each i: what
    :func:`~scitaste_hf.scoring.bootstrap._statistics` gives for one resample and draw at a time.

    A draw keeps the dimensions of its release (``releases[picks[d]]``, :meth:`GoldDraws.golds`), so that only Part A
    and WAPE are computed a draw, and Part B once a release, on the distinct resamples of its draws.
    """
    wape, part_a, part_b = (np.empty(len(draw_of)) for _ in range(3))
    for d in np.unique(draw_of):
        mine = draw_of == d
        block = Counts(counts[count_of[mine]])
        wape[mine] = wape_batch(P[:, 0], golds[d, :, 0], block.f)
        part_a[mine] = part_a_batch(P[:, 0], golds[d, :, 0], block)["part_a"]
    release_of = picks[draw_of]
    for r in np.unique(release_of):
        mine = release_of == r
        distinct, back = np.unique(count_of[mine], return_inverse=True)
        part_b[mine] = part_b_batch(P[:, 1:], releases[r][:, 1:], Counts(counts[distinct]), weights)["part_b"][back]
    return {"wape": wape, "scheme2": wape_scores(wape), "scheme1": scheme1_of({"part_a": part_a, "part_b": part_b})}
