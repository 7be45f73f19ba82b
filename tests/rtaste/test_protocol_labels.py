"""The audit and novelty stages against a scripted chat server on 127.0.0.1: the auditors are blind to the proposer
and its forecast and read the code and the re-run, an invalid auditor is recorded and asked again on the next run,
and the release built from their labels reports what the labels imply."""

import json
import sys

import pytest

from scitaste_hf.agent.chat import ChatClient
from scitaste_hf.errors import InvalidInput, ScitasteError
from scitaste_hf.rtaste.release import load_release
from scitaste_hf.rtaste.report import top1_table, yield_table
from scitaste_hf.rtaste_protocol.assemble import write_release
from scitaste_hf.rtaste_protocol.labels import (
    REVIEW_ANSWERS,
    REVIEW_QUESTIONS,
    audit,
    check_audit,
    check_review,
    novelty,
)
from scitaste_hf.rtaste_protocol.propose import propose
from scitaste_hf.rtaste_protocol.rerun import rerun
from scitaste_hf.rtaste_protocol.seal import seal
from scitaste_hf.rtaste_protocol.study import Study
from scitaste_hf.sources.arxiv import ArxivClient
from scitaste_hf.sources.endpoints import mirror_clients

MODEL = "scripted-agent"
CID = f"zeta.{MODEL}.single_researcher"
VALUES = (0.9, 0.1, 0.8, 0.2, 0.7)
REGISTRATION = {"hypothesis": "h", "nearest_prior_work": "w", "inputs": "i", "method": "m",
                "event": {"statistic": "accuracy", "relation": "greater", "threshold": 0.5, "unit": "fraction"},
                "evaluation_plan": "e", "resources": "r", "follow_up": "f"}
# Values 3, 0, 1, 2, 2 and MVE 3 invalid: sound+valuable+new are MVEs 1, 4 and 5 (3 is also labelled equivalent).
AUDIT = json.dumps({"mves": [{"faithful": True, "valid": k != 2, "value": v} for k, v in enumerate((3, 0, 1, 2, 2))],
                    "ranks": [1, 5, 4, 2, 3]})
BAD_AUDIT = json.dumps({"mves": [{"faithful": True, "valid": True, "value": 4}] * 5, "ranks": [1, 2, 3, 4, 5]})
LABELS = json.dumps({"labels": ["distinct", "close_variant", "equivalent", "distinct", "distinct"]})
RULES = [
    # the first two auditors answer, the third answers wrongly twice, then (asked again on the next run) well
    {"contains": "judge whether the delivered experiment is faithful",
     "reply": {"cycle": [AUDIT, AUDIT, BAD_AUDIT, BAD_AUDIT, AUDIT]}},
    {"contains": "most obvious follow-up experiments",
     "reply": json.dumps({"follow_ups": [f"obvious idea {k}" for k in range(10)]})},
    {"contains": "is one of the listed obvious follow-ups", "reply": json.dumps({"obvious": [True] + [False] * 4})},
    {"contains": "label it against the literature", "tools": False, "reply": LABELS},
    {"contains": "arxiv_search tool", "tools": True, "reply": {"cycle": [
        {"tool_calls": [{"name": "arxiv_search", "arguments": {"query": "ti:elasticity"}}]}, "Searched enough."]}},
    {"contains": "rank them 1-5", "reply": json.dumps({"probabilities": [0.37] * 5, "ranks": [1, 2, 3, 4, 5]})},
    {"contains": "Register exactly 5 MVEs", "reply": json.dumps({"registrations": [REGISTRATION] * 5})},
]


def _client(url, model=MODEL):
    return ChatClient(url + "/v1", model, max_retries=0, timeout=30)


def _requests(log):
    return [json.loads(line) for line in log.read_text().splitlines()]


@pytest.fixture()
def sealed(tmp_path, scripted_chat, servers):
    """A sealed one-seed study whose five MVEs were delivered, and the scripted server (url, log)."""
    proc, url, log = scripted_chat({"rules": RULES, "default": "I understand the paper."}, tmp_path, "labels")
    study_dir = tmp_path / "study"
    (study_dir / "seeds").mkdir(parents=True)
    (study_dir / "seeds" / "zeta.json").write_text(json.dumps({"title": "Seed zeta", "abstract": "An abstract."}))
    study = Study(study_dir)
    assert propose(study, _client(url))["ok"] == 1
    seal(study)
    for position, value in enumerate(VALUES, start=1):
        folder = study.path("mves", CID, str(position))
        folder.mkdir(parents=True)
        (folder / "eval.py").write_text(f"print('RTASTE_STATISTIC={value}')\n")
        (folder / "mve.json").write_text(json.dumps({"command": f"{sys.executable} eval.py", "executor": "x",
                                                     "reported_value": value, "value_unit": "fraction"}))
    yield study, url, log
    servers[1](proc)


def test_audit_and_novelty_make_the_labels_of_the_release(sealed):
    study, url, log = sealed
    auditors = {name: _client(url, name) for name in ("a1", "a2", "a3")}
    assert audit(study, auditors) == {"answered": 0, "failed": 0, "skipped": 0, "not_rerun": 1}  # nothing to audit
    assert rerun(study)["resolved"] == 5
    assert audit(study, auditors) == {"answered": 2, "failed": 1, "skipped": 0, "not_rerun": 0}
    record = json.loads(study.path("auditors", f"{CID}.json").read_text())["auditors"]
    assert record["a3"]["reason"] == "MVE 1: value 4 is not an integer 0-3" and len(record["a3"]["calls"]) == 2
    prompt = next(r for r in _requests(log) if r["model"] == "a1")["messages"][1]["content"]
    assert MODEL not in prompt and "0.37" not in prompt  # blind to the proposer and to its forecast
    assert "print('RTASTE_STATISTIC=0.9')" in prompt and "value 0.9 (fraction); the registered event occurred" in prompt
    with pytest.raises(ScitasteError, match="a3 did not answer \\(MVE 1: value 4"):
        write_release(study)
    assert audit(study, auditors) == {"answered": 1, "failed": 0, "skipped": 2, "not_rerun": 0}  # resumed
    judges = {"j1": _client(url, "j1"), "j2": _client(url, "j2")}
    assert novelty(study, {"l1": _client(url, "l1")}, _client(url, "m1"), judges)["answered"] == 4
    assert write_release(study)["rows"] == 5
    release = load_release(study.path("release.jsonl"))
    first, third = release.records[0].audit, release.records[2].audit
    assert (first.value, first.novelty, first.obvious) == ((3, 3, 3), ("distinct", "distinct"), True)
    assert (third.valid, third.novelty) == ((False,) * 3, ("equivalent", "equivalent"))
    assert yield_table(release)[0]["svn_per_condition"] == 3
    top1 = top1_table(release, n_resamples=0)  # one seed paper: no interval
    assert top1["agent"]["estimate"] == 1.0  # the agent's rank 1 is MVE 1, the auditors' most valuable


def test_the_stages_need_their_number_of_models(sealed):
    study, url, _ = sealed
    with pytest.raises(ScitasteError, match="the study has 3 auditors; 2 given"):
        audit(study, {"a1": _client(url, "a1"), "a2": _client(url, "a2")})
    with pytest.raises(ScitasteError, match="the study has 2 novelty judges; 1 given"):
        novelty(study, {"l1": _client(url)}, _client(url), {"j1": _client(url)})


@pytest.mark.slow
def test_a_novelty_judge_searches_arxiv_before_it_labels(sealed, mirror):
    study, url, log = sealed
    arxiv = ArxivClient(**mirror_clients(mirror)["arxiv"])
    assert novelty(study, {"l1": _client(url, "l1")}, _client(url, "m1"), {"j1": _client(url, "j1"),
                                                                            "j2": _client(url, "j2")},
                   arxiv=arxiv)["failed"] == 0
    offered = [r for r in _requests(log) if r.get("tools")]
    assert {r["model"] for r in offered} == {"j1", "j2"}  # only the novelty judges have the tool
    labelled = json.loads(study.path("novelty", f"{CID}.json").read_text())["novelty"]
    assert labelled["judge:j1"]["answer"] == json.loads(LABELS)["labels"]
    found = labelled["judge:j1"]["searches"][0]["result"]["results"]  # the first judge searched the mirror's arXiv
    assert found and all("elasticity" in r["title"].lower() for r in found)


@pytest.mark.parametrize(("mves", "ranks", "reason"), [
    ([{"faithful": True, "valid": True, "value": 2}] * 5, [True, 2, 3, 4, 5], "are not a permutation of 1-5"),
    ([{"faithful": True, "valid": True, "value": 2}] * 5, [1, 1, 3, 4, 5], "are not a permutation of 1-5"),
    ([{"faithful": 1, "valid": True, "value": 2}] * 5, [1, 2, 3, 4, 5], "MVE 1: 'faithful' and 'valid' must be"),
    ([{"faithful": True, "valid": True, "value": True}] * 5, [1, 2, 3, 4, 5], "MVE 1: value True is not an integer"),
    ([{"faithful": True, "valid": True, "value": 2}] * 4, [1, 2, 3, 4, 5], "'mves' must be 5 objects"),
])
def test_an_auditor_reply_is_checked_strictly(mves, ranks, reason):
    with pytest.raises(InvalidInput, match=reason):
        check_audit(json.dumps({"mves": mves, "ranks": ranks}))


@pytest.mark.parametrize(("answers", "reason"), [
    ([["yes"] * len(REVIEW_QUESTIONS)] * 4, f"'answers' must be 5 lists of {len(REVIEW_QUESTIONS)} answers"),
    ([["yes"] * (len(REVIEW_QUESTIONS) + 1)] * 5, f"'answers' must be 5 lists of {len(REVIEW_QUESTIONS)} answers"),
    ([["yes"] * (len(REVIEW_QUESTIONS) - 1) + ["maybe"]] * 5, "unknown answer 'maybe'; use one of yes, no, unclear"),
    ("yes", "'answers' must be 5 lists"),
])
def test_a_reviewer_reply_is_checked_strictly(answers, reason):
    with pytest.raises(InvalidInput, match=reason):
        check_review(json.dumps({"answers": answers}))
    assert check_review(json.dumps({"answers": [list(REVIEW_ANSWERS[:1]) * len(REVIEW_QUESTIONS)] * 5}))[0][0] == "yes"
