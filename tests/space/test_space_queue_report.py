"""The Submit tab's request, the Queue tab and the Report tab of a real Space (`scitaste space` on 127.0.0.1 over the
bundled example, with one operator endpoint), driven through gradio_client: requests refused in one line or queued,
the queue's states as a worker moves them (through the queue itself: the worker is tested in tests/worker), and a
report of a stored run whose Scheme 1 and Scheme 2 are the board's."""

import json

import pytest

pytestmark = pytest.mark.slow

#: The operator endpoint of the Space under test (never called: no worker runs here).
ENDPOINT = "board-llm"


@pytest.fixture(scope="module")
def queue_space(tmp_path_factory, space_starter, servers):
    """A Space over the bundled example (its one run, #1) with :data:`ENDPOINT` configured; (client, data folder)."""
    from suite_http import space_client

    folder = tmp_path_factory.mktemp("queue-space")
    endpoints = folder / "endpoints.json"
    endpoints.write_text(json.dumps({ENDPOINT: {"base_url": "http://127.0.0.1:9/v1", "model": "scripted"}}))
    proc, url = space_starter(folder / "data", folder / "log.txt",
                              {"SCITASTE_SUBMIT_LIMIT": "off", "SCITASTE_ENDPOINTS": str(endpoints)})
    try:
        yield space_client(url), folder / "data"
    finally:
        servers[1](proc)


def _queue(client) -> dict[int, dict]:
    table = client.predict(api_name="/queue")
    return {row[0]: dict(zip(table["headers"], row)) for row in table["data"]}


def test_requests_are_refused_or_queued_and_the_queue_shows_each_state(queue_space):
    from scitaste_hf.leaderboard.requests import RequestQueue
    from scitaste_hf.leaderboard.store import Store

    client, data = queue_space

    def ask(model, modes, name="tester", revision=""):
        return client.predict(model, revision, modes, name, api_name="/request")

    markup = ask("<b>org</b>/model", ["pure_qa"])
    assert markup.startswith("Refused: model:") and "no markup" in markup and "\n" not in markup
    assert ask("org/model", ["pure_qa"], name="").startswith("Refused: your name:")
    queued = ask("org/model", ["pure_qa", "dimagent_v3"], revision="main")
    assert queued.startswith("Queued: queued as request #1 (pure_qa), #2 (dimagent_v3)"), queued
    duplicate = ask("org/model", ["pure_qa"], name="someone else", revision="main")
    assert duplicate == "Refused: org/model@main in mode pure_qa is already request #1 (pending); nothing queued"
    # a live tool loop needs one of the board's endpoints, which the dropdown offers
    assert ask("org/model", ["dimagent_v3_live"]).startswith("Refused: mode dimagent_v3_live needs an endpoint")
    assert ask(ENDPOINT, ["dimagent_v3_live"]).startswith("Queued: queued as request #3 (dimagent_v3_live)")

    rows = _queue(client)
    assert list(rows) == [3, 2, 1]  # newest first
    assert [(rows[i]["state"], rows[i]["position"], rows[i]["run"]) for i in (1, 2, 3)] == [
        ("pending", 1, ""), ("pending", 2, ""), ("pending", 3, "")]
    assert (rows[1]["model"], rows[1]["revision"], rows[1]["source"], rows[3]["source"]) == (
        "org/model", "main", "hub", "endpoint")
    assert "submitter" not in rows[1] and "tester" not in json.dumps(rows)

    # a worker's moves, through the same store: request 1 runs and produces run #1, request 2 fails
    store = Store(data)
    try:
        requests = RequestQueue(store)
        assert requests.claim("test-worker")["id"] == 1
        rows = _queue(client)
        assert (rows[1]["state"], rows[1]["position"], rows[1]["attempts"], rows[2]["position"]) == (
            "running", "", 1, 1)
        assert rows[1]["started"] and not rows[1]["finished"]
        assert requests.finish(1, "test-worker", 1)
        assert requests.claim("test-worker")["id"] == 2
        assert requests.fail(2, "test-worker", "the model answered nothing parseable")
    finally:
        store.close()
    rows = _queue(client)
    assert (rows[1]["state"], rows[1]["run"], rows[1]["reason"]) == ("finished", 1, "")
    assert rows[1]["finished"] >= rows[1]["started"] >= rows[1]["queued"]
    assert (rows[2]["state"], rows[2]["reason"], rows[2]["run"]) == (
        "failed", "the model answered nothing parseable", "")
    assert (rows[3]["state"], rows[3]["position"]) == ("pending", 1)
    # the Queue tab cancels a pending request for the name that asked for it, and no other's
    assert client.predict("3", "someone else", api_name="/cancel") == "Refused: no request #3 of yours"
    assert client.predict("#3", "tester", api_name="/cancel").startswith("Refused: request: a request number")
    assert client.predict("3", "tester", api_name="/cancel") == "Cancelled: request #3 cancelled"
    assert client.predict("2", "tester", api_name="/cancel") == (
        "Refused: request #2 is failed; only a pending or running request is cancelled")
    assert _queue(client)[3]["state"] == "cancelled"


def test_the_report_of_a_stored_run_has_the_boards_schemes(queue_space):
    from importlib import resources
    from pathlib import Path

    from scitaste_hf.leaderboard import Leaderboard
    from scitaste_hf.records import load_records

    client, data = queue_space
    line, text, image, report = client.predict([1], [], api_name="/report")
    assert line == "Report on 1 of 1 picked runs." and Path(image).stat().st_size > 0
    gold = load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))
    board = Leaderboard(data, gold, read_only=True)
    try:
        stored = board.result(1)
    finally:
        board.close()
    [run] = report["runs"]
    assert (run["model"], run["mode"], run["source"]) == ("synthetic-example-model", "dimagent_v3", "run #1")
    for scope, block in run["scopes"].items():
        expected = stored["overall"] if scope == "overall" else stored["by_discipline"][scope]
        assert (block["scheme1"]["score"], block["scheme1"]["ci"]) == (expected["scheme1"]["scheme1"],
                                                                       expected["scheme1"]["ci"]["scheme1"])
        assert (block["scheme2"]["score"], block["scheme2"]["ci"], block["scheme2"]["grade"]) == (
            expected["scheme2"]["score"], expected["scheme2"]["ci"]["score"], expected["scheme2"]["grade"])
    s1 = stored["overall"]["scheme1"]
    assert f"{s1['scheme1']:.1f} [{s1['ci']['scheme1'][0]:.1f}, {s1['ci']['scheme1'][1]:.1f}]" in text
    assert "Table 8" in text and "dimension_spearman.png" not in text
    # every ranked run of a mode: the same run, the same numbers
    by_mode = client.predict([], ["dimagent_v3"], api_name="/report")
    assert by_mode[0] == "Report on 1 of 1 ranked runs of dimagent_v3." and by_mode[3]["runs"] == report["runs"]


def test_on_the_hub_a_request_needs_the_signed_in_account(tmp_path, monkeypatch):
    import runpy
    from importlib import resources
    from types import SimpleNamespace

    from scitaste_hf.leaderboard import Leaderboard
    from scitaste_hf.records import load_records
    from scitaste_hf.resources import bundled_dir

    app = runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="test")
    gold = load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))
    board = Leaderboard(tmp_path, gold, background_upgrade=False)
    try:
        monkeypatch.setenv("SYSTEM", "spaces")
        ask = app["request_evaluation"]
        # a typed name counts for nothing on the Hub
        assert ask(board, "org/model", "", ["pure_qa"], "alice", None) == (
            "Refused: sign in with Hugging Face first (the button above) to request an evaluation")
        queued = ask(board, "org/model", "", ["pure_qa"], "mallory", None, SimpleNamespace(username="alice"))
        assert queued.startswith("Queued: queued as request #1 (pure_qa)"), queued
        assert board.requests.get(1)["submitter"] == "hf:alice"
        cancel = app["cancel_evaluation"]
        assert cancel(board, "1", "alice", None) == (
            "Refused: sign in with Hugging Face first (the button above) to cancel a request")
        assert cancel(board, "1", "", None, SimpleNamespace(username="mallory")) == "Refused: no request #1 of yours"
        assert cancel(board, "1", "", None, SimpleNamespace(username="alice")) == "Cancelled: request #1 cancelled"
    finally:
        board.close()
