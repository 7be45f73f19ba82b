"""Label aggregation and rater agreement, against hand-computed and textbook values."""

import numpy as np
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.aggregation import (
    agreed_answer,
    cohen_kappa_pairs,
    fleiss_kappa,
    majority_vote,
    median_value,
    rating_table,
)


def test_majority_median_and_two_agree():
    votes = [[True, True, False], [False, False, True], [True, True, True], [False, True, False]]
    assert majority_vote(votes).tolist() == [True, False, True, False]
    assert median_value([[0, 3, 2], [1, 1, 3], [3, 3, 3]]).tolist() == [2.0, 1.0, 3.0]
    assert agreed_answer(["yes", "no", "yes"]) == "yes"
    assert agreed_answer(["yes", "no", "unclear"]) is None
    with pytest.raises(ScitasteError, match="odd number of raters"):
        majority_vote([[True, False]])
    with pytest.raises(ScitasteError, match="votes must be booleans"):
        majority_vote([[1, 0, 1]])
    with pytest.raises(ScitasteError, match="does not make a unique answer"):
        agreed_answer(["a", "b", "a", "b"], min_agree=2)


def test_fleiss_textbook_example():
    # Fleiss (1971) as reproduced on Wikipedia ("Fleiss' kappa", worked example): 10 subjects, 14 raters,
    # 5 categories; P-bar = 0.378, P-e = 0.213, kappa = 0.210.
    table = [[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
             [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]]
    assert fleiss_kappa(table) == pytest.approx(0.20993, abs=5e-5)


def test_kappa_of_identical_and_of_independent_raters():
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 4, 400)
    identical = np.stack([labels] * 3, axis=1)
    assert cohen_kappa_pairs(identical) == {"rater1~rater2": 1.0, "rater1~rater3": 1.0, "rater2~rater3": 1.0}
    assert fleiss_kappa(rating_table(identical)[0]) == pytest.approx(1.0)
    independent = rng.integers(0, 4, (4000, 3))
    for kappa in cohen_kappa_pairs(independent).values():
        assert abs(kappa) < 0.03
    assert abs(fleiss_kappa(rating_table(independent)[0])) < 0.03


def test_cohen_matches_hand_computation():
    # 2x2 table a=20 (yes/yes), b=5, c=10, d=15: p_o = 0.7, p_e = 0.5*0.6 + 0.5*0.4 = 0.5, kappa = 0.4.
    a = ["y"] * 20 + ["y"] * 5 + ["n"] * 10 + ["n"] * 15
    b = ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15
    assert cohen_kappa_pairs(np.stack([a, b], axis=1), ["A", "B"]) == {"A~B": pytest.approx(0.4)}


def test_rating_table_and_degenerate_cases():
    table, categories = rating_table([[True, False, True], [False, False, False]])
    assert categories == [False, True] and table.tolist() == [[1, 2], [3, 0]]
    assert np.isnan(fleiss_kappa([[3, 0], [3, 0]]))  # one category throughout: undefined
    assert np.isnan(cohen_kappa_pairs([["a", "a"], ["a", "a"]])["rater1~rater2"])
    with pytest.raises(ScitasteError, match="same number"):
        fleiss_kappa([[3, 0], [2, 0]])
    with pytest.raises(ScitasteError, match="at least 2 raters"):
        cohen_kappa_pairs([[1], [2]])
