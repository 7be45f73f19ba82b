"""The Hub copies of the runs and of the ratings against a Hub that hangs and then recovers (the fake Hub of
tests/fixtures/fake_hub.py, a real server on 127.0.0.1): every Hub request has a timeout, a copy stuck past its
deadline is abandoned and started afresh, and what was pending goes up after the recovery with no later run or
rating to carry it; and the runs' copy carries no submitter's network address."""

import json
import logging
import re
import sqlite3
import time

import httpx
import numpy as np
import pyarrow.parquet as pq
import pytest

from scitaste_hf.leaderboard import Leaderboard
from scitaste_hf.net.hub_copy import HubMirror
from scitaste_hf.ratings import NUMBERS, Ratings
from scitaste_hf.ratings.export import FILE
from scitaste_hf.schema import DIMENSIONS, DISCIPLINES

pytestmark = pytest.mark.slow

GOLD = [{"bibcode": f"P{i:03d}", "discipline": DISCIPLINES[i % 2], "title": f"Paper {i}", "abstract": "Text.",
         "year": 2000 + i, "journal_name": "Journal", "journal_tier": "Q1", "doi": None,
         "innovation_score": float(10 + 3 * i), "dimension_scores": dict.fromkeys(DIMENSIONS, float(20 + 2 * i))}
        for i in range(24)]
#: Short enough for a test: one network operation may take 1 s; retries after 0.5 s, at most 2 s.
FAST = {"timeout": 1.0, "retry_after": (0.5, 2.0)}


def _fault(url, mode):
    return httpx.post(f"{url}/_fault", json={"mode": mode}, timeout=5).json()


def _until(condition, bound=90.0):
    """Wait for ``condition`` to hold; False if it still does not after ``bound`` seconds (a failure, not a speed
    check: the copies retry within seconds here)."""
    end = time.monotonic() + bound
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.1)
    return condition()


def _answers(seed):
    rng = np.random.default_rng(seed)
    return "".join(json.dumps({"bibcode": r["bibcode"], "innovation_score": float(rng.uniform(0, 100)),
                               "dimension_scores": {k: float(rng.uniform(0, 100)) for k in DIMENSIONS}}) + "\n"
                   for r in GOLD).encode()


def test_ratings_pending_while_the_hub_hangs_go_up_after_it_recovers(hub, caplog):
    url, token, out = hub
    # a deadline no attempt reaches here (the first export imports datasets): the timeouts alone end each attempt
    mirror = HubMirror("org/ratings", token, private_only=True, endpoint=url, deadline=60.0, **FAST)
    service = Ratings(out.parent / "data", GOLD, mirror=mirror, rate_limit=(1000, 3600))
    try:
        _fault(url, "hang")
        with caplog.at_level(logging.WARNING, "scitaste_hf.net.hub_copy"):
            messages = []
            for rater in ("local:ann", "local:bob", "local:cy"):
                paper = service.next_paper(rater, DISCIPLINES[0])
                messages.append(service.rate(rater, paper["bibcode"], [40.0] * len(NUMBERS)).message)
            assert all(m.endswith("its copy to the Hub dataset repo is pending and will be retried") for m in messages)
            assert len(service.store.copy_pending()) == 3 and not (out / "org" / "ratings" / FILE).exists()
            assert _fault(url, "ok")["held"] >= 1  # the copies reached the Hub and got no answer
            # no rating after the recovery: the scheduled retry copies all three
            assert _until(lambda: service.store.copy_pending() == []), service.store.copy_pending()
        logged = [r.getMessage() for r in caplog.records]
        assert logged and all("org/ratings failed, will retry in" in m and m.endswith("ReadTimeout: timed out")
                              for m in logged), logged
        copied = pq.read_table(out / "org" / "ratings" / FILE).to_pylist()
        assert len(copied) == 3 and {r["bibcode"] for r in copied} == {r["bibcode"] for r in service.store.ratings()}
    finally:
        mirror.close()
        service.close()


def test_a_runs_copy_stuck_in_a_trickling_hub_is_abandoned_and_the_runs_go_up_after_it_recovers(hub, caplog):
    """A Hub that trickles one header byte every 0.2 s defeats every per-read timeout: the copy's deadline
    abandons it (one warning each time) and starts a fresh one, and once the Hub answers again the run is copied."""
    url, token, out = hub
    mirror = HubMirror("org/results", token, endpoint=url, deadline=3.0, **FAST)
    board = Leaderboard(out.parent / "lb", GOLD, mirror=mirror, rate_limit=(1000, 3600))
    try:
        _fault(url, "trickle")
        with caplog.at_level(logging.WARNING, "scitaste_hf.net.hub_copy"):
            result = board.submit(_answers(1), "Model-T", "pure_qa", submitter="198.51.100.23")
            assert result.message.endswith("its copy to the Hub dataset repo is pending and will be retried")
            key = board.store.copy_pending()
            assert len(key) == 1 and not (out / "org" / "results" / "leaderboard.sqlite").exists()
            abandoned = [r.getMessage() for r in caplog.records if "abandoned" in r.getMessage()]
            assert abandoned and all(m == "copy to org/results abandoned: still under way after 3 s; starting a "
                                          "fresh one" for m in abandoned)
            _fault(url, "ok")
            assert _until(lambda: board.store.copy_pending() == []), board.store.copy_pending()
        submissions = out / "org" / "results" / "submissions"
        assert sorted(p.name for p in submissions.iterdir()) == sorted(p.name for p in board.store.files.iterdir())
        with sqlite3.connect(out / "org" / "results" / "leaderboard.sqlite") as copied:
            assert copied.execute("SELECT sha256, model FROM runs").fetchall() == [(key[0], "Model-T")]
    finally:
        mirror.close()
        board.close()


def test_the_runs_copy_carries_no_submitters_address(hub):
    """Runs from an IPv4 and an IPv6 address and a signed-in user: no byte of what the Hub received holds any of
    them, and the local store still knows each run's submitter."""
    url, token, out = hub
    mirror = HubMirror("org/results", token, endpoint=url, **FAST)
    board = Leaderboard(out.parent / "lb", GOLD, mirror=mirror, rate_limit=(1000, 3600))
    submitters = ["203.0.113.7", "2001:db8::42", "hf-user-ann"]
    try:
        for seed, submitter in enumerate(submitters):
            result = board.submit(_answers(seed), f"Model-{seed}", "pure_qa", submitter=submitter)
            assert not result.message.endswith("will be retried"), result.message
        local = {sha: who for sha, who in board.store.query("SELECT sha256, submitter FROM runs")}
    finally:
        mirror.close()
        board.close()
    assert sorted(local.values()) == sorted(submitters)
    received = [p for p in (out / "org" / "results").rglob("*") if p.is_file()]
    assert len(received) == 1 + 2 * len(submitters)  # the database, each run's predictions and metadata
    for path in received:
        data = path.read_bytes()
        assert not any(s.encode() in data for s in submitters), path
    for sha in local:
        meta = json.loads((out / "org" / "results" / "submissions" / f"{sha}.meta.json").read_text())
        assert "submitter" not in meta and meta["mode"] == "pure_qa"
    with sqlite3.connect(out / "org" / "results" / "leaderboard.sqlite") as copied:
        assert dict(copied.execute("SELECT sha256, submitter FROM runs").fetchall()) == dict.fromkeys(local, "")


def test_a_commit_the_hub_carries_out_late_never_replaces_a_newer_one(hub):
    """The Hub holds the first commit past its client's timeout and carries it out only after two later commits
    landed: it is refused (it was made on an older head), so the copied database keeps both runs."""
    url, token, out = hub
    mirror = HubMirror("org/results", token, endpoint=url, deadline=60.0, **FAST)
    board = Leaderboard(out.parent / "lb", GOLD, mirror=mirror, rate_limit=(1000, 3600))
    try:
        httpx.post(f"{url}/_fault", json={"mode": "hold", "match": "/commit/"}, timeout=5)
        board.submit(_answers(1), "Model-A", "pure_qa")  # held, timed out, then sent again by the retry
        assert _until(lambda: board.store.copy_pending() == []), board.store.copy_pending()
        board.submit(_answers(2), "Model-B", "pure_qa")
        assert board.store.copy_pending() == []
        assert _fault(url, "ok")["held"] == 1
        assert _until(lambda: httpx.get(f"{url}/_fault", timeout=5).json()["late"] == 1)
    finally:
        mirror.close()
        board.close()
    with sqlite3.connect(out / "org" / "results" / "leaderboard.sqlite") as copied:
        assert sorted(m for (m,) in copied.execute("SELECT model FROM runs")) == ["Model-A", "Model-B"]


@pytest.mark.parametrize(("size", "length"), [(8 * 2**20, False), (2**30, True)])
def test_a_hub_that_answers_a_huge_body_leaves_the_run_pending_and_it_goes_up_later(hub, caplog, size, length):
    """A Hub whose every answer is a body of megabytes (gigabytes: 4.4 GB of memory for a 3 GiB body before the
    bound) ends each call at the bound, the run stays pending and goes up once the Hub answers again; nothing
    of it arrives in between. 8 MiB with no Content-Length: read up to the bound; 1 GiB: refused on its
    Content-Length."""
    from scitaste_hf.net.hub import bound_hub_calls

    url, token, out = hub
    mirror = HubMirror("org/results", token, endpoint=url, **FAST)
    bound_hub_calls(FAST["timeout"], max_answer=2**20)
    board = Leaderboard(out.parent / "lb", GOLD, mirror=mirror, rate_limit=(1000, 3600))
    try:
        httpx.post(f"{url}/_fault", json={"mode": "huge", "size": size, "length": length}, timeout=5)
        with caplog.at_level(logging.WARNING, "scitaste_hf.net.hub_copy"):
            result = board.submit(_answers(1), "Model-H", "pure_qa")
            assert result.message.endswith("its copy to the Hub dataset repo is pending and will be retried")
        assert len(board.store.copy_pending()) == 1 and not (out / "org" / "results").exists()
        logged = [r.getMessage() for r in caplog.records]
        detail = (rf"has {size:,} bytes, more than the 1,048,576 read" if length
                  else r"is larger than the 1,048,576 bytes read")
        assert logged and all(re.search(r"org/results failed, will retry in .*: ReadError: the Hub's answer to POST "
                                        rf"/api/repos/create {detail}$", m) for m in logged), logged
        _fault(url, "ok")
        assert _until(lambda: board.store.copy_pending() == []), board.store.copy_pending()
    finally:
        mirror.close()
        board.close()
    with sqlite3.connect(out / "org" / "results" / "leaderboard.sqlite") as copied:
        assert [m for (m,) in copied.execute("SELECT model FROM runs")] == ["Model-H"]


@pytest.mark.parametrize("mode", ["error", "close"])
def test_a_hub_that_fails_every_request_loses_nothing(hub, mode):
    """A Hub that answers 500 to everything, or closes every connection: each attempt fails, the retries keep the
    runs pending (a process restarted meanwhile finds them still pending), and they go up after the recovery."""
    url, token, out = hub
    mirror = HubMirror("org/results", token, endpoint=url, **FAST)
    board = Leaderboard(out.parent / "lb", GOLD, mirror=mirror, rate_limit=(1000, 3600))
    try:
        _fault(url, mode)
        for seed in range(2):
            board.submit(_answers(seed), f"Model-{seed}", "pure_qa")
        assert _until(lambda: _fault_state(url)["held"] >= 4)  # retried on its timer, still failing
        assert len(board.store.copy_pending()) == 2
    finally:
        mirror.close()
        board.close()
    mirror = HubMirror("org/results", token, endpoint=url, **FAST)  # a fresh process's copy, after the recovery
    _fault(url, "ok")
    board = Leaderboard(out.parent / "lb", GOLD, mirror=mirror, rate_limit=(1000, 3600))
    try:
        assert _until(lambda: board.store.copy_pending() == []), board.store.copy_pending()
    finally:
        mirror.close()
        board.close()
    with sqlite3.connect(out / "org" / "results" / "leaderboard.sqlite") as copied:
        assert sorted(m for (m,) in copied.execute("SELECT model FROM runs")) == ["Model-0", "Model-1"]


def _fault_state(url):
    return httpx.get(f"{url}/_fault", timeout=5).json()
