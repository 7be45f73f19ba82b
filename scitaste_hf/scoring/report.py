"""Scoring a whole run: failures as coverage, both schemes with intervals, overall and per discipline
(the paper's Tables 9-10). The CLI, the ``evaluate`` modules and the Space all report through here."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS, SCORE_MAX, SCORE_MIN, Answer, Failure
from scitaste_hf.scoring.answers import validate_answer
from scitaste_hf.scoring.bootstrap import CONFIDENCE, N_RESAMPLES, SEED, intervals_and_skill
from scitaste_hf.scoring.floors import floor_matrices
from scitaste_hf.scoring.inputs import as_answer_matrix, as_scores, is_number
from scitaste_hf.scoring.scheme1 import scheme1
from scitaste_hf.scoring.wape import wape, wape_grade, wape_score
from scitaste_hf.taxonomy import discipline_order, packaged_disciplines
from scitaste_hf.weights import DEFAULT_WEIGHTS, DisciplineWeights, Weights, vector_for


def summarize(P: np.ndarray, G: np.ndarray, *, n_total: int, failures: Mapping[str, int] | None = None,
              weights: Mapping[str, float] | None = None, n_resamples: int = N_RESAMPLES, seed: int = SEED,
              confidence: float = CONFIDENCE, floors: Mapping[str, np.ndarray] | None = None) -> dict[str, Any]:
    """Both schemes for the scored items of a run, with coverage and bootstrap intervals.

    Parameters
    ----------
    P, G : ndarray, shape (n_scored, 8) or (n_scored, 1)
        Predicted and gold rows of the scored items (innovation score, then the dimensions); with one
        column only Scheme 2 is computed.
    n_total : int
        Items in the run, scored or not; coverage is ``n_scored / n_total``.
    failures : mapping, optional
        Count of unscored items per failure reason.
    weights, n_resamples, seed, confidence
        As in :func:`~scitaste_hf.scoring.bootstrap.bootstrap`; ``n_resamples=0`` skips the intervals.
    floors : mapping of str to ndarray, optional
        The no-information floors' rows for the same items (:func:`~scitaste_hf.scoring.floors.floor_matrices`).

    Returns
    -------
    dict
        ``n_total``, ``n_scored``, ``coverage``, ``failures``, ``scheme2`` (``wape``, ``score``, ``grade``,
        ``ci``) and, with dimensions, ``scheme1`` (every key of :func:`~scitaste_hf.scoring.scheme1`, and ``ci``:
        the intervals of ``scheme1``, ``spearman`` and each dimension's Spearman, ``dimension_spearman``).
        A scheme is None when no item was scored: never a silent zero. With ``floors``, also ``floors`` (each
        floor's ``scheme2``, ``wape`` and ``scheme1`` on the same items) and ``skill`` over the ``constant``
        floor (:func:`~scitaste_hf.scoring.bootstrap.skill`: per scheme ``skill``, ``interval``,
        ``above_floor``).
    """
    n_scored = int(P.shape[0])
    coverage = {"n_total": int(n_total), "n_scored": n_scored,
                "coverage": n_scored / n_total if n_total else 0.0}
    out: dict[str, Any] = {**coverage, "failures": dict(sorted((failures or {}).items()))}
    out["scheme2"] = out["scheme1"] = None
    if floors is not None:
        out["floors"] = out["skill"] = None
    if n_scored == 0:
        return out
    w = wape(P[:, 0], G[:, 0])
    intervals, skills = intervals_and_skill(P, G, None if floors is None else floors["constant"], weights=weights,
                                            n_resamples=n_resamples, seed=seed, confidence=confidence,
                                            correlations=True)
    out["scheme2"] = {"wape": w, "score": wape_score(w), "grade": wape_grade(w), **coverage,
                      "ci": {"wape": intervals.get("wape"), "score": intervals.get("scheme2")}}
    if P.shape[1] > 1:
        out["scheme1"] = {**scheme1(P, G, weights), **coverage, "ci": {
            "scheme1": intervals.get("scheme1"), "spearman": intervals.get("spearman"),
            "dimension_spearman": {k: intervals.get(f"spearman_{k}") for k in DIMENSIONS}}}
    if floors is not None:
        out["floors"] = {name: _floor_scores(F, G, weights) for name, F in floors.items()}
        out["skill"] = skills
    return out


def _floor_scores(F: np.ndarray, G: np.ndarray, weights: Mapping[str, float] | None) -> dict[str, Any]:
    """A floor's point scores on the items of ``G``."""
    w = wape(F[:, 0], G[:, 0])
    return {"scheme2": wape_score(w), "wape": w,
            "scheme1": scheme1(F, G, weights)["scheme1"] if F.shape[1] > 1 else None}


def part_b_weights(weights: Weights | None, disciplines: Sequence[str]) -> dict[str, float]:
    """The Part-B weights of a set of papers: the mean, over the papers, of each paper's discipline's vector
    (docs/weights.md#part-b-of-scheme-1).

    Part B weights statistics computed across papers (a dimension's Spearman), so a block of papers needs one
    vector: within a discipline it is that discipline's, overall each discipline's in proportion to its papers.
    With one vector for all (or None, the packaged default) it is that vector.
    """
    if not isinstance(weights, DisciplineWeights):
        return vector_for(weights, None)
    counts = Counter(disciplines)
    vectors = {d: vector_for(weights, d) for d in counts}
    total = sum(counts.values())
    return {k: sum(counts[d] * vectors[d][k] for d in counts) / total for k in DIMENSIONS}


def score_run(gold: Sequence[Mapping[str, Any]], predictions: Mapping[str, Answer | Failure], *,
              weights: Weights | None = None, n_resamples: int = N_RESAMPLES, seed: int = SEED,
              confidence: float = CONFIDENCE, gold_name: str = "gold",
              backup: Sequence[Mapping[str, Any]] | None = None, floors: bool = True) -> dict[str, Any]:
    """Score a run against gold records: overall and per discipline.

    Parameters
    ----------
    gold : sequence of records
        Records of the benchmark schema (``bibcode``, ``discipline``, ``innovation_score``,
        ``dimension_scores``); bibcodes must be unique.
    predictions : mapping of bibcode to Answer or Failure
        A gold bibcode without a prediction counts as a ``missing`` failure; a bibcode not in the gold set
        is an error.
    weights : mapping, DisciplineWeights or None
        Part-B weights: one vector, or one per discipline, which each block of papers averages over its gold
        papers (:func:`part_b_weights`); the packaged default when None.
    n_resamples, seed, confidence
        As in :func:`summarize`.
    gold_name : str
        What error messages call the gold set (the CLI passes its file), with the item's position in it.
    backup : sequence of records, optional
        The ``backup`` split, which the no-information floors are learned from
        (:func:`~scitaste_hf.scoring.floors.floor_matrices`); without it, from the gold set itself.
    floors : bool
        Report the floors and the skill over them (default); False leaves both out.

    Returns
    -------
    dict
        ``{"overall": summary, "by_discipline": {discipline: summary}}`` with summaries as in
        :func:`summarize`, each with the ``part_b_weights`` it used; the gold set's disciplines in reporting
        order (:func:`~scitaste_hf.taxonomy.discipline_order`); ``weights``: the vector, or the vectors by discipline.
    """
    w = DEFAULT_WEIGHTS if weights is None else weights
    if not gold:
        raise ScitasteError("the gold set is empty")
    known = packaged_disciplines()
    for i, record in enumerate(gold):
        if not isinstance(record, Mapping):
            raise ScitasteError(f"{gold_name} item {i}: expected a record object, got {type(record).__name__}")
        if not isinstance(record.get("bibcode"), str) or not record["bibcode"]:
            raise ScitasteError(f"{gold_name} item {i}: missing 'bibcode'")
        # A discipline outside the packaged taxonomies gets a row of its own too; a missing one or a mis-cased known one
        # would silently split a discipline's papers, so those stop here.
        discipline = record.get("discipline")
        if not isinstance(discipline, str) or not discipline.strip():
            raise ScitasteError(f"{gold_name} item {i} ({record['bibcode']}): missing 'discipline'")
        if discipline not in known and discipline.strip().lower() in known:
            raise ScitasteError(f"{gold_name} item {i} ({record['bibcode']}): discipline {discipline!r}; the "
                                f"benchmark's is {discipline.strip().lower()!r}")
    seen = Counter(str(r.get("bibcode")) for r in gold)
    duplicated = [b for b, k in seen.items() if k > 1]
    if duplicated:
        raise ScitasteError(f"the gold set has duplicate bibcodes: {', '.join(duplicated[:5])}")
    unknown = [b for b in predictions if b not in seen]
    if unknown:
        raise ScitasteError(f"{len(unknown)} prediction(s) for bibcodes not in the gold set, e.g. {unknown[0]}")
    G = as_answer_matrix(list(gold), gold_name)
    P = np.full_like(G, np.nan)
    reasons: list[str | None] = []
    for i, record in enumerate(gold):
        pred = predictions.get(record["bibcode"], Failure("missing"))
        if isinstance(pred, Failure):
            reasons.append(pred.reason)
        else:
            P[i] = pred.vector()
            reasons.append(None)
    scored = np.array([r is None for r in reasons])
    disciplines = np.array([r["discipline"] for r in gold])
    floor_rows = floor_matrices(G, disciplines, backup) if floors else None

    def block(mask: np.ndarray) -> dict[str, Any]:
        failures = Counter(r for r, m in zip(reasons, mask) if m and r is not None)
        keep = mask & scored
        # The block's gold papers, not only the scored ones, set its weights: every run on the same gold set
        # is then scored with the same vector.
        block_weights = part_b_weights(w, disciplines[mask].tolist())
        out = summarize(P[keep], G[keep], n_total=int(mask.sum()), failures=failures, weights=block_weights,
                        n_resamples=n_resamples, seed=seed, confidence=confidence,
                        floors=None if floor_rows is None else {k: F[keep] for k, F in floor_rows.items()})
        return out | {"part_b_weights": block_weights}

    order = discipline_order(disciplines)
    return {
        "overall": block(np.ones(len(gold), dtype=bool)),
        "by_discipline": {d: block(disciplines == d) for d in order},
        "dimensions": list(DIMENSIONS),
        "weights": w.to_json() if isinstance(w, DisciplineWeights) else vector_for(w, None),
    }


def _prediction_row(pred: Any, with_dimensions: bool) -> tuple[float, ...] | Failure:
    """One prediction as a row of floats, or the failure that keeps it from being scored."""
    if pred is None:
        return Failure("missing", "no prediction")
    if with_dimensions:
        answer = pred if isinstance(pred, Answer | Failure) else (
            validate_answer(pred) if isinstance(pred, Mapping) else Failure("schema", "not an answer object"))
        return answer if isinstance(answer, Failure) else answer.vector()
    if not is_number(pred):  # the same test as a reference's (scoring.inputs), but a failure here, not an error
        return Failure("schema", f"not a number: {pred!r}")
    # Compared before math.isfinite, which raises on an int too large for a float (and repr on one of
    # over 4,300 digits): such an int is just out of range.
    if not (SCORE_MIN <= pred <= SCORE_MAX and math.isfinite(pred)):
        shown = repr(pred) if isinstance(pred, float) else "an integer"
        return Failure("out_of_range", f"{shown} is not a finite score in 0-100")
    return (float(pred),)


def score_pairs(predictions: Sequence[Any], references: Sequence[Any], *, with_dimensions: bool,
                weights: Mapping[str, float] | None = None, n_resamples: int = N_RESAMPLES, seed: int = SEED,
                confidence: float = CONFIDENCE) -> dict[str, Any]:
    """:func:`summarize` for aligned lists in which a prediction may be a failure.

    A ``None``, non-finite, out-of-range or malformed prediction is a counted failure, excluded from the
    metrics and reported in coverage; references must all be valid. ``with_dimensions`` selects answers
    (innovation score and the seven dimensions) over bare innovation scores. The floor is the ``constant`` one
    of :mod:`~scitaste_hf.scoring.floors`, learned from the references (there is no backup split here and no
    discipline), with the skill over it.
    """
    if len(predictions) != len(references):
        raise ScitasteError(f"predictions and references differ in length: {len(predictions)} vs {len(references)}")
    if not references:
        raise ScitasteError("no references: nothing to score")
    G = as_answer_matrix(list(references), "references") if with_dimensions else \
        as_scores(references, "references")[:, None]
    rows = [_prediction_row(p, with_dimensions) for p in predictions]
    scored = np.array([not isinstance(r, Failure) for r in rows])
    P = np.array([r for r in rows if not isinstance(r, Failure)], dtype=np.float64).reshape(-1, G.shape[1])
    failures = Counter(r.reason for r in rows if isinstance(r, Failure))
    floors = {name: F[scored] for name, F in floor_matrices(G).items()}
    return summarize(P, G[scored], n_total=len(references), failures=failures, weights=weights,
                     n_resamples=n_resamples, seed=seed, confidence=confidence, floors=floors)
