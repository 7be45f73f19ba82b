"""scitaste_hf.scoring.inputs is strict: a bool or a string is never read as a score (numpy would take True as 1.0
and "50" as 50.0), and the refusal is one line that names the item; arrays of numbers pass on their dtype."""

import time

import numpy as np
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.scoring import wape
from scitaste_hf.scoring.inputs import as_answer_matrix, as_scores, is_number


def _answer(score=50.0):
    return {"innovation_score": score, "dimension_scores": dict.fromkeys(DIMENSIONS, 50.0)}


@pytest.mark.parametrize(("predictions", "references", "message"), [
    ([True], ["50"], r"^predictions\[0\] = True is not a number \(predictions must be numbers, 0-100\)$"),
    ([50.0], ["50"], r"^references\[0\] = '50' is not a number"),
    ([50.0, 40.0], [50.0, False], r"^references\[1\] = False is not a number"),
    ([50.0, None], [50.0, 50.0], r"^predictions\[1\] = None is not a number"),
    (np.array([True, False]), [50.0, 50.0], r"^predictions\[0\] = True is not a number"),
    (np.array(["50", "40"]), [50.0, 50.0], r"^predictions\[0\] = '50' is not a number"),
    ([40.0, np.bool_(True)], [50.0, 50.0], r"^predictions\[1\] = True is not a number"),
    ((40.0, [50.0]), [50.0, 50.0], r"^predictions\[1\] = \[50\.0\] is not a number"),
    ("50", [50.0], r"^predictions must be numbers, got str$"),
])
def test_a_bool_or_a_string_is_refused_naming_the_item(predictions, references, message):
    with pytest.raises(ScitasteError, match=message) as error:
        wape(predictions, references)
    assert "\n" not in str(error.value)


def test_numbers_of_every_kind_pass():
    assert wape([np.float32(40.0), np.int64(60), 50], (50.0, 50.0, 50)) == pytest.approx(20 / 150)
    assert wape(np.array([40, 60], dtype=np.uint8), np.array([50.0, 50.0], dtype=np.float32)) == pytest.approx(0.2)
    assert [is_number(v) for v in (1, 1.5, np.float16(2), np.int8(3), True, np.bool_(False), "1", None)] == [
        True, True, True, True, False, False, False, False]
    # the bounds still hold after the type check
    with pytest.raises(ScitasteError, match=r"^predictions has a score outside 0-100 at item 1: 101$"):
        as_scores([50, 101], "predictions")
    with pytest.raises(ScitasteError, match=r"^predictions must be one-dimensional, got shape \(1, 2\)$"):
        as_scores(np.array([[1.0, 2.0]]), "predictions")


def test_answer_matrices_refuse_bools_and_strings_in_rows_and_arrays():
    with pytest.raises(ScitasteError, match=r"^gold\[1\] has a score that is not a number: '35'$"):
        as_answer_matrix([_answer(), _answer("35")], "gold")
    with pytest.raises(ScitasteError, match=r"^gold\[0\] has a score that is not a number: True$"):
        as_answer_matrix(np.ones((2, 1 + len(DIMENSIONS)), dtype=bool), "gold")
    mixed = np.array([[50.0] * 8, [50.0] * 7 + ["x"]], dtype=object)
    with pytest.raises(ScitasteError, match=r"^gold\[1\] has a score that is not a number: 'x'$"):
        as_answer_matrix(mixed, "gold")
    assert as_answer_matrix(np.full((2, 8), 50, dtype=np.int16), "gold").dtype == np.float64
    assert as_answer_matrix([{**_answer(np.float32(40.0))}], "gold")[0, 0] == 40.0


def test_a_large_float_array_is_checked_by_its_dtype_not_item_by_item():
    big = np.random.default_rng(0).uniform(0, 100, 2_000_000)
    as_scores(big, "predictions")
    start = time.perf_counter()
    as_scores(big, "predictions")
    array_time = time.perf_counter() - start
    items = big[:200_000].tolist()
    start = time.perf_counter()
    bad = [i for i, v in enumerate(items) if not is_number(v)]  # what a look at each item costs, for a tenth
    loop_time = time.perf_counter() - start
    assert bad == [] and array_time < loop_time * 10
    assert as_scores(big, "predictions") is big  # not copied either


def test_a_prediction_that_is_not_a_number_is_a_failure_by_the_same_test():
    from scitaste_hf.scoring import score_pairs

    result = score_pairs([np.float32(40.0), True, "50", np.int64(60), None], [50.0] * 5, with_dimensions=False,
                         n_resamples=0)
    assert (result["n_scored"], result["failures"]) == (2, {"schema": 2, "missing": 1})
    assert result["scheme2"]["wape"] == pytest.approx(0.2)
