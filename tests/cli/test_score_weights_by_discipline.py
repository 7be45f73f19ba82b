"""`scitaste score --weights` with one vector per discipline: each discipline's row uses its own vector for Part B,
the overall row each discipline's in proportion to its gold papers; bad files stop with one line."""

import json
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from scitaste_hf.cli import main
from scitaste_hf.predictions import read_predictions
from scitaste_hf.records import load_records
from scitaste_hf.schema import DIMENSIONS, DISCIPLINES
from scitaste_hf.scoring import scheme1
from scitaste_hf.scoring.inputs import as_answer_matrix
from scitaste_hf.weights import DEFAULT_WEIGHTS

EXAMPLES = Path(str(resources.files("scitaste_hf").joinpath("data/examples")))


def vector(lead):
    """Half the weight on ``lead``, the rest shared equally."""
    return {k: 0.5 if k == lead else 0.5 / 6 for k in DIMENSIONS}


#: One vector per discipline, each leaning on another dimension, and the default for the sixth discipline.
PER_DISCIPLINE = {d: vector(k) for d, k in zip(DISCIPLINES[:5], DIMENSIONS)} | {"default": dict(DEFAULT_WEIGHTS)}


def score(tmp_path, weights=None, name="result.json"):
    out = tmp_path / name
    argv = ["score", "--predictions", str(EXAMPLES / "predictions.jsonl"), "--gold", str(EXAMPLES / "gold.jsonl"),
            "--n-resamples", "50", "--json", str(out)]
    if weights is not None:
        path = tmp_path / f"w-{name}"
        path.write_text(json.dumps({"weights": weights}))
        argv += ["--weights", str(path)]
    assert main(argv) == 0
    return json.loads(out.read_text())


def test_each_discipline_scores_part_b_with_its_own_vector(tmp_path, capsys):
    result = score(tmp_path, PER_DISCIPLINE)
    assert "Part B weights per discipline" in capsys.readouterr().out
    gold = load_records(EXAMPLES / "gold.jsonl", "selected")
    predictions = read_predictions(EXAMPLES / "predictions.jsonl")
    counts = {d: sum(r["discipline"] == d for r in gold) for d in DISCIPLINES}
    for discipline in DISCIPLINES:
        expected = PER_DISCIPLINE.get(discipline, PER_DISCIPLINE["default"])
        block = result["by_discipline"][discipline]
        assert block["part_b_weights"] == pytest.approx(expected)
        # Recomputed from the papers with that vector alone.
        scored = [r for r in gold if r["discipline"] == discipline and r["bibcode"] in predictions
                  and hasattr(predictions[r["bibcode"]], "vector")]
        P = np.array([predictions[r["bibcode"]].vector() for r in scored])
        G = as_answer_matrix(scored, "gold")
        assert block["scheme1"]["part_b"] == pytest.approx(scheme1(P, G, expected)["part_b"])
    # Overall: each discipline's vector in proportion to its gold papers.
    mean = {k: sum(counts[d] * PER_DISCIPLINE.get(d, PER_DISCIPLINE["default"])[k] for d in DISCIPLINES)
            / sum(counts.values()) for k in DIMENSIONS}
    assert result["overall"]["part_b_weights"] == pytest.approx(mean)
    assert list(result["weights"]) == list(PER_DISCIPLINE)
    assert all(result["weights"][d] == pytest.approx(v) for d, v in PER_DISCIPLINE.items())
    # Part A does not use the weights; Part B does.
    plain = score(tmp_path, None, "plain.json")
    physics, plain_physics = result["by_discipline"]["physics"]["scheme1"], plain["by_discipline"]["physics"]["scheme1"]
    assert physics["part_a"] == plain_physics["part_a"] and physics["part_b"] != plain_physics["part_b"]


def test_one_vector_in_a_file_scores_as_before(tmp_path):
    same = score(tmp_path, {d: dict(DEFAULT_WEIGHTS) for d in DISCIPLINES}, "same.json")
    plain = score(tmp_path, None, "plain.json")
    for scope in ("overall", *DISCIPLINES):
        a = same["overall"] if scope == "overall" else same["by_discipline"][scope]
        b = plain["overall"] if scope == "overall" else plain["by_discipline"][scope]
        assert a["scheme1"]["scheme1"] == pytest.approx(b["scheme1"]["scheme1"], abs=1e-9)
        assert b["part_b_weights"] == dict(DEFAULT_WEIGHTS)


@pytest.mark.parametrize(("weights", "message"), [
    ({"physics": vector("citation_impact")}, "has no vector for discipline 'mathematics' and no 'default' vector"),
    ({"physics": {**vector("citation_impact"), "journal_impact": 2.0}}, "physics: weights must sum to 1"),
    ({"Physics": vector("citation_impact")}, "discipline 'Physics'; write 'physics'"),
])
def test_bad_per_discipline_files_stop_with_one_line(tmp_path, capsys, weights, message):
    path = tmp_path / "w.json"
    path.write_text(json.dumps({"weights": weights}))
    out = tmp_path / "r.json"
    assert main(["score", "--predictions", str(EXAMPLES / "predictions.jsonl"), "--gold",
                 str(EXAMPLES / "gold.jsonl"), "--weights", str(path), "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err
    assert not out.exists()
