"""rTaste: Brier score of probability forecasts of registered events, with an interval across seed papers and
the base-rate forecast's Brier score.

A thin ``evaluate`` wrapper over :func:`scitaste_hf.rtaste.summaries.brier_summary`; the formulas live there.
"""

import datasets
import evaluate

from scitaste_hf.rtaste.schema import CITATION
from scitaste_hf.rtaste.summaries import brier_summary

_DESCRIPTION = """\
rTaste Brier score: mean of (p - o)^2 over forecasts p of registered events and their outcomes o (1 occurred,
0 did not), as the protected re-run decided them. 0 is perfect; always forecasting 0.5 scores 0.25. A `None`
forecast is unanswered: left out and reported as coverage, never scored. With `groups` (each event's seed
paper) the 95% interval resamples seed papers, and `base_rate_brier` scores the forecast that gives each event
the event rate of the other seed papers.
"""

_KWARGS_DESCRIPTION = """
Args:
    predictions (`list` of `float` or `None`): probability that each event occurs, 0-1; `None` if unanswered.
    references (`list` of `int`): 1 if the event occurred, 0 if not.
    groups (`list` of `str`, optional): each event's seed paper; the interval resamples these (default: each
        event on its own) and, with two or more seed papers, `base_rate_brier` is computed.
    n_resamples (`int`, default 1000): bootstrap resamples for the 95% interval; 0 skips it.
    seed (`int`, default 0): bootstrap seed; the same input and seed give the same interval.
Returns:
    brier (`float` or `None`): Brier score of the answered forecasts (`None` when none was answered).
    ci (`list` or `None`): its 95% percentile-bootstrap interval.
    base_rate_brier (`float` or `None`): Brier score of the other-seed-papers base rate (needs `groups`).
    event_rate (`float`): share of the events that occurred.
    n_scored (`int`), n_total (`int`), coverage (`float`).
Examples:
    >>> brier = evaluate.load("metrics/rtaste_brier")
    >>> brier.compute(predictions=[0.5, 0.5], references=[1, 0], n_resamples=0)["brier"]
    0.25
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RtasteBrier(evaluate.Metric):
    """rTaste Brier score of registered-event forecasts."""

    def _info(self):
        return evaluate.MetricInfo(
            module_type="metric",
            description=_DESCRIPTION,
            citation=CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=datasets.Features({"predictions": datasets.Value("float64"),
                                        "references": datasets.Value("int32")}),
        )

    def _compute(self, predictions, references, groups=None, n_resamples=1000, seed=0):
        return brier_summary(predictions, references, groups, n_resamples=n_resamples, seed=seed)
