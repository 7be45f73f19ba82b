"""rTaste: top-1 hit rate of research agents' rankings of their five MVEs, against random choice and against
the first-written MVE, with intervals across seed papers.

A thin ``evaluate`` wrapper over :func:`scitaste_hf.rtaste.summaries.ranking_summary`; the formulas live there.
"""

import evaluate

from scitaste_hf.adapters.metrics.inputs import FEATURES, KeepInputs, decode
from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.schema import CITATION, N_MVES
from scitaste_hf.rtaste.summaries import ranking_summary
from scitaste_hf.scoring.bootstrap import N_RESAMPLES

_DESCRIPTION = """\
rTaste ranking: per condition (one agent run), whether the agent's first choice (rank 1) is the MVE the
auditors valued highest (median of three 0-3 values). When k MVEs tie at the highest value, a choice among
them earns 1/k, so random choice earns exactly 1/5. Compared with random (0.2) and with the naive choice of
the first MVE the agent wrote. A ranking that is not a permutation of 1-5 (a bool, a string, a fraction among
the ranks) or a value outside 0-3 (or not a number) is an error. Inputs are kept as given (as JSON text), never
cast to numbers.
"""

_KWARGS_DESCRIPTION = f"""
Args:
    predictions (`list` of `list` of `int`): per condition, the agent's ranks of its five MVEs in written order,
        a permutation of 1-5 (1 = first choice); anything else (a bool, a string, 1.5) is an error.
    references (`list` of `list` of `float`): per condition, the auditors' median value (0-3) of each MVE, in
        written order; a bool, a string or a value outside 0-3 is an error.
    groups (`list` of `str`, optional): each condition's seed paper; intervals resample these (default: each
        condition on its own).
    n_resamples (`int`, default {N_RESAMPLES}): 0 skips the 95% intervals; any other value gives them (not
        otherwise used).
    seed (`int`, default 0): not used by the intervals.
Returns:
    top1_hit_rate (`float`), first_written_hit_rate (`float`), random_hit_rate (`float`, 0.2),
    top1_minus_random (`float`), top1_minus_first_written (`float`),
    ci (`dict`): the 95% interval of each of these (except random), clipped to the statistic's range;
    ci_clipped (`list`): the names whose interval was clipped; n_conditions (`int`).
Examples:
    >>> ranking = evaluate.load("metrics/rtaste_ranking")
    >>> ranking.compute(predictions=[[2, 1, 3, 4, 5]], references=[[1, 3, 2, 0, 0]], n_resamples=0)["top1_hit_rate"]
    1.0
"""


def _as_float(value):
    """A value as a float, as the float64 feature used to store it; anything else (a bool, a string, an int too
    large for a float) as it is, for ranking_summary to reject."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return float(value)
        except OverflowError:
            pass
    return value


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class RtasteRanking(KeepInputs, evaluate.Metric):
    """rTaste top-1 hit rate of MVE rankings."""

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
        # ranking_summary compares ranks with ==, so True would pass for rank 1 (and "1" would break its sort)
        for i, ranks in enumerate(predictions):
            if not isinstance(ranks, list) or any(isinstance(r, bool) or not isinstance(r, int | float) for r in ranks):
                raise ScitasteError(f"predictions[{i}] = {ranks!r} is not a permutation of the ranks 1-{N_MVES}")
        references = [[_as_float(v) for v in values] if isinstance(values, list) else values for values in references]
        return ranking_summary(predictions, references, groups, n_resamples=n_resamples, seed=seed)
