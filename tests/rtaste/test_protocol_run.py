"""`scitaste rtaste run` on the bundled synthetic study with scripted models on 127.0.0.1: every stage's records
validate against the release schema, the report gives the figures the script implies (an agent that always says
0.5 scores Brier 0.25, a judge that knows the outcomes scores 0), the costs are the calls' tokens, and a second run
asks and runs nothing again."""

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rtaste_script import MODEL, OUTCOMES, REGISTRATION, VALUES, study_script

from scitaste_hf.agent.chat import ChatClient
from scitaste_hf.cli import main
from scitaste_hf.rtaste.release import load_release
from scitaste_hf.rtaste.schema import Condition
from scitaste_hf.rtaste_protocol.calibrate import calibrate, calibration_summary
from scitaste_hf.rtaste_protocol.labels import REVIEW_QUESTIONS
from scitaste_hf.rtaste_protocol.study import Study
from scitaste_hf.rtaste_protocol.toy import example_study_dir


def _requests(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.fixture(scope="module")
def ran(tmp_path_factory, scripted_chat, servers):
    """The bundled study run once end to end, then again: the study folder, the report, the printed lines, the
    request log, the number of requests and run.json after the first run, and the lines of the second."""
    folder = tmp_path_factory.mktemp("run")
    proc, url, log = scripted_chat(study_script(), folder, "run")
    args = ["rtaste", "run", "--study", str(folder / "study"), "--models", MODEL, "--base-url", url + "/v1",
            "--auditors", "a1,a2,a3", "--novelty-judges", "n1,n2", "--reviewers", "r1,r2,r3", "--no-search",
            "--usd-per-m-prompt", "1000", "--wall-s", "60", "--max-retries", "0", "--budget-units", "4"]
    try:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main([*args, "--json", str(folder / "report.json")]) == 0
        first, recorded = len(_requests(log)), json.loads((folder / "study" / "run.json").read_text())
        again = io.StringIO()
        with contextlib.redirect_stdout(again):
            assert main(args) == 0
    finally:
        servers[1](proc)
    return {"study": folder / "study", "report": json.loads((folder / "report.json").read_text()),
            "printed": out.getvalue(), "log": log, "first": first, "again": again.getvalue(), "record": recorded}


def test_the_report_gives_the_figures_the_script_implies(ran):
    report = ran["report"]
    brier = report["brier"]
    assert brier["n_scored"] == 15 and report["n_seed_papers"] == 3
    assert brier["agent"]["estimate"] == pytest.approx(0.25)
    assert brier["same_model_judge"]["estimate"] == pytest.approx(0.0)
    assert brier["agent_minus_judge"]["estimate"] == pytest.approx(0.25)
    assert brier["event_rate"] == pytest.approx(sum(map(sum, OUTCOMES.values())) / 15)
    assert report["rerun_agreement"]["n_same_value"] == report["rerun_agreement"]["n_compared"] == 15
    assert report["top1"]["agent"]["estimate"] == 0.0 and report["top1"]["first_written"]["estimate"] == 1.0
    assert report["yield"][0]["svn_per_condition"] == 3.0
    assert report["reviews"] == {"n_reviewed": 15, "questions": [{"yes": 15}] * len(REVIEW_QUESTIONS)}


def test_every_stage_validates_and_the_reruns_decide_the_events(ran):
    study = ran["study"]
    release = load_release(study / "release.jsonl")
    assert len(release.records) == 15
    for record in release.records:
        seed = record.seed_paper
        assert record.outcome.rerun_value == VALUES[seed][record.position - 1]
        assert record.outcome.executor_value == record.outcome.rerun_value
    for path in (study / "conditions").glob("*.json"):
        Condition.model_validate(json.loads(path.read_text())["condition"])
    delivered = json.loads((study / "mves" / f"toy-shift.{MODEL}.single_researcher" / "2" / "registration.json")
                           .read_text())
    assert delivered == REGISTRATION


def test_progress_and_costs_are_printed_and_recorded(ran):
    printed, first, record = ran["printed"], ran["first"], ran["record"]
    assert list(record["stages"]) == ["seeds", f"propose {MODEL} single_researcher", "seal", "judge", "toy executor",
                                      "rerun", "budget", "audit", "calibrate", "novelty", "review", "release"]
    assert record["stages"]["rerun"]["resolved"] == 15 and record["stages"]["toy executor"]["delivered"] == 15
    assert "rtaste run [6/12] rerun: resolved 15" in printed
    requests = _requests(ran["log"])[:first]
    texts = ["\n".join(m["content"] for m in r["messages"] if isinstance(m.get("content"), str)) for r in requests]
    # the scripted server counts len(text) // 4 prompt tokens a call: the run's total is the sum over the log
    assert record["costs"]["total"]["prompt_tokens"] == sum(len(t) // 4 for t in texts)
    assert record["costs"]["total"]["calls"] == first
    proposing = record["costs"]["propose"]
    assert proposing["usd"] == pytest.approx(proposing["prompt_tokens"] * 1000 / 1e6)
    assert f"{first} model calls" in printed
    # the run's auditors all answer AUDIT, which flags MVE 3 wherever a flaw is planted: one catch in five
    assert "calibration majority: catches 0.200 [0.200, 0.200] of 15 planted flaws, flags 0.200" in printed
    # every unit on MVE 1, sound, valuable and new, where three of five are
    assert "budget on sound+valuable+new MVEs: 1.000 [1.000, 1.000] of the units, against 0.600" in printed


def test_a_second_run_asks_and_runs_nothing_again(ran):
    again = ran["again"]
    assert len(_requests(ran["log"])) == ran["first"]
    assert "rerun: resolved 0, unresolved 0, failed 0, skipped 15" in again
    assert "toy executor: delivered 0, skipped 15" in again
    assert "budget: spent 0, failed 0, skipped 3" in again
    assert "calibrate: planted 0, answered 0, failed 0, skipped 45" in again


ALL_FLAGGED = json.dumps({"mves": [{"faithful": True, "valid": False, "value": 1}] * 5, "ranks": [1, 2, 3, 4, 5]})
CLEAN = json.dumps({"mves": [{"faithful": True, "valid": True, "value": 2}] * 5, "ranks": [1, 2, 3, 4, 5]})
# What each planted flaw leaves in the toy MVE's files (toy_mve.py's settings, the registration's threshold 0.5).
MARKERS = {"changed_metric": 'METRIC = "balanced_accuracy"', "leaked_test_split": 'TRAIN_SPLIT = "train+test"',
           "moved_threshold": '"threshold": 0.25', "wrong_baseline": 'BASELINE = "first_class"',
           "dropped_seed": "SEEDS = [0, 1]\n"}
# Auditors with known catch rates: a1 sees every flaw, a2 the three in the code's settings, a3 none.
CATCHES = {"a1": tuple(MARKERS), "a2": ("changed_metric", "leaked_test_split", "dropped_seed"), "a3": ()}


def test_scripted_auditors_are_measured_at_their_catch_rates(ran, tmp_path, scripted_chat, servers):
    shutil.copytree(ran["study"], tmp_path / "study")
    study = Study(tmp_path / "study")
    for path in study.path("calibration").glob("*/*.json"):  # keep the planted copies, ask the auditors again
        record = json.loads(path.read_text())
        record.pop("auditors")
        path.write_text(json.dumps(record))
    started = {name: scripted_chat({"rules": [{"contains": MARKERS[f], "reply": ALL_FLAGGED} for f in flaws],
                                    "default": CLEAN}, tmp_path, name) for name, flaws in CATCHES.items()}
    try:
        counts = calibrate(study, {name: ChatClient(url + "/v1", name, max_retries=0, timeout=30)
                                   for name, (_, url, _) in started.items()})
    finally:
        for proc, _, _ in started.values():
            servers[1](proc)
    assert counts == {"planted": 0, "answered": 45, "failed": 0, "skipped": 0, "not_plantable": 0, "not_audited": 0}
    raters = calibration_summary(study)["raters"]
    known = {name: len(flaws) / len(MARKERS) for name, flaws in CATCHES.items()}
    known["majority"] = 3 / 5  # two of three flag exactly the three flaws a2 sees
    for name, rate in known.items():
        measured = raters[name]["catch_rate"]
        assert measured["estimate"] == pytest.approx(rate) and raters[name]["n_planted"] == 15
        assert measured["interval"][0] - 1e-9 <= rate <= measured["interval"][1] + 1e-9
        # on the delivered MVEs the run's auditors all flagged MVE 3 (AUDIT): one false positive in five
        assert raters[name]["false_positive_rate"]["estimate"] == pytest.approx(0.2)
    by_flaw = raters["a2"]["catch_rate_by_flaw"]
    assert {f: by_flaw[f]["estimate"] for f in MARKERS} == {f: float(f in CATCHES["a2"]) for f in MARKERS}
    planted = json.loads(study.path("calibration", f"toy-shift.{MODEL}.single_researcher",
                                    "leaked_test_split.json").read_text())
    assert planted["position"] == 2 and planted["rerun"]["rerun_value"] > VALUES["toy-shift"][1]  # the leak helps


def test_a_killed_run_resumes_without_redoing_what_it_finished(tmp_path, scripted_chat, servers):
    seeds = tmp_path / "seed-papers"
    shutil.copytree(example_study_dir(), seeds, ignore=shutil.ignore_patterns("toy-imbalance.json", "toy-noise.json"))
    study = tmp_path / "study"
    proc, url, log = scripted_chat(study_script(), tmp_path, "killed")
    args = ["rtaste", "run", "--seed-papers", str(seeds), "--study", str(study), "--models", MODEL, "--base-url",
            url + "/v1", "--auditors", "a1,a2,a3", "--novelty-judges", "n1,n2", "--reviewers", "r1,r2,r3",
            "--no-search", "--max-retries", "0"]
    try:
        run = subprocess.Popen([str(Path(sys.executable).with_name("scitaste")), *args], start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while not list(study.glob("reruns/*/*.json")) and run.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        os.killpg(run.pid, signal.SIGKILL)  # in the middle of the re-runs
        run.wait()
        finished = {p: p.read_bytes() for stage in ("conditions", "judges", "reruns")
                    for p in study.glob(f"{stage}/**/*.json")}
        asked = len(_requests(log))
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(args) == 0
    finally:
        servers[1](proc)
    assert any("reruns" in p.parts for p in finished) and len(finished) >= 3  # the proposal, its judge, a re-run
    assert all(p.read_bytes() == data for p, data in finished.items())  # nothing finished was made again
    again = [r for r in _requests(log)[asked:] if any(m.get("content", "").startswith("Register exactly")
                                                     or "You are judging" in (m.get("content") or "")
                                                     for m in r["messages"])]
    assert again == []  # no proposal or judge asked twice
    assert len(load_release(study / "release.jsonl").records) == 5
    assert not list(study.glob("mves/*/.*"))  # no half delivery left


def test_repeats_propose_each_condition_again_in_fresh_contexts(tmp_path, scripted_chat, servers):
    (tmp_path / "study" / "seeds").mkdir(parents=True)
    shutil.copy(example_study_dir() / "seeds" / "toy-shift.json", tmp_path / "study" / "seeds")
    proc, url, log = scripted_chat(study_script(), tmp_path, "repeats")
    args = ["rtaste", "propose", str(tmp_path / "study"), "--model", MODEL, "--base-url", url + "/v1", "--no-search",
            "--repeats", "2"]
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(args) == 0 and main(args) == 0
    finally:
        servers[1](proc)
    assert "ok 2, failed 0, skipped 0" in out.getvalue() and "ok 0, failed 0, skipped 2" in out.getvalue()
    ids = sorted(p.stem for p in (tmp_path / "study" / "conditions").glob("*.json"))
    assert ids == [f"toy-shift.{MODEL}.single_researcher", f"toy-shift.{MODEL}.single_researcher.r2"]
    starts = [r for r in _requests(log) if len(r["messages"]) == 2]  # a context's first turn: system and seed
    assert len(starts) == 2 and len(_requests(log)) == 6


def test_the_budget_goes_where_the_agent_puts_it_and_is_measured_against_the_labels(ran, tmp_path, scripted_chat,
                                                                                    servers):
    shutil.copytree(ran["study"], tmp_path / "study")
    noisy = json.loads((example_study_dir() / "seeds" / "toy-noise.json").read_text())["title"]
    proc, url, log = scripted_chat({"rules": [
        {"contains": f"Title: {noisy}", "reply": json.dumps({"units": [9, 0, 0, 0, 0]})},  # adds up to 9, not 5
        {"contains": "budget units left", "reply": json.dumps({"units": [5, 0, 0, 0, 0]})}], "default": "?"},
        tmp_path, "budget")
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(["rtaste", "budget", str(tmp_path / "study"), "--base-url", url + "/v1", "--models", MODEL,
                         "--budget-units", "10", "--budget-rounds", "2", "--max-retries", "0"]) == 0
    finally:
        servers[1](proc)
    assert "rtaste budget: spent 2, failed 1, skipped 0, not_rerun 0" in out.getvalue()
    failed = json.loads((tmp_path / "study" / "budget" / f"toy-noise.{MODEL}.single_researcher.json").read_text())
    assert failed["rounds"] is None and failed["reason"] == "the units add up to 9; this round spends exactly 5"
    second = [r for r in _requests(log) if f"Title: {noisy}" not in r["messages"][1]["content"]][1]
    shown = second["messages"][-1]["content"]  # round 2 is asked after round 1's results
    assert f"MVE 1: {VALUES['toy-imbalance'][0]:g} (fraction); its registered event occurred" in shown
    assert "MVE 2:" not in shown and "probabilit" not in second["messages"][1]["content"]  # blind to its forecast
    summary = json.loads((tmp_path / "study" / "budget.json").read_text())
    # every unit went to MVE 1, which is sound, valuable and new; MVEs 1, 4 and 5 of five are (AUDIT, LABELS)
    assert summary["n_conditions"] == 2
    assert summary["svn"]["budget_share"]["estimate"] == 1.0 and summary["svn"]["even_share"]["estimate"] == 0.6
    assert summary["svn"]["difference"]["estimate"] == pytest.approx(0.4)
    assert summary["sound"]["even_share"]["estimate"] == pytest.approx(0.8)


def test_without_an_executor_the_run_stops_after_the_rerun_and_says_what_it_waits_for(tmp_path, scripted_chat,
                                                                                       servers):
    (tmp_path / "seed-papers").mkdir()
    shutil.copy(example_study_dir() / "seeds" / "toy-shift.json", tmp_path / "seed-papers")  # no toy MVEs
    proc, url, _ = scripted_chat(study_script(), tmp_path, "waiting")
    try:
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert main(["rtaste", "run", "--seed-papers", str(tmp_path / "seed-papers"), "--study",
                         str(tmp_path / "study"), "--models", MODEL, "--base-url", url + "/v1", "--auditors",
                         "a1,a2,a3", "--novelty-judges", "n1,n2", "--reviewers", "r1,r2,r3", "--no-search"]) == 0
    finally:
        servers[1](proc)
    printed = out.getvalue()
    assert "rerun: resolved 0, unresolved 0, failed 0, skipped 0, not_delivered 5" in printed
    assert f"5 MVEs await the executor: deliver them as {tmp_path / 'study' / 'mves'}" in printed
    record = json.loads((tmp_path / "study" / "run.json").read_text())
    assert record["release"] is None and record["waiting"] == 5 and "audit" not in record["stages"]
    assert not (tmp_path / "study" / "release.jsonl").exists()


def test_the_stage_commands_resume_the_runs_study_without_asking(ran, tmp_path):
    shutil.copytree(ran["study"], tmp_path / "study")
    nowhere = ["--base-url", "http://127.0.0.1:9/v1", "--max-retries", "0"]  # nothing may be asked
    with contextlib.redirect_stdout(io.StringIO()) as out:
        assert main(["rtaste", "calibrate", str(tmp_path / "study"), "--auditors", "a1,a2,a3", *nowhere]) == 0
        assert main(["rtaste", "review", str(tmp_path / "study"), "--reviewers", "r1,r2,r3", *nowhere]) == 0
    printed = out.getvalue()
    assert "rtaste calibrate: planted 0, answered 0, failed 0, skipped 45" in printed
    assert "calibration a2: catches 0.200 [0.200, 0.200] of 15 planted flaws, flags 0.200" in printed
    assert "rtaste review: answered 0, failed 0, skipped 9, not_rerun 0" in printed


def _alive(marker: str) -> list[int]:
    """The processes whose command line is ``sleep MARKER``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == f"sleep\0{marker}\0".encode():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def test_the_toy_executor_leaves_no_process_of_a_hostile_scenario_and_is_bounded(ran, tmp_path, monkeypatch):
    """A scenario command that leaves a child behind, or hangs, is the user's own executor's: the toy executor
    still kills its whole session, reads what it printed without waiting for the child, and stops at its limit."""
    from scitaste_hf.rtaste_protocol import toy

    shutil.copytree(ran["study"], tmp_path / "study")
    cid = f"toy-shift.{MODEL}.single_researcher"
    monkeypatch.setattr(toy, "EXECUTOR_WALL_S", 2)
    for command, value in (("sleep 3171 & echo RTASTE_STATISTIC=0.9", 0.9), ("exec sleep 3172", None)):
        shutil.rmtree(tmp_path / "study" / "mves" / cid)
        hostile = tmp_path / command.split()[-1].split("=")[0]
        shutil.copytree(example_study_dir(), hostile)
        spec = json.loads((hostile / "toy_mves.json").read_text())
        (hostile / "toy_mves.json").write_text(json.dumps({**spec, "command": command}))
        counts = toy.deliver_toy(Study(tmp_path / "study"), hostile)  # the sleeps would last an hour
        assert counts == {"delivered": 5, "skipped": 10, "no_toy": 0}
        delivered = json.loads((tmp_path / "study" / "mves" / cid / "1" / "mve.json").read_text())
        assert delivered["reported_value"] == value and delivered["status"] == ("failed" if value is None else
                                                                                "delivered")
        assert _alive(command.split()[-1] if value is None else "3171") == []


def test_seed_papers_are_all_checked_before_any_is_copied(tmp_path):
    """A seed paper the study could not run on is refused before anything is copied, so that the fixed paper is
    taken on the next run instead of differing from a broken copy kept in the study."""
    from scitaste_hf.errors import ScitasteError
    from scitaste_hf.rtaste_protocol.run import import_seeds

    (tmp_path / "papers").mkdir()
    (tmp_path / "study").mkdir()
    good = {"title": "A seed", "abstract": "Its abstract."}
    (tmp_path / "papers" / "a.json").write_text(json.dumps(good))
    (tmp_path / "papers" / "b.json").write_text(json.dumps({"title": "No abstract"}))
    with pytest.raises(ScitasteError, match=r"b\.json: a seed paper needs a non-empty 'title' and 'abstract'"):
        import_seeds(tmp_path / "study", tmp_path / "papers")
    assert not (tmp_path / "study" / "seeds").exists()
    (tmp_path / "papers" / "b.json").write_text(json.dumps({**good, "title": "B seed"}))
    assert import_seeds(tmp_path / "study", tmp_path / "papers") == {"copied": 2, "kept": 0}
    assert sorted(Study(tmp_path / "study").seeds()) == ["a", "b"]
