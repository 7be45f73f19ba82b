"""The no-information floors and the skill over them."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scitaste_hf.records import load_records
from scitaste_hf.schema import DIMENSIONS, Answer
from scitaste_hf.scoring import score_run
from scitaste_hf.scoring.bootstrap import skill
from scitaste_hf.scoring.floors import floor_matrices

ROOT = Path(__file__).resolve().parents[2]
GOLD = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")
SCITASTE = str(Path(sys.executable).with_name("scitaste"))


def _vector(record):
    return np.array([record["innovation_score"], *(record["dimension_scores"][k] for k in DIMENSIONS)])


def _answers(rows, records):
    return {r["bibcode"]: Answer.model_validate({"innovation_score": float(v[0]), "dimension_scores": dict(
        zip(DIMENSIONS, map(float, v[1:])))}) for r, v in zip(records, np.clip(rows, 0, 100))}


@pytest.fixture(scope="module")
def split():
    """The example gold split in two: 150 papers scored, the other 150 as their backup split."""
    rng = np.random.default_rng(7)
    order = rng.permutation(len(GOLD))
    return [GOLD[i] for i in order[:150]], [GOLD[i] for i in order[150:]]


def test_floors_are_the_backup_mean_and_the_discipline_medians(split):
    gold, backup = split
    G = np.array([_vector(r) for r in gold])
    B = np.array([_vector(r) for r in backup])
    floors = floor_matrices(G, [r["discipline"] for r in gold], backup)
    assert np.allclose(floors["constant"], B.mean(axis=0))
    for record, row in zip(gold, floors["discipline_prior"]):
        same = B[[r["discipline"] == record["discipline"] for r in backup]]
        assert np.allclose(row, np.median(same, axis=0), rtol=0, atol=0.005 + 1e-9)  # the baseline's 2 decimals
    # without a backup split: the gold set's own mean and medians
    own = floor_matrices(G, [r["discipline"] for r in gold])
    assert np.allclose(own["constant"], G.mean(axis=0))
    assert set(floor_matrices(G[:, :1])) == {"constant"} and floor_matrices(G[:, :1])["constant"].shape == (150, 1)


def test_the_constant_floor_has_no_skill_and_information_has(split):
    gold, backup = split
    G = np.array([_vector(r) for r in gold])
    constant = np.broadcast_to(np.array([_vector(r) for r in backup]).mean(axis=0), G.shape)
    noisy = G + np.random.default_rng(0).normal(0, 10, G.shape)
    floor_run = score_run(gold, _answers(constant, gold), backup=backup)["overall"]
    assert floor_run["skill"]["scheme2"]["skill"] == pytest.approx(0.0, abs=1e-12)
    assert floor_run["skill"]["scheme1"]["skill"] == pytest.approx(0.0, abs=1e-12)
    for scheme in ("scheme1", "scheme2"):
        low, high = floor_run["skill"][scheme]["interval"]
        assert low <= 0.0 <= high and floor_run["skill"][scheme]["above_floor"] is False
    assert floor_run["floors"]["constant"]["scheme2"] == pytest.approx(floor_run["scheme2"]["score"])
    informed = score_run(gold, _answers(noisy, gold), backup=backup)["overall"]
    assert informed["skill"]["scheme1"]["skill"] > 0.3 and informed["skill"]["scheme1"]["above_floor"] is True
    # the discipline prior's own skill, with its interval (the floors as runs)
    prior = floor_matrices(G, [r["discipline"] for r in gold], backup)["discipline_prior"]
    prior_run = score_run(gold, _answers(prior, gold), backup=backup)["overall"]
    assert prior_run["floors"]["discipline_prior"]["scheme1"] == pytest.approx(prior_run["scheme1"]["scheme1"])
    assert prior_run["skill"]["scheme1"]["interval"] is not None
    assert informed["skill"]["scheme1"]["skill"] > prior_run["skill"]["scheme1"]["skill"]


def test_skill_is_its_formula_on_the_same_papers():
    G = np.array([_vector(r) for r in GOLD[:80]])
    P = np.clip(G + np.random.default_rng(1).normal(0, 6, G.shape), 0, 100)
    F = np.broadcast_to(G.mean(axis=0), G.shape)
    result = skill(P, F, G, n_resamples=200)
    wape_run = np.abs(P[:, 0] - G[:, 0]).sum() / G[:, 0].sum()
    wape_floor = np.abs(F[:, 0] - G[:, 0]).sum() / G[:, 0].sum()
    assert result["scheme2"]["skill"] == pytest.approx(1 - wape_run / wape_floor)
    from scitaste_hf.scoring import scheme1

    s1, s1_floor = scheme1(P, G)["scheme1"], scheme1(F, G)["scheme1"]
    assert result["scheme1"]["skill"] == pytest.approx((s1 - s1_floor) / (100 - s1_floor))
    low, high = result["scheme1"]["interval"]
    assert low < result["scheme1"]["skill"] < high
    assert skill(P, F, G, n_resamples=0)["scheme2"] == {"skill": pytest.approx(1 - wape_run / wape_floor),
                                                        "interval": None, "above_floor": None}


def test_score_prints_floors_and_skill(tmp_path):
    out = tmp_path / "result.json"
    run = subprocess.run([SCITASTE, "score", "--json", str(out), "--n-resamples", "100"], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "S1 skill" in run.stdout and "floors on the same papers" in run.stdout
    overall = json.loads(out.read_text())["overall"]
    assert set(overall["floors"]) == {"constant", "discipline_prior"}
    # the bundled example run answers worse than the mean on WAPE: negative Scheme-2 skill, marked
    assert overall["skill"]["scheme2"]["skill"] < 0 and overall["skill"]["scheme2"]["above_floor"] is False
    assert "*" in run.stdout
