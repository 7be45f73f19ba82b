"""The board's request queue and the seal of its own runs, in process (no lm-eval): requests refused in one line
(duplicate, malformed, over the limit), leases that two workers never share and that expire, the attempt limit,
the Hub copy of the requests, a worker's run stored as `server-run`, an upload that cannot claim it, and a store
edited by hand that is caught when the board opens."""

import json
import sqlite3
import time
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.leaderboard import Leaderboard, SubmissionError
from scitaste_hf.leaderboard.requests import CANCELLED, FAILED, FINISHED, PENDING, RUNNING, RequestQueue
from scitaste_hf.leaderboard.store import EVIDENCE_CONSISTENT, SELF_REPORTED, SERVER_RUN
from scitaste_hf.records import load_records
from scitaste_hf.schema import DIMENSIONS

GOLD = load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))[:12]
SECRET = "worker-secret-for-tests"


@pytest.fixture()
def endpoints(tmp_path, monkeypatch):
    path = tmp_path / "endpoints.json"
    path.write_text(json.dumps({"local-llama": {"base_url": "http://127.0.0.1:9/v1", "model": "m"}}))
    monkeypatch.setenv("SCITASTE_ENDPOINTS", str(path))
    monkeypatch.setenv("SCITASTE_WORKER_SECRET", SECRET)


def _board(folder, **kwargs):
    return Leaderboard(folder, GOLD, background_upgrade=False, **kwargs)


def _samples(offset=0.0):
    """An lm-eval samples log of the gold papers: each reply the labels moved by noise, so not a copy."""
    rng = np.random.default_rng(3)
    lines = []
    for r in GOLD:
        noise = rng.normal(0, 8, 1 + len(DIMENSIONS))
        answer = {"innovation_score": float(np.clip(r["innovation_score"] + noise[0] + offset, 0, 100)),
                  "dimension_scores": {d: float(np.clip(r["dimension_scores"][d] + e, 0, 100))
                                       for d, e in zip(DIMENSIONS, noise[1:])}}
        reply = json.dumps(answer)
        lines.append({"doc_id": len(lines), "doc": {"bibcode": r["bibcode"], "scitaste_mode": "pure_qa"},
                      "resps": [[reply]], "filtered_resps": [reply]})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def test_requests_are_queued_with_positions_and_refused_in_one_line(tmp_path, endpoints):
    board = _board(tmp_path, rate_limit=(3, 3600.0))
    first = board.request("org/model-a", ["pure_qa", "dimagent_v3"], revision="main", submitter="alice")
    assert len(first.ids) == 2 and "queued as request" in first.message
    board.request("local-llama", "dimagent_v3_live", submitter="bob")  # an endpoint runs the live loop
    queue = {r["id"]: r for r in board.queue()}
    assert [queue[i]["position"] for i in sorted(queue)] == [1, 2, 3]
    assert {r["state"] for r in queue.values()} == {PENDING} and "submitter" not in queue[first.ids[0]]
    refusals = {
        "duplicate": lambda: board.request("org/model-a", ["pure_qa"], revision="main", submitter="carol"),
        "markup": lambda: board.request("<b>org/x</b>", ["pure_qa"], submitter="carol"),
        "not a hub id": lambda: board.request("just-a-name", ["pure_qa"], submitter="carol"),
        "bad revision": lambda: board.request("org/x", ["pure_qa"], revision="a b", submitter="carol"),
        "revision of an endpoint": lambda: board.request("local-llama", ["pure_qa"], revision="v1"),
        "unknown mode": lambda: board.request("org/x", ["telepathy"], submitter="carol"),
        "live loop on a hub model": lambda: board.request("org/x", ["dimagent_v3_live"], submitter="carol"),
        "no mode": lambda: board.request("org/x", [], submitter="carol"),
    }
    for what, call in refusals.items():
        with pytest.raises(SubmissionError) as caught:
            call()
        assert "\n" not in str(caught.value), what
    with pytest.raises(SubmissionError, match=r"already request #\d+ \(pending\)"):
        refusals["duplicate"]()
    with pytest.raises(SubmissionError, match="one of the board's endpoints \\(local-llama\\)"):
        refusals["not a hub id"]()
    assert len(board.queue()) == 3  # nothing refused was queued, not even the duplicate's other mode
    # the same model at another revision is another request; the limit counts accepted requests
    board.request("org/model-a", ["pure_qa"], revision="v2", submitter="alice")
    board.request("org/model-b", ["pure_qa"], submitter="alice")
    with pytest.raises(SubmissionError, match="too many requests"):
        board.request("org/model-c", ["pure_qa"], submitter="alice")
    # a pending request is cancelled by its submitter only; then it may be asked for again
    with pytest.raises(SubmissionError, match="no request"):
        board.cancel_request(first.ids[0], "mallory")
    board.cancel_request(first.ids[0], "alice")
    assert board.requests.get(first.ids[0])["state"] == CANCELLED
    board.request("org/model-a", ["pure_qa"], revision="main", submitter="dave")
    board.close()


def test_leases_are_never_shared_expire_and_count_attempts(tmp_path, endpoints):
    board = _board(tmp_path)
    board.request("org/a", ["pure_qa"])
    board.request("org/b", ["pure_qa"])
    one, two = RequestQueue(board.store), RequestQueue(board.store)
    a, b = one.claim("worker-1", lease_s=60), two.claim("worker-2", lease_s=60)
    assert (a["id"], b["id"]) == (1, 2) and two.claim("worker-2") is None
    assert board.requests.get(1)["state"] == RUNNING and board.queue()[0]["position"] is None
    assert not two.renew(1, "worker-2") and not two.finish(1, "worker-2", 1)
    assert one.renew(1, "worker-1", lease_s=0)  # worker-1 "dies": its lease runs out at once
    time.sleep(0.01)
    again = two.claim("worker-2", max_attempts=2)
    assert again["id"] == 1 and again["attempts"] == 2
    assert not one.finish(1, "worker-1", 1)  # the lost lease stores nothing
    assert two.renew(1, "worker-2", lease_s=0)
    time.sleep(0.01)
    assert one.claim("worker-1", max_attempts=2) is None  # b's lease is still held; a has had its attempts
    row = board.requests.get(1)
    assert row["state"] == FAILED and "no end after 2 attempts" in row["reason"]
    assert two.fail(2, "worker-2", "model\nfailed   to load")
    assert board.requests.get(2)["reason"] == "model failed to load"  # one line
    board.requeue_request(2)
    assert (board.requests.get(2)["state"], board.requests.get(2)["attempts"]) == (PENDING, 0)
    with pytest.raises(Exception, match="only a finished or failed request"):
        board.requeue_request(2)
    board.close()


def test_requests_go_up_with_the_hub_copy_without_submitters(tmp_path, endpoints):
    copied = []

    def mirror(store):
        keys = store.copy_pending()
        files, message = store.hub_files(keys)
        copied.append((keys, message, dict(files)["leaderboard.sqlite"]))
        store.copy_done(keys)
        return True

    board = _board(tmp_path, mirror=mirror)
    ids = board.request("org/a", ["pure_qa"], submitter="10.0.0.7").ids
    keys, message, snapshot = copied[-1]
    assert keys == [f"request-{ids[0]}"] and message == "Add 0 run(s), update 1 request(s)"
    db = sqlite3.connect(":memory:")
    db.deserialize(snapshot)
    assert db.execute("SELECT model, state, submitter FROM requests").fetchall() == [("org/a", PENDING, "")]
    board.close()


def _worker_run(board, model="org/model-a"):
    board.request(model, ["pure_qa"], submitter="alice")
    claimed = board.requests.claim("worker-1")
    provenance = {"request": claimed["id"], "backend": "hf", "revision": "0" * 40, "package_version": "0.1.0"}
    result = board.store_server_run(claimed, _samples(), provenance)
    assert board.requests.finish(claimed["id"], "worker-1", result.run_id)
    return result


def test_a_worker_run_is_server_run_and_an_upload_cannot_claim_it(tmp_path, endpoints):
    board = _board(tmp_path)
    stored = _worker_run(board)
    assert stored.status == SERVER_RUN
    again = board.store_server_run({**board.requests.get(1), "state": RUNNING}, _samples(), {})
    assert again.duplicate and again.run_id == stored.run_id  # a worker that died after storing: the same run
    result = board.result(stored.run_id)
    assert result["provenance"]["revision"] == "0" * 40 and result["status"] == SERVER_RUN
    assert board.requests.get(1)["state"] == FINISHED and board.requests.get(1)["run_id"] == stored.run_id
    # the same samples uploaded, even with the samples as evidence, are an upload
    upload = board.submit(_samples(), "org/model-a", "pure_qa", samples=_samples(), submitter="mallory")
    assert upload.status == EVIDENCE_CONSISTENT and upload.run_id != stored.run_id
    with pytest.raises(SubmissionError, match="kind must be one of"):
        board.submit(_samples(1.0), "org/model-a", "pure_qa", kind=SERVER_RUN)
    # server-run runs are ranked like any other: a rank interval, and the floors around them
    rows = {r["run"]: r for r in board.rows(mode="pure_qa")}
    assert rows[stored.run_id]["status"] == SERVER_RUN and rows[stored.run_id]["rank"] is not None
    assert rows[stored.run_id]["s1_skill"] == pytest.approx(rows[upload.run_id]["s1_skill"])
    # nothing parseable is refused with the failures counted
    board.request("org/model-z", ["pure_qa"])
    claimed = board.requests.claim("worker-1")
    garbage = _samples().replace(b"innovation_score", b"nonsense")
    with pytest.raises(SubmissionError, match=r"no reply of the 12 papers could be scored \(12 "):
        board.store_server_run(claimed, garbage, {})
    board.close()


def test_a_store_edited_by_hand_is_caught_on_open(tmp_path, endpoints, monkeypatch, caplog):
    board = _board(tmp_path)
    sealed = _worker_run(board).run_id
    upload = board.submit(_samples(2.0), "org/other", "pure_qa").run_id
    board.close()
    db = sqlite3.connect(tmp_path / "leaderboard.sqlite")
    db.execute("UPDATE runs SET model = 'org/better-model' WHERE id = ?", (sealed,))
    db.execute("UPDATE runs SET status = 'server-run' WHERE id = ?", (upload,))
    db.commit()
    with caplog.at_level("WARNING"):
        board = _board(tmp_path)
    assert sorted(board.unsealed) == sorted([sealed, upload]) and "seal does not hold" in caplog.text
    statuses = {r["run"]: r["status"] for r in board.rows()}
    assert statuses[sealed] == SELF_REPORTED and statuses[upload] == SELF_REPORTED
    board.close()
    db.execute("UPDATE runs SET model = 'org/model-a' WHERE id = ?", (sealed,))  # the edit undone: the seal holds
    db.commit()
    board = _board(tmp_path)
    assert {r["run"]: r["status"] for r in board.rows()}[sealed] == SERVER_RUN and board.unsealed == []
    board.close()
    # a board without the secret cannot check a seal, so it trusts none; the secret back, the status is back
    monkeypatch.delenv("SCITASTE_WORKER_SECRET")
    board = _board(tmp_path)
    assert board.unsealed == [sealed] and {r["run"]: r["status"] for r in board.rows()}[sealed] == SELF_REPORTED
    with pytest.raises(Exception, match="needs the worker's secret"):
        board.store_server_run({"id": 9, "mode": "pure_qa"}, _samples(), {})
    board.close()
    monkeypatch.setenv("SCITASTE_WORKER_SECRET", SECRET)
    board = _board(tmp_path)
    assert {r["run"]: r["status"] for r in board.rows()}[sealed] == SERVER_RUN
    board.close()
    # a replaced answers file breaks the seal too
    row = db.execute("SELECT sha256 FROM runs WHERE id = ?", (sealed,)).fetchone()
    (tmp_path / "submissions" / f"{row[0]}.jsonl").write_bytes(_samples(5.0))
    board = _board(tmp_path)
    assert board.unsealed == [sealed]
    board.close()


def test_a_store_of_the_previous_layout_gains_the_queue(tmp_path, endpoints):
    board = _board(tmp_path)
    board.submit(_samples(), "org/m", "pure_qa")
    board.close()
    db = sqlite3.connect(tmp_path / "leaderboard.sqlite")
    db.execute("DROP TABLE requests")
    db.execute("ALTER TABLE runs DROP COLUMN seal")
    db.execute("ALTER TABLE runs DROP COLUMN provenance")
    db.execute("PRAGMA user_version = 1")
    db.commit()
    board = _board(tmp_path)
    assert board.request("org/a", ["pure_qa"]).ids == (1,) and len(board.rows()) == 1
    board.close()


def test_concurrent_visitors_and_workers_keep_the_queue_intact(tmp_path, endpoints):
    from concurrent.futures import ThreadPoolExecutor

    from scitaste_hf.leaderboard.store import Store

    board = _board(tmp_path, rate_limit=(5, 3600.0))
    asks = [(f"visitor-{v}", f"org/model-{v}-{k % 4}") for v in range(5) for k in range(5)]  # the 5th a duplicate

    def ask(pair):
        try:
            return board.request(pair[1], ["pure_qa"], submitter=pair[0]).ids[0]
        except SubmissionError as exc:
            return str(exc)

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(ask, asks))
    accepted = [o for o in outcomes if isinstance(o, int)]
    assert len(accepted) == len(set(accepted)) == 20
    assert sum("already request" in o for o in outcomes if isinstance(o, str)) == 5
    # four workers, each on a connection of its own as a process has, claim every request once
    stores = [Store(tmp_path) for _ in range(4)]

    def work(k):
        queue, mine = RequestQueue(stores[k]), []
        while (request := queue.claim(f"worker-{k}")) is not None:
            mine.append(request["id"])
            assert queue.finish(request["id"], f"worker-{k}", 0)
        return mine

    with ThreadPoolExecutor(4) as pool:
        claimed = [i for mine in pool.map(work, range(4)) for i in mine]
    assert sorted(claimed) == sorted(accepted)
    assert {r["state"] for r in board.queue()} == {FINISHED}
    for store in stores:
        store.close()
    board.close()


def _copied(board):
    deadline = time.monotonic() + 30
    while board.store.copy_pending() and time.monotonic() < deadline:
        board.copy_to_hub()
        time.sleep(0.1)
    assert board.store.copy_pending() == []


def test_a_queue_on_the_hub_leases_each_request_once_and_the_space_stores_what_comes_back(tmp_path, endpoints, hub):
    from concurrent.futures import ThreadPoolExecutor

    from scitaste_hf.leaderboard.hub_queue import STATE_FILE, HubQueue
    from scitaste_hf.net.hub_copy import HubMirror

    url, token, out = hub
    board = _board(tmp_path / "space", mirror=HubMirror("org/results", token, endpoint=url))
    ids = [board.request(f"org/model-{k}", ["pure_qa"], submitter="alice").ids[0] for k in range(2)]
    _copied(board)
    workers = [HubQueue("org/results", token, tmp_path / f"cache-{k}", endpoint=url) for k in range(3)]
    # three workers at once on two requests: the Hub refuses a claim made on a head that moved, so each is taken once
    with ThreadPoolExecutor(3) as pool:
        claimed = list(pool.map(lambda k: workers[k].claim(f"w{k}", lease_s=60), range(3)))
    holder = {c["id"]: k for k, c in enumerate(claimed) if c is not None}
    assert sorted(holder) == ids and len(holder) == 2
    idle = next(k for k, c in enumerate(claimed) if c is None)
    assert workers[idle].claim(f"w{idle}") is None
    assert workers[0].collect(board) == 2
    assert [(r["state"], r["attempts"]) for r in board.queue()] == [(RUNNING, 1), (RUNNING, 1)]
    assert board.requests.claim("local-worker") is None  # a local worker does not take a request leased on the Hub
    first, second = holder[ids[0]], holder[ids[1]]
    provenance = {"request": ids[0], "backend": "hf", "revision": "0" * 40, "package_version": "0.1.0"}
    trace = b'{"bibcode": "x", "mode": "pure_qa"}\n'
    assert workers[first].deliver(claimed[first], f"w{first}", _samples(), provenance, trace, SECRET)
    assert not workers[first].renew(ids[0], f"w{first}")  # ended: the lease is gone
    # the second request's worker is lost: its lease runs out, another worker claims it as attempt 2
    assert workers[second].renew(ids[1], f"w{second}", lease_s=0)
    time.sleep(0.01)
    again = workers[idle].claim(f"w{idle}", lease_s=60)
    assert (again["id"], again["attempts"]) == (ids[1], 2)
    assert not workers[second].fail(ids[1], f"w{second}", "too late")  # the lost lease ends nothing
    # ... and hands back a result sealed with another secret: the Space refuses to store it
    assert workers[idle].deliver(again, f"w{idle}", _samples(1.0), {}, None, "not-the-board-secret")
    assert workers[idle].collect(board) == 2
    done, forged = board.requests.get(ids[0]), board.requests.get(ids[1])
    assert done["state"] == FINISHED and forged["state"] == FAILED and "seal that holds" in forged["reason"]
    result = board.result(done["run_id"])
    assert result["status"] == SERVER_RUN and result["provenance"]["revision"] == "0" * 40
    assert board.store.evidence(result["sha256"])["trace"] == trace
    upload = board.result(board.submit(_samples(), "org/model-0", "pure_qa").run_id)
    assert result["overall"]["scheme1"] == upload["overall"]["scheme1"]  # scored by the same code as an upload
    assert [r["run"] for r in board.rows()].count(done["run_id"]) == 1 and board.rows(status=SERVER_RUN)
    assert workers[0].collect(board) == 0  # collected once
    # a request cancelled in the Space while a worker runs it: the worker's next renewal finds it gone
    third = board.request("org/model-2", ["pure_qa"], submitter="bob").ids[0]
    _copied(board)
    running = workers[0].claim("w0", lease_s=60)
    assert running["id"] == third
    with pytest.raises(SubmissionError, match="no request"):
        board.cancel_request(third, "alice")  # not hers
    assert board.cancel_request(third, "bob") == f"request #{third} cancelled"
    _copied(board)
    assert not workers[0].renew(third, "w0") and workers[1].claim("w1") is None
    state = json.loads((out / "org/results" / STATE_FILE).read_text())
    assert set(state) == {str(i) for i in (*ids, third)} and "submitter" not in json.dumps(state)
    assert [state[str(i)].get("collected") for i in ids] == [True, True]  # outcomes the Space has taken
    # the operator queues the finished request again: a worker claims it afresh, as a first attempt
    board.requeue_request(ids[0])
    _copied(board)
    rerun = workers[1].claim("w1", lease_s=60)
    assert (rerun["id"], rerun["attempts"]) == (ids[0], 1) and rerun["started_at"] >= done["started_at"]
    assert workers[1].collect(board) == 1 and board.requests.get(ids[0])["state"] == RUNNING
    # a state file broken by a hand edit stops a worker with one line, not a traceback, and changes nothing
    from huggingface_hub import HfApi

    api = HfApi(endpoint=url, token=token)
    entry = {"state": RUNNING, "owner": "w9", "until": 0, "attempts": 1, "started_at": "2026-01-01T00:00:00Z"}
    for broken, reason in ((b'{"1": {"lease"', "is not valid JSON"), (b'[1, 2]', "not an object of one object"),
                           (b"\xff\xfe", "is not UTF-8"), (b'{"1": {}}', "its 'state' is missing or not str"),
                           (json.dumps({"one": entry}).encode(), "its key is not a request number"),
                           (json.dumps({"1": {**entry, "until": "soon"}}).encode(), "'until' is missing or not int"),
                           (json.dumps({"1": {**entry, "attempts": True}}).encode(), "'attempts' is missing"),
                           (json.dumps({"1": {**entry, "state": "done"}}).encode(), "its state is not one of")):
        api.upload_file(path_or_fileobj=broken, path_in_repo=STATE_FILE, repo_id="org/results", repo_type="dataset")
        with pytest.raises(ScitasteError, match=reason) as raised:
            workers[2].claim("w2")
        assert "\n" not in str(raised.value) and str(raised.value).startswith("the queue on org/results")
        assert (out / "org/results" / STATE_FILE).read_bytes() == broken
    board.close()


def test_a_worker_reads_the_queue_as_the_head_it_resolved_left_it_while_another_commits(tmp_path, endpoints, hub):
    # a claim lands between a worker's reading the head and its downloading the state: it must still read that
    # head's state (the Hub serves a commit's files), or its lease decisions rest on a state of no commit
    from huggingface_hub import hf_hub_download

    from scitaste_hf.leaderboard.hub_queue import STATE_FILE, HubQueue
    from scitaste_hf.net.hub_copy import HubMirror

    url, token, _ = hub
    board = _board(tmp_path / "space", mirror=HubMirror("org/results", token, endpoint=url))
    ids = [board.request(f"org/model-{k}", ["pure_qa"], submitter="alice").ids[0] for k in range(2)]
    _copied(board)
    first, other = (HubQueue("org/results", token, tmp_path / f"cache-{k}", endpoint=url) for k in range(2))
    assert other.claim("w1", lease_s=60)["id"] == ids[0]
    head, _, state = first.read()
    assert list(state) == [str(ids[0])]
    assert other.claim("w1", lease_s=60)["id"] == ids[1]  # the head moves on
    old = hf_hub_download("org/results", STATE_FILE, repo_type="dataset", revision=head, token=token,
                          cache_dir=tmp_path / "cache-x", endpoint=url)
    assert list(json.loads(Path(old).read_text())) == [str(ids[0])]
    # huggingface_hub files a download under the commit the Hub names: a worker whose cache holds that old download
    # must still read the head's state (a fake that named the head for the old revision let two workers claim one)
    for reader in (first, HubQueue("org/results", token, tmp_path / "cache-x", endpoint=url)):
        now, _, state = reader.read()
        assert now != head and sorted(state) == sorted(str(i) for i in ids)
    board.close()
