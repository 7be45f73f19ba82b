"""`scitaste publish details RUN`: a stored run's per-paper details pushed to a Hub stand-in as a dataset that
`load_dataset` reads, one row a paper, with the stored numbers, failure reasons, reasoning and tool trace."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from scitaste_hf.cli import main

pytestmark = pytest.mark.slow

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory, evidence_dataset):
    """A store holding the stand-in agent's run with its trace, scored as the Space scores it."""
    from agent_run import agent_run

    from scitaste_hf.leaderboard import Leaderboard
    from scitaste_hf.leaderboard.setup import backup_split
    from scitaste_hf.records import load_records

    data = tmp_path_factory.mktemp("details-store")
    board = Leaderboard(data, load_records(str(evidence_dataset), "selected"), rate_limit=None,
                        backup=backup_split(str(evidence_dataset)), background_upgrade=False)
    predictions, trace = agent_run(evidence_dataset)
    run = board.submit(predictions, "stand-in agent", "dimagent_v3", trace=trace).run_id
    answers = board.parse(predictions)
    board.close()
    return data, run, answers


def test_details_dataset_loads_with_one_row_a_paper(stored_run, evidence_dataset, fake_hub, capsys):
    import datasets

    from scitaste_hf.agent.tools import TOOL_NAMES
    from scitaste_hf.leaderboard.details import DATASET_FILE, NUMBERS
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import Answer

    data, run, answers = stored_run
    args = ["publish", "details", str(run), "--data", str(data), "--gold", str(evidence_dataset), "--repo-id",
            "org/run-details"]
    assert main([*args, "--dry-run"]) == 0
    listed = capsys.readouterr().out
    assert "datasets/org/run-details (public)" in listed and f"  {DATASET_FILE}\n" in listed
    env, out = fake_hub
    proc = subprocess.run([SCITASTE, *args, "--private"], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    created = [json.loads(line) for line in (out / "created.jsonl").read_text().splitlines()]
    assert [(c["name"], c["type"]) for c in created] == [("run-details", "dataset")]
    assert created[0].get("visibility", "private" if created[0].get("private") else "public") == "private"
    rows = datasets.load_dataset(str(out / "org" / "run-details"), split="train")
    gold = load_records(str(evidence_dataset), "selected")
    assert len(rows) == len(gold) == 300 and rows["bibcode"] == [r["bibcode"] for r in gold]
    for row in rows:
        answer = answers[row["bibcode"]]
        if isinstance(answer, Answer):
            assert row["parsed"] and row["reasoning"] == answer.reasoning and row["failure"] is None
            assert [row[f"predicted_{n}"] for n in NUMBERS] == list(answer.vector())
            assert [row[f"error_{n}"] for n in NUMBERS] == pytest.approx(
                [row[f"predicted_{n}"] - row[f"gold_{n}"] for n in NUMBERS])
        else:
            assert not row["parsed"] and row["failure"] == answer.reason and row["predicted_innovation_score"] is None
        trace = json.loads(row["trace"])
        assert [c["name"] for c in trace[0]["tool_calls"]] == list(TOOL_NAMES)
        assert all(c["result"] for c in trace[0]["tool_calls"]) and row["trace_source"] == "trace"
    assert sum(not p for p in rows["parsed"]) == 30


def test_details_refusals_are_one_line(stored_run, tmp_path, capsys):
    data = stored_run[0]
    for args, words in ((["publish", "details", "--data", str(data), "--repo-id", "org/x"], "needs RUN"),
                        (["publish", "details", "999", "--data", str(data), "--repo-id", "org/x", "--dry-run"],
                         "no run #999"),
                        (["publish", "details", "1", "--data", str(tmp_path), "--repo-id", "org/x"],
                         "holds no leaderboard store")):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.startswith("scitaste: error: ") and err.count("\n") == 1 and words in err, err
