"""The sealed runs' encrypted Hub copy (issue 33, item 1 follow-up): a board that restarts without its data folder
restores every sealed run and resolution from the results repo of the fake Hub, the copy shows digests and times
but no answer, salt (until resolution), answers' key or address, and a missing or wrong key is one line at start.
Each run's digest is salted, so hashing a guessed answer set confirms nothing."""

import hashlib
import json
import sqlite3
from importlib import resources

import pytest

from scitaste_hf.builder.prospective import blank_records
from scitaste_hf.errors import ScitasteError
from scitaste_hf.leaderboard.sealed import FILE, SealedBoard
from scitaste_hf.leaderboard.service import run_key
from scitaste_hf.net.hub_copy import HubMirror
from scitaste_hf.predictions import parse_predictions
from scitaste_hf.records import jsonl_lines, load_records

REPO = "board/results"
KEY = "a long random text only the Space holds"
GOLD = load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))
SPLIT = blank_records(GOLD, [None] * len(GOLD))


def _lines(score) -> bytes:
    return "".join(json.dumps({"bibcode": r["bibcode"], "innovation_score": score(r),
                               "dimension_scores": r["dimension_scores"]}) + "\n" for r in GOLD).encode()


def _open(hub, folder, key=KEY):
    url, token, _ = hub
    return SealedBoard(folder, SPLIT, mirror=HubMirror(REPO, token, endpoint=url), key=key)


def test_a_restarted_board_restores_every_sealed_run_from_the_encrypted_hub_copy(hub, tmp_path):
    ann = _lines(lambda r: min(100.0, r["innovation_score"] + 7.0))
    shared = _lines(lambda r: 40.0)
    first = _open(hub, tmp_path / "a")
    one = first.submit(ann, "ann-model", "pure_qa", submitter="hf:ann")
    first.submit(shared, "lab-model", "pure_qa", submitter="10.0.0.7")
    assert first.copy_pending() == []
    # the digest is salted: the unsalted key of the answers (what a guesser computes) is not it
    key = run_key(parse_predictions(jsonl_lines(ann.decode()), "x"), "pure_qa")
    assert one.digest != key and len(one.digest) == 64
    assert first.submit(ann, "again", "pure_qa", submitter="hf:bob").run_id == 1  # the same answers: the same run
    before = first.rows()
    first.close()

    copied = hub[2] / REPO / FILE
    raw = copied.read_bytes()
    assert not any(text in raw for text in (b"innovation_score", b"10.0.0.7", b"hf:ann", key.encode()))
    with sqlite3.connect(copied) as con:
        public = con.execute("SELECT id, digest, model, mode, submitted_at, submitter, salt, answers_key "
                             "FROM sealed_runs ORDER BY id").fetchall()
    assert [p[:5] for p in public] == [(r["run"], r["digest"], r["model"], r["mode"], r["submitted_at"])
                                       for r in reversed(before)]
    assert {p[5:] for p in public} == {("", "", "")}

    second = _open(hub, tmp_path / "b")  # a Space restarted without its data folder
    assert second.rows() == before
    assert second.answers(1, "hf:ann") == ann
    with pytest.raises(ScitasteError, match="only its submitter may read"):  # an address never left the machine
        second.answers(2, "10.0.0.7")
    results = second.resolve("2022-12-31", GOLD[:200], GOLD[200:])
    assert second.copy_pending() == []
    second.close()

    third = _open(hub, tmp_path / "c")
    assert [r["resolved"] for r in third.rows()] == [r["resolved"] for r in SealedBoard(tmp_path / "b", SPLIT).rows()]
    assert third.result(1, "2022-12-31") == results[1]
    assert third.answers(2, "hf:bob") == shared  # resolved: anyone reads it
    for row, answers in zip(third.rows(), (shared, ann)):  # the salt revealed: anyone checks the digest
        answers_key = run_key(parse_predictions(jsonl_lines(answers.decode()), "x"), "pure_qa")
        assert hashlib.sha256(bytes.fromhex(row["salt"]) + answers_key.encode()).hexdigest() == row["digest"]
    with pytest.raises(ScitasteError, match="resolved as of 2022-12-31"):
        third.submit(_lines(lambda r: 55.0), "late", "pure_qa", submitter="hf:ann")
    third.close()


def test_a_missing_or_wrong_key_is_one_line_at_start_and_restores_nothing(hub, tmp_path):
    board = _open(hub, tmp_path / "a")
    board.submit(_lines(lambda r: 40.0), "m", "pure_qa", submitter="hf:ann")
    board.close()
    with pytest.raises(ScitasteError, match="SCITASTE_SEALED_KEY does not open the sealed runs' Hub copy on "
                                            f"{REPO}: set the key they were sealed with"):
        _open(hub, tmp_path / "b", key="another key")
    assert SealedBoard(tmp_path / "b", SPLIT).rows() == []
    with pytest.raises(ScitasteError, match=r"the sealed runs' Hub copy needs its key .* set SCITASTE_SEALED_KEY"):
        _open(hub, tmp_path / "c", key=None)
    # a board that holds runs checks the key too: sealing on with another would make a copy no Space could open
    with pytest.raises(ScitasteError, match="does not open"):
        _open(hub, tmp_path / "a", key="another key")


def test_an_empty_board_does_not_start_when_the_hub_copy_cannot_be_read(tmp_path):
    import socket

    with socket.socket() as s:  # a port nothing listens on: the Hub does not answer
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    with pytest.raises(ScitasteError, match=f"the sealed runs' Hub copy on {REPO} cannot be read .* does not start"):
        SealedBoard(tmp_path, SPLIT, mirror=HubMirror(REPO, "hf_x", endpoint=url), key=KEY)


def test_a_run_sealed_before_salts_keeps_its_unsalted_digest(tmp_path):
    """A sealed.sqlite of layout 1 (no salt, the digest the answers' key): opening it keeps the run, the same
    answers are still its duplicate, and its resolution checks the unsalted digest."""
    answers = _lines(lambda r: 40.0)
    digest = run_key(parse_predictions(jsonl_lines(answers.decode()), "x"), "pure_qa")
    board = SealedBoard(tmp_path, SPLIT)
    board.close()
    with sqlite3.connect(tmp_path / FILE) as con:  # back to layout 1's table and version
        con.execute("DROP TABLE sealed_runs")
        con.execute("CREATE TABLE sealed_runs (id INTEGER PRIMARY KEY AUTOINCREMENT, split TEXT NOT NULL, digest TEXT "
                    "NOT NULL, model TEXT NOT NULL, mode TEXT NOT NULL, submitter TEXT NOT NULL, submitted_at TEXT NOT "
                    "NULL, answers BLOB NOT NULL, UNIQUE (split, digest))")
        con.execute("INSERT INTO sealed_runs (split, digest, model, mode, submitter, submitted_at, answers) VALUES "
                    "(?, ?, 'm', 'pure_qa', 'hf:ann', '2021-12-31T00:00:00+00:00', ?)", (board.key, digest, answers))
        con.execute("PRAGMA user_version = 1")
    board = SealedBoard(tmp_path, SPLIT)
    assert board.submit(answers, "m", "pure_qa", submitter="hf:bob").duplicate
    assert set(board.resolve("2022-12-31", GOLD)) == {1}
    assert board.rows()[0]["digest"] == digest and board.rows()[0]["salt"] == ""
    board.close()
