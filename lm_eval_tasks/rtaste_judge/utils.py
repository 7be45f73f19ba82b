"""Documents and scoring of the lm-eval task ``rtaste_judge``; prompt, parsing and data live in
:mod:`scitaste_hf.rtaste`, once."""

import json

import datasets

from scitaste_hf.rtaste.judge import condition_docs, parse_probabilities
from scitaste_hf.rtaste.release import load_release


def load_docs(data_dir=None, **_metadata):
    """The task's test split, one document per condition of the release at ``data_dir`` (``--metadata``),
    by default the bundled synthetic release; lm-eval passes the task's other metadata too, unused here."""
    return {"test": datasets.Dataset.from_list(condition_docs(load_release(data_dir)))}


def doc_to_text(doc):
    """The judge prompt of a condition."""
    return doc["prompt"]


def doc_to_target(doc):
    """The resolved events (1, 0, or null when unresolved) as JSON, for logged samples."""
    return json.dumps(doc["outcomes"])


def process_results(doc, results):
    """Per document: squared errors over its resolved events (summed, with their count, so the task's Brier
    weights every event equally) and whether the reply held five valid probabilities."""
    probabilities = parse_probabilities(results[0])
    if probabilities is None:
        return {"brier": (0.0, 0), "coverage": 0.0}
    pairs = [(p, o) for p, o in zip(probabilities, doc["outcomes"]) if o is not None]
    return {"brier": (sum((p - o) ** 2 for p, o in pairs), len(pairs)), "coverage": 1.0}


def brier_aggregate(items):
    """The Brier score over every resolved event of the parsed replies; NaN when there is none."""
    total, count = map(sum, zip(*items)) if items else (0.0, 0)
    return total / count if count else float("nan")
