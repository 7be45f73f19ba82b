"""The prospective split's parts without a build (issue 33, item 1): its window's calendar arithmetic, the sealed
board (digest, who reads a sealed run, refusal after a resolution, scores against the resolved gold, nothing of it
in the Hub copy of the board) and `scitaste resolve`'s one-line refusals. The whole cycle against the mirror and a
Space is tests/space/test_space_prospective.py."""

import argparse
import json
from datetime import date
from importlib import resources

import pytest

from scitaste_hf.builder.prospective import Window, blank_records, months_before, split_young
from scitaste_hf.errors import InvalidInput
from scitaste_hf.leaderboard.sealed import FILE, SEALED, SealedBoard, salted_digest
from scitaste_hf.leaderboard.service import run_key
from scitaste_hf.leaderboard.store import Store
from scitaste_hf.net.guard import SubmissionError
from scitaste_hf.predictions import parse_predictions
from scitaste_hf.records import jsonl_lines, load_records
from scitaste_hf.scoring import score_run

EXAMPLES = resources.files("scitaste_hf").joinpath("data/examples")


def test_the_window_counts_calendar_months_and_holds_the_days_after_its_start_up_to_its_end():
    assert months_before(date(2021, 12, 31), 24) == date(2019, 12, 31)
    assert months_before(date(2021, 3, 31), 1) == date(2021, 2, 28)  # the shorter month's last day
    assert months_before(date(2024, 3, 30), 1) == date(2024, 2, 29)
    assert months_before(date(2021, 1, 15), 13) == date(2019, 12, 15)
    w = Window.before(date(2021, 12, 31), 24)
    assert [w.holds(d) for d in ("2019-12-31", "2020-01-01", "2021-12-31", "2022-01-01", None, "")] == \
        [False, True, True, False, False, False]
    assert w.cohort_filter == "from_publication_date:2020-01-01,to_publication_date:2021-12-31"
    assert w.years == (2020, 2021)
    for bad in (0, -3, 61, 2.5, True):
        with pytest.raises(InvalidInput, match="prospective months must be a whole number from 1 to 60"):
            Window.before(date(2021, 12, 31), bad)


def test_young_papers_leave_the_pool_and_keep_every_field_but_the_gold():
    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))[:6]
    dated = [{**r, "date": d} for r, d in zip(gold, ["2019-05-01", "2020-02-02", "2021-12-31", "2022-01-01",
                                                      None, "2020-01-01"])]
    old, young = split_young(dated, Window.before(date(2021, 12, 31), 24))
    assert [p["date"] for p in young] == ["2020-02-02", "2021-12-31", "2020-01-01"]
    assert [p["date"] for p in old] == ["2019-05-01", "2022-01-01", None]
    with pytest.raises(InvalidInput, match=r"the prospective window \(after 2019-12-31, up to 2021-12-31\) holds "
                                           "none of the build's 3 papers"):
        split_young(old, Window.before(date(2021, 12, 31), 24))
    blank = blank_records(young, ["Q2", None, "Q1"])
    for record, paper, tier in zip(blank, young, ["Q2", None, "Q1"]):
        assert record["innovation_score"] is None and record["dimension_scores"] is None
        assert record["journal_tier"] == tier
        assert {k: record[k] for k in ("bibcode", "title", "abstract", "discipline", "subcategory_id", "year")} == \
            {k: paper[k] for k in ("bibcode", "title", "abstract", "discipline", "subcategory_id", "year")}


def _lines(records, score) -> bytes:
    return "".join(json.dumps({"bibcode": r["bibcode"], "innovation_score": score(r),
                               "dimension_scores": r["dimension_scores"]}) + "\n" for r in records).encode()


def test_a_sealed_run_is_its_submitters_until_resolved_then_scored_against_the_resolved_gold(tmp_path):
    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
    split = blank_records(gold, [r["journal_tier"] for r in gold])
    board = SealedBoard(tmp_path, split)
    honest = _lines(gold, lambda r: min(100.0, r["innovation_score"] + 7.0))
    sealed = board.submit(honest, "m", "pure_qa", submitter="hf:ann")
    [(salt,)] = board.db.query("SELECT salt FROM sealed_runs")
    digest = salted_digest(salt, run_key(parse_predictions(jsonl_lines(honest.decode()), "x"), "pure_qa"))
    assert (sealed.run_id, sealed.digest, sealed.duplicate) == (1, digest, False)
    assert board.submit(honest, "m", "pure_qa", submitter="hf:bob").duplicate
    [row] = board.rows()
    assert (row["model"], row["mode"], row["status"], row["digest"], row["resolved"], row["salt"]) == \
        ("m", "pure_qa", SEALED, digest, {}, None)
    assert "answers" not in row
    assert board.answers(1, "hf:ann") == honest
    with pytest.raises(SubmissionError, match="only its submitter may read its answers"):
        board.answers(1, "hf:bob")
    with pytest.raises(SubmissionError, match="not in the prospective split"):
        board.submit(_lines(gold[:5], lambda r: 1.0).replace(b"2010SynEx", b"2099Other"), "m", "pure_qa",
                     submitter="hf:ann")
    # the Hub copy of the board uploads its own database and submissions only
    store = Store(tmp_path)
    assert all(FILE not in path for path, _ in store.hub_files([])[0])
    store.close()

    resolved = gold[:200]  # a resolution that could rebuild only some papers scores the run on those
    results = board.resolve("2022-12-31", resolved, gold[200:])
    predictions = parse_predictions(jsonl_lines(honest.decode()), "x")
    expected = score_run(resolved, {b: a for b, a in predictions.items() if b in {r["bibcode"] for r in resolved}},
                         backup=gold[200:])
    assert results[1] == json.loads(json.dumps(expected))
    assert board.result(1, "2022-12-31") == results[1]
    [row] = board.rows()
    assert row["status"] == "resolved" and row["resolved"]["2022-12-31"]["scheme1"] == \
        expected["overall"]["scheme1"]["scheme1"]
    assert row["salt"] == salt  # revealed at resolution
    assert board.resolutions()[0] | {"resolved_at": ""} == {"as_of": "2022-12-31", "resolved_at": "",
                                                             "n_resolved": 200, "n_total": 300}
    with pytest.raises(SubmissionError, match="resolved as of 2022-12-31: it takes no sealed run after"):
        board.submit(_lines(gold, lambda r: 50.0), "late", "pure_qa", submitter="hf:ann")
    assert board.answers(1, "hf:bob") == honest  # no longer sealed
    board.close()


def test_a_submitter_seals_at_most_the_limit_and_a_duplicate_is_not_counted(tmp_path):
    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
    board = SealedBoard(tmp_path, blank_records(gold, [None] * len(gold)), rate_limit=(2, 3600.0))
    runs = [_lines(gold, lambda r, k=k: 50.0 + k) for k in range(3)]
    assert not board.submit(runs[0], "m", "pure_qa", submitter="hf:ann").duplicate
    assert board.submit(runs[0], "m", "pure_qa", submitter="hf:ann").duplicate
    assert not board.submit(runs[1], "m", "pure_qa", submitter="hf:ann").duplicate
    with pytest.raises(SubmissionError, match="too many sealed runs: at most 2 per 3600 s"):
        board.submit(runs[2], "m", "pure_qa", submitter="hf:ann")
    assert not board.submit(runs[2], "m", "pure_qa", submitter="hf:bob").duplicate
    assert [r["run"] for r in board.rows()] == [3, 2, 1]
    board.close()


def test_resolve_refuses_a_release_without_a_prospective_split_or_a_date_inside_its_window(tmp_path):
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.builder.resolve import resolve
    from scitaste_hf.release.folder import provenance
    from scitaste_hf.taxonomy import load_taxonomy
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
    recorded = provenance(date(2021, 12, 31), DEFAULT_WEIGHTS, load_taxonomy(),
                          {"papers": 300, "works_around": 0, "citations": 0})
    plain = write_dataset(tmp_path / "plain", {"selected": gold}, DEFAULT_WEIGHTS, synthetic=True,
                          provenance=recorded)
    young = write_dataset(tmp_path / "young", {"selected": gold[:100]}, DEFAULT_WEIGHTS, synthetic=True,
                          provenance={**recorded, "prospective": Window.before(date(2021, 12, 31), 12).record()},
                          prospective=blank_records(gold[100:], [None] * 200))

    def args(dataset, as_of, **more):
        return argparse.Namespace(**{"data": str(tmp_path / "board"), "dataset": str(dataset), "as_of": as_of,
                                     "mirror_url": None, "live": False, "out": None, "work_dir": None,
                                     "per_discipline": 60, "taxonomy": None, "weights": None, "overwrite": False,
                                     **more})

    empty = write_dataset(tmp_path / "empty", {"selected": gold[:100]}, DEFAULT_WEIGHTS, synthetic=True,
                          provenance={**recorded, "prospective": Window.before(date(2021, 12, 31), 12).record()},
                          prospective=[])
    for folder in (plain, empty):  # an older release's split of no paper is none
        with pytest.raises(InvalidInput, match="has no prospective split"):
            resolve(args(folder, date(2022, 12, 31)))
    with pytest.raises(InvalidInput, match="must come after the split's release date 2021-12-31"):
        resolve(args(young, date(2021, 12, 31)))
    with pytest.raises(InvalidInput, match="give --mirror-url"):
        resolve(args(young, date(2022, 12, 31)))
    with pytest.raises(InvalidInput, match="is the release itself"):
        resolve(args(young, date(2022, 12, 31), live=True, out=str(young), overwrite=True, resume=False))
    assert not (tmp_path / "board").exists()


def test_a_sealed_run_changed_after_sealing_stops_its_resolution_and_no_anonymous_reader_reads_one(tmp_path):
    import sqlite3

    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
    board = SealedBoard(tmp_path, blank_records(gold, [None] * len(gold)))
    sealed = board.submit(_lines(gold, lambda r: 40.0), "m", "pure_qa", submitter="anonymous")
    with pytest.raises(SubmissionError, match="only its submitter may read"):  # every unknown visitor is anonymous
        board.answers(sealed.run_id, "anonymous")
    with sqlite3.connect(tmp_path / FILE) as con:  # the gold written over the sealed answers
        con.execute("UPDATE sealed_runs SET answers = ? WHERE id = ?",
                    (_lines(gold, lambda r: r["innovation_score"]), sealed.run_id))
    with pytest.raises(SubmissionError, match=f"sealed run #1's answers no longer give its digest {sealed.digest}"):
        board.resolve("2022-12-31", gold)
    assert board.resolutions() == [] and board.result(1, "2022-12-31") is None
    board.close()


def test_a_run_sealed_on_or_after_the_resolution_date_is_left_unscored(tmp_path):
    from datetime import UTC, datetime, timedelta

    from scitaste_hf.leaderboard.sealed import LATE

    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
    board = SealedBoard(tmp_path, blank_records(gold, [None] * len(gold)))
    board.submit(_lines(gold, lambda r: 40.0), "m", "pure_qa", submitter="hf:ann")  # sealed today
    today = datetime.now(UTC).date()
    assert board.resolve(today.isoformat(), gold, sealed_before=today.isoformat()) == {}
    assert board.rows()[0]["status"] == LATE and board.rows()[0]["resolved"] == {}
    tomorrow = (today + timedelta(days=1)).isoformat()
    assert set(board.resolve(tomorrow, gold, sealed_before=tomorrow)) == {1}
    assert board.rows()[0]["status"] == "resolved"
    board.close()


MIRROR_AT = """import json, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
class H(BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"as_of": "2022-06-30"}).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers()
        self.wfile.write(body)
HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
"""


def test_resolve_refuses_a_date_the_services_have_not_reached(tmp_path, servers):
    """A resolution later than today (the live services) or than the mirror's clock would label an earlier gold with
    its date and close the split; each is one line, before anything is built or recorded."""
    import sys
    from datetime import timedelta

    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.builder.resolve import resolve
    from scitaste_hf.release.folder import provenance
    from scitaste_hf.taxonomy import load_taxonomy
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
    recorded = provenance(date(2021, 12, 31), DEFAULT_WEIGHTS, load_taxonomy(),
                          {"papers": 300, "works_around": 0, "citations": 0})
    young = write_dataset(tmp_path / "young", {"selected": gold[:100]}, DEFAULT_WEIGHTS, synthetic=True,
                          provenance={**recorded, "prospective": Window.before(date(2021, 12, 31), 12).record()},
                          prospective=blank_records(gold[100:], [None] * 200))
    start, stop = servers
    proc, url = start([sys.executable, "-c", MIRROR_AT, "{port}"], log=tmp_path / "clock.log", ready="/_control/clock")

    def args(as_of, **source):
        return argparse.Namespace(data=str(tmp_path / "board"), dataset=str(young), as_of=as_of, out=None,
                                  work_dir=None, per_discipline=60, taxonomy=None, weights=None, overwrite=False,
                                  resume=False, **{"mirror_url": None, "live": False, **source})

    try:
        with pytest.raises(InvalidInput, match="2022-12-31 is after 2022-06-30, the date of the mirror's world"):
            resolve(args(date(2022, 12, 31), mirror_url=url))
    finally:
        stop(proc)
    later = date.today() + timedelta(days=1)
    with pytest.raises(InvalidInput, match=f"--as-of {later.isoformat()} is after .*, the date of today"):
        resolve(args(later, live=True))
    with pytest.raises(InvalidInput, match="no answer to GET /_control/clock"):  # the server is gone
        resolve(args(date(2022, 6, 30), mirror_url=url))
    from scitaste_hf.cli import main  # the command, which prints the refusal in one line

    assert main(["resolve", "--data", str(tmp_path / "board"), "--dataset", str(young), "--as-of",
                 later.isoformat(), "--live"]) == 2
    assert not (tmp_path / "board").exists()


def test_a_resolve_that_finds_none_of_the_split_is_one_line_and_leaves_the_split_open(tmp_path, mirror, capsys):
    """The shared mirror's world holds none of the example papers: the rebuild of their window finds papers, but
    none of the split's, and a resolution of no paper would close the split with nothing scored."""
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.cli import main
    from scitaste_hf.release.folder import provenance
    from scitaste_hf.taxonomy import load_taxonomy
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    gold = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
    window = Window.before(date(2021, 12, 31), 1)
    young = write_dataset(tmp_path / "young", {"selected": gold[:100]}, DEFAULT_WEIGHTS, synthetic=True,
                          provenance={**provenance(date(2021, 12, 31), DEFAULT_WEIGHTS, load_taxonomy(),
                                                   {"papers": 300, "works_around": 0, "citations": 0}),
                                      "prospective": window.record()},
                          prospective=blank_records(gold[100:], [None] * 200))
    board = SealedBoard(tmp_path / "board", blank_records(gold[100:], [None] * 200))
    board.submit(_lines(gold[100:], lambda r: 40.0), "m", "pure_qa", submitter="hf:ann")
    board.close()
    out = tmp_path / "gold-t1"
    assert main(["resolve", "--data", str(tmp_path / "board"), "--dataset", str(young), "--as-of", "2022-12-31",
                 "--mirror-url", mirror, "--per-discipline", "10", "--out", str(out)]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert "the rebuild as of 2022-12-31 found none of the split's 200 papers" in line
    assert "nothing was resolved and the split stays open" in line
    assert not out.exists()
    board = SealedBoard(tmp_path / "board", blank_records(gold[100:], [None] * 200))
    assert board.resolutions() == [] and board.rows()[0]["status"] == SEALED
    assert not board.submit(_lines(gold[100:], lambda r: 41.0), "m", "pure_qa", submitter="hf:ann").duplicate
    board.close()
