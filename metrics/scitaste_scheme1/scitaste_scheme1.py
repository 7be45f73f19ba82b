"""SciTaste-Bench Scheme 1: correlation + dimension accuracy over the innovation score and seven dimensions.

A thin ``evaluate`` wrapper over :mod:`scitaste_hf.scoring`; the formula lives there, once.
"""

import evaluate

from scitaste_hf.adapters.metrics.inputs import FEATURES, KeepInputs, decode
from scitaste_hf.schema import CITATION, HUB_DATASET
from scitaste_hf.scoring import parse_answer, score_pairs
from scitaste_hf.scoring.bootstrap import N_RESAMPLES
from scitaste_hf.scoring.describe import scheme1_text

_DESCRIPTION = f"""\
SciTaste-Bench's {scheme1_text()}
An undefined correlation scores 0. A `None` or invalid answer is a failure: excluded and reported as coverage.
An answer may also be the model's raw reply (a string), parsed as the CLI parses replies. Keys other than the
answer's are ignored. Inputs are kept as given (as JSON text), never cast to the answer's layout.
"""

_KWARGS_DESCRIPTION = f"""
Args:
    predictions (`list` of `dict`, `str` or `None`): per paper {{"innovation_score": float, "dimension_scores":
        {{citation_impact, knowledge_breadth, semantic_novelty, disruptiveness, conceptual_innovation,
        team_collaboration, journal_impact: float}}}}, all 0-100, other keys (`reasoning`, `confidence`)
        ignored; or the model's raw reply text, parsed like the CLI does (`scitaste_hf.scoring.parse_answer`).
        `None` marks a failed answer; a missing or extra dimension, a bool, a quoted number or an
        out-of-range score is a failure too.
    references (`list` of `dict`): the gold answers in the same layout; a malformed one is an error.
    n_resamples (`int`, default {N_RESAMPLES}): bootstrap resamples for the 95% interval; 0 skips it.
    seed (`int`, default 0): bootstrap seed.
Returns:
    scheme1 (`float`, 0-100), grade (`str`), part_a, part_b (`float`, 0-100),
    spearman, pearson (`float` or `None` when undefined), mae, mse, bias (`float`),
    s_rho, s_r, s_mae, s_mse, s_err, s_bias (the Part-A components, 0-100),
    dimension_spearman, dimension_mae (`dict` per dimension), coverage, n_scored, n_total, failures,
    ci (`dict`): the 95% percentile-bootstrap interval of `scheme1`.
    floor (`dict`): `scheme1` of the no-information floor on the scored papers (the mean of the references
        given to every paper).
    skill (`dict`): `skill` = (scheme1 - floor) / (100 - floor), the share of the floor's distance to a perfect
        score that the run closes, its paired-bootstrap `interval`, and `above_floor`: whether that interval
        excludes 0 (`None` without resamples).
Examples:
    >>> scheme1 = evaluate.load("metrics/scitaste_scheme1")
    >>> gold = [{{"innovation_score": s, "dimension_scores": {{k: s for k in DIMENSIONS}}}} for s in (20.0, 50.0, 80.0)]
    >>> scheme1.compute(predictions=gold, references=gold)["grade"]
    'excellent'
"""


@evaluate.utils.file_utils.add_start_docstrings(_DESCRIPTION, _KWARGS_DESCRIPTION)
class ScitasteScheme1(KeepInputs, evaluate.Metric):
    """SciTaste-Bench Scheme 1 (correlation + dimension accuracy)."""

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
        # a string is the model's raw reply: parse_answer makes it an Answer or a counted Failure
        predictions = [parse_answer(p) if isinstance(p, str) else p for p in decode(predictions)]
        references = decode(references)
        summary = score_pairs(predictions, references, with_dimensions=True, n_resamples=n_resamples, seed=seed)
        scheme1 = summary["scheme1"] or {"scheme1": None, "grade": None, "ci": None}
        floor = (summary["floors"] or {}).get("constant")
        return {**scheme1, "coverage": summary["coverage"], "n_scored": summary["n_scored"],
                "n_total": summary["n_total"], "failures": summary["failures"],
                "floor": floor and {"scheme1": floor["scheme1"]}, "skill": (summary["skill"] or {}).get("scheme1")}
