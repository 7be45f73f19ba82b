"""The offline baseline's priors."""

import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.scoring import parse_answer
from scitaste_hf.scoring.floors import PriorBaseline


def _record(discipline, score):
    return {"discipline": discipline, "innovation_score": score, "dimension_scores": dict.fromkeys(DIMENSIONS, score)}


def test_priors_are_per_discipline_medians():
    baseline = PriorBaseline.fit([_record("physics", s) for s in (10, 20, 90)] + [_record("finance", 40)])
    assert baseline.answer({"discipline": "physics"})["innovation_score"] == 20.0
    assert baseline.answer({"discipline": "finance"})["dimension_scores"]["journal_impact"] == 40.0
    assert parse_answer(baseline.reply({"discipline": "physics"})).vector() == (20.0,) * 8
    with pytest.raises(ScitasteError, match="no prior for discipline 'medicine'"):
        baseline.answer({"discipline": "medicine"})
    with pytest.raises(ScitasteError, match="backup split is empty"):
        PriorBaseline.fit([])
