"""The Space publishes each run it stores as a details dataset when a results repo is configured (issue 29, item 3):
through the Space's API against the Hub stand-in (tests/fixtures/fake_hub.py, a real process), a submission ends with
a dataset that `datasets.load_dataset` reads, one row a paper, private as the submitter chose; the example run the
Space stores on its first start is published public."""

import json
import sqlite3
import time
from importlib import resources

import numpy as np
import pytest

from scitaste_hf.leaderboard.details import details_repo
from scitaste_hf.records import load_records

pytestmark = pytest.mark.slow

EXAMPLES = resources.files("scitaste_hf").joinpath("data/examples")


def _details_states(data_dir) -> dict[int, str]:
    with sqlite3.connect(data_dir / "leaderboard.sqlite") as db:
        return dict(db.execute("SELECT id, details FROM runs"))


def test_a_submission_through_the_space_ends_with_its_details_dataset(tmp_path, fake_hub, space_starter, servers):
    import datasets
    from gradio_client import handle_file
    from suite_http import space_client

    env, out = fake_hub
    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
    rng = np.random.default_rng(4)

    def noisy(x):  # honest-looking: the labels plus independent errors (a shifted copy would be flagged)
        return float(np.clip(x + rng.normal(0, 5), 0, 100).round(1))

    lines = [{"bibcode": r["bibcode"], "innovation_score": noisy(r["innovation_score"]),
              "dimension_scores": {k: noisy(v) for k, v in r["dimension_scores"].items()},
              "reasoning": f"about {r['bibcode']}"} for r in gold]
    upload = tmp_path / "p.jsonl"
    upload.write_text("".join(json.dumps(line) + "\n" for line in lines))
    data_dir = tmp_path / "data"
    proc, url = space_starter(data_dir, tmp_path / "log.txt",
                              {**env, "SCITASTE_RESULTS_REPO": "org/results", "SCITASTE_SUBMIT_LIMIT": "100"})
    try:
        message = space_client(url).predict(handle_file(str(upload)), "Model-P", "pure_qa", "", "", None,
                                            None, "", "", "", "private", api_name="/submit")
        deadline = time.monotonic() + 90
        while "pending" in (states := _details_states(data_dir)).values() and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        servers[1](proc)
    assert message.startswith("Accepted: scored as run #2: self-reported"), message
    with sqlite3.connect(data_dir / "leaderboard.sqlite") as db:
        keys = dict(db.execute("SELECT id, sha256 FROM runs"))
    example, submitted = details_repo("org/results", 1, keys[1]), details_repo("org/results", 2, keys[2])
    assert states == {1: example, 2: submitted}, "the details were not published in 90 s"
    created = {f"{c['organization']}/{c['name']}": c.get("visibility")
               for c in map(json.loads, (out / "created.jsonl").read_text().splitlines())}
    assert created[submitted] == "private" and created[example] == "public"
    rows = datasets.load_dataset(str(out / submitted), split="train")
    assert rows["bibcode"] == [r["bibcode"] for r in gold] and set(rows["model"]) == {"Model-P"}
    assert rows["predicted_innovation_score"] == [line["innovation_score"] for line in lines]
    assert rows["error_innovation_score"] == pytest.approx(
        [line["innovation_score"] - r["innovation_score"] for line, r in zip(lines, gold)])
    assert rows["reasoning"] == [line["reasoning"] for line in lines] and all(rows["parsed"])
    assert len(datasets.load_dataset(str(out / example), split="train")) == len(gold)
