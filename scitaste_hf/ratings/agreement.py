"""How far the expert ratings agree: between raters (ICC(2,k), a quadratic-weighted kappa on binned scores), with
the bibliometric gold (Spearman, MAE), and each rater with the others (rater quality); and how many ratings per paper
the consensus needs. The definitions are in docs/ratings.md.

Every statistic comes with a percentile-bootstrap interval over the papers, as the scores do
(:mod:`scitaste_hf.scoring.bootstrap`): the papers are resampled with replacement, and each statistic is evaluated on
the matrix of resample counts by the same code as its point estimate (the row of ones), so that an interval can never
disagree with its point. All the statistics of a report share one set of resamples. The reliability statistics
(ICC(2,1), ICC(2,k), the kappa) speak of raters in general, not only of the few who rated, so their intervals add the
spread from resampling the raters (:func:`two_way`): resampling the papers alone holds the raters fixed, and with
three raters who differ in their average scores it covered the true ICC(2,1) about 70% of the time, not 95%
(docs/ratings.md#how-sure-the-reliability-is).

The ratings need not form a complete papers x raters table: raters come and go, and a paper's raters are whoever the
assignment gave it. The variance components behind the ICC are therefore estimated from pairs of ratings (same paper,
same rater, or neither), which on a complete table gives exactly Shrout and Fleiss's ANOVA estimates (tested on their
published example).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.ratings.guide import NUMBERS
from scitaste_hf.scoring.bootstrap import CONFIDENCE, N_RESAMPLES, SEED, percentile_interval, resample_counts
from scitaste_hf.scoring.stats import Counts, Ranked, spearman

#: A paper enters the consensus and the agreement statistics once it has this many ratings (of raters not flagged).
MIN_RATERS = 3
#: The bins of the weighted kappa: 0-20, 20-40, 40-60, 60-80, 80-100 (a score on an edge goes to the upper bin).
BIN_EDGES: tuple[float, ...] = (20.0, 40.0, 60.0, 80.0)
#: A rater is flagged when the lower end of the 95% interval of their disagreement, divided by the median
#: disagreement of the other raters, exceeds this ratio.
FLAG_RATIO = 1.5
#: Ratings with a leave-one-out consensus a rater needs before their disagreement is judged.
MIN_JUDGED = 10
#: Fewest papers with :data:`MIN_RATERS` ratings for any agreement statistic.
MIN_PAPERS = 5
#: The consensus reliability, ICC(2,k), that the planning aims at.
TARGET_RELIABILITY = 0.8
#: The half-width of the interval of the consensus's Spearman correlation with the gold that the planning aims at.
TARGET_HALF_WIDTH = 0.1


@dataclass(frozen=True)
class Table:
    """Ratings in long form: for rating i, its paper ``paper[i]`` (an index into ``papers``), its rater
    ``rater[i]`` (into ``raters``) and its eight numbers ``values[i]`` (in :data:`~scitaste_hf.ratings.guide.NUMBERS`
    order)."""

    papers: tuple[str, ...]
    raters: tuple[str, ...]
    paper: np.ndarray
    rater: np.ndarray
    values: np.ndarray

    @classmethod
    def of(cls, rows: Sequence[Mapping[str, Any]], papers: Sequence[str]) -> Table:
        """The ratings ``rows`` (``rater``, ``bibcode`` and the eight numbers) of the papers ``papers``, in that
        order; ratings of other papers are left out."""
        index = {b: i for i, b in enumerate(papers)}
        rows = [r for r in rows if r["bibcode"] in index]
        raters = tuple(dict.fromkeys(r["rater"] for r in rows))
        by_rater = {r: i for i, r in enumerate(raters)}
        return cls(tuple(papers), raters, np.array([index[r["bibcode"]] for r in rows], dtype=np.intp),
                   np.array([by_rater[r["rater"]] for r in rows], dtype=np.intp),
                   np.array([[float(r[n]) for n in NUMBERS] for r in rows], dtype=np.float64).reshape(-1, len(NUMBERS)))

    def per_paper(self) -> np.ndarray:
        """The number of ratings of each paper."""
        return np.bincount(self.paper, minlength=len(self.papers)).astype(np.float64)

    def consensus(self) -> np.ndarray:
        """The mean rating of each paper, (papers, 8); NaN for a paper without one."""
        n = self.per_paper()
        sums = np.stack([np.bincount(self.paper, self.values[:, j], len(self.papers)) for j in range(len(NUMBERS))], 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return sums / n[:, None]


def _estimate(values: np.ndarray, confidence: float) -> dict[str, Any]:
    """A statistic evaluated on the row of ones (first) and on each resample (the rest): its point estimate (None
    where undefined) and percentile interval (:func:`~scitaste_hf.scoring.bootstrap.percentile_interval`)."""
    point = float(values[0])
    return {"estimate": point if math.isfinite(point) else None,
            "interval": percentile_interval(values[1:], confidence)}


def _counts(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """The row of ones (the point estimate) above ``n_resamples`` rows of resample counts of ``n`` papers."""
    ones = np.ones((1, n))
    return ones if n_resamples == 0 else np.vstack([ones, resample_counts(n, n_resamples, seed)])


def pair_variances(t: Table, column: int, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Half the mean squared difference between two ratings of one number, per row of ``counts`` (how often each
    paper is drawn): over pairs of ratings of different papers by different raters (``d0``, which estimates the
    variance of papers + raters + error) and over pairs of ratings of the same paper (``dp``: raters + error).

    A paper drawn twice counts as two papers rated by the same raters, as in any bootstrap of an ANOVA. Each sum of
    squared differences over pairs is ``N sum(x^2) - (sum x)^2`` of its group, so no pair is formed explicitly.
    """
    x = t.values[:, column]
    P, R = len(t.papers), len(t.raters)
    n = t.per_paper()
    s1, s2 = np.bincount(t.paper, x, P), np.bincount(t.paper, x * x, P)
    A, X = np.zeros((P, R)), np.zeros((P, R))
    A[t.paper, t.rater] = 1.0
    X[t.paper, t.rater] = x
    w = np.asarray(counts, dtype=np.float64)
    N = w @ n
    every = N * (w @ s2) - (w @ s1) ** 2
    paper = w @ (n * s2 - s1 * s1)
    NR, R1, R2 = w @ A, w @ X, w @ (X * X)
    rater = (NR * R2 - R1 * R1).sum(axis=1)
    pairs, paper_pairs, rater_pairs = N * (N - 1) / 2, w @ (n * (n - 1) / 2), (NR * (NR - 1) / 2).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        d0 = (every - paper - rater) / (pairs - paper_pairs - rater_pairs) / 2
        dp = paper / paper_pairs / 2
    return d0, dp


def rater_pair_variances(t: Table, column: int, rater_counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pair_variances` on every paper once with each rater drawn ``rater_counts`` times (rows of resample
    counts of the raters): the spread that resampling the raters adds.

    A rater drawn twice stays one rater: pairs of their ratings of two papers count as pairs of the same rater, and
    the two copies of one of their ratings form no pair at all (a copy agreeing with itself is no agreement between
    raters). With every count 1 this is exactly :func:`pair_variances` with every paper once.
    """
    x = t.values[:, column]
    P, R = len(t.papers), len(t.raters)
    A, X = np.zeros((P, R)), np.zeros((P, R))
    A[t.paper, t.rater] = 1.0
    X[t.paper, t.rater] = x
    X2 = X * X
    v = np.asarray(rater_counts, dtype=np.float64)
    cA, cX, cX2 = A.sum(axis=0), X.sum(axis=0), X2.sum(axis=0)
    N = v @ cA
    every = N * (v @ cX2) - (v @ cX) ** 2
    n, s1, s2 = v @ A.T, v @ X.T, v @ X2.T  # per resample and paper: its ratings, their sum and sum of squares
    paper = (n * s2 - s1 * s1).sum(axis=1)
    paper_pairs = (n * (n - 1) / 2).sum(axis=1)
    v2 = v * v
    rater = v2 @ (cA * cX2 - cX * cX)
    rater_pairs = (v2 @ (cA * cA) - v @ cA) / 2
    copies = ((v2 - v) @ cA) / 2  # pairs of two copies of one rating: same paper and same rater, no difference
    pairs = N * (N - 1) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        d0 = (every - paper - rater) / (pairs - paper_pairs - rater_pairs + copies) / 2
        dp = paper / (paper_pairs - copies) / 2
    return d0, dp


def rater_pair_confusions(t: Table, column: int) -> np.ndarray:
    """:func:`pair_confusions` summed over the papers by pair of raters, shape (raters, raters, bins * bins): entry
    (a, b) counts the ordered pairs of a rating by a and a rating by b of the same paper."""
    bins = np.digitize(t.values[:, column], BIN_EDGES)
    K = len(BIN_EDGES) + 1
    R = len(t.raters)
    out = np.zeros((R, R, K * K))
    order = np.argsort(t.paper, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(t.paper[order]) != 0])
    for group in np.split(order, starts[1:]):
        if group.size < 2:
            continue
        a, b = np.meshgrid(group, group, indexing="ij")
        off = a != b
        np.add.at(out, (t.rater[a[off]], t.rater[b[off]], bins[a[off]] * K + bins[b[off]]), 1.0)
    return out


def two_way(paper_values: np.ndarray, rater_values: np.ndarray, confidence: float) -> dict[str, Any]:
    """A reliability statistic's estimate and interval from its values on the paper resamples and on the rater
    resamples (each with the point estimate first, as :func:`_estimate` takes them): the interval's lower and upper
    distances from the estimate are those of the two percentile intervals added in quadrature.

    Resampling papers holds the raters fixed and resampling raters holds the papers fixed; the two spreads add, as
    independent sources of error do. The rating error moves with either, so it is counted in both: the interval errs
    wide, most where many raters each rated a part of the papers (resampling the raters then also changes which
    papers carry the ratings). Resampling both at once, with the copies of a drawn rater as raters of their own,
    errs far more (copies agree perfectly). The coverage measured by simulation is in docs/ratings.md. Without a rater
    interval (no resamples, or too few of them defined) it is the paper interval."""
    papers, raters = _estimate(paper_values, confidence), _estimate(rater_values, confidence)
    point = papers["estimate"]
    if point is None or papers["interval"] is None or raters["interval"] is None:
        return papers
    low = math.hypot(point - papers["interval"][0], point - raters["interval"][0])
    high = math.hypot(papers["interval"][1] - point, raters["interval"][1] - point)
    return {"estimate": point, "interval": [point - low, point + high]}


def icc(d0: np.ndarray, dp: np.ndarray, k: float) -> tuple[np.ndarray, np.ndarray]:
    """ICC(2,1) and ICC(2,k) (two-way random effects, absolute agreement) from :func:`pair_variances`: with the
    papers' variance ``d0 - dp`` and the raters' plus error's ``dp``, ICC(2,1) = (d0 - dp) / d0 and
    ICC(2,k) = (d0 - dp) / (d0 - dp + dp / k). On a complete table these are Shrout and Fleiss's
    (BMS - EMS) / (BMS + (k - 1) EMS + k (JMS - EMS) / n) and (BMS - EMS) / (BMS + (JMS - EMS) / n)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        papers = d0 - dp
        return papers / d0, papers / (papers + dp / k)


def pair_confusions(t: Table, column: int) -> np.ndarray:
    """Per paper, the counts of ordered pairs of its ratings (two different ratings, both orders) by bin
    (:data:`BIN_EDGES`), shape (papers, bins * bins): the confusion matrix of the pooled pairs, paper by paper."""
    bins = np.digitize(t.values[:, column], BIN_EDGES)
    K = len(BIN_EDGES) + 1
    out = np.zeros((len(t.papers), K * K))
    order = np.argsort(t.paper, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(t.paper[order]) != 0])
    for group in np.split(order, starts[1:]):
        if group.size < 2:
            continue
        a, b = np.meshgrid(bins[group], bins[group], indexing="ij")
        off = ~np.eye(group.size, dtype=bool)
        np.add.at(out[t.paper[group[0]]], a[off] * K + b[off], 1.0)
    return out


def quadratic_kappa(confusions: np.ndarray) -> np.ndarray:
    """Cohen's kappa with quadratic weights of each confusion matrix in ``confusions`` (..., bins * bins); NaN when
    the marginals leave no disagreement to expect. Equal to ``sklearn.metrics.cohen_kappa_score(a, b,
    weights="quadratic")`` of the pairs behind each matrix (tested); computed here on the matrices because the
    bootstrap needs it a thousand times per number, which scikit-learn's per-call validation makes take minutes."""
    K = round(math.sqrt(confusions.shape[-1]))
    C = confusions.reshape(*confusions.shape[:-1], K, K)
    i, j = np.indices((K, K))
    weights = (i - j) ** 2
    total = C.sum(axis=(-2, -1))
    expected = C.sum(axis=-1)[..., :, None] * C.sum(axis=-2)[..., None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        expected = expected / total[..., None, None]
        return 1.0 - (weights * C).sum(axis=(-2, -1)) / (weights * expected).sum(axis=(-2, -1))


def ratings_needed(reliability: float | None, target: float = TARGET_RELIABILITY) -> int | None:
    """Ratings per paper for the consensus to reach ``target`` reliability, by the Spearman-Brown formula from the
    single-rater reliability ICC(2,1): k = target (1 - r) / (r (1 - target)), rounded up; None when ``r <= 0`` (no
    number of raters gets there)."""
    if reliability is None or not reliability > 0:
        return None
    if reliability >= 1:
        return 1
    return max(1, math.ceil(target * (1 - reliability) / (reliability * (1 - target)) - 1e-9))


def papers_needed(rho: float | None, half_width: float = TARGET_HALF_WIDTH, confidence: float = CONFIDENCE
                  ) -> int | None:
    """Papers for the interval of a Spearman correlation ``rho`` to have ``half_width``, rounded up: with Bonett and
    Wright's (2000) variance of Fisher's z of a Spearman correlation, (1 + rho^2 / 2) / (n - 3), and the delta method
    back to rho, n = 3 + (1 + rho^2 / 2) (z_c (1 - rho^2) / half_width)^2, z_c the normal quantile of
    ``confidence``. None for an undefined ``rho``."""
    if rho is None or not math.isfinite(rho):
        return None
    from scipy.stats import norm

    z = norm.ppf(0.5 + confidence / 2)
    return 3 + math.ceil((1 + rho**2 / 2) * (z * (1 - rho**2) / half_width) ** 2 - 1e-9)


def _papers_needed(spearman: Mapping[str, Any], confidence: float) -> dict[str, Any]:
    """:func:`papers_needed` at a Spearman estimate and over its interval: fewest at the end farthest from 0, most at
    the point nearest 0 (the formula falls as |rho| grows)."""
    interval = spearman["interval"]
    if interval is None:
        return {"estimate": papers_needed(spearman["estimate"], confidence=confidence), "interval": None}
    nearest = 0.0 if interval[0] <= 0 <= interval[1] else min(interval, key=abs)
    return {"estimate": papers_needed(spearman["estimate"], confidence=confidence),
            "interval": [papers_needed(max(interval, key=abs), confidence=confidence),
                         papers_needed(nearest, confidence=confidence)]}


def rater_quality(t: Table, *, min_raters: int = MIN_RATERS, n_resamples: int = N_RESAMPLES, seed: int = SEED,
                  confidence: float = CONFIDENCE) -> list[dict[str, Any]]:
    """Each rater's disagreement with the consensus of the others, and whether it is far above the others'.

    For each rating of a paper with at least ``min_raters - 1`` other ratings, the *leave-one-out consensus* is the
    mean of those others. A rater's *bias* is the mean signed difference of their ratings from it (over their
    ratings and the eight numbers); their *disagreement* is the mean absolute difference once their own offset on
    each number (the mean signed difference of that number) is taken out: how far their ratings scatter around the
    others' consensus, not how far they sit above or below it. A rater who rates every paper ten points high orders
    the papers as well as anyone: the offset shows as bias (and lowers the absolute-agreement ICC), never as a flag.
    Both come with intervals from resampling the rater's ratings. The *ratio* divides the disagreement (and its
    interval) by the median disagreement of the other raters judged (those with :data:`MIN_JUDGED` ratings or more).
    A judged rater is ``flagged`` when the ratio's interval lies above :data:`FLAG_RATIO`; ``flagged`` is None for a
    rater not judged (too few ratings, or fewer than two other raters judged).

    Returns one dict per rater (``rater``, ``n_ratings``, ``n_judged``, ``disagreement``, ``bias``, ``ratio``:
    each an estimate with its interval, ``flagged``), most disagreeing first.
    """
    n = t.per_paper()
    sums = np.stack([np.bincount(t.paper, t.values[:, j], len(t.papers)) for j in range(len(NUMBERS))], 1)
    others = n[t.paper] - 1
    judged = others >= max(1, min_raters - 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        loo = (sums[t.paper] - t.values) / others[:, None]
    diff = t.values - loo
    signed = diff.mean(axis=1)
    out = []
    for j, name in enumerate(t.raters):
        mine = np.flatnonzero((t.rater == j) & judged)
        entry: dict[str, Any] = {"rater": name, "n_ratings": int((t.rater == j).sum()), "n_judged": int(mine.size)}
        if mine.size:
            counts = _counts(mine.size, n_resamples if mine.size > 1 else 0, seed + j)
            distance = np.abs(diff[mine] - diff[mine].mean(axis=0)).mean(axis=1)
            entry["disagreement"] = _estimate(counts @ distance / mine.size, confidence)
            entry["bias"] = _estimate(counts @ signed[mine] / mine.size, confidence)
        else:
            entry["disagreement"] = entry["bias"] = {"estimate": None, "interval": None}
        out.append(entry)
    for entry in out:
        peers = [e["disagreement"]["estimate"] for e in out if e is not entry and e["n_judged"] >= MIN_JUDGED]
        point = entry["disagreement"]["estimate"]
        if len(peers) < 2 or entry["n_judged"] < MIN_JUDGED or point is None:
            entry["ratio"], entry["flagged"] = {"estimate": None, "interval": None}, None
            continue
        reference = float(np.median(peers))
        interval = entry["disagreement"]["interval"]
        entry["ratio"] = {"estimate": point / reference,
                          "interval": None if interval is None else [interval[0] / reference, interval[1] / reference]}
        entry["flagged"] = interval is not None and interval[0] / reference > FLAG_RATIO
    return sorted(out, key=lambda e: -(e["disagreement"]["estimate"] or 0.0))


def released(rows: Sequence[Mapping[str, Any]], *, min_raters: int = MIN_RATERS, block: int = MIN_PAPERS
             ) -> list[Mapping[str, Any]]:
    """The ratings the agreement report may use: the oldest ``rows`` (in the order they were stored) up to the last
    *release point*, the rating that completed a multiple of ``block`` panels.

    A paper's ratings form panels of ``min_raters`` in the order they were stored (its first three, its next
    three, ...); a panel is *complete* with its last rating. The report moves only at a release point, and between
    two release points exactly ``block`` panels were completed, so every change a rater can watch mixes the
    ratings of at least ``block`` papers and the raters beside her in them: no change isolates one paper's
    consensus, from which a rater who knows her own rating would read the others' (issue 27). The release points
    depend on the number of ratings per paper only, never on their values. Ratings after the last release point
    wait for the next one (docs/ratings.md#what-a-rater-can-learn-from-the-report)."""
    per_paper: dict[str, int] = {}
    complete = cut = 0
    for i, r in enumerate(rows):
        per_paper[r["bibcode"]] = per_paper.get(r["bibcode"], 0) + 1
        if per_paper[r["bibcode"]] % min_raters == 0:
            complete += 1
            if complete % block == 0:
                cut = i + 1
    return list(rows[:cut])


def _enough(rows: Sequence[Mapping[str, Any]], papers: Sequence[str], min_raters: int) -> list[str]:
    """The papers of ``papers`` (in that order) with at least ``min_raters`` of ``rows``."""
    per_paper: dict[str, int] = {}
    for r in rows:
        per_paper[r["bibcode"]] = per_paper.get(r["bibcode"], 0) + 1
    return [b for b in papers if per_paper.get(b, 0) >= min_raters]


def _reliability(t: Table, column: int, counts: np.ndarray, rater_counts: np.ndarray, k: float,
                 confidence: float) -> dict[str, Any]:
    """ICC(2,1), ICC(2,k) and the weighted kappa of one number, on the paper resamples ``counts`` and the rater
    resamples ``rater_counts`` (:func:`two_way`)."""
    single, average = icc(*pair_variances(t, column, counts), k)
    single_r, average_r = icc(*rater_pair_variances(t, column, rater_counts), k)
    kappa = quadratic_kappa(counts @ pair_confusions(t, column))
    by_raters = rater_pair_confusions(t, column)
    R = len(t.raters)
    v = np.asarray(rater_counts, dtype=np.float64)
    confusions = ((v @ by_raters.reshape(R, -1)).reshape(len(v), R, -1) * v[:, :, None]).sum(axis=1)
    return {"icc_21": two_way(single, single_r, confidence), "icc_2k": two_way(average, average_r, confidence),
            "kappa": two_way(kappa, quadratic_kappa(confusions), confidence)}


def agreement(rows: Sequence[Mapping[str, Any]], gold: Sequence[Mapping[str, Any]], *, min_raters: int = MIN_RATERS,
              n_resamples: int = N_RESAMPLES, seed: int = SEED, confidence: float = CONFIDENCE) -> dict[str, Any]:
    """The agreement report of the ratings ``rows`` of the papers of ``gold`` (the bibliometric records).

    Raters are judged first (:func:`rater_quality`, on every rating); the ratings of flagged raters are then set
    aside, shown and counted but left out of the consensus and of every statistic below. A paper with ``min_raters``
    ratings of the others is *rated enough*; on those papers, per number (:data:`~scitaste_hf.ratings.guide.NUMBERS`):

    - ``icc_21``, ``icc_2k``: ICC(2,1) and ICC(2,k) (:func:`icc`), k the harmonic mean of the ratings per paper;
    - ``kappa``: the quadratic-weighted kappa of all pairs of ratings of a paper, scores binned by :data:`BIN_EDGES`;
    - ``spearman``, ``mae``: the consensus (each paper's mean rating) against the gold;
    - ``ratings_needed``: ratings per paper for ICC(2,k) to reach :data:`TARGET_RELIABILITY` (:func:`ratings_needed`
      of ICC(2,1) and of its interval's ends), and ``papers_needed``: papers rated as now for the Spearman interval's
      half-width to shrink to :data:`TARGET_HALF_WIDTH` (:func:`papers_needed` at the estimate and over its interval);
    - ``icc_2k_all``: ICC(2,k) on every rater's ratings (papers with ``min_raters`` ratings of anyone), when a rater
      is flagged: what the flagged ratings would have done.

    ``n_papers_enough_with_flagged`` counts the papers that would be rated enough with the flagged raters' ratings
    (with three raters, one flagged leaves no paper rated enough). Each statistic is ``{"estimate", "interval"}``;
    intervals from ``n_resamples`` resamples of the papers (0: none), and for ``icc_21``, ``icc_2k``, ``kappa`` and
    ``icc_2k_all`` as many of the raters too (:func:`two_way`).
    Fewer than :data:`MIN_PAPERS` papers rated enough leave the statistics out (``numbers`` empty).

    Raises
    ------
    ScitasteError
        When a rating names a paper that is not in ``gold``.
    """
    papers = [r["bibcode"] for r in gold]
    truth = {r["bibcode"]: r for r in gold}
    unknown = sorted({r["bibcode"] for r in rows} - set(truth))
    if unknown:
        raise ScitasteError(f"{len(unknown)} rated paper(s) not in the gold set, e.g. {unknown[0]}")
    raters = rater_quality(Table.of(rows, papers), min_raters=min_raters, n_resamples=n_resamples, seed=seed,
                           confidence=confidence)
    flagged = [r["rater"] for r in raters if r["flagged"]]
    kept = [r for r in rows if r["rater"] not in set(flagged)]
    enough = _enough(kept, papers, min_raters)
    out: dict[str, Any] = {
        "n_ratings": len(rows), "n_raters": len(raters), "n_papers": len({r["bibcode"] for r in rows}),
        "n_papers_enough": len(enough), "n_papers_enough_with_flagged": len(_enough(rows, papers, min_raters)),
        "min_raters": min_raters, "raters": raters, "flagged": flagged,
        "k": None, "numbers": {},
        "settings": {"n_resamples": n_resamples, "seed": seed, "confidence": confidence, "bins": list(BIN_EDGES),
                     "flag_ratio": FLAG_RATIO, "min_judged": MIN_JUDGED, "target_reliability": TARGET_RELIABILITY,
                     "target_half_width": TARGET_HALF_WIDTH},
    }
    if len(enough) < MIN_PAPERS:
        return out
    t = Table.of(kept, enough)
    k = float(len(enough) / np.sum(1.0 / t.per_paper()))
    out["k"] = k
    counts = _counts(len(enough), n_resamples, seed)
    rater_counts = _counts(len(t.raters), n_resamples, seed + 1)
    resampled = Counts(counts)
    consensus = t.consensus()
    G = np.array([[truth[b]["innovation_score"], *(truth[b]["dimension_scores"][d] for d in NUMBERS[1:])]
                  for b in enough], dtype=np.float64)
    if flagged:
        everyone = _enough(rows, papers, min_raters)
        t_all = Table.of(rows, everyone)
        counts_all = _counts(len(everyone), n_resamples, seed)
        rater_counts_all = _counts(len(t_all.raters), n_resamples, seed + 1)
        k_all = float(len(everyone) / np.sum(1.0 / t_all.per_paper()))
    for j, number in enumerate(NUMBERS):
        stats = _reliability(t, j, counts, rater_counts, k, confidence)
        stats["spearman"] = _estimate(spearman(Ranked(consensus[:, j]), Ranked(G[:, j]), resampled), confidence)
        stats["mae"] = _estimate(counts @ np.abs(consensus[:, j] - G[:, j]) / resampled.total, confidence)
        single = stats["icc_21"]
        ends = single["interval"] or [None, None]
        stats["ratings_needed"] = {"estimate": ratings_needed(single["estimate"]),
                                   "interval": [ratings_needed(ends[1]), ratings_needed(ends[0])]
                                   if single["interval"] else None}
        stats["papers_needed"] = _papers_needed(stats["spearman"], confidence)
        stats["icc_2k_all"] = None
        if flagged and len(everyone) >= MIN_PAPERS:
            stats["icc_2k_all"] = two_way(icc(*pair_variances(t_all, j, counts_all), k_all)[1],
                                          icc(*rater_pair_variances(t_all, j, rater_counts_all), k_all)[1],
                                          confidence)
        out["numbers"][number] = stats
    return out


def consensus_records(rows: Sequence[Mapping[str, Any]], gold: Sequence[Mapping[str, Any]],
                      report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The expert consensus as records of the benchmark schema, to be scored against exactly as the gold is: each
    paper rated enough (by the raters ``report`` did not flag), its gold record with ``innovation_score`` and
    ``dimension_scores`` replaced by the mean rating; in gold order."""
    kept = [r for r in rows if r["rater"] not in set(report["flagged"])]
    enough = _enough(kept, [r["bibcode"] for r in gold], report["min_raters"])
    means = Table.of(kept, enough).consensus()
    truth = {r["bibcode"]: r for r in gold}
    return [{**truth[b], "innovation_score": float(m[0]), "dimension_scores": dict(zip(NUMBERS[1:], map(float, m[1:])))}
            for b, m in zip(enough, means)]
