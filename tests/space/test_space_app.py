"""The leaderboard Space as a real server (`scitaste space`), driven through gradio_client."""

import json

import pytest

from scitaste_hf.records import load_records
from scitaste_hf.resources import bundled_dir


def _example_gold():
    from importlib import resources

    return load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))


def _upload(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _answers(noise_shift):
    return [{"bibcode": r["bibcode"], "innovation_score": min(100.0, r["innovation_score"] + noise_shift),
             "dimension_scores": {k: min(100.0, v + noise_shift) for k, v in r["dimension_scores"].items()}}
            for r in _example_gold()]


def _leaderboard(client):
    table = client.predict("all", "overall", "all", "all", False, api_name="/leaderboard")
    return [dict(zip(table["headers"], row)) for row in table["data"]]


def test_offline_default_shows_the_example_run(space):
    from gradio_client import Client

    url, _ = space
    rows = _leaderboard(Client(url, verbose=False))
    assert [(r["model"], r["kind"], r["coverage"]) for r in rows] == [("synthetic-example-model", "example", "295/300")]


def test_submit_valid_and_invalid_files(space, tmp_path):
    from gradio_client import Client, handle_file

    url, data_dir = space
    client = Client(url, verbose=False)
    good = _upload(tmp_path, "good.jsonl", _answers(3.0))
    message = client.predict(handle_file(str(good)), "Model-A 70B", "dimagent_v3", "Lab A", "https://example.org/a",
                             api_name="/submit")
    assert message.startswith("Accepted: scored as run #"), message
    again = client.predict(handle_file(str(good)), "Model-A 70B", "dimagent_v3", "Lab A", "", api_name="/submit")
    assert again.startswith("Already submitted"), again

    bad_lines = _answers(3.0)[:-1]
    bad = _upload(tmp_path, "bad.jsonl", bad_lines)
    message = client.predict(handle_file(str(bad)), "Model-B", "pure_qa", "", "", api_name="/submit")
    assert message.startswith("Rejected: 1 bibcode(s) of the selected split missing"), message
    html = client.predict(handle_file(str(good)), "<img src=x onerror=alert(1)>", "pure_qa", "", "",
                          api_name="/submit")
    assert html.startswith("Rejected: model name"), html

    rows = _leaderboard(client)
    models = [r["model"] for r in rows]
    assert models.count("Model-A 70B") == 1 and "Model-B" not in models
    row = next(r for r in rows if r["model"] == "Model-A 70B")
    assert row["coverage"] == "300/300" and row["status"] == "self-reported" and row["S2 grade"]
    assert len(list((data_dir / "submissions").glob("*.jsonl"))) == 2  # the example run and Model-A


def test_compare_two_runs(space):
    from gradio_client import Client

    url, _ = space
    client = Client(url, verbose=False)
    runs = sorted(r["run"] for r in _leaderboard(client))
    if len(runs) < 2:
        pytest.skip("needs the run submitted by the previous test")
    table = client.predict(runs[0], runs[1], api_name="/compare")
    scopes = {row[0] for row in table["data"]}
    assert "overall" in scopes and "physics" in scopes


def test_flood_from_one_client_is_rate_limited(tmp_path, space_starter, servers):
    from gradio_client import Client, handle_file

    proc, url = space_starter(tmp_path / "data", tmp_path / "log.txt", {"SCITASTE_SUBMIT_LIMIT": "2/3600"})
    try:
        client = Client(url, verbose=False)
        messages = [client.predict(handle_file(str(_upload(tmp_path, f"s{i}.jsonl", _answers(float(i))))),
                                   f"m{i}", "pure_qa", "", "", api_name="/submit") for i in range(1, 4)]
        assert [m.split(":")[0] for m in messages] == ["Accepted", "Accepted", "Rejected"]
        assert "too many submissions" in messages[2]
    finally:
        servers[1](proc)


def test_space_folder_is_shipped():
    assert (bundled_dir("space") / "app.py").is_file()


def test_runs_are_copied_to_a_hub_dataset_repo(tmp_path, fake_hub, space_starter, servers):
    """With HF_TOKEN and SCITASTE_RESULTS_REPO, each stored run also goes to the dataset repo."""
    import sqlite3

    from gradio_client import Client, handle_file

    env, hub = fake_hub
    proc, url = space_starter(tmp_path / "data", tmp_path / "log.txt", {**env, "SCITASTE_RESULTS_REPO": "org/results"})
    try:
        message = Client(url, verbose=False).predict(handle_file(str(_upload(tmp_path, "p.jsonl", _answers(2.0)))),
                                                     "Model-H", "pure_qa", "", "", api_name="/submit")
        assert message.startswith("Accepted"), message
    finally:
        servers[1](proc)
    local = sorted(p.name for p in (tmp_path / "data" / "submissions").iterdir())
    copied = sorted(p.name for p in (hub / "org" / "results" / "submissions").iterdir())
    assert copied == local  # predictions and metadata of the example run and of Model-H
    db = sqlite3.connect(hub / "org" / "results" / "leaderboard.sqlite")
    assert {m for (m,) in db.execute("SELECT model FROM runs")} == {"synthetic-example-model", "Model-H"}
