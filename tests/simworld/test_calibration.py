"""The calibration report: the paper's targets beside a record set's figures."""

import numpy as np
import pytest

from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.simworld.calibration import TARGETS, eta_squared, report


def test_eta_squared():
    assert eta_squared(np.array([1.0, 1.0, 3.0, 3.0]), np.array(["a", "a", "b", "b"])) == pytest.approx(1.0)
    assert eta_squared(np.array([1.0, 3.0, 1.0, 3.0]), np.array(["a", "a", "b", "b"])) == pytest.approx(0.0)
    assert eta_squared(np.full(4, 2.0), np.array(["a", "a", "b", "b"])) == 0.0


def test_report_sets_every_target_beside_the_records():
    rng = np.random.default_rng(0)
    n = 300
    base = rng.normal(size=n)
    dims = np.column_stack([50 + 15 * (base + 0.3 * rng.normal(size=n)),
                            *(50 + 15 * rng.normal(size=(n, 5)).T), rng.uniform(0, 64, n)]).clip(0, 100)
    disciplines = np.array(["physics", "biology"] * (n // 2))
    dims[disciplines == "physics", 1] += 30  # breadth as a discipline label
    rows = report(dims.clip(0, 100), disciplines)
    assert [r["key"] for r in rows] == [t.key for t in TARGETS]
    by_key = {r["key"]: r for r in rows}
    assert by_key["range.journal_impact"]["world"] == pytest.approx(dims[:, 6].max())
    assert not by_key["range.journal_impact"]["passed"]  # 64 is far from 100
    assert not by_key["eta2.knowledge_breadth"]["passed"] and by_key["eta2.team_collaboration"]["passed"]
    weights = [r["world"] for r in rows if r["key"].startswith("weight.")]
    assert sum(weights) == pytest.approx(100.0)
    assert all(r["source"].startswith("paper section") for r in rows)


def test_report_weights_are_the_papers_random_forest():
    """The weight and R2 rows are the paper's Table 4 derivation, recomputed here from scikit-learn alone: a random
    forest per target on an 80/20 split (seed 42), A's weight its importance for G, G's its importance for A, B-F
    the mean of their two importances, renormalised."""
    from sklearn.ensemble import RandomForestRegressor
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(1)
    n = 200
    q, v = rng.normal(size=n), rng.normal(size=n)
    dims = 50 + 15 * np.column_stack([0.8 * q + 0.5 * v, *(0.7 * q + 0.7 * rng.normal(size=(5, n))),
                                      0.4 * q + 0.6 * v + 0.7 * rng.normal(size=n)])
    rows = {r["key"]: r["world"] for r in report(dims, np.array(["a", "b"] * (n // 2)))}

    def forest(x, y):
        x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=42)
        model = RandomForestRegressor(n_estimators=100, random_state=42).fit(x_train, y_train)
        return model.feature_importances_ / model.feature_importances_.sum(), model.score(x_test, y_test)

    share_a, r2_a = forest(dims[:, 1:], dims[:, 0])
    share_g, r2_g = forest(dims[:, :-1], dims[:, -1])
    raw = np.array([share_g[0], *((share_a[:-1] + share_g[1:]) / 2), share_a[-1]])
    expected = 100 * raw / raw.sum()
    assert [rows[f"weight.{d}"] for d in DIMENSIONS] == pytest.approx(expected.tolist(), abs=1e-9)
    assert rows["r2.citation_impact"] == pytest.approx(r2_a) and rows["r2.journal_impact"] == pytest.approx(r2_g)
