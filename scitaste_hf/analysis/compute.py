"""The paper's analysis of any runs against one gold set: a pure function from runs and gold records to a report
(a JSON-safe dict), which :mod:`scitaste_hf.analysis.render` writes as Markdown, HTML and PNG (docs/report.md).
Beside the paper's tables it gives per-tool attribution: for a tool-mode run and its runs with one tool's evidence
withheld (:attr:`Run.withheld`), each tool's effect on the skill of both schemes and on each dimension's Spearman.

Every number comes from :mod:`scitaste_hf.scoring`: the schemes, grades, coverage and skill from
:func:`~scitaste_hf.scoring.score_run` (as the leaderboard scores a run), Spearman correlations from
:func:`~scitaste_hf.scoring.stats.spearman` (as Scheme 1 computes them), the tool effect from
:func:`~scitaste_hf.scoring.paired_bootstrap`; every interval is a percentile interval over the package's
resamples of the papers (:func:`~scitaste_hf.scoring.bootstrap.resample_counts`, the same seed and counts as the
scores' own intervals).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from scitaste_hf.errors import InvalidInput, ScitasteError
from scitaste_hf.output import finite_json
from scitaste_hf.schema import DIMENSIONS, Answer, Failure
from scitaste_hf.scoring import paired_bootstrap, score_run
from scitaste_hf.scoring.bootstrap import (
    CONFIDENCE,
    CORRELATIONS,
    N_RESAMPLES,
    SEED,
    _skill_values,
    percentile_interval,
    resample_counts,
    resampled_statistics,
)
from scitaste_hf.scoring.floors import floor_matrices
from scitaste_hf.scoring.inputs import as_answer_matrix
from scitaste_hf.scoring.ranks import detectable_difference
from scitaste_hf.scoring.stats import Counts, Ranked, spearman
from scitaste_hf.taxonomy import OVERALL

#: The mode every tool mode is compared with, for the same model (the paper's "effect of tools").
BASELINE_MODE = "pure_qa"
#: The statistics of the bias analysis, in the order they are shown.
BIAS_STATISTICS = ("mean_signed_error", "over_rated", "median_relative_error")
#: Scopes whose statistics are kept (:func:`_with_intervals`): a report of runs already seen skips their bootstrap;
#: one entry is a few kilobytes, so this is a couple of hundred runs of seven scopes.
KEPT_SCOPES = 2048


@dataclass(frozen=True)
class Run:
    """One run to analyse: the model, its mode and its answers (``{bibcode: Answer or Failure}``, as
    :func:`~scitaste_hf.predictions.read_predictions` reads them); ``source`` names it in errors; ``withheld``, the
    tool whose evidence the run went without ("" for none: the run saw every tool)."""

    model: str
    mode: str
    predictions: Mapping[str, Answer | Failure]
    source: str = ""
    withheld: str = ""

    @property
    def label(self) -> str:
        """``model / mode`` (``... without TOOL`` for a run with a tool withheld): how tables and errors name it."""
        return f"{self.model} / {self.mode}" + (f" without {self.withheld}" if self.withheld else "")

    @property
    def key(self) -> tuple[str, str, str]:
        """What no two runs of a report share: model, mode and the withheld tool."""
        return self.model, self.mode, self.withheld


def _value(x: float) -> float | None:
    return float(x) if np.isfinite(x) else None


def _mean(counts: Counts, x: np.ndarray) -> np.ndarray:
    """The count-weighted mean of ``x`` per resample (NaN for a resample that drew none of the papers)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        return counts.f @ x / counts.total


def weighted_median(x: np.ndarray, counts: Counts) -> np.ndarray:
    """The median of ``x`` per row of ``counts``, each paper repeated as often as it was drawn: with all counts 1
    exactly :func:`numpy.median` (the mean of the two middle values of an even number). NaN for an empty row."""
    order = np.argsort(x, kind="stable")
    xs, c = x[order], counts.f[:, order]
    cumulative = np.cumsum(c, axis=1)
    total = cumulative[:, -1] if x.size else np.zeros(c.shape[0])
    out = np.full(c.shape[0], np.nan)
    drawn = total > 0
    if not drawn.any():
        return out
    # The values at 0-based ranks floor((N - 1) / 2) and floor(N / 2); the value at rank k is the first whose
    # cumulative count exceeds k.
    middle = [np.floor((total[drawn] - 1) / 2), np.floor(total[drawn] / 2)]
    at = [(cumulative[drawn] <= k[:, None]).sum(axis=1) for k in middle]
    out[drawn] = (xs[at[0]] + xs[at[1]]) / 2.0
    return out


def _bias(P: np.ndarray, G: np.ndarray, counts: Counts) -> dict[str, np.ndarray]:
    """Per resample: the bias statistics of the innovation score."""
    err = P[:, 0] - G[:, 0]
    defined = G[:, 0] > 0  # a relative error needs a gold score above 0
    relative = np.abs(err[defined]) / G[defined, 0]
    return {"mean_signed_error": _mean(counts, err), "over_rated": _mean(counts, (err > 0).astype(np.float64)),
            "median_relative_error": weighted_median(relative, Counts(counts.f[:, defined]))}


def _statistics(P: np.ndarray, G: np.ndarray, counts: Counts) -> dict[str, np.ndarray]:
    """Per resample: the Spearman correlations (innovation score and each dimension) and the bias statistics.
    The correlations are :func:`~scitaste_hf.scoring.stats.spearman`, which Scheme 1's batch computes them with (the
    same numbers, without the rest of Scheme 1)."""
    rho = [spearman(Ranked(P[:, j]), Ranked(G[:, j]), counts) for j in range(P.shape[1])]
    return {"spearman": rho[0], **{f"spearman_{k}": r for k, r in zip(DIMENSIONS, rho[1:])}, **_bias(P, G, counts)}


def _scored_correlations(block: Mapping[str, Any]) -> dict[str, dict[str, Any]] | None:
    """The Spearman correlations of a :func:`score_run` block with their intervals, which it resampled with the same
    papers and counts as the report (``scheme1.ci``); None for a block without them (scored by a version before
    they were kept)."""
    s1 = block.get("scheme1")
    ci = (s1 or {}).get("ci") or {}
    if s1 is None or "spearman" not in ci:
        return None
    return {"spearman": {"value": s1["spearman"], "ci": ci["spearman"]},
            **{f"spearman_{k}": {"value": s1["dimension_spearman"][k], "ci": ci["dimension_spearman"][k]}
               for k in DIMENSIONS}}


_kept: OrderedDict[str, dict[str, dict[str, Any]]] = OrderedDict()
_kept_lock = threading.Lock()


def _with_intervals(P: np.ndarray, G: np.ndarray, n_resamples: int, seed: int, confidence: float,
                    correlations: Mapping[str, dict[str, Any]] | None = None) -> dict[str, dict[str, Any]]:
    """Each statistic of :func:`_statistics` on the scored papers ``P``, ``G``: ``value`` and ``ci`` (the
    resamples of :func:`~scitaste_hf.scoring.bootstrap.resample_counts`, which the block's scores use too), the
    Spearman correlations taken from ``correlations`` where the block's scores hold them (:func:`_scored_correlations`).
    Kept by the papers' answers and gold rows and the bootstrap's settings (the last :data:`KEPT_SCOPES`), so a
    report of a run already seen, such as the Space's, does not resample it again."""
    key = hashlib.sha256(repr((P.shape, n_resamples, seed, confidence)).encode() + np.ascontiguousarray(P).tobytes()
                         + np.ascontiguousarray(G).tobytes()).hexdigest()
    with _kept_lock:
        if key in _kept:
            _kept.move_to_end(key)
            return _kept[key]
    n = P.shape[0]
    keys = (*CORRELATIONS, *BIAS_STATISTICS)
    if n == 0:
        return {k: {"value": None, "ci": None} for k in keys}
    statistics = _statistics if correlations is None else _bias
    points = statistics(P, G, Counts(np.ones((1, n))))
    spread = statistics(P, G, Counts(resample_counts(n, n_resamples, seed))) if n_resamples else None
    out = {k: dict(correlations[k]) if k not in points else
           {"value": _value(points[k][0]), "ci": None if spread is None else percentile_interval(spread[k], confidence)}
           for k in keys}
    with _kept_lock:
        _kept[key] = out
        while len(_kept) > KEPT_SCOPES:
            _kept.popitem(last=False)
    return out


def _rows(run: Run, gold: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
    """The run's answer rows (NaN where unscored) and whether each gold paper was scored, in gold order."""
    P = np.full((len(gold), 1 + len(DIMENSIONS)), np.nan)
    scored = np.zeros(len(gold), dtype=bool)
    for i, record in enumerate(gold):
        answer = run.predictions.get(record["bibcode"])
        if isinstance(answer, Answer):
            P[i], scored[i] = answer.vector(), True
    return P, scored


def _scheme(block: Mapping[str, Any]) -> dict[str, Any]:
    """What the tables show of one scope of a :func:`score_run` result."""
    s1, s2, skill = block["scheme1"], block["scheme2"], block.get("skill") or {}
    return {
        "n_scored": block["n_scored"], "n_total": block["n_total"], "coverage": block["coverage"],
        "failures": block["failures"],
        "scheme1": None if s1 is None else {"score": s1["scheme1"], "ci": s1["ci"]["scheme1"], "grade": s1["grade"],
                                            "skill": skill.get("scheme1")},
        "scheme2": None if s2 is None else {"score": s2["score"], "ci": s2["ci"]["score"], "grade": s2["grade"],
                                            "wape": s2["wape"], "wape_ci": s2["ci"]["wape"],
                                            "skill": skill.get("scheme2")},
    }


def _tool_effect(tool: Run, base: Run, gold: Sequence[Mapping[str, Any]], n_resamples: int, seed: int,
                 confidence: float) -> dict[str, Any]:
    """Tool mode minus :data:`BASELINE_MODE` for one model, on the papers both runs scored."""
    both = [r for r in gold if isinstance(tool.predictions.get(r["bibcode"]), Answer)
            and isinstance(base.predictions.get(r["bibcode"]), Answer)]
    out: dict[str, Any] = {"model": tool.model, "mode": tool.mode, "baseline": base.mode, "n": len(both)}
    if len(both) < 2:
        return out | {"statistics": None}
    a = [tool.predictions[r["bibcode"]] for r in both]
    b = [base.predictions[r["bibcode"]] for r in both]
    # paired_bootstrap always resamples; without resamples asked for, its one resample's interval is dropped.
    stats = paired_bootstrap(a, b, both, n_resamples=max(n_resamples, 1), seed=seed, confidence=confidence)
    if not n_resamples:
        stats = {k: {**v, "interval": None, "p_value": None} for k, v in stats.items()}
    # The mean signed error (over-rating) on the same resamples as paired_bootstrap's (the same n and seed).
    gap = np.array([x.innovation_score for x in a]) - np.array([x.innovation_score for x in b])
    spread = _mean(Counts(resample_counts(len(both), n_resamples, seed)), gap) if n_resamples else None
    interval = None if spread is None else percentile_interval(spread, confidence)
    stats["mean_signed_error"] = {"difference": float(gap.mean()), "interval": interval, "p_value": None}
    for numbers in stats.values():
        numbers["detectable"] = None if numbers["interval"] is None else detectable_difference(numbers["interval"],
                                                                                              confidence=confidence)
    return out | {"statistics": stats}


def _attribution(full: Run, without: Run, gold: Sequence[Mapping[str, Any]], F: np.ndarray, n_resamples: int,
                 seed: int, confidence: float) -> dict[str, Any]:
    """The effect of ``without.withheld``'s evidence: ``full`` minus ``without`` on the papers both scored, for the
    skill of both schemes over the constant floor ``F`` and each Spearman (innovation score and dimensions); each
    ``difference``, its paired-bootstrap ``interval`` (both runs and the floor on the same resamples of the papers)
    and ``detectable``, the smallest true difference found with 80% power (:func:`detectable_difference`)."""
    from scitaste_hf.scoring.bootstrap import _statistics as scheme_statistics
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    (PA, scored_a), (PB, scored_b) = _rows(full, gold), _rows(without, gold)
    keep = scored_a & scored_b
    out: dict[str, Any] = {"model": full.model, "mode": full.mode, "tool": without.withheld, "n": int(keep.sum())}
    if out["n"] < 2:
        return out | {"statistics": None}
    G = as_answer_matrix([r for r, k in zip(gold, keep) if k], "gold")
    runs = [PA[keep], PB[keep], F[keep]]
    ones = Counts(np.ones((1, out["n"])))
    numbers: dict[str, dict[str, Any]] = {}
    points = [scheme_statistics(M, G, ones, DEFAULT_WEIGHTS) for M in runs]
    spread = resampled_statistics(runs, G, DEFAULT_WEIGHTS, n_resamples, seed) if n_resamples else None

    def skill_gap(stats: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
        a, b = _skill_values(stats[0], stats[2]), _skill_values(stats[1], stats[2])
        return {scheme: a[scheme] - b[scheme] for scheme in a}

    point_gap, spread_gap = skill_gap(points), None if spread is None else skill_gap(spread)
    for scheme in ("scheme1", "scheme2"):
        numbers[f"{scheme}_skill"] = _difference(point_gap[scheme][0],
                                                 None if spread_gap is None else spread_gap[scheme], confidence)
    # The Spearman correlations of the paper's tables, on the same resamples (resampled_statistics draws them from
    # the same n and seed).
    counts = Counts(resample_counts(out["n"], n_resamples, seed)) if n_resamples else None
    rho = [_statistics_of(M, G, ones) for M in runs[:2]]
    boot = None if counts is None else [_statistics_of(M, G, counts) for M in runs[:2]]
    for key in rho[0]:
        numbers[key] = _difference(rho[0][key][0] - rho[1][key][0],
                                   None if boot is None else boot[0][key] - boot[1][key], confidence)
    return out | {"statistics": numbers}


def _statistics_of(P: np.ndarray, G: np.ndarray, counts: Counts) -> dict[str, np.ndarray]:
    """The Spearman correlations of :func:`_statistics` (innovation score and each dimension), per resample; an
    undefined one (a constant answer, as a run without the tool that a dimension is read from may give) counts as
    0, no association, as Scheme 1 counts it."""
    return {k: np.nan_to_num(v) for k, v in _statistics(P, G, counts).items() if k.startswith("spearman")}


def _difference(point: float, resampled: np.ndarray | None, confidence: float) -> dict[str, Any]:
    """A paired difference: its value, percentile interval over the resamples and detectable difference."""
    interval = None if resampled is None else percentile_interval(resampled, confidence)
    return {"difference": _value(point), "interval": interval,
            "detectable": None if interval is None else detectable_difference(interval, confidence=confidence)}


def analyse(runs: Sequence[Run], gold: Sequence[Mapping[str, Any]], *, backup: Sequence[Mapping[str, Any]] | None
            = None, n_resamples: int = N_RESAMPLES, seed: int = SEED, confidence: float = CONFIDENCE,
            gold_name: str = "gold", results: Sequence[Mapping[str, Any] | None] | None = None) -> dict[str, Any]:
    """The paper's tables and findings for ``runs`` against ``gold`` (docs/report.md).

    Parameters
    ----------
    runs : sequence of Run
        At least one; no two with the same model, mode and withheld tool.
    gold : sequence of records
        The gold set every run is scored against, as :func:`~scitaste_hf.scoring.score_run` takes it.
    backup : sequence of records, optional
        The backup split the floors are learned from (as the leaderboard does; the gold set itself without it).
    n_resamples, seed, confidence
        The bootstrap's, as in :func:`~scitaste_hf.scoring.score_run`; ``n_resamples=0`` gives no intervals.
    gold_name : str
        What errors call the gold set.
    results : sequence of score_run results or None, optional
        Per run (in the order of ``runs``), its :func:`score_run` result when already computed with these
        ``gold``, ``backup``, ``n_resamples``, ``seed`` and ``confidence`` (as the leaderboard stores it), or None
        to compute it; the report is the same either way. Not checked: the caller vouches for the settings.

    Returns
    -------
    dict
        ``runs`` (per run: ``model``, ``mode``, ``source`` and per scope, overall then each discipline, the
        schemes of :func:`score_run` and ``statistics``: Spearman and the bias statistics, each ``value`` and
        ``ci``), ``disciplines``, ``dimensions``, ``tools`` (each tool mode minus :data:`BASELINE_MODE` of the same
        model: per statistic ``difference``, ``interval``, ``p_value``, ``detectable``), ``attribution`` (per run
        with a tool withheld beside the same model and mode's full run: ``tool``, ``n`` and per statistic, the skill
        of both schemes and each Spearman, the full run minus the run without the tool: ``difference``,
        ``interval``, ``detectable``) and ``inputs``. Undefined numbers are None.

    Raises
    ------
    InvalidInput
        No runs, two runs with the same model and mode, or a run that does not fit the gold set (a bibcode
        outside it), naming the run.
    """
    if not runs:
        raise InvalidInput("no runs to report on")
    seen: dict[tuple[str, str, str], Run] = {}
    for run in runs:
        if run.key in seen:
            raise InvalidInput(f"two runs are {run.label} ({seen[run.key].source} and {run.source}); "
                               "give each model and mode once")
        seen[run.key] = run
    if results is not None and len(results) != len(runs):
        raise InvalidInput(f"{len(results)} precomputed results for {len(runs)} runs")
    if not gold:
        raise InvalidInput(f"{gold_name}: the gold set is empty")
    G = as_answer_matrix(list(gold), gold_name)
    disciplines = np.array([r.get("discipline") for r in gold])

    def report(i: int, run: Run) -> tuple[dict[str, Any], dict[str, Any]]:
        try:
            result = results[i] if results is not None and results[i] is not None else score_run(
                gold, run.predictions, n_resamples=n_resamples, seed=seed, confidence=confidence,
                gold_name=gold_name, backup=backup)
        except ScitasteError as exc:
            raise InvalidInput(f"run {run.label} ({run.source or 'given'}): {exc}") from None
        P, scored = _rows(run, gold)
        scopes = {OVERALL: result["overall"], **result["by_discipline"]}
        blocks = {}
        for scope, block in scopes.items():
            keep = scored if scope == OVERALL else scored & (disciplines == scope)
            blocks[scope] = _scheme(block) | {
                "statistics": _with_intervals(P[keep], G[keep], n_resamples, seed, confidence,
                                              _scored_correlations(block))}
        return {"model": run.model, "mode": run.mode, "withheld": run.withheld, "source": run.source,
                "scopes": blocks}, result

    # The runs' bootstraps are independent and numpy lets go of the GIL in their array work, so they run on every
    # core at once (the Space's Report tab: a report of several new runs, bench/bench_space.py). pool.map raises the
    # first failing run's error in the runs' order, as a loop would.
    with ThreadPoolExecutor(max_workers=min(len(runs), os.cpu_count() or 1)) as pool:
        done = list(pool.map(report, range(len(runs)), runs))
    reported, result = [r for r, _ in done], done[-1][1]
    tools = [_tool_effect(run, seen[run.model, BASELINE_MODE, ""], gold, n_resamples, seed, confidence)
             for run in runs if run.mode != BASELINE_MODE and not run.withheld
             and (run.model, BASELINE_MODE, "") in seen]
    withheld = [run for run in runs if run.withheld and (run.model, run.mode, "") in seen]
    floor = floor_matrices(G, None, backup)["constant"] if withheld else None
    attribution = [_attribution(seen[run.model, run.mode, ""], run, gold, floor, n_resamples, seed, confidence)
                   for run in withheld]
    return finite_json({
        "runs": reported,
        "disciplines": list(result["by_discipline"]),
        "dimensions": list(DIMENSIONS),
        "tools": tools,
        "attribution": attribution,
        "inputs": {"gold": gold_name, "n_gold": len(gold), "n_resamples": n_resamples, "seed": seed,
                   "confidence": confidence, "floors_from": "backup" if backup is not None else "gold"},
    })
