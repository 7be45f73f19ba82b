"""A Space without persistent storage keeps its sealed runs (issue 33): with a results repo on the fake Hub and
SCITASTE_SEALED_KEY, a run sealed through the Space's API goes up encrypted, and a Space started again over an
empty data folder shows it with the same digest and time; a Space started with another key stops in one line."""

import json
import sqlite3
from datetime import date
from importlib import resources

import pytest

from scitaste_hf.schema import DIMENSIONS

#: Three Space starts.
pytestmark = pytest.mark.slow
KEY = "the Space's own long random secret"


def _release(folder):
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.builder.prospective import Window, blank_records
    from scitaste_hf.records import load_records
    from scitaste_hf.release.folder import provenance
    from scitaste_hf.taxonomy import load_taxonomy
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    gold = load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))
    recorded = provenance(date(2021, 12, 31), DEFAULT_WEIGHTS, load_taxonomy(),
                          {"papers": 300, "works_around": 0, "citations": 0})
    write_dataset(folder, {"selected": gold[:200], "backup": gold[200:250]}, DEFAULT_WEIGHTS, synthetic=True,
                  provenance={**recorded, "prospective": Window.before(date(2021, 12, 31), 12).record()},
                  prospective=blank_records(gold[250:], [None] * 50))
    return gold[250:]


def test_a_restarted_space_restores_its_sealed_runs_from_the_hub(fake_hub, tmp_path, space_starter, servers):
    from gradio_client import handle_file
    from suite_http import space_client

    env, out = fake_hub
    young = _release(tmp_path / "release")
    answers = tmp_path / "sealed.jsonl"
    answers.write_text("".join(json.dumps({"bibcode": r["bibcode"], "innovation_score": 40.0 + i % 9,
                                           "dimension_scores": dict.fromkeys(DIMENSIONS, 30.0)}) + "\n"
                               for i, r in enumerate(young)))
    space_env = {**env, "SCITASTE_RESULTS_REPO": "org/results", "SCITASTE_SUBMIT_LIMIT": "100",
                 "SCITASTE_GOLD": str(tmp_path / "release"), "SCITASTE_SEALED_KEY": KEY}
    proc, url = space_starter(tmp_path / "first", tmp_path / "first.log", space_env)
    try:
        client = space_client(url)
        sealed = client.predict(handle_file(str(answers)), "m", "pure_qa", api_name="/prospective_submit")
        assert sealed.startswith("Sealed: sealed as run #1") and "pending" not in sealed, sealed
        before = client.predict(api_name="/prospective")["data"]
        assert client.predict("1", api_name="/prospective_answers") == answers.read_text()
    finally:
        servers[1](proc)
    with sqlite3.connect(out / "org" / "results" / "sealed.sqlite") as con:
        [(digest, stored)] = con.execute("SELECT digest, answers FROM sealed_runs").fetchall()
    assert digest == before[0][5] and b"innovation_score" not in stored

    proc, url = space_starter(tmp_path / "second", tmp_path / "second.log", space_env)  # no data folder
    try:
        again = space_client(url)
        assert again.predict(api_name="/prospective")["data"] == before
        # sealed from an address, which never leaves the machine: after the restart no one reads it until resolved
        assert again.predict("1", api_name="/prospective_answers").startswith("Refused: run #1 is sealed")
    finally:
        servers[1](proc)
    with pytest.raises(RuntimeError, match="server exited") as refused:
        space_starter(tmp_path / "third", tmp_path / "third.log", {**space_env, "SCITASTE_SEALED_KEY": "another"})
    lines = [line for line in (tmp_path / "third.log").read_text().splitlines() if "SCITASTE_SEALED_KEY" in line]
    assert lines == ["scitaste: error: SCITASTE_SEALED_KEY does not open the sealed runs' Hub copy on org/results: "
                     "set the key they were sealed with"], refused.value
    assert "Traceback" not in (tmp_path / "third.log").read_text()
