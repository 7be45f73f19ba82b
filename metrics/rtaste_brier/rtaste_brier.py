"""rTaste: Brier score of probability forecasts of registered events, with an interval across seed papers and
the base-rate forecast's Brier score.

A thin ``evaluate`` wrapper over :func:`scitaste_hf.rtaste.summaries.brier_summary`; the formulas live there.
"""

import evaluate

from scitaste_hf.adapters.metrics.inputs import FEATURES, KeepInputs, decode
from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.schema import CITATION
from scitaste_hf.rtaste.summaries import brier_summary
from scitaste_hf.scoring.bootstrap import N_RESAMPLES

_DESCRIPTION = """\
rTaste Brier score: mean of (p - o)^2 over forecasts p of registered events and their outcomes o (1 occurred,
0 did not), as the protected re-run decided them. 0 is perfect; always forecasting 0.5 scores 0.25. A `None`
(or NaN) forecast is unanswered: left out and reported as coverage, never scored. Any other forecast must be a
number within 0-1: a bool or a string such as "0.5" is an error, as is an outcome other than 0/1 (or a bool).
Inputs are kept as given (as JSON text), never cast to numbers. With `groups` (each event's seed
paper) the 95% interval resamples seed papers, and `base_rate_brier` scores the forecast that gives each event
the event rate of the other seed papers.
"""

_KWARGS_DESCRIPTION = f"""
Args:
    predictions (`list` of `float` or `None`): probability that each event occurs, 0-1; `None` (or NaN) if
        unanswered. A bool, a string or a number outside 0-1 is an error.
    references (`list` of `int`): 1 if the event occurred, 0 if not (`True`/`False` also accepted); a string or
        any other number is an error.
    groups (`list` of `str`, optional): each event's seed paper; the interval resamples these (default: each
        event on its own) and, with two or more seed papers, `base_rate_brier` is computed.
    n_resamples (`int`, default {N_RESAMPLES}): 0 skips the 95% interval; any other value gives it (not otherwise used).
    seed (`int`, default 0): not used by the interval; the same input always gives the same interval.
Returns:
    brier (`float` or `None`): Brier score of the answered forecasts (`None` when none was answered).
    ci (`list` or `None`): its 95% cluster-robust t-interval across seed papers, clipped to 0-1.
    ci_clipped (`bool`): whether the interval was clipped (few seed papers).
    base_rate_brier (`float` or `None`): Brier score of the other-seed-papers base rate (needs `groups`).
    event_rate (`float`): share of the events that occurred.
    n_scored (`int`), n_total (`int`), coverage (`float`).
Examples:
    >>> brier = evaluate.load("metrics/rtaste_brier")
    >>> brier.compute(predictions=[0.5, 0.5], references=[1, 0], n_resamples=0)["brier"]
    0.25
"""


def _is_forecast(p):
    """A number that brier_summary can read: a float (it checks the range and NaN) or an int within 0-1."""
    return isinstance(p, float) or (isinstance(p, int) and not isinstance(p, bool) and 0 <= p <= 1)


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RtasteBrier(KeepInputs, evaluate.Metric):
    """rTaste Brier score of registered-event forecasts."""

    def _info(self):
        return evaluate.MetricInfo(
            module_type="metric",
            description=_DESCRIPTION,
            citation=CITATION,
            inputs_description=_KWARGS_DESCRIPTION,
            features=FEATURES,
        )

    def _compute(self, predictions, references, groups=None, n_resamples=N_RESAMPLES, seed=0):
        predictions = decode(predictions)
        references = decode(references)
        # brier_summary reads both with numpy, which would take True as 1.0 and "0.5" as 0.5
        for i, p in enumerate(predictions):
            if p is not None and not _is_forecast(p):
                raise ScitasteError(f"predictions[{i}] = {p!r} is not a probability between 0 and 1")
        for i, o in enumerate(references):
            if not (isinstance(o, int | float) and o in (0, 1)):  # True and 1.0 are 1; "1" and 0.7 are not
                raise ScitasteError(f"references[{i}] = {o!r}; an outcome is 0 (did not occur) or 1 (occurred)")
        return brier_summary(predictions, references, groups, n_resamples=n_resamples, seed=seed)
