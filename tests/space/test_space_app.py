"""The leaderboard Space as a real server (`scitaste space`), driven through gradio_client."""

import json

import pytest

from scitaste_hf.records import load_records
from scitaste_hf.resources import bundled_dir

pytestmark = pytest.mark.slow


def _example_gold():
    from importlib import resources

    return load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))


def _upload(tmp_path, name, lines):
    path = tmp_path / name
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _answers(variant):
    """Honest-looking answers, one set per ``variant``: the example labels plus errors of SD 5 (the labels shifted
    by a constant would be a disguised copy, flagged and not ranked)."""
    import numpy as np

    rng = np.random.default_rng(round(10 * variant))

    def noisy(x):
        return float(np.clip(x + rng.normal(0, 5), 0, 100).round(1))

    return [{"bibcode": r["bibcode"], "innovation_score": noisy(r["innovation_score"]),
             "dimension_scores": {k: noisy(v) for k, v in r["dimension_scores"].items()}} for r in _example_gold()]


def _leaderboard(client):
    table = client.predict("all", "overall", "all", "all", False, api_name="/leaderboard")
    return [dict(zip(table["headers"], row)) for row in table["data"]]


def test_offline_default_shows_the_example_run(space):
    from suite_http import space_client

    url, _ = space
    client = space_client(url)
    rows = _leaderboard(client)
    assert [(r["model"], r["kind"], r["coverage"]) for r in rows] == [("synthetic-example-model", "example", "295/300")]
    assert rows[0]["rank"] == "1" and rows[0]["top group"] == "\u2605" and rows[0]["S1 skill"] > 0
    # the floors come as reference rows of their own, never among the runs
    floors = client.predict("all", "overall", "all", "all", False, api_name="/floors")
    reference = [dict(zip(floors["headers"], row)) for row in floors["data"]]
    assert [(r["reference row"], r["runs above it"]) for r in reference] == [
        ("floor: constant (knows nothing)", "1 of 1"), ("floor: discipline prior", "1 of 1"),
        ("noise ceiling: the expected gold against the redrawn gold", "")]
    assert reference[0]["S1 skill"] == 0 and reference[0]["S2 grade"] == "C"
    # without a gold_weights.json the board redraws the gold from the packaged default's interval: the labels'
    # noise ceiling is below perfect (a lone run ranks first in both intervals)
    assert 0.9 < reference[2]["S1 skill"] < 1.0 and reference[2]["Scheme-1"] < 100.0
    assert rows[0]["rank (gold redrawn)"] == rows[0]["rank"] == "1"


def test_submit_valid_and_invalid_files(space, tmp_path):
    from gradio_client import handle_file
    from suite_http import space_client

    url, data_dir = space
    client = space_client(url)
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
    from suite_http import space_client

    url, _ = space
    client = space_client(url)
    runs = sorted(r["run"] for r in _leaderboard(client))
    if len(runs) < 2:
        pytest.skip("needs the run submitted by the previous test")
    table = client.predict(runs[0], runs[1], api_name="/compare")
    scopes = {row[0] for row in table["data"]}
    assert "overall" in scopes and "physics" in scopes
    rows = [dict(zip(table["headers"], row)) for row in table["data"]]
    assert all(r["verdict"] in ("not distinguishable", "A better", "B better") and r["detectable (80% power)"] > 0
               for r in rows)


def test_flood_from_one_client_is_rate_limited(tmp_path, space_starter, servers):
    import sqlite3

    from gradio_client import handle_file
    from suite_http import space_client

    proc, url = space_starter(tmp_path / "data", tmp_path / "log.txt", {"SCITASTE_SUBMIT_LIMIT": "2/3600"})
    try:
        # Each request claims another address: a local Space takes none of them (issue 27), so the limit holds and
        # the runs' submitter is the connection's own address.
        messages = [space_client(url, headers={"X-Forwarded-For": f"203.0.113.{i}"}).predict(
            handle_file(str(_upload(tmp_path, f"s{i}.jsonl", _answers(float(i))))), f"m{i}", "pure_qa", "", "",
            api_name="/submit") for i in range(1, 4)]
        assert [m.split(":")[0] for m in messages] == ["Accepted", "Accepted", "Rejected"]
        assert "too many submissions" in messages[2]
    finally:
        servers[1](proc)
    with sqlite3.connect(tmp_path / "data" / "leaderboard.sqlite") as db:
        assert {r[0] for r in db.execute("SELECT submitter FROM runs WHERE kind = 'submission'")} == {"127.0.0.1"}


def test_space_folder_is_shipped():
    assert (bundled_dir("space") / "app.py").is_file()


def _constant(value):
    """Answers that give every paper the same scores: Spearman and Pearson are undefined."""
    return [{"bibcode": r["bibcode"], "innovation_score": value,
             "dimension_scores": dict.fromkeys(r["dimension_scores"], value)} for r in _example_gold()]


def _per_discipline_constant():
    """The offline baseline's kind of answers: one value per discipline, so undefined within each discipline."""
    disciplines = sorted({r["discipline"] for r in _example_gold()})
    return [{**line, "innovation_score": 20.0 + 10 * disciplines.index(r["discipline"])}
            for line, r in zip(_constant(40.0), _example_gold())]


def _pairwise(factors: list[list]) -> list[tuple]:
    """Combinations of one value of each factor such that every pair of values of two factors meets in at least one
    (a greedy covering array, in the product's order): about the two largest factors' sizes multiplied, instead of
    the whole product."""
    import itertools

    indices = list(itertools.combinations(range(len(factors)), 2))
    pairs = {c: {(i, c[i], j, c[j]) for i, j in indices} for c in itertools.product(*factors)}
    uncovered, chosen = set().union(*pairs.values()), []
    while uncovered:
        best = max(pairs, key=lambda c: len(pairs[c] & uncovered))
        chosen.append(best)
        uncovered -= pairs[best]
    return chosen


def test_every_pair_of_filter_values_renders_runs_with_undefined_statistics(space, tmp_path):
    """A run whose statistics are undefined renders as blanks under the board's filters: every value of each of the
    five, and every pair of values of two of them, in at least one view (a filter acts on the rows alone, so a
    fault that needs three settings at once is not what is looked for: some fifty views, not every combination)."""
    from concurrent.futures import ThreadPoolExecutor

    import httpx
    from gradio_client import handle_file
    from suite_http import space_client

    from scitaste_hf.leaderboard import Leaderboard
    from scitaste_hf.modes import MODES
    from scitaste_hf.schema import DISCIPLINES, WAPE_BANDS

    url, data_dir = space
    client = space_client(url)
    copy = [{k: r[k] for k in ("bibcode", "innovation_score", "dimension_scores")} for r in _example_gold()]
    # A trace in the agent's format, so that one run is evidence-consistent and the status filter has a row to show.
    trace = _upload(tmp_path, "trace.jsonl", [
        {"bibcode": line["bibcode"], "mode": "native_search", "messages": [
            {"role": "user", "content": "Score this paper."},
            {"role": "assistant", "content": json.dumps({k: v for k, v in line.items() if k != "bibcode"})}]}
        for line in _per_discipline_constant()])
    for name, lines, mode, evidence in (("Constant", _constant(50.0), "pure_qa", None),
                                        ("Per-discipline", _per_discipline_constant(), "native_search", trace),
                                        ("Copycat", copy, "dimagent_v3_native", None)):
        message = client.predict(handle_file(str(_upload(tmp_path, f"{name}.jsonl", lines))), name, mode, "", "",
                                 None, evidence and handle_file(str(evidence)), api_name="/submit")
        assert message.startswith("Accepted"), message
    board = Leaderboard(data_dir, _example_gold())  # the same store, read here for the expected rows
    assert {r["model"]: r["spearman"] for r in board.rows(mode="pure_qa")}["Constant"] is None
    assert [(r["status"], r["spearman"]) for r in board.rows(mode="native_search", discipline="physics")] == [
        ("evidence-consistent", None)]

    factors = [["all", *MODES], ["overall", *DISCIPLINES], ["all", *(b.grade for b in WAPE_BANDS)],
               ["all", "evidence-consistent", "self-reported"], [False, True]]
    combinations = _pairwise(factors)
    http = httpx.Client(base_url=url, timeout=60)

    def check(combination):
        mode, discipline, grade, status, flagged = combination
        # the raw API takes every input: open weights, the model filters
        table = _call(http, "leaderboard", (*combination, False, []))
        got = [dict(zip(table["headers"], row)) for row in table["data"]]
        expected = board.rows(mode=None if mode == "all" else mode,
                              discipline=None if discipline == "overall" else discipline,
                              grade=None if grade == "all" else grade, status=None if status == "all" else status,
                              include_flagged=flagged)
        assert [r["run"] for r in got] == [r["run"] for r in expected], combination
        for shown, row in zip(got, expected):
            for column, key in (("Spearman", "spearman"), ("Pearson", "pearson")):
                assert shown[column] == (None if row[key] is None else round(row[key], 3)), (combination, column)
        return sum(shown["Spearman"] is None for shown in got)

    with http, ThreadPoolExecutor(8) as pool:
        blanks = list(pool.map(check, combinations))
    assert all({c[i] for c in combinations} == set(f) for i, f in enumerate(factors)) and sum(blanks) > 0
    board.close()


def _call(http, api_name, inputs):
    """The first output of the Space's endpoint ``api_name`` for ``inputs``, through Gradio's own HTTP API (a POST
    of the inputs, then the event's stream of results). gradio_client's own work per call (about 75 ms of CPU
    against the server's 20) made most of the suite's time in a test that called it 882 times."""
    event = http.post(f"gradio_api/call/{api_name}", json={"data": list(inputs)})
    event.raise_for_status()
    stream = http.get(f"gradio_api/call/{api_name}/{event.json()['event_id']}")
    stream.raise_for_status()
    kind = data = None
    for line in stream.text.splitlines():
        if line.startswith("event: "):
            kind = line[len("event: "):]
        elif line.startswith("data: ") and kind in ("complete", "error"):
            data = line[len("data: "):]
            break
    assert kind == "complete", f"{api_name}{tuple(inputs)}: {kind}: {data}"
    return json.loads(data)[0]


@pytest.mark.parametrize(("run_a", "run_b", "message"), [
    ("abc", 1, "run A must be a run number from the list"),
    (1, "9" * 30, "run B must be a run number from the list"),
    (1, "1.5", "run B must be a run number from the list"),
])
def test_compare_with_bad_runs_says_why_in_one_sentence(space, run_a, run_b, message):
    from gradio_client.exceptions import AppError
    from suite_http import space_client

    url, _ = space
    with pytest.raises(AppError) as raised:
        space_client(url).predict(run_a, run_b, api_name="/compare")
    assert str(raised.value) == message


def test_importing_the_app_writes_nothing(tmp_path):
    """`scitaste space` and the Space run the file; importing it alone (a test, a bench) opens no store."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("SCITASTE_DATA", "SCITASTE_GOLD")}
    code = "import runpy, sys; app = runpy.run_path(sys.argv[1]); print(callable(app['serve']))"
    proc = subprocess.run([sys.executable, "-c", code, str(bundled_dir("space") / "app.py")], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == "True", proc.stderr[-2000:]
    assert list(tmp_path.iterdir()) == []


def test_oversized_evidence_upload_is_rejected_and_nothing_is_stored(space, tmp_path):
    from gradio_client import handle_file
    from suite_http import space_client

    url, data_dir = space
    before = sorted((data_dir / "submissions").iterdir())
    predictions = _upload(tmp_path, "p.jsonl", _answers(4.5))
    samples = tmp_path / "samples.jsonl"
    samples.write_bytes(b" " * 22_000_000)
    message = space_client(url).predict(handle_file(str(predictions)), "Model-E", "pure_qa", "", "",
                                        handle_file(str(samples)), None, api_name="/submit")
    assert message == "Rejected: the samples log is 21.0 MiB, over the limit of 20.0 MiB"
    assert sorted((data_dir / "submissions").iterdir()) == before


class _StuckHub:
    """A Hub endpoint on 127.0.0.1 that drops every connection; once armed, it holds the next one open without an
    answer until released: a Hub copy that hangs."""

    def __init__(self):
        import socket
        import threading

        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.armed, self.holding, self.released = threading.Event(), threading.Event(), threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        import threading

        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed by close()
                return
            if self.armed.is_set() and not self.holding.is_set():
                self.holding.set()
                threading.Thread(target=self._hold, args=(conn,), daemon=True).start()
            else:
                conn.close()

    def _hold(self, conn):
        self.released.wait()
        conn.close()

    def close(self):
        self.released.set()
        self.listener.close()


def _hub_env(endpoint):
    return {"HF_ENDPOINT": endpoint, "HF_TOKEN": "hf_test_secret_token", "HF_HUB_OFFLINE": "0",
            "HF_HUB_DISABLE_XET": "1", "SCITASTE_RESULTS_REPO": "org/results", "SCITASTE_SUBMIT_LIMIT": "100"}


def _hub_pending(data_dir):
    import sqlite3

    with sqlite3.connect(data_dir / "leaderboard.sqlite") as db:
        return sorted(key for (key,) in db.execute("SELECT sha256 FROM hub_pending"))


def _run_keys(data_dir):
    import sqlite3

    with sqlite3.connect(data_dir / "leaderboard.sqlite") as db:
        return sorted(key for (key,) in db.execute("SELECT sha256 FROM runs"))


def test_a_slow_large_submission_does_not_hold_up_a_small_one(tmp_path, space_starter, servers):
    """A 4.6 MB submission held in its Hub copy (a Hub that takes the connection and never answers) and a small one
    sent while it is held: the small one is stored and answered while the large one's copy still hangs, and the
    large one is answered all the same; both runs are kept, pending their copy."""
    from gradio_client import handle_file
    from suite_http import space_client

    hub = _StuckHub()
    data_dir = tmp_path / "data"
    proc, url = space_starter(data_dir, tmp_path / "log.txt", _hub_env(hub.url))
    try:
        padded = [{**line, "reasoning": "x" * 15_000} for line in _answers(1.0)]
        large = _upload(tmp_path, "large.jsonl", padded)
        assert 4_500_000 < large.stat().st_size < 5 * 2**20
        hub.armed.set()
        job_large = space_client(url).submit(handle_file(str(large)), "Model-Large", "pure_qa", "", "",
                                             api_name="/submit")
        assert hub.holding.wait(120), "the large submission never reached its Hub copy"
        small = _upload(tmp_path, "small.jsonl", _answers(2.0))
        job_small = space_client(url).submit(handle_file(str(small)), "Model-Small", "pure_qa", "", "",
                                             api_name="/submit")
        message_small = job_small.result(timeout=60)
        # stored while the large one's copy is still held: it did not wait behind it (whether the large one was
        # answered first depends on the machine: it is answered HUB_COPY_WAIT seconds into its hanging copy)
        assert hub.holding.is_set() and not hub.released.is_set()
        # the Hub never answers: the large one is answered all the same once its wait for the copy is over
        message_large = job_large.result(timeout=120)
        assert hub.holding.is_set() and not hub.released.is_set()
        leaderboard = _leaderboard(space_client(url))
    finally:
        hub.close()
        servers[1](proc)
    for message in (message_small, message_large):
        assert message.startswith("Accepted: scored as run #") and message.endswith(
            "; it is stored here, and its copy to the Hub dataset repo is pending and will be retried"), message
    rows = {r["model"]: r for r in leaderboard}
    assert {m: rows[m]["coverage"] for m in ("Model-Large", "Model-Small")} == {"Model-Large": "300/300",
                                                                              "Model-Small": "300/300"}
    assert len(_run_keys(data_dir)) == 3 and _hub_pending(data_dir) == _run_keys(data_dir)  # with the example run


def test_unreachable_hub_keeps_the_run_and_copies_it_on_the_next_start(tmp_path, fake_hub, space_starter, servers):
    """A run stored while the Hub is unreachable is kept, pending, and copied on the next start; once the Hub
    answers (HF_TOKEN and SCITASTE_RESULTS_REPO), each run then stored also goes to the dataset repo. One Space
    process per Hub: a start costs several seconds."""
    import socket
    import sqlite3
    import time

    from gradio_client import handle_file
    from suite_http import space_client

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    data_dir = tmp_path / "data"
    proc, url = space_starter(data_dir, tmp_path / "log.txt", _hub_env(closed))
    try:
        message = space_client(url).predict(handle_file(str(_upload(tmp_path, "p.jsonl", _answers(2.0)))),
                                            "Model-U", "pure_qa", "", "", api_name="/submit")
    finally:
        servers[1](proc)
    assert message == ("Accepted: scored as run #2: self-reported (no samples log or trace attached); it is stored "
                       "here, and its copy to the Hub dataset repo is pending and will be retried")
    assert len(_hub_pending(data_dir)) == 2 and _hub_pending(data_dir) == _run_keys(data_dir)

    env, hub = fake_hub
    proc, url = space_starter(data_dir, tmp_path / "log2.txt", {**env, "SCITASTE_RESULTS_REPO": "org/results"})
    try:
        # the start copies what is pending (waiting a while for it before it serves); Model-H is sent only once
        # nothing is pending, so that no later run carries the pending ones
        deadline = time.monotonic() + 90
        while (pending_after_start := _hub_pending(data_dir)) and time.monotonic() < deadline:
            time.sleep(0.2)
        message = space_client(url).predict(handle_file(str(_upload(tmp_path, "h.jsonl", _answers(3.0)))),
                                            "Model-H", "pure_qa", "", "", api_name="/submit")
    finally:
        servers[1](proc)
    assert pending_after_start == [], "the runs pending from the unreachable Hub were not copied on the next start"
    assert message.startswith("Accepted"), message
    assert _hub_pending(data_dir) == [], "the run stored while the Hub answers is still pending"
    local = sorted(p.name for p in (data_dir / "submissions").iterdir())
    copied = sorted(p.name for p in (hub / "org" / "results" / "submissions").iterdir())
    # predictions and metadata of the example run, of Model-U (pending, then copied) and of Model-H
    assert copied == local and len(local) == 6, (copied, local)
    db = sqlite3.connect(hub / "org" / "results" / "leaderboard.sqlite")
    assert {m for (m,) in db.execute("SELECT model FROM runs")} == {"synthetic-example-model", "Model-U", "Model-H"}
