import argparse
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scitaste_hf.cli import weights as cli
from scitaste_hf.errors import ScitasteError
from scitaste_hf.index.weights import derive_weights, fit_weights, load_records
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.weights import DEFAULT_WEIGHTS, composite


def synthetic(n=200, seed=0, weights=None):
    """Records whose A depends on B and G depends on F, with composites built from ``weights``."""
    rng = np.random.default_rng(seed)
    dims = rng.uniform(0, 100, (n, 7))
    dims[:, 0] = np.clip(0.8 * dims[:, 1] + rng.normal(0, 3, n), 0, 100)
    dims[:, 6] = np.clip(0.8 * dims[:, 5] + rng.normal(0, 3, n), 0, 100)
    dims = dims.round(2)
    score = [composite(dict(zip(DIMENSIONS, row)), weights) for row in dims]
    return dims, np.array(score)


def write_records(path, dims, score=None):
    columns = {"dimension_scores": pa.array([dict(zip(DIMENSIONS, map(float, row))) for row in dims])}
    if score is not None:
        columns["innovation_score"] = score
    pq.write_table(pa.table(columns), path)
    return path


def run_cli(*argv):
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)
    return cli.run(parser.parse_args(list(argv)))


def test_fit_recovers_the_default_weights_from_rounded_records():
    dims, score = synthetic()
    result = fit_weights(dims, score)
    assert list(result["weights"]) == list(DIMENSIONS)
    for key in DIMENSIONS:
        assert result["weights"][key] == pytest.approx(DEFAULT_WEIGHTS[key], abs=2e-4)
    # Composites are rounded to 2 decimals: the residual is rounding noise only.
    assert result["residual_rmse"] < 0.005 and result["max_abs_residual"] < 0.01


def test_fit_reports_inconsistent_composites():
    dims, score = synthetic()
    score[::10] += 5.0
    assert fit_weights(dims, score)["residual_rmse"] > 1.0


def test_fit_keeps_weights_non_negative_and_summing_to_one():
    weights = dict.fromkeys(DIMENSIONS, 0.0) | {"knowledge_breadth": 0.25, "journal_impact": 0.75}
    dims2, score = synthetic(weights=weights)
    result = fit_weights(dims2, score)
    assert sum(result["weights"].values()) == pytest.approx(1.0, abs=1e-12)
    assert result["weights"]["journal_impact"] == pytest.approx(0.75, abs=1e-3)
    assert min(result["weights"].values()) >= 0.0


def test_derive_follows_the_two_analyses():
    dims, _ = synthetic(n=300)
    result = derive_weights(dims, "ensemble")
    raw, w = result["raw"], result["weights"]
    assert sum(w.values()) == pytest.approx(1.0)
    assert w == pytest.approx({k: v / sum(raw.values()) for k, v in raw.items()})
    # A is driven by B, G by F: those pairs dominate both analyses, so B and F get about half their
    # analysis each, A and G (which enter one analysis each) nearly all of theirs.
    assert raw["knowledge_breadth"] > 40 and raw["team_collaboration"] > 40
    assert raw["citation_impact"] < 15 and raw["journal_impact"] < 15
    assert raw["semantic_novelty"] < 5
    assert set(result["r2"]) == {"citation_impact", "journal_impact"}
    assert set(result["r2"]["citation_impact"]) == {"linear", "ridge", "lasso", "random_forest",
                                                    "gradient_boosting"}
    assert result["r2"]["citation_impact"]["linear"]["test"] > 0.9
    assert result["r2"]["journal_impact"]["random_forest"]["cv_mean"] > 0.8


def test_derive_rf_uses_the_forest_alone_and_is_reproducible():
    dims, _ = synthetic(n=120)
    first, second = derive_weights(dims, "rf"), derive_weights(dims, "rf")
    assert set(first["r2"]["journal_impact"]) == {"random_forest"}
    assert first["weights"] == second["weights"]


@pytest.mark.parametrize(("n", "method", "message"), [(9, "ensemble", "at least 10"), (50, "svm", "unknown method")])
def test_derive_rejects_bad_requests(n, method, message):
    with pytest.raises(ScitasteError, match=message):
        derive_weights(synthetic(n=n)[0], method)


def test_fit_needs_seven_records():
    dims, score = synthetic(n=6)
    with pytest.raises(ScitasteError, match="at least 7"):
        fit_weights(dims, score)


def test_cli_fit_writes_the_public_json(tmp_path, capsys):
    dims, score = synthetic()
    out = tmp_path / "fit.json"
    assert run_cli("fit", "--records", str(write_records(tmp_path / "r.parquet", dims, score)),
                   "--json", str(out)) == 0
    payload = json.loads(out.read_text())
    assert set(payload["weights"]) == set(DIMENSIONS) and isinstance(payload["residual_rmse"], float)
    assert payload["weights"]["citation_impact"] == pytest.approx(0.2948, abs=1e-3)
    assert "residual RMSE" in capsys.readouterr().out


def test_cli_derive_reads_a_saved_dataset_folder(tmp_path):
    import datasets

    dims, score = synthetic(n=60)
    rows = [{"dimension_scores": dict(zip(DIMENSIONS, map(float, r))), "innovation_score": s}
            for r, s in zip(dims, score)]
    datasets.DatasetDict({"selected": datasets.Dataset.from_list(rows[:40]),
                          "backup": datasets.Dataset.from_list(rows[40:])}).save_to_disk(str(tmp_path / "ds"))
    out = tmp_path / "derive.json"
    assert run_cli("derive", "--records", str(tmp_path / "ds"), "--method", "rf", "--json", str(out)) == 0
    payload = json.loads(out.read_text())
    assert {"weights", "raw", "r2"} <= set(payload) and payload["n_records"] == 60


def test_load_records_reads_a_folder_of_parquet_files_with_flat_columns(tmp_path):
    dims, score = synthetic(n=20)
    (tmp_path / "data").mkdir()
    for i, part in enumerate((slice(0, 12), slice(12, 20))):
        pq.write_table(pa.table({**{k: dims[part, j] for j, k in enumerate(DIMENSIONS)},
                                 "innovation_score": score[part]}), tmp_path / "data" / f"p{i}.parquet")
    loaded, loaded_score = load_records(tmp_path, need_score=True)
    assert np.array_equal(loaded, dims) and np.array_equal(loaded_score, score)


def test_a_hub_dataset_folder_is_read_from_its_splits_not_the_configs_beside_them(tmp_path):
    dims, score = synthetic(n=20)
    (tmp_path / "data").mkdir()
    (tmp_path / "tool_evidence").mkdir()
    write_records(tmp_path / "data" / "selected-00000-of-00001.parquet", dims, score)
    pq.write_table(pa.table({"bibcode": ["B"], "tool": ["references"], "payload": ["{}"]}),
                   tmp_path / "tool_evidence" / "tool_evidence-00000-of-00001.parquet")
    loaded, loaded_score = load_records(tmp_path, need_score=True)
    assert np.array_equal(loaded, dims) and np.array_equal(loaded_score, score)


def test_a_hub_dataset_is_read_in_the_order_of_its_splits_as_load_dataset_gives_them(tmp_path):
    """selected before backup (not the file names' order), each split's shards in order: the derivation's 80/20
    split is drawn over the rows in that order, so ``weights derive`` sees what ``selected + backup`` is."""
    dims, score = synthetic(n=30)
    (tmp_path / "data").mkdir()
    for name, rows in (("backup-00000-of-00002", slice(10, 20)), ("backup-00001-of-00002", slice(20, 30)),
                       ("selected-00000-of-00001", slice(0, 10)), ("extra", slice(0, 0))):
        write_records(tmp_path / "data" / f"{name}.parquet", dims[rows], score[rows])
    loaded, loaded_score = load_records(tmp_path, need_score=True)
    assert np.array_equal(loaded, dims) and np.array_equal(loaded_score, score)
    assert derive_weights(loaded, "rf")["weights"] == derive_weights(dims, "rf")["weights"]


@pytest.mark.parametrize(("make", "message"), [
    (lambda p: p / "missing.parquet", "records not found"),
    (lambda p: (p / "bad.parquet").write_text("nope") and p / "bad.parquet", "not a readable Parquet"),
    (lambda p: p, "no Parquet files"),
    (lambda p: write_records(p / "r.parquet", synthetic(20)[0]), "no innovation_score"),
    (lambda p: (pq.write_table(pa.table({"citation_impact": [1.0]}), p / "r.parquet"), p / "r.parquet")[1],
     "lack dimension score"),
    (lambda p: write_records(p / "r.parquet", np.vstack([synthetic(20)[0], [np.nan] * 7]), [1.0] * 21),
     "not finite in 1 record"),
    (lambda p: write_records(p / "r.parquet", synthetic(20)[0], ["high"] * 20), "must be numbers"),
    (lambda p: write_records(p / "r.parquet", np.vstack([synthetic(20)[0], [1e308] * 7]), [1.0] * 21),
     r"outside 0-100 in 1 record\(s\), first at row 20 \(1e\+308\)"),
    # tracebacks before: datasets' FileNotFoundError and pyarrow's ArrowTypeError
    (lambda p: ((p / "state.json").write_text("{garbage"), p)[1], r"^\S+ is not a readable saved dataset \(.*\)$"),
    (lambda p: ((p / "dataset_dict.json").write_text('{"splits": ["x"]}'), p)[1],
     r"^\S+ is not a readable saved dataset \(No such files: .*\)$"),
    (lambda p: (pq.write_table(pa.table({"innovation_score": [1.0]}), p / "a.parquet"),
                pq.write_table(pa.table({"innovation_score": ["x"]}), p / "b.parquet"), p)[2],
     r"^records in \S+: its Parquet files do not share one schema \(Unable to merge: Field innovation_score has "
     r"incompatible types: double vs string\)$"),
    (lambda p: (os.mkfifo(p / "x.parquet"), p)[1], r"^\S+x\.parquet is not a regular file$"),
])
def test_cli_bad_records_raise_one_line_errors(tmp_path, make, message):
    path = make(tmp_path)
    out = tmp_path / "out.json"
    with pytest.raises(ScitasteError, match=message):
        run_cli("fit", "--records", str(path), "--json", str(out))
    assert not out.exists()


def test_cli_refuses_an_output_folder_that_does_not_exist(tmp_path):
    dims, score = synthetic(n=20)
    path = write_records(tmp_path / "r.parquet", dims, score)
    with pytest.raises(ScitasteError, match=r"folder .*/no does not exist"):
        run_cli("fit", "--records", str(path), "--json", str(tmp_path / "no" / "out.json"))


def test_cli_requires_an_action():
    with pytest.raises(SystemExit):
        run_cli()


def test_json_output_has_null_where_a_figure_is_undefined(tmp_path):
    from scitaste_hf.output import finite_json

    payload = finite_json({"weights": {"a": 0.5}, "cv_r2": float("nan"), "folds": [1.0, float("inf")], "n": 3})
    assert payload == {"weights": {"a": 0.5}, "cv_r2": None, "folds": [1.0, None], "n": 3}
    json.loads(json.dumps(payload, allow_nan=False))
