"""The bundled synthetic rTaste release: simulated rows in the release schema, for tests and the demo.

Nothing here is study data. Every model, seed paper and text is labelled synthetic; the numbers come from a
seeded simulation in which each MVE has a hidden chance that its event occurs, the agent and the judges
forecast that chance with noise, and the auditors' labels follow a hidden quality. Regenerate the shipped
file with ``python -m scitaste_hf.rtaste.synthetic`` (the tests check that it matches).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from scitaste_hf.rtaste.schema import N_AUDITORS, N_MVES, ORGANISATIONS, MVERecord

SEED_PAPERS = tuple(f"synthetic-seed-{i}" for i in range(1, 5))
MODELS = ("synthetic-model-a", "synthetic-model-b", "synthetic-model-c")
N_REVIEW_QUESTIONS = 11
# (relation, threshold unit, re-run value unit): mostly "greater", as in the study, and mixed units so that
# the demo exercises the unit conversion.
_EVENT_KINDS = (("greater", "percentage_points", "fraction"), ("greater", "fraction", "fraction"),
                ("greater", "percent", "percent"), ("less", "seconds", "seconds"),
                ("in_interval", "fraction", "fraction"))
_EVENT_WEIGHTS = (0.4, 0.25, 0.15, 0.1, 0.1)
_COST_USD = {"single_researcher": 15.0, "research_team": 24.0}


def _event_and_values(rng: np.random.Generator, occurred: bool) -> tuple[dict[str, Any], float, str]:
    """A registered event, and a re-run value with its unit that does or does not satisfy the event."""
    relation, unit, value_unit = _EVENT_KINDS[rng.choice(len(_EVENT_KINDS), p=_EVENT_WEIGHTS)]
    margin = float(rng.uniform(0.2, 1.0))
    if relation == "in_interval":
        low = round(float(rng.uniform(0.3, 0.6)), 2)
        threshold = [low, round(low + 0.1, 2)]
        value = low + 0.05 if occurred else low + 0.1 + 0.05 * margin
        statistic = "accuracy of the ablated model"
    elif relation == "less":
        threshold = [round(float(rng.uniform(30, 90)), 1)]
        value = threshold[0] - 10 * margin if occurred else threshold[0] + 10 * margin
        statistic = "median wall-clock latency per batch"
    else:
        threshold = [round(float(rng.uniform(1, 5)), 1)] if unit != "fraction" else [round(float(
            rng.uniform(0.01, 0.05)), 3)]
        step = threshold[0] * margin
        value = threshold[0] + step if occurred else threshold[0] - step
        if unit == "percentage_points":
            value /= 100.0  # the re-run reports a fraction; the threshold is in percentage points
        statistic = "improvement in exact-match accuracy over the seed paper's baseline"
    event = {"statistic": f"[synthetic] {statistic}", "relation": relation, "threshold": threshold, "unit": unit}
    return event, round(float(value), 5), value_unit


def _condition_rows(rng: np.random.Generator, paper: str, model: str, organisation: str, skill: float
                    ) -> list[dict[str, Any]]:
    condition_id = f"{paper}/{model}/{organisation}"
    chance = rng.beta(2.0, 2.0, N_MVES)
    quality = np.clip(skill + rng.normal(0, 0.25, N_MVES), 0, 1)
    # The agent ranks by a noisy view of quality; rank 1 is its first choice.
    ranks = np.argsort(np.argsort(-(quality + rng.normal(0, 0.2, N_MVES)))) + 1
    cost = round(_COST_USD[organisation] * float(rng.uniform(0.7, 1.3)), 2)
    rows = []
    for k in range(N_MVES):
        occurred = bool(rng.random() < chance[k])
        event, rerun, value_unit = _event_and_values(rng, occurred)
        failed = bool(rng.random() < 0.05)
        reported = rerun if rng.random() < 0.8 else round(rerun * float(rng.uniform(0.9, 1.1)), 5)
        value = np.clip(np.round(3 * quality[k] + rng.normal(0, 0.6, N_AUDITORS)), 0, 3).astype(int)
        number = k + 1
        rows.append({
            "mve_id": f"{condition_id}/mve-{number}",
            "condition_id": condition_id,
            "seed_paper": paper,
            "seed_summary": f"[synthetic] {paper}: a simulated NLP paper that proposes a method and reports "
                            f"its accuracy and latency against a baseline. Not a real paper.",
            "model": model,
            "organisation": organisation,
            "cost_usd": cost,
            "position": number,
            "registration": {
                "hypothesis": f"[synthetic] hypothesis {number} of {model} ({organisation}) on {paper}",
                "nearest_prior_work": "[synthetic] the seed paper's own ablation",
                "inputs": "[synthetic] the seed paper's released code and evaluation set",
                "method": f"[synthetic] method {number}: modify one component and re-run the evaluation",
                "event": event,
                "evaluation_plan": "[synthetic] run the released evaluation script once on the test split",
                "resources": "[synthetic] one GPU, 45 minutes, open models of at most 8B parameters",
                "follow_up": "[synthetic] a larger study across model sizes if the event occurs",
            },
            "probability": round(float(np.clip(chance[k] + rng.normal(0, 0.2), 0.02, 0.98)), 2),
            "rank": int(ranks[k]),
            "judge_predictions": [
                {"judge_model": judge,
                 "probability": round(float(np.clip(chance[k] + rng.normal(0, 0.2), 0.02, 0.98)), 2)}
                for judge in MODELS
            ],
            "outcome": {
                "status": "failed" if failed else "delivered",
                "executor": ("synthetic-executor-1", "synthetic-executor-2")[k % 2],
                "attempts": 2 if failed else 1,
                "executor_value": None if failed else reported,
                "rerun_value": None if failed else rerun,
                "value_unit": value_unit,
            },
            "audit": {
                "faithful": [bool(v) for v in rng.random(N_AUDITORS) < 0.6 + 0.35 * quality[k]],
                "valid": [bool(v) for v in rng.random(N_AUDITORS) < 0.5 + 0.45 * quality[k]],
                "value": [int(v) for v in value],
                "novelty": [str(rng.choice(("equivalent", "close_variant", "distinct"), p=(0.1, 0.3, 0.6)))
                            for _ in range(2)],
                "obvious": bool(rng.random() < 0.6 - 0.15 * k),
                "reviewer_answers": [[str(v) for v in rng.choice(("yes", "no", "unclear"), N_REVIEW_QUESTIONS,
                                                                 p=(0.5, 0.35, 0.15))] for _ in range(3)],
            },
        })
    return rows


def synthetic_rows(seed: int = 0) -> list[dict[str, Any]]:
    """The synthetic release's rows: every model in both organisations on every synthetic seed paper.

    Parameters
    ----------
    seed : int
        Seed of the simulation; the bundled release is ``seed=0``.

    Returns
    -------
    list of dict
        Rows in the release schema (validated), five per condition.
    """
    rng = np.random.default_rng(seed)
    skills = dict(zip(MODELS, (0.75, 0.55, 0.3)))
    rows = [row for paper in SEED_PAPERS for model in MODELS for organisation in ORGANISATIONS
            for row in _condition_rows(rng, paper, model, organisation, skills[model])]
    return [MVERecord.model_validate(row).to_row() for row in rows]


if __name__ == "__main__":
    from scitaste_hf.rtaste.release import example_release_dir

    lines = [json.dumps(row, ensure_ascii=False) + "\n" for row in synthetic_rows()]
    (example_release_dir() / "data" / "rtaste-train.jsonl").write_text("".join(lines), encoding="utf-8")
