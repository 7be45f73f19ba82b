"""What the lm-eval task family ``lm_eval_tasks/scitaste`` calls: documents, prompts, per-item results and the
aggregations (Scheme 1, Scheme 2, WAPE, coverage, per-discipline Scheme 2). The task folder's ``utils.py``
only re-exports these, so the formulas stay in :mod:`scitaste_hf.scoring`.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from scitaste_hf.agent.loop import failure_of
from scitaste_hf.prompts import paper_prompt
from scitaste_hf.schema import DIMENSIONS, DISCIPLINES, FAILURE_REASONS, HUB_DATASET, Answer, Failure
from scitaste_hf.scoring import parse_answer, score_run

#: The lm-eval task of each evaluation mode (the YAMLs in lm_eval_tasks/scitaste/).
TASKS = {"pure_qa": "scitaste_pure_qa", "native_search": "scitaste_native_search",
         "dimagent_v3": "scitaste_dimagent", "dimagent_v3_native": "scitaste_dimagent_native"}

#: Metric names of every task: the overall figures and Scheme 2 per discipline.
METRICS = ("scheme1", "scheme2", "wape", "coverage", *(f"scheme2_{d}" for d in DISCIPLINES))


def load_docs(data_dir: str | None = None, split: str = "selected", **_metadata: Any):
    """The task's documents: the ``split`` of the dataset at ``data_dir`` (lm-eval's ``--metadata``), else of
    ``$SCITASTE_DATA_DIR``, else of the Hub dataset. Returns ``{"test": datasets.Dataset}``."""
    import datasets

    from scitaste_hf.records import load_records
    from scitaste_hf.schema import record_features

    source = data_dir or os.environ.get("SCITASTE_DATA_DIR") or HUB_DATASET
    features = record_features()
    rows = [{k: r.get(k) for k in features} for r in load_records(source, split)]
    return {"test": datasets.Dataset.from_list(rows, features=features)}


def doc_to_text(doc: Mapping[str, Any]) -> str:
    """The prompt of one paper (:func:`scitaste_hf.prompts.paper_prompt`)."""
    return paper_prompt(doc)


def doc_to_target(doc: Mapping[str, Any]) -> str:
    """The gold answer as JSON, for lm-eval's sample logs."""
    return json.dumps({"innovation_score": doc["innovation_score"], "dimension_scores": doc["dimension_scores"]})


def _gold(doc: Mapping[str, Any]) -> list[float]:
    return [float(doc["innovation_score"]), *(float(doc["dimension_scores"][k]) for k in DIMENSIONS)]


def process_results(doc: Mapping[str, Any], results: Sequence[str]) -> dict[str, dict[str, Any]]:
    """One item per metric: the parsed answer (or its failure reason) beside the gold scores, JSON-safe so that
    lm-eval can log it with the sample."""
    text = results[0] if results else ""
    reason = failure_of(text)
    answer = Failure(reason if reason in FAILURE_REASONS else "other", text) if reason else parse_answer(text)
    item = {"bibcode": doc["bibcode"], "discipline": doc["discipline"], "gold": _gold(doc),
            "pred": list(answer.vector()) if isinstance(answer, Answer) else None,
            "reason": answer.reason if isinstance(answer, Failure) else None}
    return dict.fromkeys(METRICS, item)


def _run(items: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    def record(item: Mapping[str, Any]) -> dict[str, Any]:
        return {"bibcode": item["bibcode"], "discipline": item["discipline"], "innovation_score": item["gold"][0],
                "dimension_scores": dict(zip(DIMENSIONS, item["gold"][1:]))}

    predictions: dict[str, Answer | Failure] = {}
    for item in items:
        if item["pred"] is None:
            predictions[item["bibcode"]] = Failure(item["reason"] or "other")
        else:
            predictions[item["bibcode"]] = Answer.model_validate(record({**item, "gold": item["pred"]}))
    return score_run([record(i) for i in items], predictions, n_resamples=0)


def _value(block: Mapping[str, Any] | None, scheme: str, key: str) -> float:
    """A scheme's figure, or NaN when nothing was scored (never a silent 0)."""
    value = (block or {}).get(scheme) and block[scheme].get(key)
    return math.nan if value is None else float(value)


def scheme1(items: Sequence[Mapping[str, Any]]) -> float:
    """Scheme-1 score of the scored items."""
    return _value(_run(items)["overall"], "scheme1", "scheme1")


def scheme2(items: Sequence[Mapping[str, Any]]) -> float:
    """Scheme-2 score (from WAPE) of the scored items."""
    return _value(_run(items)["overall"], "scheme2", "score")


def wape(items: Sequence[Mapping[str, Any]]) -> float:
    """WAPE of the scored items, as a fraction."""
    return _value(_run(items)["overall"], "scheme2", "wape")


def coverage(items: Sequence[Mapping[str, Any]]) -> float:
    """Share of the items whose answer could be scored."""
    return float(_run(items)["overall"]["coverage"])


def _scheme2_of(discipline: str):
    def aggregate(items: Sequence[Mapping[str, Any]]) -> float:
        return _value(_run(items)["by_discipline"].get(discipline), "scheme2", "score")

    aggregate.__name__ = f"scheme2_{discipline}"
    aggregate.__doc__ = f"Scheme-2 score of the scored {discipline} items."
    return aggregate


#: ``scheme2_physics`` ... ``scheme2_finance``: the per-discipline aggregations (the paper's Table 10).
PER_DISCIPLINE = {f"scheme2_{d}": _scheme2_of(d) for d in DISCIPLINES}
