"""The Papers tab of a real Space (`scitaste space --gold DATASET` on 127.0.0.1), driven through gradio_client: a run
submitted with its agent trace and a flagged copy of the labels; a paper's page shows the dataset's record and gold,
each run's answer and errors as stored, the run's conversation with each tool call's result, and the frozen
evidence."""

import json

import pytest

from scitaste_hf.agent.evidence import FrozenToolBox
from scitaste_hf.agent.tools import TOOL_NAMES
from scitaste_hf.leaderboard.details import NUMBERS
from scitaste_hf.predictions import parse_predictions
from scitaste_hf.records import jsonl_lines, load_records
from scitaste_hf.schema import Answer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def papers_space(tmp_path_factory, space_starter, servers, evidence_dataset):
    """A Space over the evidence dataset with the stand-in agent's run (and its trace) and a copy of the labels."""
    from agent_run import agent_run
    from gradio_client import handle_file
    from suite_http import space_client

    folder = tmp_path_factory.mktemp("papers-space")
    proc, url = space_starter(folder / "data", folder / "log.txt",
                              {"SCITASTE_SUBMIT_LIMIT": "off", "SCITASTE_GOLD": str(evidence_dataset)})
    try:
        client = space_client(url)
        predictions, trace = agent_run(evidence_dataset)
        (folder / "run.jsonl").write_bytes(predictions)
        (folder / "trace.jsonl").write_bytes(trace)
        gold = load_records(str(evidence_dataset), "selected")
        (folder / "copy.jsonl").write_text("".join(json.dumps({"bibcode": r["bibcode"], "innovation_score": r[
            "innovation_score"], "dimension_scores": r["dimension_scores"]}) + "\n" for r in gold))
        agent = client.predict(handle_file(str(folder / "run.jsonl")), "stand-in agent", "dimagent_v3", "", "",
                               None, handle_file(str(folder / "trace.jsonl")), api_name="/submit")
        copy = client.predict(handle_file(str(folder / "copy.jsonl")), "label copy", "pure_qa", "", "",
                              api_name="/submit")
        assert "evidence-consistent" in agent and "flagged" in copy, (agent, copy)
        yield client, gold, parse_predictions(jsonl_lines(predictions.decode()), "run"), int(agent.split("#")[1]
                                                                                              .split(":")[0])
    finally:
        servers[1](proc)


def test_a_papers_page_shows_the_stored_numbers_and_the_dataset(papers_space, evidence_dataset):
    client, gold, answers, agent = papers_space
    record = gold[5]  # an answer shifted off the labels (the stand-in's error is 0 on one paper in seven)
    markdown, gold_table, runs, run, evidence = client.predict(record["bibcode"], api_name="/paper")
    assert record["title"] in markdown and record["subcategory_name"] in markdown and str(record["year"]) in markdown
    values = (record["innovation_score"], *(record["dimension_scores"][k] for k in NUMBERS[1:]))
    assert [row[2] for row in gold_table["data"]] == list(values)
    rows = {r[1]: dict(zip(runs["headers"], r)) for r in runs["data"]}
    assert set(rows) == {agent, agent + 1} and run["value"] == agent  # the first of the board's order is shown
    mine, copy = rows[agent], rows[agent + 1]
    assert (mine["rank"], mine["status"], copy["rank"], copy["status"]) == ("1", "evidence-consistent", "unranked",
                                                                            "flagged")
    answer = answers[record["bibcode"]]
    assert isinstance(answer, Answer)
    letters = ["IS", *"ABCDEFG"]
    assert mine["IS"] == round(answer.innovation_score, 2) and "kind" not in mine
    assert [mine[f"{c} error"] for c in letters] == [round(p - g, 2) for p, g in zip(answer.vector(), values)]
    assert any(mine[f"{c} error"] != 0 for c in letters) and all(copy[f"{c} error"] == 0 for c in letters)
    tools = FrozenToolBox.load(evidence_dataset)
    assert evidence == {t: tools.call(t, {"bibcode": record["bibcode"]}) for t in TOOL_NAMES}
    # the run's reasoning and its conversation, each tool call with its result
    reasoning, numbers, conversation = client.predict(record["bibcode"], agent, api_name="/paper_run")
    assert reasoning == answer.reasoning
    assert [tuple(r) for r in numbers["data"]] == [(c, n, g, round(p, 2), round(p - g, 2)) for c, n, g, p in zip(
        letters, NUMBERS, values, answer.vector())]
    calls = conversation[0]["tool_calls"]
    assert [c["name"] for c in calls] == list(TOOL_NAMES)
    assert [json.loads(c["result"]) for c in calls] == list(evidence.values())
    assert json.loads(conversation[1]["reply"].strip("`json\n"))["reasoning"] == answer.reasoning
    # a run without evidence says so
    _, _, none = client.predict(record["bibcode"], agent + 1, api_name="/paper_run")
    assert "none stored" in none["conversation"]


def test_find_a_paper_and_a_runs_worst_papers(papers_space):
    client, gold, answers, agent = papers_space
    record = gold[42]
    found = client.predict(record["title"], record["discipline"], api_name="/papers_find")
    assert record["bibcode"] in [r[0] for r in found["data"]]
    assert all(r[2] == record["discipline"] for r in found["data"])
    found = client.predict(record["bibcode"], "all", api_name="/papers_find")
    assert [r[:4] for r in found["data"]] == [[record["bibcode"], record["title"], record["discipline"],
                                               record["year"]]]
    worst = client.predict(agent, api_name="/papers_worst")
    by_id = {r["bibcode"]: r for r in gold}
    errors = sorted((abs(a.innovation_score - by_id[b]["innovation_score"]) for b, a in answers.items()
                     if isinstance(a, Answer)), reverse=True)
    assert [r[4] for r in worst["data"]] == [round(e, 2) for e in errors[:len(worst["data"])]]
    failed = next(b for b, a in answers.items() if not isinstance(a, Answer))
    reasoning, numbers, _ = client.predict(failed, agent, api_name="/paper_run")
    assert reasoning.startswith("not scored (no_json)") and all(r[3] is None for r in numbers["data"])


def test_a_papers_page_in_a_browser(chromium, papers_space, tmp_path):
    """What a visitor sees in Chromium: the paper's gold, each run's answer with its status, the picked run's
    conversation with its tool calls, and the frozen evidence, as the API serves them."""
    import os
    from pathlib import Path

    client, gold, answers, _ = papers_space
    record = gold[5]
    _, gold_table, runs, _, evidence = client.predict(record["bibcode"], api_name="/paper")
    page = chromium.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        page.goto(client.src, wait_until="networkidle")
        page.get_by_role("tab", name="Papers").click()
        page.get_by_label("paper (bibcode)").fill(record["bibcode"])
        page.get_by_role("button", name="Open paper").click()
        page.get_by_text(record["title"]).first.wait_for(timeout=30000)
        grids = page.get_by_role("grid").filter(has=page.get_by_role("columnheader", name="gold", exact=True))
        grids.first.get_by_role("gridcell", name="IS", exact=True).wait_for(timeout=30000)

        def cells(grid):
            return [[c.strip() for c in row.get_by_role("gridcell").all_inner_texts()]
                    for row in grid.get_by_role("row").filter(has=page.get_by_role("gridcell")).all()]

        assert [float(row[2]) for row in cells(grids.first)] == [row[2] for row in gold_table["data"]]
        # the picked run's answer beside the gold: its eight predictions as stored
        answer = answers[record["bibcode"]]
        page.wait_for_function("() => document.querySelectorAll('[role=grid]').length >= 3", timeout=30000)
        for _ in range(100):
            if len(shown := cells(grids.nth(1))) == 8:
                break
            page.wait_for_timeout(100)
        assert [float(row[3]) for row in shown] == [round(v, 2) for v in answer.vector()], shown
        statuses = page.get_by_role("grid").filter(has=page.get_by_role("columnheader", name="status", exact=True))
        cells = statuses.get_by_role("gridcell").all_inner_texts()
        status, rank = (runs["headers"].index(c) for c in ("status", "rank"))
        assert {"evidence-consistent", "flagged", "unranked"} == {r[status] for r in runs["data"]} | {
            r[rank] for r in runs["data"]} - {"1"}
        assert {r[status] for r in runs["data"]} | {"unranked"} <= {c.strip() for c in cells}, cells
        # the first run of the board's order is picked: its conversation names every tool, then the evidence
        # (the JSON views fold their deeper levels: their text is read, not what is unfolded on screen)
        for _ in range(300):
            if all(f'"{name}"' in (text := page.text_content("body")) for name in TOOL_NAMES):
                break
            page.wait_for_timeout(100)
        assert all(f'"{name}"' in text for name in TOOL_NAMES), [n for n in TOOL_NAMES if f'"{n}"' not in text]
        assert "tool_calls" in text
        assert page.get_by_role("textbox", name="reasoning").input_value() == answer.reasoning
        assert set(evidence) == set(TOOL_NAMES)
        out = Path(os.environ.get("SCITASTE_SCREENSHOT_DIR") or tmp_path)
        page.screenshot(path=str(out / "space-papers.png"), full_page=True)
        assert errors == []
    finally:
        page.close()
