"""The evaluate modules: loadable by path and by name, thin wrappers with coverage and add_batch."""

import os
import sys
from pathlib import Path

import numpy as np
import pytest

from scitaste_hf import load_metric
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.scoring import scheme1, wape, wape_score

ROOT = Path(__file__).resolve().parents[2]


def _answers(matrix):
    return [{"innovation_score": float(r[0]), "dimension_scores": dict(zip(DIMENSIONS, map(float, r[1:])))}
            for r in matrix]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(9)
    G = rng.uniform(5, 100, (40, 8)).round(1)
    P = np.clip(G + rng.normal(0, 12, G.shape), 0, 100).round(1)
    return P, G


def test_evaluate_load_from_repository_root(data, monkeypatch):
    import evaluate

    monkeypatch.chdir(ROOT)
    P, G = data
    metric = evaluate.load("metrics/scitaste_wape")
    result = metric.compute(predictions=list(P[:, 0]), references=list(G[:, 0]))
    assert result["wape"] == pytest.approx(wape(P[:, 0], G[:, 0]))
    assert result["score"] == pytest.approx(wape_score(result["wape"]))
    assert (result["coverage"], result["n_scored"], result["n_total"]) == (1.0, 40, 40)
    lo, hi = result["ci"]["wape"]
    assert lo < result["wape"] < hi


def test_wape_failures_and_add_batch(data, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # load by name from anywhere
    P, G = data
    metric = load_metric("scitaste_wape")
    preds = list(P[:, 0])
    preds[0], preds[5] = None, float("nan")
    metric.add_batch(predictions=preds[:20], references=list(G[:20, 0]))
    metric.add_batch(predictions=preds[20:], references=list(G[20:, 0]))
    result = metric.compute(n_resamples=0)
    keep = [i for i in range(40) if i not in (0, 5)]
    assert result["wape"] == pytest.approx(wape(P[keep, 0], G[keep, 0]))
    assert (result["n_scored"], result["n_total"]) == (38, 40)
    assert result["coverage"] == pytest.approx(0.95)
    assert result["failures"] == {"missing": 1, "out_of_range": 1}
    assert result["ci"] == {"wape": None, "score": None}


def test_scheme1_module(data):
    P, G = data
    metric = load_metric("scitaste_scheme1")
    preds = _answers(P)
    preds[0] = None  # a failure first in the batch: evaluate's format check must not choke on it
    preds[3]["innovation_score"] = 130.0
    result = metric.compute(predictions=preds, references=_answers(G), n_resamples=200)
    keep = [i for i in range(40) if i not in (0, 3)]
    expected = scheme1(P[keep], G[keep])
    for key in ("scheme1", "grade", "part_a", "part_b", "spearman", "pearson", "mae", "mse", "bias"):
        assert result[key] == pytest.approx(expected[key])
    assert (result["n_scored"], result["n_total"]) == (38, 40)
    assert result["failures"] == {"missing": 1, "out_of_range": 1}
    assert result["ci"]["scheme1"][0] < result["scheme1"] < result["ci"]["scheme1"][1]


def test_bad_references_are_errors(data):
    metric = load_metric("scitaste_wape")
    from scitaste_hf.errors import ScitasteError

    with pytest.raises(ScitasteError, match="sum to 0"):
        metric.compute(predictions=[1.0, 2.0], references=[0.0, 0.0])
    with pytest.raises(ScitasteError, match="unknown metric 'nope'"):
        load_metric("nope")


@pytest.mark.slow
def test_installed_wheel_carries_the_metrics(tmp_path, wheel):
    """A real (non-editable) install: the wheel installed alone, both metrics loaded elsewhere."""
    import subprocess

    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
                   check=True, timeout=300)
    code = ("import scitaste_hf, scitaste_hf.resources as r; "
            "assert '_bundled' in str(r.metric_path('scitaste_wape')), r.metric_path('scitaste_wape'); "
            "m = scitaste_hf.load_metric('scitaste_wape'); "
            "print(m.compute(predictions=[50.0], references=[40.0])['wape']); "
            "m = scitaste_hf.load_metric('scitaste_scheme1'); print(type(m).__name__)")
    env = {**os.environ, "PYTHONPATH": str(target)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0.25", "ScitasteScheme1"]
