import numpy as np
import pytest

from scitaste_hf.index.normalise import _first_component, mean_rank, pca_score, percentile, standardise


def test_percentile_counts_values_strictly_below():
    assert percentile(np.array([5.0, 1.0, 5.0, 9.0])).tolist() == [25.0, 0.0, 25.0, 75.0]
    assert percentile(np.array([3.0, 10.0]), np.array([1.0, 3.0, 4.0, 4.0])).tolist() == [25.0, 100.0]


def test_mean_rank_averages_ties_and_is_50_for_one_paper():
    assert mean_rank(np.array([10.0, 30.0, 20.0, 20.0])).tolist() == pytest.approx([0.0, 100.0, 50.0, 50.0])
    assert mean_rank(np.array([7.0])).tolist() == [50.0]


@pytest.mark.parametrize("seed", range(5))
def test_mean_rank_equals_scipys_average_ranks_bit_for_bit(seed):
    from scipy.stats import rankdata

    rng = np.random.default_rng(seed)
    # many ties (a few distinct values, -0.0 beside 0.0), a run of one value, and one paper of two
    values = np.concatenate([rng.integers(-3, 4, 500).astype(float), [-0.0, 0.0], rng.normal(size=50)])
    for x in (values, np.round(rng.normal(size=1000), 1), np.full(9, 2.5), np.array([2.0, 1.0])):
        expected = 100.0 * (rankdata(x, method="average") - 1.0) / (x.size - 1)
        assert mean_rank(x).tobytes() == expected.tobytes()


def test_standardise_imputes_column_mean_then_zero_and_zeroes_constant_columns():
    x = np.array([[1.0, np.nan, np.nan], [3.0, 4.0, np.nan], [np.nan, np.nan, np.nan]])
    z = standardise(x)
    # Column 0 becomes [1, 3, 2]: mean 2, population std sqrt(2/3).
    assert z[:, 0] == pytest.approx([-1 / np.sqrt(2 / 3), 1 / np.sqrt(2 / 3), 0.0])
    # Column 1 is imputed to [4, 4, 4] (zero variance), column 2 has no value at all: both 0.
    assert z[:, 1:].tolist() == [[0.0, 0.0]] * 3


def test_pca_score_orders_by_first_component_with_ties_averaged():
    x = np.array([[0.0, 0.0], [1.0, 2.0], [2.0, 1.0], [3.0, 3.0]])
    # Both columns standardise to the same scale, PC1 is their sum: 0, 3, 3, 6 (centred) -> ranks 1, 2.5, 2.5, 4.
    assert pca_score(x).tolist() == pytest.approx([0.0, 50.0, 50.0, 100.0])


def test_pca_score_sign_follows_the_row_mean_of_the_standardised_variables():
    # Two columns agree, one disagrees weakly: whatever sign the SVD returns, more of the variables -> higher.
    x = np.array([[1.0, 1.0, 3.0], [2.0, 2.0, 2.0], [3.0, 3.0, 1.5], [4.0, 4.0, 1.0]])
    assert pca_score(x).tolist() == pytest.approx([0.0, 100 / 3, 200 / 3, 100.0])
    assert pca_score(-x).tolist() == pytest.approx([100.0, 200 / 3, 100 / 3, 0.0])


def test_pca_score_degenerate_populations_score_50():
    assert pca_score(np.array([[3.0, np.nan]])).tolist() == [50.0]
    assert pca_score(np.array([[2.0, 1.0], [2.0, 1.0], [2.0, np.nan]])).tolist() == [50.0, 50.0, 50.0]


def test_pca_score_imputes_a_missing_value_with_the_column_mean():
    # The middle row's missing value becomes 2.0, the column mean, so it ranks in the middle.
    x = np.array([[1.0, 10.0], [np.nan, 20.0], [3.0, 30.0]])
    assert pca_score(x).tolist() == pytest.approx([0.0, 50.0, 100.0])


@pytest.mark.parametrize("shape", [(2, 3), (60, 5), (400, 12), (7, 30)])
def test_first_component_is_scikit_learns_pca_bit_for_bit(shape):
    from sklearn.decomposition import PCA

    rng = np.random.default_rng(shape[0])
    x = rng.normal(size=shape)
    x[: shape[0] // 2, 0] = 1.5  # a tied block, and a column the others follow
    x[:, -1] = 2 * x[:, 0] + 0.1 * x[:, -1]
    z = standardise(x)
    expected = PCA(n_components=1, svd_solver="full").fit_transform(z)[:, 0]
    assert _first_component(z).tobytes() == expected.tobytes()
