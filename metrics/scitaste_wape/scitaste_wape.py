"""SciTaste-Bench Scheme 2: WAPE of predicted innovation scores, with its A-F grade and 0-100 score.

A thin ``evaluate`` wrapper over :mod:`scitaste_hf.scoring`; the formula lives there, once.
"""

import evaluate

from scitaste_hf.adapters.metrics.inputs import FEATURES, KeepInputs, decode
from scitaste_hf.schema import CITATION, HUB_DATASET
from scitaste_hf.scoring import score_pairs
from scitaste_hf.scoring.bootstrap import N_RESAMPLES
from scitaste_hf.scoring.describe import wape_bands_text

_DESCRIPTION = f"""\
Scheme 2 of SciTaste-Bench. WAPE = sum |p - g| / sum |g| over the scored papers' innovation scores (0-100).
The WAPE maps to a 0-100 score, linear inside each grade band: {wape_bands_text()}.
A `None`, NaN, out-of-range or non-number prediction (a bool, a string such as "50") is a failure: excluded
and reported as coverage, never a zero. Inputs are kept as given (as JSON text), never cast to numbers.
"""

_KWARGS_DESCRIPTION = f"""
Args:
    predictions (`list` of `float` or `None`): predicted innovation scores, 0-100; `None` marks a failed answer,
        and a bool or a string is a failure too (never read as a number).
    references (`list` of `float`): gold innovation scores, 0-100, not all zero; anything else is an error.
    n_resamples (`int`, default {N_RESAMPLES}): bootstrap resamples for the 95% intervals; 0 skips them.
    seed (`int`, default 0): bootstrap seed; the same input and seed give the same interval.
Returns:
    wape (`float`): the WAPE as a fraction (0.131 for 13.1%).
    score (`float`): the Scheme-2 score, 0-100.
    grade (`str`): A..F.
    coverage (`float`), n_scored (`int`), n_total (`int`), failures (`dict` reason -> count).
    ci (`dict`): 95% percentile-bootstrap intervals of `wape` and `score`.
    floor (`dict`): `wape` and `score` of the no-information floor on the scored papers: the mean of the
        references given to every paper (WAPE rewards answering the mean: this floor often earns grade C).
    skill (`dict`): `skill` = 1 - wape / floor wape (0: no better than the floor, 1: perfect), its paired-bootstrap
        `interval`, and `above_floor`: whether that interval excludes 0 (`None` without resamples).
Examples:
    >>> wape = evaluate.load("metrics/scitaste_wape")
    >>> r = wape.compute(predictions=[50.0, 40.0, None], references=[50.0, 50.0, 30.0])
    >>> round(r["wape"], 3), r["grade"], r["n_scored"], r["n_total"]
    (0.1, 'C', 2, 3)
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ScitasteWape(KeepInputs, evaluate.Metric):
    """SciTaste-Bench Scheme 2 (WAPE with grades)."""

    def _info(self):
        return evaluate.MetricInfo(
            module_type="metric",
            description=_DESCRIPTION,
            citation=CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=FEATURES,
            homepage=f"https://huggingface.co/datasets/{HUB_DATASET}",
        )

    def _compute(self, predictions, references, n_resamples=N_RESAMPLES, seed=0):
        # a reference that is not a number (a bool, a string) is refused by scitaste_hf.scoring.inputs, naming it
        summary = score_pairs(decode(predictions), decode(references), with_dimensions=False,
                              n_resamples=n_resamples, seed=seed)
        scheme2 = summary["scheme2"] or {"wape": None, "score": None, "grade": None, "ci": None}
        floor = (summary["floors"] or {}).get("constant")
        return {**scheme2, "coverage": summary["coverage"], "n_scored": summary["n_scored"],
                "n_total": summary["n_total"], "failures": summary["failures"],
                "floor": floor and {"wape": floor["wape"], "score": floor["scheme2"]},
                "skill": (summary["skill"] or {}).get("scheme2")}
