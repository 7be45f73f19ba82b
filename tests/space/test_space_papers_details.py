"""The per-(run, paper) details table behind the Papers tab (scitaste_hf.leaderboard.details): built from the stored
runs once, incrementally, rebuilt for another gold set; its numbers are the stored run's answers minus the gold."""

import json
from importlib import resources

import pytest

from scitaste_hf.agent.evidence import FrozenToolBox
from scitaste_hf.agent.tools import TOOL_NAMES
from scitaste_hf.leaderboard import Leaderboard
from scitaste_hf.leaderboard.details import NUMBERS, PAPER_COLUMNS, Details, find_papers, rounds
from scitaste_hf.records import load_records
from scitaste_hf.schema import Answer, Failure


@pytest.fixture(scope="module")
def board(tmp_path_factory, evidence_dataset):
    from agent_run import agent_run

    gold = load_records(str(evidence_dataset), "selected")
    board = Leaderboard(tmp_path_factory.mktemp("details"), gold, rate_limit=None, background_upgrade=False)
    predictions, trace = agent_run(evidence_dataset)
    agent = board.submit(predictions, "stand-in agent", "dimagent_v3", trace=trace).run_id
    example = resources.files("scitaste_hf").joinpath("data/examples/predictions.jsonl").read_bytes()
    plain = board.submit(example, "example", "pure_qa").run_id
    yield board, agent, plain, predictions
    board.close()


def _vector(record):
    return (record["innovation_score"], *(record["dimension_scores"][k] for k in NUMBERS[1:]))


def test_rows_are_the_stored_answers_minus_the_gold(board):
    board, agent, plain, predictions = board
    details = Details(board)
    assert details.sync() == 2 and details.sync() == 0
    answers = board.parse(predictions)
    gold = {r["bibcode"]: r for r in board.gold}
    failures = 0
    for row in details.of_run(agent):
        answer = answers[row["bibcode"]]
        if isinstance(answer, Failure):
            failures += 1
            assert row["failure"] == answer.reason == "no_json" and row["p_innovation_score"] is None
            continue
        assert [row[f"p_{n}"] for n in NUMBERS] == list(answer.vector())
        assert [row[f"e_{n}"] for n in NUMBERS] == pytest.approx(
            [p - g for p, g in zip(answer.vector(), _vector(gold[row["bibcode"]]))], abs=1e-12)
        assert row["reasoning"] == answer.reasoning and row["trace_kind"] == "trace"
    assert failures == 30 and len(details.of_run(agent)) == 300
    # a run without evidence has rows without a pointer
    assert {r["trace_kind"] for r in details.of_run(plain)} == {None}
    # worst papers: the largest |error| of the innovation score, independently computed
    error = {b: abs(a.innovation_score - gold[b]["innovation_score"]) for b, a in answers.items()
             if isinstance(a, Answer)}
    worst = details.worst(agent, 5)
    assert [r["abs_error"] for r in worst] == pytest.approx(sorted(error.values(), reverse=True)[:5])
    assert [r["abs_error"] for r in worst] == pytest.approx([error[r["bibcode"]] for r in worst])
    # one paper across runs
    first = board.gold[1]["bibcode"]
    numbers = details.of_paper(first)
    assert set(numbers) == {agent, plain}
    assert numbers[agent] == tuple(details.one(agent, first)[c] for c in PAPER_COLUMNS)


def test_conversation_round_by_round_with_each_tool_result(board, evidence_dataset):
    board, agent, plain, predictions = board
    details = Details(board)
    bibcode = board.gold[1]["bibcode"]
    conversation = details.conversation(agent, bibcode)
    assert [r["round"] for r in conversation] == [1, 2]
    first, second = conversation
    assert [m["role"] for m in first["sent"]] == ["system", "user"] and bibcode in first["sent"][1]["content"]
    tools = FrozenToolBox.load(evidence_dataset)
    assert [c["name"] for c in first["tool_calls"]] == list(TOOL_NAMES)
    assert [json.loads(c["result"]) for c in first["tool_calls"]] == [tools.call(t, {"bibcode": bibcode})
                                                                        for t in TOOL_NAMES]
    reply = next(json.loads(line)["response"] for line in predictions.decode().splitlines() if bibcode in line)
    assert second["reply"] == reply and second["tool_calls"] == []
    assert details.conversation(plain, bibcode) is None
    # a failed item: its calls, and the error closing the last round
    assert rounds({"calls": [], "error": "timed out"}) == [
        {"round": 1, "sent": [], "reply": "", "tool_calls": [], "error": "timed out"}]


def test_an_lm_eval_sample_is_its_prompt_and_reply():
    messages = [{"role": "user", "content": "Identifier: X"}]
    sample = {"doc": {"bibcode": "X"}, "arguments": {"gen_args_0": {"arg_0": json.dumps(messages), "arg_1": {}}},
              "resps": [["the reply"]], "filtered_resps": ["the reply"]}
    assert rounds(sample) == [{"round": 1, "sent": [{"role": "user", "content": "Identifier: X"}],
                               "reply": "the reply", "tool_calls": []}]


def test_another_gold_set_rebuilds_the_table(board, tmp_path):
    import shutil

    board, agent = board[:2]
    folder = tmp_path / "copy"
    shutil.copytree(board.store.root, folder)
    gold = [dict(r) for r in board.gold]
    gold[1] = {**gold[1], "innovation_score": gold[1]["innovation_score"] + 1.0}
    other = Leaderboard(folder, gold, rate_limit=None)
    try:
        details = Details(other)
        before = Details(board).one(agent, gold[1]["bibcode"])
        assert details.sync() == 2
        assert details.one(agent, gold[1]["bibcode"])["e_innovation_score"] == pytest.approx(
            before["e_innovation_score"] - 1.0)
    finally:
        other.close()


def test_find_papers_by_title_identifier_or_discipline(board):
    board = board[0]
    record = board.gold[7]
    assert [r["bibcode"] for r in find_papers(board.gold, record["bibcode"].lower())] == [record["bibcode"]]
    words = record["title"].split()
    assert record in find_papers(board.gold, f"{words[-1]} {words[0]}", record["discipline"])
    assert {r["discipline"] for r in find_papers(board.gold, "", record["discipline"], limit=500)} == {
        record["discipline"]}
    assert find_papers(board.gold, "no such words here") == []


def test_a_caller_that_must_not_wait_skips_a_sync_under_way(board):
    board, agent = board[:2]
    details = Details(board)
    details._sync_lock.acquire()  # another thread's sync, under way
    try:
        assert details.sync(wait=False) == 0 and details._seen is None
    finally:
        details._sync_lock.release()
    details.sync()
    assert details._seen == board.store.change_marker() and len(details.of_run(agent)) == 300
