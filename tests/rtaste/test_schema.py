"""Release schema: pydantic models, datasets.Features, the Hub layout, and clear errors for bad rows."""

import json

import datasets
import pytest
import yaml
from pydantic import ValidationError

from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste.release import example_release_dir, load_release, validate_rows
from scitaste_hf.rtaste.schema import Condition, MVERecord, RegisteredEvent, rtaste_features


@pytest.fixture()
def condition_rows(make_condition):
    """The five rows of one valid hand-made condition ``c1``."""
    return make_condition("c1", occurred=[1, 0, 1, 0, 1], probabilities=[0.5] * 5)


def test_bundled_release_is_the_seeded_simulation(synthetic):
    shipped = (example_release_dir() / "data" / "rtaste-train.jsonl").read_text("utf-8").splitlines()
    assert [json.loads(line) for line in shipped] == synthetic
    assert len(synthetic) == 120
    assert all(r["model"].startswith("synthetic-") and r["seed_paper"].startswith("synthetic-") for r in synthetic)


def test_hub_layout_loads_with_datasets_as_the_rtaste_config():
    folder = example_release_dir()
    card = (folder / "README.md").read_text("utf-8")
    front = yaml.safe_load(card.split("---\n")[1])
    assert front["configs"][0]["config_name"] == "rtaste"
    assert "synthetic" in front["tags"] and "SYNTHETIC DATA" in card
    ds = datasets.load_dataset(str(folder), "rtaste", split="train")
    assert ds.features == rtaste_features()
    assert ds.num_rows == 120
    by_data_files = datasets.load_dataset("json", data_files=str(folder / "data" / "rtaste-train.jsonl"),
                                          features=rtaste_features(), split="train")
    assert by_data_files.to_list() == ds.to_list()


def test_release_validates_into_conditions():
    release = load_release()
    assert len(release.records) == 120 and len(release.conditions) == 24
    condition = release.conditions["synthetic-seed-1/synthetic-model-a/single_researcher"]
    assert sorted(condition.ranks) == [1, 2, 3, 4, 5] and len(condition.registrations) == 5


def test_interval_threshold_round_trips_as_a_list(make_row):
    row = make_row(relation="in_interval", threshold=(0.2, 0.4))
    record = MVERecord.model_validate(row)
    assert record.registration.event.threshold == (0.2, 0.4)
    assert record.to_row() == row
    assert MVERecord.model_validate(make_row(threshold=(0.5,))).registration.event.threshold == 0.5


@pytest.mark.parametrize(("change", "message"), [
    (lambda rows: rows[2].update(probability=1.3), r"row 3 \(mve c1/3\): probability: probability 1.3 is not a "
                                                   r"number between 0 and 1"),
    (lambda rows: rows[0]["judge_predictions"].append({"judge_model": "j", "probability": -0.1}),
     r"judge_predictions.0.probability: probability -0.1 is not a number between 0 and 1"),
    (lambda rows: rows[1]["registration"]["event"].update(relation="between"),
     r"registration.event.relation: unknown relation 'between'; use one of greater, less, in_interval"),
    (lambda rows: rows[0]["registration"]["event"].update(relation="in_interval", threshold=[0.3]),
     r"relation 'in_interval' needs the threshold as \[low, high\], got the single number 0.3"),
    (lambda rows: rows[0]["registration"]["event"].update(threshold=[0.3, 0.6]),
     r"relation 'greater' needs one threshold number, got the interval \[0.3, 0.6\]"),
    (lambda rows: rows[0]["registration"]["event"].update(relation="in_interval", threshold=[0.6, 0.3]),
     r"low > high"),
    (lambda rows: rows[4].update(rank=2), r"condition 'c1': ranks: ranks \[1, 2, 3, 4, 2\] are not a permutation "
                                          r"of 1-5"),
    (lambda rows: rows[4].update(rank=7), r"rank 7 is outside 1-5"),
    (lambda rows: rows.pop(), r"condition 'c1' has 4 registrations; a condition needs exactly 5"),
    (lambda rows: rows[4].update(position=4, mve_id="c1/5"), r"positions \[1, 2, 3, 4, 4\] do not number"),
    (lambda rows: rows[4].update(cost_usd=3.0), r"its rows disagree on cost_usd"),
    (lambda rows: rows[4].update(organisation="lab"), r"unknown organisation 'lab'"),
    (lambda rows: rows[4]["audit"].update(value=[1, 2, 4]), r"research values \[1, 2, 4\] must be integers 0-3"),
    (lambda rows: rows[4]["audit"].update(faithful=[True, False]), r"faithful needs one entry per auditor \(3\)"),
    (lambda rows: rows[4]["audit"].update(novelty=["distinct", "new"]), r"unknown novelty label 'new'"),
    (lambda rows: rows[3].update(mve_id="c1/1"), r"mve_id 'c1/1' appears twice"),
])
def test_bad_rows_are_clear_errors(change, message, condition_rows):
    rows = condition_rows
    change(rows)
    with pytest.raises(ScitasteError, match=message):
        validate_rows(rows, "test.jsonl")


def test_condition_model_checks_five_probabilities_and_ranks(make_row):
    registration = MVERecord.model_validate(make_row()).registration
    good = {"condition_id": "c", "model": "m", "organisation": "research_team", "seed_paper": "p",
            "registrations": [registration] * 5, "probabilities": [0.1] * 5, "ranks": [5, 4, 3, 2, 1], "cost_usd": 1}
    assert Condition.model_validate(good).ranks == (5, 4, 3, 2, 1)
    for change, message in ((dict(registrations=[registration] * 4), "exactly 5 registrations, got 4"),
                            (dict(probabilities=[0.1] * 4 + [1.5]), "probability 1.5 is not a number between 0 and 1"),
                            (dict(probabilities=[0.1] * 6), "needs 5 probabilities, got 6"),
                            (dict(ranks=[1, 1, 2, 3, 4]), r"not a permutation of 1-5")):
        with pytest.raises(ValidationError, match=message):
            Condition.model_validate({**good, **change})


def test_event_rejects_non_numbers():
    with pytest.raises(ValidationError, match="threshold 'five' is not a finite number"):
        RegisteredEvent(statistic="s", relation="greater", threshold="five", unit="fraction")
    with pytest.raises(ValidationError, match="got 3 numbers"):
        RegisteredEvent(statistic="s", relation="in_interval", threshold=[1, 2, 3], unit="fraction")


def test_release_file_and_missing_paths(tmp_path, condition_rows):
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in condition_rows))
    assert len(load_release(path).conditions) == 1
    parquet = tmp_path / "rows.parquet"
    datasets.Dataset.from_list(condition_rows, features=rtaste_features()).to_parquet(str(parquet))
    assert load_release(parquet).records == load_release(path).records
    with pytest.raises(ScitasteError, match="rTaste release not found"):
        load_release(tmp_path / "nope")
    bad = tmp_path / "rows.csv"
    bad.write_text("a,b\n")
    with pytest.raises(ScitasteError, match=r"unsupported release file rows\.csv"):
        load_release(bad)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"mve_id": "x", "probability": "high"}\n')
    with pytest.raises(ScitasteError, match="cannot read the rTaste release"):
        load_release(broken)
    # A line cut short: the message says what the parser found, not only that generating the dataset failed.
    cut = tmp_path / "cut.jsonl"
    cut.write_text('{"mve_id": "x", "hypothesis": "unfinished\n')
    with pytest.raises(ScitasteError, match=r"cannot read the rTaste release .*: JSON parse error"):
        load_release(cut)


def test_wheel_carries_the_release_metrics_and_judge_task(wheel):
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    for name in ("scitaste_hf/data/rtaste_example/README.md", "scitaste_hf/data/rtaste_example/data/rtaste-train.jsonl",
                 "scitaste_hf/_bundled/metrics/rtaste_brier/rtaste_brier.py",
                 "scitaste_hf/_bundled/metrics/rtaste_ranking/rtaste_ranking.py",
                 "scitaste_hf/_bundled/lm_eval_tasks/rtaste_judge/rtaste_judge.yaml",
                 "scitaste_hf/_bundled/lm_eval_tasks/rtaste_judge/utils.py"):
        assert name in names, name
