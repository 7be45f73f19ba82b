"""A board's details datasets on the Hub (scitaste_hf.leaderboard.details.DetailsQueue, issue 29 item 3), against the
Hub stand-in (tests/fixtures/fake_hub.py, a real process): a submission is answered before its details are published;
the Hub failing leaves the run stored and its details pending, shown on the run, then published on the retry; the
dataset loads with load_dataset, one row a paper, private as the submitter chose."""

import json
import threading
import time
from importlib import resources

import httpx
import pytest
from inspect_log import inspect_log  # tests/fixtures: a synthetic Inspect log

from scitaste_hf.leaderboard import Leaderboard
from scitaste_hf.leaderboard.details import NUMBERS, DetailsQueue, details_repo
from scitaste_hf.leaderboard.store import DETAILS_PENDING
from scitaste_hf.records import load_records
from scitaste_hf.schema import Answer

EXAMPLES = resources.files("scitaste_hf").joinpath("data/examples")


def _until(check, what: str, limit: float = 60.0):
    deadline = time.monotonic() + limit
    while not (value := check()):
        assert time.monotonic() < deadline, f"{what} after {limit:.0f} s"
        time.sleep(0.1)
    return value


def _published(store, run: int) -> str:
    """The repo a run's details were published to, "" while they are pending."""
    state = store.run(run)["details"]
    return "" if state == DETAILS_PENDING else state


def test_a_failed_publication_stays_pending_on_the_run_and_is_published_on_the_retry(hub, tmp_path):
    import datasets

    from scitaste_hf.net.hub_copy import HubMirror

    endpoint, token, out = hub
    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
    predictions = EXAMPLES.joinpath("predictions.jsonl").read_bytes()
    httpx.post(f"{endpoint}/_fault", json={"mode": "error"}, timeout=10)
    publisher = HubMirror("org/results", token, endpoint=endpoint, retry_after=(0.3, 0.6))
    board = Leaderboard(tmp_path / "data", gold, rate_limit=None, background_upgrade=False, details=publisher)
    try:
        run = board.submit(predictions, "example", "pure_qa", private=True).run_id
        # the Hub answers every request 500: the run is stored, its details pending, and the run says so
        _until(lambda: httpx.get(f"{endpoint}/_fault", timeout=10).json()["held"] > 0, "no publication was tried")
        assert board.store.run(run)["details"] == DETAILS_PENDING
        assert board.result(run)["details dataset"].startswith("pending (private): not on the Hub yet")
        assert [r["run"] for r in board.rows()] == [run]
        httpx.post(f"{endpoint}/_fault", json={"mode": "ok"}, timeout=10)
        repo = details_repo("org/results", run, board.store.run(run)["sha256"])
        _until(lambda: board.store.run(run)["details"] == repo, "the retry did not publish the details")
        assert board.result(run)["details dataset"] == (f'{repo} (private): datasets.load_dataset("{repo}", '
                                                        'split="train")')
    finally:
        publisher.close()
        board.close()
    created = [json.loads(line) for line in (out / "created.jsonl").read_text().splitlines()]
    assert {c.get("visibility") for c in created if f"{c['organization']}/{c['name']}" == repo} == {"private"}
    rows = datasets.load_dataset(str(out / repo), split="train")
    answers = board.parse(predictions)
    assert rows["bibcode"] == [r["bibcode"] for r in gold] and set(rows["run"]) == {run}
    by_id = {r["bibcode"]: r for r in gold}
    for row in rows:
        answer = answers[row["bibcode"]]
        if not isinstance(answer, Answer):
            assert not row["parsed"] and row["failure"] == answer.reason and row["predicted_innovation_score"] is None
            continue
        assert row["parsed"] and row["reasoning"] == answer.reasoning
        assert [row[f"predicted_{n}"] for n in NUMBERS] == list(answer.vector())
        gold_numbers = [by_id[row["bibcode"]]["innovation_score"],
                        *(by_id[row["bibcode"]]["dimension_scores"][k] for k in NUMBERS[1:])]
        assert [row[f"error_{n}"] for n in NUMBERS] == pytest.approx(
            [p - g for p, g in zip(answer.vector(), gold_numbers)])


def test_a_details_repo_name_fits_the_hub():
    assert details_repo("org/results", 7, "0123456789abcdef") == "org/results-details-7-01234567"
    long = details_repo("org/" + "r" * 96, 123456, "f" * 64)
    assert long.startswith("org/rrr") and long.endswith("-details-123456-ffffffff") and len(long.split("/")[1]) == 96


def test_publish_details_never_writes_a_private_run_into_an_existing_public_repo(hub, fake_hub, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from huggingface_hub import HfApi

    endpoint, token, out = hub
    gold_file = str(EXAMPLES.joinpath("gold.jsonl"))
    board = Leaderboard(tmp_path / "data", load_records(gold_file), rate_limit=None, background_upgrade=False)
    run = board.submit(EXAMPLES.joinpath("predictions.jsonl").read_bytes(), "example", "pure_qa", private=True).run_id
    board.close()
    HfApi(endpoint=endpoint, token=token).create_repo("org/taken", repo_type="dataset", private=False)

    def publish(repo: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(Path(sys.executable).with_name("scitaste")), "publish", "details", str(run),
                               "--data", str(tmp_path / "data"), "--gold", gold_file, "--repo-id", repo],
                              env=fake_hub[0], capture_output=True, text=True, timeout=120)

    refused = publish("org/taken")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert "org/taken exists and is public" in refused.stderr and not (out / "org" / "taken").exists()
    # a repo of its own is created private, as the run's submitter chose (no --private given)
    published = publish("org/fresh")
    assert published.returncode == 0, published.stderr
    created = [json.loads(line) for line in (out / "created.jsonl").read_text().splitlines()]
    assert [c.get("visibility") for c in created if c["name"] == "fresh"] == ["private"]
    assert (out / "org" / "fresh" / "data").is_dir()


def test_a_run_refused_for_good_does_not_hold_up_the_runs_after_it(hub, tmp_path):
    from huggingface_hub import HfApi

    from scitaste_hf.net.hub_copy import HubMirror

    endpoint, token, out = hub
    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
    predictions = EXAMPLES.joinpath("predictions.jsonl").read_bytes()
    # run #1's repo exists already as public: its private details are refused on every try
    from scitaste_hf.leaderboard.service import run_key

    publisher = HubMirror("org/results", token, endpoint=endpoint, retry_after=(0.3, 0.6))
    board = Leaderboard(tmp_path / "data", gold, rate_limit=None, background_upgrade=False, details=publisher)
    taken = details_repo("org/results", 1, run_key(board.parse(predictions), "pure_qa"))
    HfApi(endpoint=endpoint, token=token).create_repo(taken, repo_type="dataset", private=False)
    try:
        first = board.submit(predictions, "example", "pure_qa", private=True).run_id
        second = board.submit(predictions, "example", "native_search").run_id
        assert details_repo("org/results", first, board.store.run(first)["sha256"]) == taken
        repo = details_repo("org/results", second, board.store.run(second)["sha256"])
        _until(lambda: board.store.run(second)["details"] == repo, "run #2 waited behind run #1", limit=20)
        assert board.store.run(first)["details"] == DETAILS_PENDING
    finally:
        publisher.close()
        board.close()
    assert (out / repo / "README.md").is_file() and not (out / taken / "data").exists()


def test_a_private_runs_files_stay_out_of_a_public_results_repo(hub, tmp_path):
    from huggingface_hub import HfApi

    from scitaste_hf.net.hub_copy import HubMirror

    endpoint, token, out = hub
    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
    predictions = EXAMPLES.joinpath("predictions.jsonl").read_bytes()
    HfApi(endpoint=endpoint, token=token).create_repo("org/open-results", repo_type="dataset", private=False)
    mirror = HubMirror("org/open-results", token, endpoint=endpoint, retry_after=(0.3, 0.6))
    board = Leaderboard(tmp_path / "data", gold, rate_limit=None, background_upgrade=False, mirror=mirror)
    try:
        hidden = board.submit(predictions, "example", "pure_qa", private=True).run_id
        shown = board.submit(predictions, "example", "native_search").run_id
        _until(lambda: not board.store.copy_pending(), "the runs were not copied")
        keys = {run: board.store.run(run)["sha256"] for run in (hidden, shown)}
    finally:
        mirror.close()
        board.close()
    copied = {p.name for p in (out / "org" / "open-results" / "submissions").iterdir()}
    assert any(name.startswith(keys[shown]) for name in copied)
    assert not any(name.startswith(keys[hidden]) for name in copied)
    assert (out / "org" / "open-results" / "leaderboard.sqlite").is_file()


def test_an_inspect_logs_details_dataset_reads_the_log_once_with_every_papers_conversation(tmp_path, monkeypatch):
    pytest.importorskip("inspect_ai", reason="needs inspect-ai: pip install '.[inspect]'")
    import scitaste_hf.adapters.inspect.logs as logs
    from scitaste_hf.leaderboard.details import Details, dataset_rows

    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))[:12]
    log = inspect_log(gold, "pure_qa")
    board = Leaderboard(tmp_path / "data", gold, rate_limit=None, background_upgrade=False)
    try:
        run = board.submit(log, "inspect model", "pure_qa", samples=log).run_id
        details = Details(board)
        details.sync()
        reads = []
        written = logs._on_disk
        monkeypatch.setattr(logs, "_on_disk", lambda data: reads.append(len(data)) or written(data))
        rows = dataset_rows(details, run)
        assert len(reads) == 1  # one read of the log for the run, not one a paper
        monkeypatch.setattr(logs, "_on_disk", written)
        for row, r in zip(rows, gold):
            trace = json.loads(row["trace"])
            assert trace == details.conversation(run, r["bibcode"]) and row["trace_source"] == "inspect"
            assert [c["name"] for c in trace[0]["tool_calls"]] == ["references"]
            assert trace[0]["tool_calls"][0]["result"] == f"refs of {r['bibcode']}"
            assert row["reasoning"] == f"why {r['bibcode']} é" and row["gold_innovation_score"] == r["innovation_score"]
    finally:
        board.close()


def test_two_boards_on_one_results_repo_never_publish_into_each_others_details(hub, tmp_path):
    import datasets

    from scitaste_hf.net.hub_copy import HubMirror

    endpoint, token, out = hub
    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
    predictions = EXAMPLES.joinpath("predictions.jsonl").read_bytes()
    published = {}
    # a staging and a production Space (or a store started afresh) on one results repo: each numbers its runs from 1
    for name, mode in (("staging", "pure_qa"), ("production", "native_search")):
        publisher = HubMirror("org/results", token, endpoint=endpoint, retry_after=(0.3, 0.6))
        board = Leaderboard(tmp_path / name, gold, rate_limit=None, background_upgrade=False, details=publisher)
        try:
            run = board.submit(predictions, f"model of {name}", mode).run_id
            published[name] = _until(lambda store=board.store, run=run: _published(store, run), "no publication")
        finally:
            publisher.close()
            board.close()
    assert published["staging"] != published["production"]
    for name, repo in published.items():
        # a cache of this run's own: another test's dataset of the same name and size would be read back from it
        rows = datasets.load_dataset(str(out / repo), split="train", cache_dir=str(tmp_path / "cache"))
        assert set(rows["model"]) == {f"model of {name}"}


def test_a_details_table_that_cannot_be_opened_fails_the_attempt_in_one_line_and_is_retried(tmp_path, caplog):
    from scitaste_hf.leaderboard.details import DETAILS_FILE
    from scitaste_hf.net.hub_copy import HubMirror

    endpoint, token = "http://127.0.0.1:9", "hf_unused"  # the attempt fails before any Hub call
    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
    board = Leaderboard(tmp_path / "data", gold, rate_limit=None, background_upgrade=False)
    (tmp_path / "data" / DETAILS_FILE).write_bytes(b"not a database, a file a crash or a hand left here")
    publisher = HubMirror("org/results", token, endpoint=endpoint, retry_after=(30.0, 60.0))
    try:
        run = board.submit(EXAMPLES.joinpath("predictions.jsonl").read_bytes(), "example", "pure_qa").run_id
        board.store.set_details(run, DETAILS_PENDING)
        queue = DetailsQueue(board, "org/results")
        assert publisher(queue) is False  # before: the table's error escaped the copy (a thread's traceback)
        warned = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
        assert warned and "\n" not in warned[-1] and board.store.run(run)["details"] == DETAILS_PENDING
    finally:
        publisher.close()
        board.close()


def test_the_papers_tab_and_the_publication_read_each_run_once(tmp_path, monkeypatch):
    import runpy

    from scitaste_hf.resources import bundled_dir

    app = runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="test")
    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
    board = Leaderboard(tmp_path / "data", gold, rate_limit=None, background_upgrade=False)
    try:
        run = board.submit(EXAMPLES.joinpath("predictions.jsonl").read_bytes(), "example", "pure_qa").run_id
        board.store.set_details(run, DETAILS_PENDING)
        read, reading = [], threading.Event()
        parse = board.parse

        def slow_parse(data):  # a first start's read of every stored run, which takes minutes at 10,000 runs
            read.append(len(data))
            reading.set()
            time.sleep(0.5)
            return parse(data)

        monkeypatch.setattr(board, "parse", slow_parse)
        papers = app["Papers"](board)
        listed = []
        publication = threading.Thread(target=lambda: listed.extend(DetailsQueue(board, "org/results").copy_pending()))
        publication.start()
        assert reading.wait(30)
        papers.refresh()  # a page visit while the publication reads the store
        publication.join()
        # one details table: the run's file is read into it once, not by the tab again while the publication reads it
        assert listed == [str(run)] and len(read) == 1 and len(papers.details.of_run(run)) == len(gold)
    finally:
        board.close()


#: Threads reading a store's connection (as the details' publication does) while the store is closed, 200 times.
_CLOSE_UNDER_READS = """
import sys, threading, time
from scitaste_hf.leaderboard.store import Store
for _ in range(200):
    store, stop = Store(sys.argv[1]), threading.Event()
    def read():
        while not stop.is_set():
            try:
                store.change_marker()
            except Exception:  # closed: the reader's own error, a Python exception
                return
    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    time.sleep(0.002)
    store.close()
    stop.set()
    for reader in readers:
        reader.join()
"""


def test_a_store_closed_under_its_readers_does_not_crash_the_process(tmp_path):
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", _CLOSE_UNDER_READS, str(tmp_path)], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]  # before: a segmentation fault (-11)
