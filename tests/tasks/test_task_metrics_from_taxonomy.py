"""The task class supplies the metrics (the YAMLs list none): a discipline of a custom taxonomy gets its Scheme 2 in
a stock lm_eval run's results, beside the overall metrics, with their directions."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scitaste_hf.adapters.lmeval.tasks import OVERALL, aggregations, higher_is_better, process_results
from scitaste_hf.records import load_records

ROOT = Path(__file__).resolve().parents[2]
SCITASTE = str(Path(sys.executable).with_name("scitaste"))
GOLD = load_records(ROOT / "scitaste_hf" / "data" / "examples" / "gold.jsonl")
#: A taxonomy file that adds a discipline none of the packaged ten has.
TAXONOMY = {"extends": "default", "astrology": {"code": "ASTR", "citation_culture": 0.0, "sub_disciplines": [
    {"id": "astrology.signs", "name": "Signs", "openalex_subfield": 3103,
     "keywords": ["zodiac", "horoscope", "natal chart"]}]}}


def test_no_task_yaml_lists_a_metric():
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    configs = {p.name: yaml.load(p.read_text(), Loader) for p in (ROOT / "lm_eval_tasks" / "scitaste").glob("*.yaml")}
    assert configs["_scitaste_template.yaml"]["class"] == "utils.ScitasteTask"
    assert [name for name, config in configs.items() if "metric_list" in config] == []


def test_every_metric_a_sample_reports_has_an_aggregation_and_a_direction():
    doc = {**GOLD[0], "discipline": "astrology"}
    reported = set(process_results(doc, ["{}"]))
    assert reported == {*OVERALL, "scheme2_astrology"}
    assert list(aggregations(["physics", "astrology"])) == [*OVERALL, "scheme2_physics", "scheme2_astrology"]
    assert reported <= set(aggregations(["astrology"]))
    directions = higher_is_better(["astrology"])
    assert [m for m, up in directions.items() if not up] == ["wape"] and directions["scheme2_astrology"]
    # a document without a discipline reports the overall metrics only (no "scheme2_None")
    assert set(process_results({k: v for k, v in GOLD[0].items() if k != "discipline"}, ["{}"])) == set(OVERALL)


def _custom_release(folder: Path) -> Path:
    """The example papers with finance's taken over by the taxonomy's astrology cell: every fifth selected."""
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.schema import record_features
    from scitaste_hf.taxonomy import load_taxonomy
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    (folder / "tax.yaml").write_text(yaml.safe_dump(TAXONOMY, sort_keys=False))
    taxonomy = load_taxonomy(folder / "tax.yaml")
    assert "astrology" in taxonomy.names
    cell = taxonomy.of("astrology")[0]
    rows = [{**dict.fromkeys(record_features()), **r,
             **({"discipline": cell.discipline, "subcategory_id": cell.id} if r["discipline"] == "finance" else {})}
            for r in GOLD]
    return write_dataset(folder / "ds", {"selected": rows[::5], "backup": [r for k, r in enumerate(rows) if k % 5]},
                         DEFAULT_WEIGHTS, synthetic=True)


@pytest.mark.slow
def test_a_custom_taxonomys_discipline_is_in_the_results_of_a_stock_run(tmp_path):
    pytest.importorskip("lm_eval", reason="needs lm-eval: pip install 'scitaste-hf[lmeval]'")
    from scitaste_hf.adapters.lmeval.tasks import load_docs
    from scitaste_hf.schema import Answer
    from scitaste_hf.scoring import score_run
    from scitaste_hf.scoring.floors import PriorBaseline

    data = _custom_release(tmp_path)
    limit = 18  # three papers of each of the six disciplines (the documents come round-robin over them)
    run = subprocess.run([SCITASTE, "eval", "--model", "scitaste-baseline", "--model_args", f"data_dir={data}",
                          "--tasks", "scitaste_pure_qa", "--metadata", json.dumps({"data_dir": str(data)}),
                          "--limit", str(limit), "--output_path", str(tmp_path / "out")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    report = json.loads(next((tmp_path / "out").rglob("results_*.json")).read_text())
    results = report["results"]["scitaste_pure_qa"]
    docs = list(load_docs(str(data))["test"])[:limit]
    baseline = PriorBaseline.fit(load_records(data, "backup"))
    expected = score_run(docs, {d["bibcode"]: Answer.model_validate(baseline.answer(d)) for d in docs},
                         n_resamples=0)
    assert sum(d["discipline"] == "astrology" for d in docs) == 3
    assert results["scheme2_astrology,none"] == pytest.approx(
        expected["by_discipline"]["astrology"]["scheme2"]["score"])
    assert results["scheme2_physics,none"] == pytest.approx(expected["by_discipline"]["physics"]["scheme2"]["score"])
    assert results["wape,none"] == pytest.approx(expected["overall"]["scheme2"]["wape"])
    assert not any(k.startswith("scheme2_finance") for k in results)
    # lm-eval's table arrows and results.json's directions come from the task class too
    directions = report["higher_is_better"]["scitaste_pure_qa"]
    assert directions["scheme2_astrology"] is True and directions["wape"] is False
    assert set(directions) == {*OVERALL, *(f"scheme2_{d}" for d in ("physics", "mathematics", "chemistry",
                                                                      "biology", "medicine", "astrology"))}
