"""The calibration report: the paper's targets beside a record set's figures."""

import numpy as np
import pytest

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
