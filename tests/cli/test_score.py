"""`scitaste score`: the table, the JSON output, and one-line errors that leave no output behind."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scitaste_hf.cli import main
from scitaste_hf.schema import DIMENSIONS, DISCIPLINES

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


def _gold(i, discipline="physics", score=None):
    s = float(score if score is not None else 10 + 3 * i)
    return {"bibcode": f"B{i}", "discipline": discipline, "innovation_score": s,
            "dimension_scores": {k: s for k in DIMENSIONS}}


@pytest.fixture()
def files(tmp_path):
    gold = [_gold(i, DISCIPLINES[i % 2]) for i in range(10)]
    gold_path = tmp_path / "gold.jsonl"
    gold_path.write_text("".join(json.dumps(r) + "\n" for r in gold))
    lines = [{"bibcode": r["bibcode"], "innovation_score": r["innovation_score"] + 2,
              "dimension_scores": r["dimension_scores"]} for r in gold[:8]]
    lines.append({"bibcode": "B8", "response": "```json\n" + json.dumps(
        {"innovation_score": 30, "dimension_scores": {k: 30 for k in DIMENSIONS}}) + "\n```"})
    lines.append({"bibcode": "B9", "response": "no idea"})
    pred_path = tmp_path / "pred.jsonl"
    pred_path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    return pred_path, gold_path


def test_json_output(files, tmp_path, capsys):
    pred, gold = files
    out = tmp_path / "result.json"
    assert main(["score", "--predictions", str(pred), "--gold", str(gold), "--json", str(out),
                 "--n-resamples", "100"]) == 0
    result = json.loads(out.read_text())
    overall = result["overall"]
    assert (overall["n_scored"], overall["n_total"], overall["failures"]) == (9, 10, {"no_json": 1})
    for key in ("wape", "score", "grade", "coverage", "n_scored", "n_total", "ci"):
        assert key in overall["scheme2"]
    for key in ("scheme1", "grade", "part_a", "part_b", "spearman", "pearson", "mae", "mse", "bias", "coverage"):
        assert key in overall["scheme1"]
    # p = g + 2 on 8 papers, B8 predicted 30 against 34.
    gold_scores = [10 + 3 * i for i in range(9)]
    assert overall["scheme2"]["wape"] == pytest.approx((8 * 2 + 4) / sum(gold_scores))
    assert set(result["by_discipline"]) == {"physics", "mathematics"}
    assert result["by_discipline"]["mathematics"]["n_total"] == 5
    table = capsys.readouterr().out
    assert "overall" in table and "9/10" in table and "no_json 1" in table


def test_bundled_example_through_the_console_script(tmp_path):
    out = tmp_path / "example.json"
    proc = subprocess.run([SCITASTE, "score", "--json", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "synthetic" in proc.stdout and "Scheme-1" in proc.stdout
    result = json.loads(out.read_text())
    assert result["overall"]["n_total"] == 300 and result["overall"]["n_scored"] == 295
    assert list(result["by_discipline"]) == list(DISCIPLINES)
    assert all(b["n_total"] == 50 for b in result["by_discipline"].values())


def test_dataset_folder_as_gold(files, tmp_path):
    from datasets import Dataset

    from scitaste_hf.schema import record_features

    pred, gold = files
    records = [json.loads(line) for line in gold.read_text().splitlines()]
    full = [{**dict.fromkeys(record_features(), None), **r} for r in records]
    root = tmp_path / "ds"
    (root / "data").mkdir(parents=True)
    Dataset.from_list(full, features=record_features()).to_parquet(root / "data" / "selected-00000-of-00001.parquet")
    (root / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n"
                                    "  - split: selected\n    path: data/selected-*\n---\n")
    out = tmp_path / "r.json"
    assert main(["score", "--predictions", str(pred), "--gold", str(root), "--json", str(out),
                 "--n-resamples", "0"]) == 0
    assert json.loads(out.read_text())["overall"]["n_scored"] == 9
    assert main(["score", "--predictions", str(pred), "--gold", str(root), "--split", "backup"]) == 2


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("pred_lines", "message"),
    [
        (['{"bibcode": "B0", "innovation_score": 5', '{"bibcode": "B1"}'], "pred.jsonl:1: not a JSON line"),
        (['[1, 2]'], "pred.jsonl:1: expected a JSON object"),
        (['{"innovation_score": 5}'], "pred.jsonl:1: missing 'bibcode'"),
        (['{"bibcode": "B0", "failure": "timeout"}', '{"bibcode": "B0", "failure": "timeout"}'],
         "pred.jsonl:2: duplicate bibcode B0 .first on line 1."),
        (['{"bibcode": "ZZZ", "failure": "timeout"}'], "1 prediction.s. for bibcodes not in the gold set, e.g. ZZZ"),
        ([""], "pred.jsonl is empty"),
    ],
)
def test_bad_prediction_files(files, tmp_path, capsys, pred_lines, message):
    _, gold = files
    pred = _write(tmp_path / "pred.jsonl", pred_lines)
    out = tmp_path / "never.json"
    assert main(["score", "--predictions", str(pred), "--gold", str(gold), "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scitaste: error: ") and err.count("\n") == 1
    assert re.search(message, err), err
    assert not out.exists() and list(tmp_path.glob(".never.json*")) == []


@pytest.mark.parametrize(
    ("gold_lines", "message"),
    [
        ([json.dumps(_gold(0, score=0)), json.dumps(_gold(1, score=0))], "WAPE is undefined"),
        ([json.dumps({**_gold(0), "innovation_score": float("nan")})], "NaN or infinite"),
        ([json.dumps({**_gold(0), "innovation_score": 104})], "outside 0-100"),
        ([json.dumps(_gold(0)), json.dumps(_gold(0))], "duplicate bibcodes: B0"),
        (["{oops"], "gold.jsonl:1: not a JSON line"),
    ],
)
def test_bad_gold_files(tmp_path, capsys, gold_lines, message):
    gold = _write(tmp_path / "gold.jsonl", gold_lines)
    pred = _write(tmp_path / "pred.jsonl", [json.dumps({"bibcode": "B0", "innovation_score": 5,
                                                        "dimension_scores": {k: 5 for k in DIMENSIONS}})])
    out = tmp_path / "never.json"
    assert main(["score", "--predictions", str(pred), "--gold", str(gold), "--json", str(out)]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_missing_files_and_argument_errors(files, tmp_path, capsys):
    pred, gold = files
    both = ["--predictions", str(pred), "--gold", str(gold)]
    cases = [
        (["--predictions", str(tmp_path / "nope.jsonl"), "--gold", str(gold)], "predictions file not found"),
        (["--predictions", str(pred), "--gold", str(tmp_path / "nope.jsonl")], "gold file or dataset folder not found"),
        (["--predictions", str(pred)], "give both --predictions and --gold"),
        ([*both, "--json", str(tmp_path / "no" / "r.json")], "does not exist"),
        ([*both, "--weights", str(tmp_path / "w.json")], "weights file not found"),
    ]
    for args, message in cases:
        assert main(["score", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_help_is_fast_and_lists_commands():
    heavy = ("datasets", "evaluate", "gradio", "sklearn", "scipy", "pyarrow", "pydantic", "lm_eval", "httpx", "numba",
             "duckdb", "faiss", "pyspark")
    code = (f"import sys; from scitaste_hf.cli import build_parser; build_parser(); "
            f"print([m for m in {heavy!r} if m in sys.modules])")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]", proc.stdout + proc.stderr
    proc = subprocess.run([SCITASTE, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "score" in proc.stdout and "publish" in proc.stdout
