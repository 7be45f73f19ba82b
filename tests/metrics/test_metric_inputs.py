"""The evaluate modules see their inputs as given: evaluate's feature encoding must not cast a bool or a string
into a number, nor reject a valid answer's extra fields, before scitaste_hf's validation sees it."""

import json

import numpy as np
import pytest

from scitaste_hf import load_metric
from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS, Answer
from scitaste_hf.scoring import scheme1


def _answer(score, **extra):
    return {"innovation_score": score, "dimension_scores": {k: score for k in DIMENSIONS}, **extra}


def _dims(**change):
    return {**{k: 50.0 for k in DIMENSIONS}, **change}


GOLD = [_answer(s) for s in (20.0, 35.0, 50.0, 65.0, 80.0)]
#: an imperfect but valid prediction per gold answer, so scores differ from 100
PRED = [_answer(s) for s in (25.0, 30.0, 55.0, 60.0, 90.0)]


@pytest.fixture(scope="module")
def scheme1_metric():
    return load_metric("scitaste_scheme1")


@pytest.fixture(scope="module")
def wape_metric():
    return load_metric("scitaste_wape")


def _matrix(answers):
    return np.array([[a["innovation_score"], *(a["dimension_scores"][k] for k in DIMENSIONS)] for a in answers])


def test_scheme1_reply_fields_are_ignored(scheme1_metric):
    """The benchmark's own reply carries reasoning and confidence besides the answer."""
    preds = [_answer(p["innovation_score"], reasoning="novel method", confidence=0.7) for p in PRED]
    preds[1]["confidence"] = 1  # an int confidence, as JSON replies give it
    result = scheme1_metric.compute(predictions=preds, references=GOLD, n_resamples=0)
    expected = scheme1(_matrix(PRED), _matrix(GOLD))
    assert result["scheme1"] == pytest.approx(expected["scheme1"])
    assert (result["n_scored"], result["n_total"], result["failures"]) == (5, 5, {})


@pytest.mark.parametrize("bad", [
    {"innovation_score": 30.0, "dimension_scores": {k: 50.0 for k in DIMENSIONS[1:]}},  # a dimension missing
    {"innovation_score": 30.0, "dimension_scores": _dims(novelty=50.0)},  # an extra dimension
    {"innovation_score": 30.0},  # no dimension_scores
    {"innovation_score": True, "dimension_scores": _dims()},  # a bool is not a score
    {"innovation_score": "30", "dimension_scores": _dims()},  # nor is a quoted number
    {"innovation_score": 30.0, "dimension_scores": _dims(disruptiveness=False)},
    {"innovation_score": 30.0, "dimension_scores": [50.0] * 7},
    {"innovation_score": 30.0, "dimension_scores": _dims(), "confidence": "high"},
    30.0,  # a bare number is not an answer
    True,
    [30.0],
], ids=["missing-dimension", "extra-dimension", "no-dimension-scores", "bool-score", "quoted-score",
        "bool-dimension", "list-dimensions", "string-confidence", "number", "bool", "list"])
def test_scheme1_invalid_answer_is_a_counted_failure(scheme1_metric, bad):
    preds = [bad, *PRED[1:]]
    result = scheme1_metric.compute(predictions=preds, references=GOLD, n_resamples=0)
    assert (result["n_scored"], result["n_total"], result["failures"]) == (4, 5, {"schema": 1})
    assert result["scheme1"] == pytest.approx(scheme1(_matrix(PRED[1:]), _matrix(GOLD[1:]))["scheme1"])


def test_scheme1_raw_reply_is_parsed_like_the_cli(scheme1_metric):
    """A string is the model's raw reply, parsed with scitaste_hf.scoring.parse_answer."""
    reply = ("The paper proposes a new method.\n```json\n"
             + json.dumps(_answer(25.0, reasoning="new method", confidence=0.6)) + "\n```\n")
    preds = [reply, "I cannot judge this paper.", '{"innovation_score": 50}', '{"innovation_score": 150, '
             '"dimension_scores": ' + json.dumps(_dims()) + "}", PRED[4]]
    result = scheme1_metric.compute(predictions=preds, references=GOLD, n_resamples=0)
    assert result["failures"] == {"no_json": 1, "out_of_range": 1, "schema": 1}
    assert (result["n_scored"], result["n_total"]) == (2, 5)
    expected = scheme1(_matrix([PRED[0], PRED[4]]), _matrix([GOLD[0], GOLD[4]]))
    assert result["scheme1"] == pytest.approx(expected["scheme1"])


def test_scheme1_answer_objects_and_numpy_numbers(scheme1_metric):
    preds = [Answer.model_validate(PRED[0]),
             {"innovation_score": np.float32(30.0), "dimension_scores": {k: np.int64(30) for k in DIMENSIONS}},
             *PRED[2:]]
    result = scheme1_metric.compute(predictions=preds, references=GOLD, n_resamples=0)
    assert result["scheme1"] == pytest.approx(scheme1(_matrix(PRED), _matrix(GOLD))["scheme1"])
    assert result["failures"] == {}


def test_scheme1_add_and_add_batch_keep_inputs_as_given(scheme1_metric):
    scheme1_metric.add(prediction=_answer(25.0, reasoning="r", confidence=0.5), reference=GOLD[0])
    scheme1_metric.add(prediction=None, reference=GOLD[1])
    scheme1_metric.add_batch(predictions=[_answer(True), *PRED[3:]], references=GOLD[2:])
    result = scheme1_metric.compute(n_resamples=0)
    assert (result["n_scored"], result["n_total"]) == (3, 5)
    assert result["failures"] == {"missing": 1, "schema": 1}


@pytest.mark.parametrize(("bad", "message"), [
    ({"innovation_score": 35.0, "dimension_scores": {}}, r"references\[1\] lacks 'citation_impact'"),
    ({"innovation_score": 35.0}, r"references\[1\] lacks 'dimension_scores'"),
    ({"innovation_score": True, "dimension_scores": _dims()}, r"references\[1\] has a score that is not a number"),
    (None, r"references\[1\] must be an answer dict"),
    ("35", r"references\[1\] must be an answer dict"),
])
def test_scheme1_malformed_reference_is_an_error_naming_it(scheme1_metric, bad, message):
    with pytest.raises(ScitasteError, match=message):
        scheme1_metric.compute(predictions=PRED, references=[GOLD[0], bad, *GOLD[2:]], n_resamples=0)


def test_wape_bools_and_strings_are_failures(wape_metric):
    result = wape_metric.compute(predictions=[True, 40, "50", None, float("nan"), False],
                                 references=[50, 50, 50, 50, 50, 50], n_resamples=0)
    assert result["wape"] == pytest.approx(0.2)
    assert (result["n_scored"], result["n_total"]) == (1, 6)
    assert result["failures"] == {"missing": 1, "out_of_range": 1, "schema": 3}
    result = wape_metric.compute(predictions=[True, 40], references=[50, 50], n_resamples=0)
    assert (result["wape"], result["coverage"]) == (pytest.approx(0.2), 0.5)


def test_wape_numpy_inputs_and_add(wape_metric):
    result = wape_metric.compute(predictions=np.array([40.0, 60.0], dtype=np.float32),
                                 references=np.array([50, 50]), n_resamples=0)
    assert (result["wape"], result["n_scored"]) == (pytest.approx(0.2), 2)
    result = wape_metric.compute(predictions=[np.bool_(True), np.int64(40)], references=[50.0, 50.0], n_resamples=0)
    assert (result["n_scored"], result["failures"]) == (1, {"schema": 1})
    wape_metric.add(prediction="40", reference=50.0)
    wape_metric.add(prediction=45, reference=50.0)
    result = wape_metric.compute(n_resamples=0)
    assert (result["wape"], result["n_scored"], result["failures"]) == (pytest.approx(0.1), 1, {"schema": 1})


@pytest.mark.parametrize("bad", [True, "50", None, [50.0]])
def test_wape_reference_that_is_not_a_number_is_an_error(wape_metric, bad):
    with pytest.raises(ScitasteError, match=r"references\[1\] = .* is not a number"):
        wape_metric.compute(predictions=[40.0, 40.0], references=[50.0, bad], n_resamples=0)


def test_a_single_string_is_not_a_list_of_inputs(wape_metric):
    with pytest.raises(ScitasteError, match="predictions must be a list, got str"):
        wape_metric.compute(predictions="40", references=[50.0], n_resamples=0)
    with pytest.raises(ScitasteError, match=r"predictions\[0\] cannot be read: a object is not a JSON value"):
        wape_metric.compute(predictions=[object()], references=[50.0], n_resamples=0)


@pytest.mark.parametrize("bad", [True, False, "0.5", [0.5]])
def test_brier_probability_that_is_not_a_number_is_an_error(brier, bad):
    with pytest.raises(ScitasteError, match=r"predictions\[0\] = .* is not a probability between 0 and 1"):
        brier.compute(predictions=[bad, 0.5], references=[1, 0], n_resamples=0)


def test_brier_nan_is_unanswered_and_outcomes_are_not_cast(brier):
    result = brier.compute(predictions=[float("nan"), 0.5, None], references=[1, 0, 1], n_resamples=0)
    assert (result["brier"], result["n_scored"], result["coverage"]) == (0.25, 1, pytest.approx(1 / 3))
    result = brier.compute(predictions=[0.9, 0.2], references=[True, np.int64(0)], n_resamples=0)
    assert result["brier"] == pytest.approx((0.01 + 0.04) / 2)
    with pytest.raises(ScitasteError, match=r"references\[0\] = 0.7; an outcome is 0"):  # was truncated to 0
        brier.compute(predictions=[0.5, 0.5], references=[0.7, 0], n_resamples=0)
    with pytest.raises(ScitasteError, match=r"references\[1\] = '0'; an outcome is 0"):
        brier.compute(predictions=[0.5, 0.5], references=[1, "0"], n_resamples=0)


@pytest.mark.parametrize("ranks", [[True, 2, 3, 4, 5], [1.5, 2, 3, 4, 5], ["1", 2, 3, 4, 5], "12345", None],
                         ids=["bool", "fraction", "string-rank", "string", "none"])
def test_ranking_ranks_are_not_cast(ranking, ranks):
    with pytest.raises(ScitasteError, match=r"predictions\[0\] = .* is not a permutation of the ranks 1-5"):
        ranking.compute(predictions=[ranks], references=[[1, 0, 0, 0, 0]], n_resamples=0)


@pytest.mark.parametrize("values", [[True, 0, 0, 0, 0], ["2", 0, 0, 0, 0]], ids=["bool", "string"])
def test_ranking_values_are_not_cast(ranking, values):
    with pytest.raises(ScitasteError, match=r"references\[0\] = .* must be the 5 MVEs' values within 0-3"):
        ranking.compute(predictions=[[1, 2, 3, 4, 5]], references=[values], n_resamples=0)


def test_ranking_numpy_inputs(ranking):
    result = ranking.compute(predictions=[np.array([2, 1, 3, 4, 5])], references=[np.array([1.0, 3, 2, 0, 0])],
                             n_resamples=0)
    assert result["top1_hit_rate"] == 1.0
