"""A run's withheld tool is stored with it (store layout 4, issue 29): recorded when the run is stored, read from the
files once for a run stored before (the upgrade on open), and then answered with no file read, which the Report tab's
choice of runs by mode asks of every ranked run."""

import json
import sqlite3
from pathlib import Path

from scitaste_hf.leaderboard import Leaderboard
from scitaste_hf.records import load_records

GOLD = Path(__file__).resolve().parents[2] / "scitaste_hf" / "data" / "examples" / "gold.jsonl"


def _log(gold, withheld: str, shift: float) -> bytes:
    """An lm-eval samples log of dimagent_v3 whose documents record ``withheld``."""
    lines = []
    for r in gold:
        answer = {"innovation_score": min(100.0, r["innovation_score"] + shift),
                  "dimension_scores": {k: min(100.0, v + shift) for k, v in r["dimension_scores"].items()}}
        lines.append(json.dumps({"doc": {"bibcode": r["bibcode"], "scitaste_mode": "dimagent_v3",
                                         "withheld": withheld}, "filtered_resps": [json.dumps(answer)]}))
    return ("\n".join(lines) + "\n").encode()


def test_the_withheld_tool_is_stored_and_read_from_the_files_once_for_an_older_store(tmp_path):
    gold = load_records(GOLD)
    example = (GOLD.parent / "predictions.jsonl").read_bytes()
    board = Leaderboard(tmp_path, gold, rate_limit=None, background_upgrade=False)
    full = board.submit(_log(gold, "", 7.0), "m", "dimagent_v3").run_id
    cut = board.submit(_log(gold, "journal_profile", 9.0), "m", "dimagent_v3").run_id
    evidence = board.submit(example, "m", "dimagent_v3", samples=_log(gold, "references", 7.0)).run_id
    plain = board.submit(example, "m", "pure_qa").run_id
    expected = {full: "", cut: "journal_profile", evidence: "references", plain: ""}
    assert {r: board.store.run(r)["withheld"] for r in expected} == expected
    assert {r: board.withheld(r) for r in expected} == expected
    board.close()
    # the layout before: no withheld, private or details columns
    db = sqlite3.connect(tmp_path / "leaderboard.sqlite")
    for column in ("withheld", "private", "details"):
        db.execute(f"ALTER TABLE runs DROP COLUMN {column}")
    db.execute("PRAGMA user_version = 3")
    db.commit()
    db.close()
    board = Leaderboard(tmp_path, gold, rate_limit=None, background_upgrade=False)
    try:
        assert board.store.unread_withheld() == []
        assert {r: board.store.run(r)["withheld"] for r in expected} == expected
        # what is stored is what is answered: with every file gone, nothing is read
        for path in (tmp_path / "submissions").glob("*.jsonl"):
            path.unlink()
        assert {r: board.withheld(r) for r in expected} == expected
    finally:
        board.close()
