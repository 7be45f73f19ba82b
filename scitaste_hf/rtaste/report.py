"""The study's headline numbers from a release: yield per condition, Brier scores of the agent, the same-model
judge, the mean of all judges and the base rate, top-1 hit rates, re-run agreement and rater agreement.

Labels (rTaste protocol): an MVE is *sound* when it was delivered and the auditors' majority finds it
faithful to its registration and valid; *valuable* when the auditors' median value is at least
:data:`VALUABLE_MIN` (of 0-3); *new* when neither novelty judge labels it ``equivalent`` to prior work (a close
variant still counts as new).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.aggregation import (
    agreed_answer,
    cohen_kappa_pairs,
    fleiss_kappa,
    majority_vote,
    median_value,
    rating_table,
)
from scitaste_hf.rtaste.events import rerun_agreement, resolve
from scitaste_hf.rtaste.metrics import (
    ABOVE_RANDOM,
    RANDOM_TOP1,
    UNIT,
    UNIT_DIFFERENCE,
    base_rate_forecast,
    grouped_mean,
    pooled_sd,
    top1_credit,
    yield_per_100_usd,
)
from scitaste_hf.rtaste.release import Release
from scitaste_hf.rtaste.schema import MVERecord
from scitaste_hf.scoring.bootstrap import N_RESAMPLES, SEED

#: Lowest median auditor value (0-3) that counts as valuable.
VALUABLE_MIN = 2
#: The caveat of a release with a single seed paper.
ONE_SEED_PAPER = ("one seed paper: no intervals (they are across seed papers) and no base rate (it forecasts each "
                  "event from the other seed papers); the figures describe this paper only")


def labels(records: list[MVERecord] | tuple[MVERecord, ...]) -> dict[str, np.ndarray]:
    """The aggregated labels of each MVE: ``sound``, ``valuable``, ``new``, their conjunction ``svn`` and the
    median auditor ``value``, one entry per record.

    Parameters
    ----------
    records : sequence of MVERecord
        The MVEs.
    """
    audits = [r.audit for r in records]
    delivered = np.array([r.outcome.status == "delivered" for r in records])
    faithful = majority_vote([a.faithful for a in audits])
    valid = majority_vote([a.valid for a in audits])
    value = median_value([a.value for a in audits])
    new = np.array([all(label != "equivalent" for label in a.novelty) for a in audits])
    sound = delivered & faithful & valid
    valuable = value >= VALUABLE_MIN
    return {"sound": sound, "valuable": valuable, "new": new, "svn": sound & valuable & new, "value": value}


def _forecasts(resolved: list[tuple[MVERecord, bool]]) -> dict[str, Any]:
    """The scored MVEs among the ``resolved`` ones, with their outcomes and the agent's, the same-model
    judge's and the judges' mean forecasts (``None`` for the judges when no MVE has a judge forecast)."""
    with_judges = any(r.judge_predictions for r, _ in resolved)
    if with_judges:
        # The comparison is paired: every forecaster is scored on the same MVEs, those the same-model judge saw.
        resolved = [(r, o) for r, o in resolved if any(j.judge_model == r.model for j in r.judge_predictions)]
        if not resolved:
            raise ScitasteError("no resolved MVE has a forecast by the judge of the agent's own model; the "
                                "judge_predictions' judge_model must name the condition's model")
    scored = [r for r, _ in resolved]
    judges = [{j.judge_model: j.probability for j in r.judge_predictions} for r in scored]
    return {
        "records": scored,
        "outcomes": np.array([o for _, o in resolved], dtype=np.float64),
        "agent": np.array([r.probability for r in scored]),
        "same_model_judge": np.array([j[r.model] for r, j in zip(scored, judges)]) if with_judges else None,
        "judge_mean": np.array([np.mean(list(j.values())) for j in judges]) if with_judges else None,
    }


def brier_table(release: Release, *, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> dict[str, Any]:
    """Brier scores of the agent, the same-model judge, the mean of all judges and the base rate, each with
    an interval across seed papers, and the paired agent-minus-judge difference.

    Parameters
    ----------
    release : Release
        The validated release.
    n_resamples : int
        0: no intervals; otherwise not used (the intervals are cluster-robust t-intervals across seed papers).
    seed : int
        Not used by the intervals (kept for callers that pass it).

    Returns
    -------
    dict
        ``n_scored`` (MVEs scored: resolved and, when the release has judges, forecast by the same-model
        judge), ``n_resolved``, ``event_rate``; per forecaster (``agent``, ``same_model_judge``,
        ``judge_mean``, ``base_rate``) a :func:`~scitaste_hf.rtaste.metrics.grouped_mean` of squared errors,
        or ``None`` when the release has no judge forecasts (for the base rate: a single seed paper);
        ``agent_minus_judge``, the same for the difference of the agent's and the same-model judge's squared
        errors.
    """
    resolved = [(r, o) for r in release.records if (o := resolve(r)) is not None]
    if not resolved:
        raise ScitasteError("no MVE has a resolved event (a delivered MVE with a re-run value): nothing to score")
    data = _forecasts(resolved)
    outcomes, groups = data["outcomes"], [r.seed_paper for r in data["records"]]
    # The base rate of an MVE is the event rate of every resolved MVE of the other seed papers: with one seed
    # paper there are none, and the base rate is left out (ONE_SEED_PAPER says so).
    all_outcomes = np.array([o for _, o in resolved], dtype=np.float64)
    papers = [r.seed_paper for r, _ in resolved]
    base_by_id = (dict(zip((r.mve_id for r, _ in resolved), base_rate_forecast(all_outcomes, papers)))
                  if len(set(papers)) > 1 else None)
    forecasts = {"agent": data["agent"], "same_model_judge": data["same_model_judge"],
                 "judge_mean": data["judge_mean"],
                 "base_rate": None if base_by_id is None else np.array([base_by_id[r.mve_id]
                                                                        for r in data["records"]])}
    options = {"n_resamples": n_resamples, "seed": seed}
    out: dict[str, Any] = {"n_scored": len(outcomes), "n_resolved": len(resolved),
                           "event_rate": float(all_outcomes.mean())}
    errors = {}
    for name, p in forecasts.items():
        if p is None:
            out[name] = None
            continue
        errors[name] = (p - outcomes) ** 2  # their mean is the Brier score
        out[name] = grouped_mean(errors[name], groups, **options, bounds=UNIT)
    out["agent_minus_judge"] = (None if forecasts["same_model_judge"] is None else
                                grouped_mean(errors["agent"] - errors["same_model_judge"], groups, **options,
                                             bounds=UNIT_DIFFERENCE))
    return out


def top1_table(release: Release, *, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> dict[str, Any]:
    """Top-1 hit rates: how often the agent's first choice (rank 1) is the MVE the auditors valued highest,
    against random choice (1/5) and against the first-written MVE, with intervals across seed papers.

    Parameters
    ----------
    release : Release
        The validated release.
    n_resamples : int
        0: no intervals; otherwise not used (the intervals are cluster-robust t-intervals across seed papers).
    seed : int
        Not used by the intervals (kept for callers that pass it).

    Returns
    -------
    dict
        ``n_conditions``; ``agent`` and ``first_written`` hit rates; ``random`` (0.2); ``agent_minus_random``
        and ``agent_minus_first_written``, each a :func:`~scitaste_hf.rtaste.metrics.grouped_mean`. Ties at
        the highest value share the credit (see :func:`~scitaste_hf.rtaste.metrics.top1_credit`).
    """
    groups, choices, values = [], [], []
    for condition_id, rows in release.by_condition().items():
        groups.append(release.conditions[condition_id].seed_paper)
        choices.append([r.rank for r in rows].index(1))
        values.append(labels(rows)["value"])
    agent = top1_credit(np.array(choices), values)
    first = top1_credit(np.zeros(len(choices), dtype=int), values)
    options = {"n_resamples": n_resamples, "seed": seed}
    return {
        "n_conditions": len(choices),
        "agent": grouped_mean(agent, groups, **options, bounds=UNIT),
        "first_written": grouped_mean(first, groups, **options, bounds=UNIT),
        "random": RANDOM_TOP1,
        "agent_minus_random": grouped_mean(agent - RANDOM_TOP1, groups, **options, bounds=ABOVE_RANDOM),
        "agent_minus_first_written": grouped_mean(agent - first, groups, **options, bounds=UNIT_DIFFERENCE),
    }


def yield_table(release: Release) -> list[dict[str, Any]]:
    """Sound + valuable + new MVEs per condition and per 100 US dollars, for each model and organisation.

    Parameters
    ----------
    release : Release
        The validated release.

    Returns
    -------
    list of dict
        One row per (model, organisation), sorted: ``n_conditions``, ``svn_total``, ``svn_per_condition``
        (of five), ``cost_usd_per_condition``, ``svn_per_100_usd`` (``None`` at zero cost).
    """
    cells: dict[tuple[str, str], list[tuple[int, float]]] = defaultdict(list)
    for condition_id, rows in release.by_condition().items():
        condition = release.conditions[condition_id]
        svn = int(labels(rows)["svn"].sum())
        cells[(condition.model, condition.organisation)].append((svn, condition.cost_usd))
    table = []
    for (model, organisation), runs in sorted(cells.items()):
        counts, costs = np.array([n for n, _ in runs]), np.array([c for _, c in runs])
        table.append({"model": model, "organisation": organisation, "n_conditions": len(runs),
                      "svn_total": int(counts.sum()), "svn_per_condition": float(counts.mean()),
                      "cost_usd_per_condition": float(costs.mean()),
                      "svn_per_100_usd": yield_per_100_usd(counts, costs)})
    return table


def repeat_table(release: Release) -> dict[str, Any] | None:
    """The between-run spread of each per-condition metric over repeated runs (conditions of the same seed paper,
    model and organisation): the agent's and the same-model judge's Brier scores on the condition's resolved
    events, the agent's top-1 credit, its sound+valuable+new count and its cost, each a
    :func:`~scitaste_hf.rtaste.metrics.pooled_sd`; ``None`` when no condition was run more than once.

    Parameters
    ----------
    release : Release
        The validated release.
    """
    cells: dict[tuple[str, str, str], list[dict[str, float]]] = defaultdict(list)
    for condition_id, rows in release.by_condition().items():
        condition = release.conditions[condition_id]
        resolved = [(r, o) for r in rows if (o := resolve(r)) is not None]
        judged = [(j[r.model], o) for r, o in resolved
                  if r.model in (j := {p.judge_model: p.probability for p in r.judge_predictions})]
        values = labels(rows)["value"]
        run = {"svn": float(labels(rows)["svn"].sum()), "cost_usd": condition.cost_usd,
               "top1": float(top1_credit(np.array([[r.rank for r in rows].index(1)]), [values])[0])}
        if resolved:
            run["agent_brier"] = float(np.mean([(r.probability - o) ** 2 for r, o in resolved]))
        if judged:
            run["same_model_judge_brier"] = float(np.mean([(p - o) ** 2 for p, o in judged]))
        cells[(condition.seed_paper, condition.model, condition.organisation)].append(run)
    if all(len(runs) < 2 for runs in cells.values()):
        return None
    metrics = ("agent_brier", "same_model_judge_brier", "top1", "svn", "cost_usd")
    return {"n_repeated": sum(len(runs) >= 2 for runs in cells.values()),
            "metrics": {m: pooled_sd([[run[m] for run in runs if m in run] for runs in cells.values()])
                        for m in metrics}}


def agreement_table(release: Release) -> dict[str, Any]:
    """Rater agreement: Cohen's kappa per pair and Fleiss' kappa for the auditors' faithful, valid and value
    labels and the novelty judges' labels.

    Parameters
    ----------
    release : Release
        The validated release.
    """
    audits = [r.audit for r in release.records]
    ratings = {"faithful": [a.faithful for a in audits], "valid": [a.valid for a in audits],
               "value": [a.value for a in audits], "novelty": [a.novelty for a in audits]}
    out = {}
    for name, table in ratings.items():
        prefix = "judge" if name == "novelty" else "auditor"
        names = [f"{prefix}{i + 1}" for i in range(len(table[0]))]
        cohen = cohen_kappa_pairs(table, names)
        out[name] = {"cohen": {pair: _finite(k) for pair, k in cohen.items()},
                     "fleiss": _finite(fleiss_kappa(rating_table(table)[0]))}
    return out


def review_table(release: Release) -> dict[str, Any]:
    """The reviewers' agreed answers: for each fixed question, how many MVEs got each answer from at least
    two of the three reviewers, and how many got no such answer (``no_agreement``).

    Parameters
    ----------
    release : Release
        The validated release; MVEs without reviewer answers are left out.
    """
    reviewed = [r.audit.reviewer_answers for r in release.records if r.audit.reviewer_answers]
    questions: list[Counter] = []
    for answers in reviewed:
        for q, given in enumerate(zip(*answers)):
            if q == len(questions):
                questions.append(Counter())
            agreed = agreed_answer(given)
            questions[q]["no_agreement" if agreed is None else agreed] += 1
    return {"n_reviewed": len(reviewed), "questions": [dict(sorted(c.items())) for c in questions]}


def _finite(kappa: float) -> float | None:
    # An undefined kappa (every rating the same) is reported as null: JSON has no NaN.
    return None if np.isnan(kappa) else kappa


def report(release: Release, *, n_resamples: int = N_RESAMPLES, seed: int = SEED) -> dict[str, Any]:
    """Every headline number of a release, as one JSON-ready dict.

    Parameters
    ----------
    release : Release
        The validated release.
    n_resamples : int
        0: no intervals; otherwise not used (the intervals are cluster-robust t-intervals across seed papers).
    seed : int
        Not used by the intervals (kept for callers that pass it).
    """
    all_labels = labels(release.records)
    n_papers = len({c.seed_paper for c in release.conditions.values()})
    return {
        "n_mves": len(release.records),
        "n_conditions": len(release.conditions),
        "n_seed_papers": n_papers,
        "caveats": [ONE_SEED_PAPER] if n_papers == 1 else [],
        "n_delivered": sum(r.outcome.status == "delivered" for r in release.records),
        "n_sound_valuable_new": int(all_labels["svn"].sum()),
        "rerun_agreement": rerun_agreement(release.records),
        "yield": yield_table(release),
        "brier": brier_table(release, n_resamples=n_resamples, seed=seed),
        "top1": top1_table(release, n_resamples=n_resamples, seed=seed),
        "agreement": agreement_table(release),
        "reviews": review_table(release),
        "repeats": repeat_table(release),
    }
