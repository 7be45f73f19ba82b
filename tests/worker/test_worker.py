"""`scitaste worker` as an operator runs it, real processes on 127.0.0.1: a request for a scripted OpenAI-compatible
endpoint (one of the operator's) goes pending -> running -> finished and its runs are `server-run` with the scores
`scitaste eval` gives for that endpoint; a worker killed with `kill -9` at 10%, 50% and 90% of a request is resumed
by the next without a paper it had answered asked again, and the request ends with the same scores; an endpoint
that hangs is cut at its time limit, and one that answers 500 for ever and a Hub model that is not there end
`failed` in one line, and the queue goes on. Ten papers with frozen evidence, two modes."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from extras import needs

pytestmark = [pytest.mark.slow, needs("lm_eval", "lmeval")]


SCITASTE = str(Path(sys.executable).with_name("scitaste"))
SECRET = "operator-worker-secret"
KEY = "sk-operator-key-0123456789"
N = 10
MODES = ["pure_qa", "dimagent_v3"]
TASKS = {"pure_qa": "scitaste_pure_qa", "dimagent_v3": "scitaste_dimagent"}


def _write_dataset(folder, n):
    """``n`` example papers (selected) and five more (backup), with the stand-in's frozen evidence; (the dataset
    folder, the selected records)."""
    from stock_samples import Evidence

    from scitaste_hf.agent.evidence import EVIDENCE_DIR, freeze
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import record_features
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    gold = load_records(str(Path(__file__).resolve().parents[2] / "scitaste_hf" / "data" / "examples" / "gold.jsonl"))
    rows = [{**dict.fromkeys(record_features()), **r} for r in gold[:n + 5]]
    data = write_dataset(folder / "ds", {"selected": rows[:n], "backup": rows[n:]}, DEFAULT_WEIGHTS, synthetic=True)
    freeze(Evidence(), [r["bibcode"] for r in rows[:n]], data / EVIDENCE_DIR, source="a test stand-in", workers=1)
    return data, rows[:n]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """:data:`N` example papers with the stand-in's frozen evidence (:func:`_write_dataset`)."""
    return _write_dataset(tmp_path_factory.mktemp("worker-dataset"), N)


def _endpoints(folder, urls, model_args=None):
    path = folder / "endpoints.json"
    path.write_text(json.dumps({name: {"base_url": f"{url}/v1", "model": "scripted",
                                       "model_args": (model_args or {}).get(name, "")} for name, url in urls.items()}))
    return path


def _env(endpoints, **extra):
    return {**os.environ, "SCITASTE_WORKER_SECRET": SECRET, "SCITASTE_ENDPOINTS": str(endpoints),
            "OPENAI_API_KEY": KEY, "SCITASTE_SUBMIT_LIMIT": "off", **extra}


def _board(data_dir, gold, endpoints, monkeypatch):
    from scitaste_hf.leaderboard.setup import open_leaderboard

    for key, value in _env(endpoints).items():
        if key.startswith(("SCITASTE_", "OPENAI_")):
            monkeypatch.setenv(key, value)
    return open_leaderboard(data_dir, str(gold))[0]


def _worker(data_dir, gold, *extra):
    return [SCITASTE, "worker", "--data", str(data_dir), "--gold", str(gold), "--poll", "0.2", *extra]


def _asked(log):
    """(paper, whether the request carried the tools' evidence) of each request the scripted server received."""
    found = []
    for line in log.read_text().splitlines():
        messages = json.loads(line)["messages"]
        text = "\n".join(m.get("content") or "" for m in messages)
        found.append((text.split("Identifier: ", 1)[1].split("\n", 1)[0], any(m["role"] == "tool" for m in messages)))
    return found


def _state(board, request_id):
    return board.requests.get(request_id)["state"]


@pytest.fixture(scope="module")
def eval_reference(dataset, servers, scripted_chat, tmp_path_factory):
    """`scitaste eval`'s figures per task for the scripted endpoint over the ten papers (lm-eval's results), run
    once for the module: what every server run of the same endpoint must score."""
    from stock_samples import rules

    ds, records = dataset
    folder = tmp_path_factory.mktemp("eval-reference")
    proc, url, _ = scripted_chat({"rules": rules(records), "default": "no"}, folder)
    try:
        run = subprocess.run([SCITASTE, "eval", "--model", "scitaste-agent", "--model_args",
                              f"base_url={url}/v1,model=scripted,data_dir={ds}", "--tasks", ",".join(TASKS.values()),
                              "--metadata", json.dumps({"data_dir": str(ds)}), "--output_path", str(folder / "out")],
                             cwd=folder, capture_output=True, text=True, timeout=400,
                             env={**os.environ, "OPENAI_API_KEY": KEY})
    finally:
        servers[1](proc)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(next((folder / "out").rglob("results_*.json")).read_text())["results"]


# The kill lands once the killed run has answered this share of the request's papers; at one half the request's
# second mode runs too (the others ask for one mode: each mode is a worker's lm-eval run of its own, 10-15 s).
@pytest.mark.parametrize("share", [0.1, 0.5, 0.9])
def test_a_request_becomes_server_run_with_eval_scores_and_survives_kill_9(share, dataset, eval_reference, servers,
                                                                            scripted_chat, tmp_path, monkeypatch):
    from stock_samples import rules

    from scitaste_hf.leaderboard.store import SERVER_RUN

    ds, records = dataset
    modes = MODES if share == 0.5 else MODES[:1]
    proc, url, log = scripted_chat({"rules": rules(records), "default": "no", "latency": 0.4}, tmp_path)
    endpoints = _endpoints(tmp_path, {"scripted-endpoint": url})
    data_dir = tmp_path / "board"
    board = _board(data_dir, ds, endpoints, monkeypatch)
    try:
        ids = board.request("scripted-endpoint", modes, submitter="alice").ids
        assert [_state(board, i) for i in ids] == ["pending"] * len(modes)
        seen = {ids[0]: ["pending"]}
        first = subprocess.Popen(_worker(data_dir, ds, "--once", "--lease", "3"), env=_env(endpoints),
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        trace = data_dir / "worker" / f"request-{ids[0]}" / "out" / "scitaste-traces.jsonl"
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and first.poll() is None:
            if _state(board, ids[0]) == "running" and seen[ids[0]][-1] != "running":
                seen[ids[0]].append("running")
            if trace.exists() and len(trace.read_text().splitlines()) >= max(1, round(share * N)):
                break
            time.sleep(0.05)
        assert first.poll() is None, first.stderr.read()[-3000:]
        first.send_signal(signal.SIGKILL)  # the worker alone: its lm-eval child dies with it
        first.wait()
        first.stderr.close()
        time.sleep(1)
        asked_before = _asked(log)
        time.sleep(1)
        assert _asked(log) == asked_before  # nothing is left running
        # what the killed run had answered (each stored in lm-eval's cache before its trace line is written)
        answered = {(json.loads(line)["bibcode"], False) for line in trace.read_text().splitlines()}
        assert _state(board, ids[0]) == "running"  # under a lease that is expiring
        time.sleep(2)
        second = subprocess.run(_worker(data_dir, ds, "--once", "--lease", "3"), env=_env(endpoints),
                                capture_output=True, text=True, timeout=400)
        assert second.returncode == 0, second.stderr[-3000:]
        seen[ids[0]].append(_state(board, ids[0]))
        assert seen[ids[0]] == ["pending", "running", "finished"], second.stderr[-2000:]
        asked = _asked(log)
        assert len(set(asked)) == N * len(modes)
        # no paper answered before the kill is asked again; only one in flight at the kill (asked, never answered)
        again = {p for p in asked if asked.count(p) > 1}
        assert all(asked.count(p) == 2 for p in again) and again <= set(asked_before) - answered, (again, answered)
        assert len(answered) >= max(1, round(share * N)) and all(asked.count(p) == 1 for p in answered)
        rows = {i: board.requests.get(i) for i in ids}
        assert rows[ids[0]]["attempts"] == 2 and all(rows[i]["attempts"] == 1 for i in ids[1:])
        results = {mode: board.result(rows[i]["run_id"]) for i, mode in zip(ids, modes)}
    finally:
        servers[1](proc)
        board.close()
    for mode, result in results.items():
        assert result["status"] == SERVER_RUN and result["mode"] == mode and result["model"] == "scripted-endpoint"
        overall, figures = result["overall"], eval_reference[TASKS[mode]]
        assert overall["scheme1"]["scheme1"] == pytest.approx(figures["scheme1,none"], abs=1e-9)
        assert overall["scheme2"]["score"] == pytest.approx(figures["scheme2,none"], abs=1e-9)
        assert overall["scheme2"]["wape"] == pytest.approx(figures["wape,none"], abs=1e-9)
        provenance = result["provenance"]
        assert provenance["backend"] == "scitaste-agent" and provenance["endpoint"] == "scripted-endpoint"
        assert provenance["task"] == TASKS[mode] and provenance["package_version"] and provenance["wall_s"] > 0
        assert provenance["tokens"]["completion_tokens"] > 0
    for path in data_dir.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path  # the operator's key is in no stored file


def test_workers_elsewhere_share_the_hub_queue_and_the_space_stores_their_run(dataset, eval_reference, hub, servers,
                                                                              scripted_chat, tmp_path, monkeypatch):
    from stock_samples import rules

    from scitaste_hf.leaderboard import Leaderboard
    from scitaste_hf.leaderboard.hub_queue import HubQueue
    from scitaste_hf.leaderboard.setup import backup_split
    from scitaste_hf.leaderboard.store import SERVER_RUN
    from scitaste_hf.net.hub_copy import HubMirror
    from scitaste_hf.records import load_records

    hub_url, token, _ = hub
    ds, records = dataset
    proc, url, log = scripted_chat({"rules": rules(records), "default": "no"}, tmp_path)
    endpoints = _endpoints(tmp_path, {"scripted-endpoint": url})
    for key, value in _env(endpoints).items():
        if key.startswith(("SCITASTE_", "OPENAI_")):
            monkeypatch.setenv(key, value)
    board = Leaderboard(tmp_path / "space", load_records(str(ds), "selected"), backup=backup_split(str(ds)),
                        mirror=HubMirror("org/results", token, endpoint=hub_url), background_upgrade=False)
    env = _env(endpoints, HF_ENDPOINT=hub_url, HF_TOKEN=token, HF_HUB_OFFLINE="0", HF_HUB_DISABLE_XET="1")
    try:
        request_id = board.request("scripted-endpoint", ["pure_qa"], submitter="alice").ids[0]
        assert board.store.copy_pending() == []  # the request is on the Hub
        # two workers on other machines (their own folders), started together: one runs the request, once
        workers = [subprocess.Popen([SCITASTE, "worker", "--queue", "org/results", "--gold", str(ds), "--data",
                                     str(tmp_path / f"elsewhere-{k}"), "--once"], env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True) for k in range(2)]
        said = [w.communicate(timeout=400)[1] for w in workers]
        assert [w.returncode for w in workers] == [0, 0], said
        assert sum("handed to the Space on org/results" in line for line in said) == 1, said
        asked = _asked(log)
        assert len(asked) == len(set(asked)) == N  # every paper asked once: never two workers on one request
        assert board.requests.get(request_id)["state"] == "pending"  # until the Space collects (no look yet)
        assert HubQueue("org/results", token, tmp_path / "space-cache", endpoint=hub_url).collect(board) == 1
        row = board.requests.get(request_id)
        result = board.result(row["run_id"])
    finally:
        servers[1](proc)
        board.close()
    assert (row["state"], row["attempts"], result["status"]) == ("finished", 1, SERVER_RUN)
    figures = eval_reference[TASKS["pure_qa"]]
    assert result["overall"]["scheme1"]["scheme1"] == pytest.approx(figures["scheme1,none"], abs=1e-9)
    assert result["overall"]["scheme2"]["score"] == pytest.approx(figures["scheme2,none"], abs=1e-9)
    assert result["provenance"]["endpoint"] == "scripted-endpoint" and result["provenance"]["attempt"] == 1


def test_a_hung_endpoint_is_cut_at_its_time_limit_with_every_process_it_started(dataset, servers, scripted_chat,
                                                                               tmp_path):
    from scitaste_hf.adapters.lmeval.server_run import RunFailed, evaluate
    from scitaste_hf.leaderboard.requests import Endpoint

    ds, _ = dataset
    hang, url, _ = scripted_chat({"rules": [], "default": "never", "latency": 3600}, tmp_path, "hang")
    work = tmp_path / "work"
    request = {"id": 1, "source": "endpoint", "model": "hangs", "revision": "", "mode": "pure_qa", "attempts": 1}
    started = time.monotonic()
    try:
        with pytest.raises(RunFailed, match="did not finish within the time limit of 20 s"):
            evaluate(request, str(ds), work, endpoints={"hangs": Endpoint("hangs", f"{url}/v1", "scripted")},
                     time_limit=20, poll=0.2)
        elapsed = time.monotonic() - started
        left = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cwd(pid) == work]
    finally:
        servers[1](hang)
    assert 20 <= elapsed < 60, elapsed  # a bound, not a benchmark
    assert left == []  # the child and whatever it started were killed as one process group


def test_a_request_cancelled_while_running_stops_its_worker_at_once(dataset, tmp_path, monkeypatch):
    from scitaste_hf.adapters.lmeval.server_run import Stopped, evaluate
    from scitaste_hf.leaderboard.requests import Endpoint

    ds, _ = dataset
    endpoints = _endpoints(tmp_path, {"far": "http://127.0.0.1:9"})
    board = _board(tmp_path / "board", ds, endpoints, monkeypatch)
    work = tmp_path / "work"
    try:
        request_id = board.request("far", ["pure_qa"], submitter="alice").ids[0]
        request = board.requests.claim("worker-1")
        assert board.requests.holds(request_id, "worker-1")
        board.cancel_request(request_id, None)  # the operator's cancel: any request
        with pytest.raises(Stopped):  # the worker's check between renewals
            evaluate(request, str(ds), work, endpoints={"far": Endpoint("far", "http://127.0.0.1:9/v1", "m")},
                     keep_going=lambda: board.requests.holds(request_id, "worker-1"), poll=0.2)
        left = [pid for pid in os.listdir("/proc") if pid.isdigit() and _cwd(pid) == work]
        assert left == [] and board.requests.get(request_id)["state"] == "cancelled" and board.rows() == []
        assert not board.requests.finish(request_id, "worker-1", 1)  # nothing can be stored for it any more
    finally:
        board.close()


def _cwd(pid):
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return None


def test_hostile_models_end_failed_in_one_line_and_the_queue_goes_on(dataset, servers, scripted_chat, tmp_path,
                                                                     monkeypatch):
    ds, _ = dataset
    broken, broken_url, _ = scripted_chat({"rules": [], "default": {"status": 500}}, tmp_path, "broken")
    # a model that answers every paper, with prose and no JSON: nothing parseable
    babbling, babbling_url, _ = scripted_chat({"rules": [], "default": "A most innovative paper, truly {{ 100 }}!"},
                                              tmp_path, "babbling")
    endpoints = _endpoints(tmp_path, {"broken": broken_url, "babbling": babbling_url},
                           {"broken": "max_retries=0,timeout=5", "babbling": "max_retries=0,timeout=5"})
    data_dir = tmp_path / "board"
    board = _board(data_dir, ds, endpoints, monkeypatch)
    try:
        failing = board.request("broken", ["pure_qa"]).ids[0]
        garbage = board.request("babbling", ["pure_qa"]).ids[0]
        missing = board.request("nobody/no-such-model", ["pure_qa"]).ids[0]
        worker = subprocess.run(_worker(data_dir, ds, "--once", "--concurrency", "2"),
                                env=_env(endpoints, HF_HUB_OFFLINE="1"), capture_output=True, text=True, timeout=300)
    finally:
        servers[1](broken)
        servers[1](babbling)
        board.close()
    assert worker.returncode == 0, worker.stderr[-3000:]
    board = _board(data_dir, ds, endpoints, monkeypatch)
    try:
        rows = {i: board.requests.get(i) for i in (failing, garbage, missing)}
        assert all(r["state"] == "failed" and "\n" not in r["reason"] and r["run_id"] is None for r in rows.values())
        assert rows[failing]["reason"] == f"no reply of the {N} papers could be scored ({N} api_error)"
        assert rows[garbage]["reason"] == f"no reply of the {N} papers could be scored ({N} no_json)"
        assert rows[missing]["reason"].startswith("lm-eval stopped")
        assert board.rows() == []  # nothing half-stored
    finally:
        board.close()
    # the operator queues a request again (its folder cleared: the model is asked afresh); no secret, no worker
    again = subprocess.run(_worker(data_dir, ds, "--requeue", str(failing)), env=_env(endpoints),
                           capture_output=True, text=True, timeout=120)
    assert again.stdout.strip() == f"request #{failing} is pending again", again.stderr[-2000:]
    assert not (data_dir / "worker" / f"request-{failing}").exists()
    refused = subprocess.run(_worker(data_dir, ds, "--once"), env={**_env(endpoints), "SCITASTE_WORKER_SECRET": ""},
                             capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert "needs the board's worker secret: set SCITASTE_WORKER_SECRET" in refused.stderr


#: Papers of the real model's request: a few, each a chat request of seconds to minutes on a shared CPU.
REAL_PAPERS = 3


@pytest.mark.llm
@pytest.mark.timeout(3600)
def test_a_real_small_model_behind_a_configured_endpoint_becomes_server_run(servers, tmp_path, monkeypatch):
    """Issue 30's real model: SmolLM2-135M behind llama-cpp-python's server, started with the guide's command line
    for the tool-free and the paper's tool mode, as one of the operator's endpoints; a request in both modes is run
    by the worker. Whatever the model answers, each request ends in one stated state and a finished one is a
    server-run with honest coverage and the tokens the server counted."""
    from llama_recipe import GUIDE, llama, recipe_servers

    from scitaste_hf.leaderboard.store import SERVER_RUN

    python, gguf = llama()
    ds, _ = _write_dataset(tmp_path, REAL_PAPERS)
    args = re.search(r"profile=llama-cpp,max_gen_toks=\d+,timeout=\d+", GUIDE.read_text())[0]
    proc, url = servers[0](recipe_servers(python, gguf)[0], log=tmp_path / "llama.log", ready="/v1/models",
                           timeout=300)
    endpoints = tmp_path / "endpoints.json"
    endpoints.write_text(json.dumps({"smollm2": {"base_url": f"{url}v1", "model": "local", "model_args": args}}))
    board = _board(tmp_path / "board", ds, endpoints, monkeypatch)
    try:
        ids = board.request("smollm2", MODES, submitter="alice").ids
        worker = subprocess.run(_worker(tmp_path / "board", ds, "--once", "--time-limit", "3000"),
                                env=_env(endpoints), capture_output=True, text=True, timeout=3500)
        rows = [board.requests.get(i) for i in ids]
        results = [board.result(r["run_id"]) for r in rows if r["state"] == "finished"]
    finally:
        servers[1](proc)
        board.close()
    assert worker.returncode == 0, worker.stderr[-3000:]
    assert all(r["state"] in ("finished", "failed") and "\n" not in r["reason"] for r in rows), rows
    for result in results:
        overall = result["overall"]
        assert result["status"] == SERVER_RUN and overall["n_total"] == REAL_PAPERS
        assert 0 < overall["n_scored"] <= REAL_PAPERS and result["provenance"]["tokens"]["completion_tokens"] > 0
    print({r["mode"]: (r["state"], r["reason"]) for r in rows},
          [(r["mode"], r["overall"]["n_scored"], r["overall"]["scheme1"]["scheme1"]) for r in results])
