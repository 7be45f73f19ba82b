"""The rTaste protocol's stages against a scripted chat server on 127.0.0.1: hostile agents refused or recorded as
failed in one line, nothing run on an unsealed or changed study, and a whole study (propose with the mirror's
arXiv, seal, judge, rerun, release) ending in `scitaste rtaste report` with the figures the script implies."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from scitaste_hf.agent.chat import PROFILES, ChatClient
from scitaste_hf.cli import main
from scitaste_hf.errors import ScitasteError
from scitaste_hf.rtaste_protocol.assemble import write_release
from scitaste_hf.rtaste_protocol.judges import judge
from scitaste_hf.rtaste_protocol.propose import AGAIN, MAX_SEARCHES, propose
from scitaste_hf.rtaste_protocol.rerun import rerun
from scitaste_hf.rtaste_protocol.seal import seal
from scitaste_hf.rtaste_protocol.study import Study
from scitaste_hf.sources.arxiv import ArxivClient
from scitaste_hf.sources.endpoints import mirror_clients

MODEL = "scripted-agent"
JUDGING = "You are judging minimal viable experiments"
FORECASTING = "rank them 1-5"
REGISTERING = "Register exactly 5 MVEs"
VALUES = (0.9, 0.1, 0.8, 0.2, 0.7)  # each MVE's re-run statistic; the events are "accuracy > 0.5"
OCCURRED = [int(v > 0.5) for v in VALUES]
UNDERSTANDING = "The paper opens three directions."


def _registration(k, **event):
    return {"hypothesis": f"h{k}", "nearest_prior_work": "w", "inputs": "i", "method": "m",
            "event": {"statistic": "accuracy", "relation": "greater", "threshold": 0.5, "unit": "fraction", **event},
            "evaluation_plan": "e", "resources": "r", "follow_up": "f"}


def _registrations(n=5, **event):
    return json.dumps({"registrations": [_registration(k, **event) for k in range(n)]})


def _forecast(probabilities=(0.5,) * 5, ranks=(1, 2, 3, 4, 5)):
    return json.dumps({"probabilities": list(probabilities), "ranks": list(ranks)})


GOOD = _registrations()


def _study(tmp_path: Path, seeds) -> Study:
    (tmp_path / "seeds").mkdir(parents=True)
    for seed in seeds:
        (tmp_path / "seeds" / f"{seed}.json").write_text(json.dumps({
            "title": f"Seed paper {seed}", "abstract": f"The abstract of {seed}."}))
    return Study(tmp_path)


def _client(url: str) -> ChatClient:
    return ChatClient(url + "/v1", MODEL, max_retries=0, timeout=30)


def _requests(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


#: Each hostile seed's conversation in turn: understanding, registrations (asked twice when invalid), forecast.
HOSTILE = {
    "six": ([UNDERSTANDING, _registrations(6), _registrations(6)], "exactly 5 registrations are needed, got 6"),
    "malformed": ([UNDERSTANDING, _registrations(relation="between"), _registrations(relation="between")],
                  "registration 1: event.relation: unknown relation 'between'"),
    "interval": ([UNDERSTANDING, _registrations(relation="in_interval"), _registrations(relation="in_interval")],
                 "registration 1: event: relation 'in_interval' needs the threshold as [low, high]"),
    "p17": ([UNDERSTANDING, GOOD, _forecast((0.5, 1.7, 0.5, 0.5, 0.5)), _forecast((0.5, 1.7, 0.5, 0.5, 0.5))],
            "probabilities.1: probability 1.7 is not a number between 0 and 1"),
    "ranks": ([UNDERSTANDING, GOOD, _forecast(ranks=(1, 1, 2, 3, 4)), _forecast(ranks=(1, 1, 2, 3, 4))],
              "ranks: ranks [1, 1, 2, 3, 4] are not a permutation of 1-5"),
    "prose": ([UNDERSTANDING, "I would rather not write JSON.", "Still no JSON."], "the reply is not JSON"),
    "second-try": ([UNDERSTANDING, "I would rather not write JSON.", GOOD, _forecast()], None),
}


@pytest.fixture(scope="module")
def proposed(tmp_path_factory, scripted_chat, servers):
    """A study of the hostile seeds, proposed once against a server that answers each seed's conversation in turn:
    the study's folder, the counts, and the server's request log."""
    folder = tmp_path_factory.mktemp("hostile")
    rules = [{"contains": f"Seed paper {seed}", "reply": {"cycle": replies}} for seed, (replies, _) in HOSTILE.items()]
    proc, url, log = scripted_chat({"rules": rules, "default": "unscripted"}, folder, "hostile")
    try:
        counts = propose(_study(folder / "study", HOSTILE), _client(url))
    finally:
        servers[1](proc)
    return folder / "study", counts, log


@pytest.fixture()
def hostile(proposed, tmp_path):
    """A copy of the proposed hostile study for one test to change."""
    folder, counts, log = proposed
    shutil.copytree(folder, tmp_path / "study")
    return Study(tmp_path / "study"), counts, log


def test_hostile_agents_are_recorded_failed_with_their_reason_in_one_line(hostile):
    study, counts, log = hostile
    assert counts == {"ok": 1, "failed": 6, "skipped": 0, "sealed": 0}
    for seed, (_, reason) in HOSTILE.items():
        record = json.loads(study.condition_path(f"{seed}.{MODEL}.single_researcher").read_text())
        if reason is None:
            assert record["status"] == "ok" and len(record["condition"]["registrations"]) == 5
            continue
        assert record["status"] == "failed" and "\n" not in record["reason"]
        assert record["reason"].startswith(reason), (seed, record["reason"])
        # asked once more with the reason, never repaired: the invalid reply stands as given
        asked_again = [m["content"] for m in record["messages"]["researcher"]
                       if m["content"].startswith("Your reply was not valid")]
        assert asked_again == [AGAIN.format(reason=record["reason"])]
        assert len(record["calls"]) == len(HOSTILE[seed][0]) and sum(c["prompt_tokens"] for c in record["calls"]) > 0
    assert len(_requests(log)) == sum(len(replies) for replies, _ in HOSTILE.values())
    # resumed: what is proposed, failed or not, is kept unless forced
    assert propose(study, _client("http://127.0.0.1:9")) == {"ok": 0, "failed": 0, "skipped": 7, "sealed": 0}


def test_a_proposal_the_endpoint_never_answered_is_asked_again_when_resumed(tmp_path, scripted_chat, servers):
    """An endpoint that is down (or a wrong --base-url) is no reply of the model's: the failed condition is asked
    again on the next run, not kept as the model's failure as an invalid reply is."""
    study = _study(tmp_path / "study", ["down"])
    assert propose(study, _client("http://127.0.0.1:9")) == {"ok": 0, "failed": 1, "skipped": 0, "sealed": 0}
    path = study.condition_path(f"down.{MODEL}.single_researcher")
    record = json.loads(path.read_text())
    assert (record["status"], record["transient"]) == ("failed", True) and record["reason"].startswith("api_error")
    rules = [{"contains": "Seed paper down", "reply": {"cycle": [UNDERSTANDING, GOOD, _forecast()]}}]
    proc, url, log = scripted_chat({"rules": rules, "default": "unscripted"}, tmp_path, "up")
    try:
        assert propose(study, _client(url)) == {"ok": 1, "failed": 0, "skipped": 0, "sealed": 0}
    finally:
        servers[1](proc)
    assert json.loads(path.read_text())["status"] == "ok" and len(_requests(log)) == 3


def test_nothing_runs_on_an_unsealed_or_changed_study(hostile, tmp_path):
    study, _, log = hostile
    cid = f"second-try.{MODEL}.single_researcher"
    mve = study.path("mves", cid, "1")
    mve.mkdir(parents=True)
    ran = tmp_path / "ran"
    (mve / "mve.json").write_text(json.dumps({"command": f"touch {ran}", "executor": "x", "value_unit": "fraction"}))
    before = len(_requests(log))
    for stage in (lambda: rerun(study), lambda: judge(study, {MODEL: _client("http://127.0.0.1:9")}),
                  lambda: write_release(study)):
        with pytest.raises(ScitasteError, match="is not sealed: run `scitaste rtaste seal"):
            stage()
    assert seal(study) == {"sealed": 1, "kept": 0, "failed": 6}
    path = study.condition_path(cid)
    record = json.loads(path.read_text())
    record["condition"]["registrations"][2]["hypothesis"] = "a better hypothesis, after the fact"
    path.write_text(json.dumps(record))
    for stage in (lambda: seal(study), lambda: rerun(study), lambda: write_release(study),
                  lambda: judge(study, {MODEL: _client("http://127.0.0.1:9")})):
        with pytest.raises(ScitasteError, match=f"condition {cid} changed after it was sealed") as caught:
            stage()
        assert "\n" not in str(caught.value)
    assert not ran.exists() and len(_requests(log)) == before
    # propose never replaces a sealed condition, even when forced
    assert propose(study, _client("http://127.0.0.1:9"), force=True)["sealed"] == 1


@pytest.mark.parametrize(("args", "message"), [
    (["rerun"], "is not sealed: run `scitaste rtaste seal"),
    (["release"], "is not sealed: run `scitaste rtaste seal"),
    (["judge", "--base-url", "http://127.0.0.1:9/v1", "--judges", " , "], "--judges names no model"),
    (["rerun", "--wall-s", "0"], "every re-run limit must be a finite number > 0"),
    (["rerun", "--wall-s", "inf"], "every re-run limit must be a finite number > 0"),  # a hang would never end
    (["judge", "--base-url", "http://127.0.0.1:9/v1", "--judges", "m", "--timeout", "nan"], "--timeout must be a"),
    (["judge", "--base-url", "http://127.0.0.1:9/v1", "--judges", "@http://x/v1"], "'@http://x/v1' names no model"),
    (["propose", "--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--usd-per-m-prompt", "nan"],
     "token prices must be finite numbers >= 0"),
])
def test_the_commands_refuse_in_one_line(hostile, capsys, args, message):
    study, _, _ = hostile
    assert main(["rtaste", args[0], str(study.root), *args[1:]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scitaste: error: ") and err.count("\n") == 1 and message in err, err


def test_a_seed_paper_changed_after_its_proposal_or_its_seal_is_refused(hostile):
    """The same-model judge must see what the proposer saw: the seed paper in seeds/ and the summary in the
    condition's record are sealed with it."""
    study, _, log = hostile
    cid, paper = f"second-try.{MODEL}.single_researcher", study.path("seeds", "second-try.json")
    original, record = paper.read_text(), study.condition_path(cid).read_text()
    paper.write_text(json.dumps({"title": "Seed paper second-try", "abstract": "A better abstract, after the fact."}))
    with pytest.raises(ScitasteError, match=f"seed paper second-try of condition {cid} is not the one it was "
                                            "proposed on"):
        seal(study)
    assert not study.path("seal.json").exists()
    paper.write_text(original)
    assert seal(study)["sealed"] == 1
    before = len(_requests(log))
    shown = record.replace("The abstract of", "Not the abstract of")  # the summary the judges read
    for change in (lambda: paper.write_text(original.replace("The abstract", "An abstract")),
                   lambda: study.condition_path(cid).write_text(shown)):
        change()
        for stage in (lambda: seal(study), lambda: rerun(study),
                      lambda: judge(study, {MODEL: _client("http://127.0.0.1:9")})):
            with pytest.raises(ScitasteError, match=f"seed paper second-try of condition {cid} changed after it "
                                                    "was sealed"):
                stage()
        paper.write_text(original)
        study.condition_path(cid).write_text(record)
    assert seal(study) == {"sealed": 0, "kept": 1, "failed": 6} and len(_requests(log)) == before
    study.path("seal.json").write_text(json.dumps({cid: ["not", "a", "seal"]}))  # a seal.json edited by hand
    with pytest.raises(ScitasteError, match=f"condition {cid} changed after it was sealed"):
        rerun(study)


def test_a_record_edited_into_another_json_shape_is_refused_in_one_line(hostile, capsys):
    study, _, _ = hostile
    seal(study)
    judged = study.path("judges", f"second-try.{MODEL}.single_researcher.json")
    judged.parent.mkdir()
    for path in (judged, study.condition_path(f"six.{MODEL}.single_researcher")):  # read by name by every stage
        path.write_text("[]")
        assert main(["rtaste", "release", str(study.root)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{path}: not a JSON object" in err, err
        path.unlink()


def test_the_judge_needs_the_proposers_own_model(hostile):
    study, _, _ = hostile
    seal(study)
    with pytest.raises(ScitasteError, match=f"the same-model judge is the proposer's model: add {MODEL}"):
        judge(study, {"another-model": _client("http://127.0.0.1:9")})


def test_a_research_team_drafts_twice_criticises_and_merges_to_five(tmp_path, scripted_chat, servers):
    merged = json.dumps({"registrations": [_registration(f"merged {k}") for k in range(5)]})
    proc, url, log = scripted_chat({"rules": [
        {"contains": FORECASTING, "reply": _forecast(ranks=(2, 1, 3, 5, 4))},
        {"contains": "Keep, change or merge", "reply": merged},
        {"contains": "Review both drafts", "reply": "Draft 2 repeats draft 1; MVE 3 is weak."},
        {"contains": REGISTERING, "reply": GOOD}], "default": UNDERSTANDING}, tmp_path, "team")
    try:
        counts = propose(_study(tmp_path / "study", ["gamma"]), _client(url), organisation="research_team")
    finally:
        servers[1](proc)
    assert counts["ok"] == 1
    record = json.loads((tmp_path / "study" / "conditions" / f"gamma.{MODEL}.research_team.json").read_text())
    condition = record["condition"]
    assert [r["hypothesis"] for r in condition["registrations"]] == [f"hmerged {k}" for k in range(5)]
    assert condition["ranks"] == [2, 1, 3, 5, 4] and condition["organisation"] == "research_team"
    assert [c["turn"] for c in record["calls"]] == [
        "proposer 1: understanding", "proposer 1: registrations", "proposer 2: understanding",
        "proposer 2: registrations", "critic", "lead: registrations", "forecast"]
    requests = _requests(log)
    assert len(requests[2]["messages"]) == 2  # the second proposer starts afresh, without the first one's draft
    assert "proposer 1 of two" in requests[0]["messages"][0]["content"]
    assert "proposer 2 of two" in requests[2]["messages"][0]["content"]
    critic, lead = requests[4], requests[5]
    assert "tools" not in critic and "tools" not in lead and len(critic["messages"]) == len(lead["messages"]) == 2
    assert "Draft 2 repeats draft 1" in lead["messages"][1]["content"]  # the lead reads the critique
    assert "Draft 1:" in critic["messages"][1]["content"] and "Draft 2:" in critic["messages"][1]["content"]


def test_a_constrained_endpoint_is_held_to_each_turns_schema_not_scitastes_answer(tmp_path, scripted_chat, servers):
    proc, url, log = scripted_chat({"rules": [{"contains": FORECASTING, "reply": _forecast()},
                                              {"contains": REGISTERING, "reply": GOOD}], "default": UNDERSTANDING},
                                   tmp_path, "llama")
    client = ChatClient(url + "/v1", MODEL, profile=PROFILES["llama-cpp"], max_retries=0, timeout=30)
    try:
        assert propose(_study(tmp_path / "study", ["delta"]), client)["ok"] == 1
    finally:
        servers[1](proc)
    formats = [r.get("response_format") for r in _requests(log)]
    assert formats[0] is None  # the understanding is prose
    assert formats[1]["schema"]["properties"]["registrations"]["minItems"] == 5
    assert set(formats[2]["schema"]["properties"]) == {"probabilities", "ranks"}


@pytest.mark.slow
def test_a_model_that_keeps_searching_is_cut_off(tmp_path, scripted_chat, servers, mirror):
    search = {"tool_calls": [{"name": "arxiv_search", "arguments": {"query": "ti:elasticity"}}]}
    proc, url, log = scripted_chat({"rules": [{"contains": FORECASTING, "reply": _forecast()},
                                              {"contains": REGISTERING, "reply": GOOD},
                                              {"contains": "arxiv_search tool", "reply": search}],  # tools or not
                                    "default": UNDERSTANDING}, tmp_path, "stubborn")
    arxiv = ArxivClient(**mirror_clients(mirror)["arxiv"])
    try:
        assert propose(_study(tmp_path / "study", ["epsilon"]), _client(url), arxiv=arxiv)["ok"] == 1
    finally:
        servers[1](proc)
    record = json.loads((tmp_path / "study" / "conditions" / f"epsilon.{MODEL}.single_researcher.json").read_text())
    assert len(record["searches"]) == MAX_SEARCHES and all(s["result"]["results"] for s in record["searches"])
    registering = next(r for r in _requests(log) if REGISTERING in r["messages"][-1]["content"])
    calls = [m for m in registering["messages"] if m.get("tool_calls")]
    answered = {m["tool_call_id"] for m in registering["messages"] if m["role"] == "tool"}
    assert len(calls) == MAX_SEARCHES and all(c["tool_calls"][0]["id"] in answered for c in calls)


def _deliver(study: Study, cid: str) -> None:
    """The executor's work: one MVE folder per position whose evaluation prints its value."""
    for position, value in enumerate(VALUES, start=1):
        folder = study.path("mves", cid, str(position))
        folder.mkdir(parents=True)
        (folder / "eval.py").write_text(f"print('RTASTE_STATISTIC={value}')\n")
        (folder / "mve.json").write_text(json.dumps({
            "command": f"{sys.executable} eval.py", "executor": "scripted-executor", "reported_value": value,
            "value_unit": "fraction"}))
    audit = {"faithful": [True] * 3, "valid": [True] * 3, "value": [2, 2, 2], "novelty": ["distinct"] * 2,
             "obvious": False, "reviewer_answers": []}
    study.path("audits").mkdir(exist_ok=True)
    study.path("audits", f"{cid}.json").write_text(json.dumps([audit] * 5))


@pytest.mark.slow
def test_a_study_end_to_end_through_the_command_line(tmp_path, scripted_chat, servers, mirror):
    # The agent always forecasts 0.5 (Brier 0.25); as a judge the same model knows the outcomes (Brier 0).
    script = {"rules": [
        {"contains": JUDGING, "reply": json.dumps({"probabilities": OCCURRED})},
        {"contains": FORECASTING, "reply": _forecast()},
        {"contains": REGISTERING, "reply": GOOD},
        {"contains": "arxiv_search", "tools": True, "reply": {"cycle": [
            {"tool_calls": [{"name": "arxiv_search", "arguments": {"query": "ti:elasticity"}}]},
            "The nearest work is on elasticity."]}}],
        "default": UNDERSTANDING}
    proc, url, log = scripted_chat(script, tmp_path, "study")
    study = _study(tmp_path / "study", ["alpha", "beta"])
    scitaste = str(Path(sys.executable).with_name("scitaste"))

    def stage(*args):
        done = subprocess.run([scitaste, "rtaste", *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    try:
        assert "ok 2, failed 0" in stage("propose", str(study.root), "--base-url", url + "/v1", "--model", MODEL,
                                         "--mirror", mirror, "--usd-per-m-prompt", "1000")
        assert "sealed 2" in stage("seal", str(study.root))
        assert "answered 2, failed 0" in stage("judge", str(study.root), "--base-url", url + "/v1", "--judges", MODEL)
        # resumed: the judge that answered is not asked again; another on an endpoint of its own (none there) fails
        assert "answered 0, failed 2, skipped 2" in stage("judge", str(study.root), "--base-url", url + "/v1",
                                                          "--judges", f"{MODEL},elsewhere@http://127.0.0.1:9/v1",
                                                          "--max-retries", "0")
        assert "sealed 2" in stage("propose", str(study.root), "--base-url", url + "/v1", "--model", MODEL,
                                   "--no-search", "--force")  # a sealed condition is never proposed again
    finally:
        servers[1](proc)
    judged = [r for r in _requests(log) if JUDGING in r["messages"][0]["content"]]
    assert len(judged) == 2 and all(len(r["messages"]) == 1 and "tools" not in r for r in judged)  # fresh, no tools
    failed = json.loads(study.path("judges", f"alpha.{MODEL}.single_researcher.json").read_text())["judges"]
    assert failed["elsewhere"]["probabilities"] is None and failed["elsewhere"]["reason"].startswith("api_error: ")
    first = json.loads(study.condition_path(f"alpha.{MODEL}.single_researcher").read_text())
    results = first["searches"][0]["result"]["results"]
    assert results and all("elasticity" in r["title"].lower() for r in results)  # the mirror's arXiv answered
    assert first["cost_usd"] == pytest.approx(sum(c["prompt_tokens"] for c in first["calls"]) * 1000 / 1e6)
    for seed in ("alpha", "beta"):
        _deliver(study, f"{seed}.{MODEL}.single_researcher")
    assert "resolved 10, unresolved 0" in stage("rerun", str(study.root), "--wall-s", "30")
    assert "skipped 10" in stage("rerun", str(study.root))  # resumed: nothing is run twice
    assert "rows 10, conditions 2" in stage("release", str(study.root))
    stage("report", "--data", str(study.path("release.jsonl")), "--json", str(tmp_path / "report.json"))
    brier = json.loads((tmp_path / "report.json").read_text())["brier"]
    assert brier["n_scored"] == 10
    assert brier["agent"]["estimate"] == pytest.approx(0.25)
    assert brier["same_model_judge"]["estimate"] == pytest.approx(0.0)
    assert brier["judge_mean"]["estimate"] == pytest.approx(0.0)
