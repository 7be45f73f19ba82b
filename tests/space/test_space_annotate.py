"""The Annotate and Expert agreement tabs of the Space as a real server (`scitaste space`), driven through
gradio_client: assignment, blind display, storage, replay, hostile input, concurrent raters, the export and the Hub
copy of the ratings, and the report panel; then in headless Chromium, on the same Space (its rater's own ratings
only): a rater types a name, gets a paper (never its gold numbers), moves the sliders, submits, skips and stops, and
what the page showed is what the store holds. Screenshots go to the test's temporary folder, or to
$SCITASTE_SCREENSHOT_DIR when set (never into git)."""

import json
import os
import re
import sqlite3
import threading
from importlib import resources
from pathlib import Path

import pytest

from scitaste_hf.ratings.guide import NUMBERS, label
from scitaste_hf.records import load_records

pytestmark = pytest.mark.slow

GOLD = load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))
BY_ID = {r["bibcode"]: r for r in GOLD}
#: The Annotate tab's outputs: the paper's text, its id, the eight sliders, the status.
PAPER, PAPER_ID, STATUS = 0, 1, 10
NAME_BOX = "your name (run locally: not verified; on the Hub you sign in instead)"
PSEUDONYM = re.compile(r"the published ratings call you (rater-[0-9a-f]{16})\.$")


def _client(url):
    from suite_http import space_client

    return space_client(url)


def _ratings(data_dir):
    with sqlite3.connect(data_dir / "ratings.sqlite") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM ratings ORDER BY id")]


def _gold_numbers(record):
    """A record's gold numbers as they would be printed (with their decimals, which neither the sliders' whole
    numbers nor a year or a bibcode have): none may appear in what the tab sends."""
    return {f"{float(v)}" for v in (record["innovation_score"], *record["dimension_scores"].values())}


def _assert_blind(response):
    """The tab sends the paper's title, discipline, year, venue and abstract, its id, the sliders at 50: nothing of
    its gold labels (not even the journal tier)."""
    record = BY_ID[response[PAPER_ID]]
    text = response[PAPER]
    assert text == (f"### {record['title']}\n\n*{record['discipline']}, {record['year']}, {record['journal_name']}*"
                    f"\n\n{record['abstract']}")
    assert list(response[2:STATUS]) == [50] * 8
    sent = json.dumps(response)
    assert not any(number in sent for number in _gold_numbers(record)), sent
    assert record["journal_tier"] not in text


def test_a_rater_gets_a_blind_paper_rates_it_and_gets_the_next(space):
    url, data_dir = space
    client = _client(url)
    first = client.predict("Ann Lee", "physics", api_name="/annotate_next")
    _assert_blind(first)
    assert client.predict("Ann Lee", "physics", api_name="/annotate_next")[PAPER_ID] == first[PAPER_ID]  # reload
    pseudonym = PSEUDONYM.search(first[STATUS]).group(1)
    scores = [61, 62, 63, 64, 65, 66, 67, 68]
    second = client.predict("Ann Lee", "physics", first[PAPER_ID], *scores, api_name="/annotate_rate")
    assert second[STATUS] == (f"Stored: rating of {first[PAPER_ID]} stored. You have rated 1 paper(s); the published "
                              f"ratings call you {pseudonym}.")
    _assert_blind(second)
    assert second[PAPER_ID] != first[PAPER_ID]
    [row] = [r for r in _ratings(data_dir) if r["rater"] == "local:Ann Lee"]
    assert (row["bibcode"], row["discipline"]) == (first[PAPER_ID], "physics")
    assert [row[k] for k in ("innovation_score", *BY_ID[row["bibcode"]]["dimension_scores"])] == scores

    # a replay changes nothing; a changed rating is refused and the paper shown stays
    replay = client.predict("Ann Lee", "physics", first[PAPER_ID], *scores, api_name="/annotate_rate")
    assert replay[STATUS].startswith(f"Already stored: this rating of {first[PAPER_ID]} was already stored; nothing "
                                     "changed.")
    assert replay[PAPER_ID] == second[PAPER_ID]  # the open paper is shown again
    changed = client.predict("Ann Lee", "physics", first[PAPER_ID], *[70] * 8, api_name="/annotate_rate")
    assert changed[STATUS] == f"Refused: you already rated {first[PAPER_ID]}; a rating is final"
    assert changed[PAPER_ID] == {"__type__": "update"}  # unchanged
    assert len([r for r in _ratings(data_dir) if r["rater"] == "local:Ann Lee"]) == 1

    # skip: never shown again; stop: the open paper is released
    skipped = client.predict("Ann Lee", "physics", second[PAPER_ID], api_name="/annotate_skip")
    assert skipped[STATUS].startswith(f"Skipped {second[PAPER_ID]}. You have rated 1 paper(s)")
    assert skipped[PAPER_ID] not in (first[PAPER_ID], second[PAPER_ID])
    stopped = client.predict("Ann Lee", api_name="/annotate_stop")
    assert stopped[:2] == ("", "") and stopped[STATUS].startswith("Stopped; come back any time. You have rated 1")
    again = client.predict("Ann Lee", "physics", api_name="/annotate_next")
    assert again[PAPER_ID] not in (first[PAPER_ID], second[PAPER_ID], skipped[PAPER_ID])


@pytest.mark.parametrize(("name", "paper", "scores", "message"), [
    ("<script>x</script>", None, None, "Refused: your name: 1-100 letters, digits, spaces and ._:/+()@- only"),
    ("", None, None, "Refused: type your name first"),
    ("Bob", "2010SynEx..999....S", [50] * 8, "Refused: that paper is not one of the benchmark's"),
    ("Bob", "ann's", [50] * 8, "Refused: that paper is not one of the benchmark's"),
    ("Bob", "", [50] * 8, "Refused: no paper to rate: ask for the next paper first"),
    ("Bob", "2010SynEx..000....S", [50] * 8, "Refused: 2010SynEx..000....S is not a paper assigned to you"),
])
def test_hostile_requests_are_refused_in_one_line_and_store_nothing(space, name, paper, scores, message):
    url, data_dir = space
    client = _client(url)
    before = _ratings(data_dir)
    if paper is None:
        response = client.predict(name, "physics", api_name="/annotate_next")
    else:
        response = client.predict(name, "physics", paper, *scores, api_name="/annotate_rate")
    assert response[STATUS].startswith(message), response[STATUS]
    assert _ratings(data_dir) == before


@pytest.mark.parametrize("value", [150, -1, "fifty"])
def test_a_slider_outside_0_100_never_reaches_the_store(space, value):
    from gradio_client.exceptions import AppError

    url, data_dir = space
    client = _client(url)
    paper = client.predict("Cy", "chemistry", api_name="/annotate_next")[PAPER_ID]
    before = _ratings(data_dir)
    with pytest.raises(AppError):
        client.predict("Cy", "chemistry", paper, value, *[50] * 7, api_name="/annotate_rate")
    assert _ratings(data_dir) == before


def test_concurrent_raters_each_get_their_own_papers_fewest_taken_first(space):
    """Eight raters, each on a client of its own, rate six finance papers at once: every rating is stored once, no
    rater sees a paper twice, and the papers' takes (ratings plus papers open) form panels of three: no paper has
    more than three, and at most one is part-way."""
    url, data_dir = space
    statuses, errors = [], []
    start = threading.Barrier(8)

    def rater(k):
        try:
            client, name = _client(url), f"Concurrent {k}"
            start.wait()
            shown = client.predict(name, "finance", api_name="/annotate_next")
            for _ in range(6):
                shown = client.predict(name, "finance", shown[PAPER_ID], *[10 * k] * 8, api_name="/annotate_rate")
                statuses.append(shown[STATUS])
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=rater, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(statuses) == 48 and all(s.startswith("Stored: ") for s in statuses)
    rows = [r for r in _ratings(data_dir) if r["rater"].startswith("local:Concurrent")]
    assert len(rows) == 48 and len({(r["rater"], r["bibcode"]) for r in rows}) == 48
    assert all(r["innovation_score"] == 10 * int(r["rater"].split()[-1]) for r in rows)
    with sqlite3.connect(data_dir / "ratings.sqlite") as db:
        taken = dict(db.execute("SELECT bibcode, COUNT(*) FROM assignments WHERE discipline = 'finance' AND rater LIKE"
                                " 'local:Concurrent%' AND state IN ('rated', 'open') GROUP BY bibcode").fetchall())
    finance = [r["bibcode"] for r in GOLD if r["discipline"] == "finance"]
    takes = [taken.get(b, 0) for b in finance]
    assert sum(takes) == 56 and sorted(t for t in takes if t) == [2] + [3] * 18, takes


def test_the_report_panel_shows_the_report_of_the_stored_ratings(space):
    """Four raters, one at random, rate every mathematics paper (stored by a second process on the same folder, as
    the tab stores them); the panel shows what the report computed here from that folder says, the random rater
    flagged, and the board's run scored against the consensus."""
    import numpy as np

    from scitaste_hf.leaderboard import Leaderboard
    from scitaste_hf.ratings import Ratings
    from scitaste_hf.ratings.report import report_tables, summary

    url, data_dir = space
    ratings = Ratings(data_dir, GOLD)
    rng = np.random.default_rng(3)
    names = ("local:Honest A", "local:Honest B", "local:Honest C", "local:Dice")
    for k in range(3 * 50):  # taking turns: the assignment completes each paper's panel of three first
        name = names[k % len(names)]
        paper = ratings.next_paper(name, "mathematics")
        record = BY_ID[paper["bibcode"]]
        truth = np.array([record["innovation_score"], *record["dimension_scores"].values()])
        values = rng.integers(0, 101, 8) if name == "local:Dice" else np.clip(truth + rng.normal(0, 5, 8), 0, 100)
        ratings.rate(name, paper["bibcode"], [float(v) for v in values])
    text, reliability, versus, raters, runs = _client(url).predict(api_name="/ratings_report")
    board = Leaderboard(data_dir, GOLD, read_only=True)
    report = ratings.report(board)
    assert text == summary(report)
    dice = ratings.pseudonym("local:Dice")
    assert report["flagged"] == [dice] and f"shown below and left out of the consensus: {dice}." in text
    for shown, table in zip((reliability, versus, raters, runs), report_tables(report, public=True)):
        assert shown["headers"] == table.columns and shown["data"] == table.rows
    assert raters["headers"] == ["rater", "ratings", "judged", "flagged"]  # no rater's bias (issue 27)
    assert runs["data"][0][1] == "synthetic-example-model" and [dice, "FLAGGED"] == \
        [row[i] for row in raters["data"] if row[0] == dice for i in (0, 3)]
    ratings.close()
    board.close()


def test_the_export_holds_what_the_tab_stored(space, tmp_path):
    import datasets

    from scitaste_hf.cli import main

    url, data_dir = space
    shown = _client(url).predict("Exporter", "biology", api_name="/annotate_next")
    stored = _client(url).predict("Exporter", "biology", shown[PAPER_ID], *[33] * 8, api_name="/annotate_rate")
    pseudonym = PSEUDONYM.search(stored[STATUS]).group(1)
    assert main(["ratings", "export", "--data", str(data_dir), "--out", str(tmp_path / "export-space")]) == 0
    # a folder name of this test's own: datasets caches a local folder's dataset by the folder's name and its card
    # (not its files' contents), so another test's export of as many ratings under the same name would be read instead
    loaded = datasets.load_dataset(str(tmp_path / "export-space"), "expert_ratings", split="train")
    assert loaded.num_rows == len(_ratings(data_dir))
    [mine] = [r for r in loaded if r["rater"] == pseudonym]
    assert (mine["bibcode"], mine["innovation_score"]) == (shown[PAPER_ID], 33.0)
    assert not any("Exporter" in json.dumps(r) for r in loaded)


def test_ratings_are_copied_to_the_hub_pseudonymised(tmp_path, fake_hub, space_starter, servers):
    """With HF_TOKEN and SCITASTE_RESULTS_REPO, each rating updates the expert_ratings configuration in the repo,
    beside the runs; the raw ids, the salt and the ratings' database stay in the data folder."""
    import pyarrow.parquet as pq

    env, hub = fake_hub
    data_dir = tmp_path / "data"
    proc, url = space_starter(data_dir, tmp_path / "log.txt", {**env, "SCITASTE_RESULTS_REPO": "org/results"})
    try:
        client = _client(url)
        shown = client.predict("Zed Quill", "medicine", api_name="/annotate_next")
        stored = client.predict("Zed Quill", "medicine", shown[PAPER_ID], *[44] * 8, api_name="/annotate_rate")
    finally:
        servers[1](proc)
    assert stored[STATUS].startswith("Stored: ") and "pending" not in stored[STATUS]
    repo = hub / "org" / "results"
    table = pq.read_table(repo / "expert_ratings" / "expert_ratings-00000-of-00001.parquet").to_pylist()
    assert [(r["rater"], r["bibcode"], r["innovation_score"]) for r in table] == [
        (PSEUDONYM.search(stored[STATUS]).group(1), shown[PAPER_ID], 44.0)]
    assert "config_name: expert_ratings" in (repo / "README.md").read_text()
    assert (repo / "leaderboard.sqlite").is_file()  # the runs' copy, beside
    names = {p.name for p in repo.rglob("*")}
    assert not names & {"ratings.sqlite", "ratings.salt"}
    salt = (data_dir / "ratings.salt").read_bytes()
    for path in (p for p in repo.rglob("*") if p.is_file()):
        assert b"Zed Quill" not in path.read_bytes() and salt not in path.read_bytes()


def test_ratings_are_never_copied_to_a_public_repo(tmp_path, fake_hub, space_starter, servers):
    """A results repo that already exists as public would show every rater the others' scores: the rating is
    stored locally, its Hub copy stays pending, and nothing of it reaches the repo (the runs' copy still does)."""
    import httpx

    env, hub = fake_hub
    created = httpx.post(f"{env['HF_ENDPOINT']}/api/repos/create",
                         headers={"Authorization": f"Bearer {env['HF_TOKEN']}"},
                         json={"name": "results", "organization": "org", "visibility": "public", "type": "dataset"})
    assert created.status_code == 200
    data_dir = tmp_path / "data"
    proc, url = space_starter(data_dir, tmp_path / "log.txt", {**env, "SCITASTE_RESULTS_REPO": "org/results"})
    try:
        client = _client(url)
        shown = client.predict("Zed Quill", "medicine", api_name="/annotate_next")
        stored = client.predict("Zed Quill", "medicine", shown[PAPER_ID], *[44] * 8, api_name="/annotate_rate")
    finally:
        servers[1](proc)
    assert stored[STATUS].startswith("Stored: ") and "pending" in stored[STATUS]
    assert len(_ratings(data_dir)) == 1
    assert not (hub / "org" / "results" / "expert_ratings").exists()
    assert "is public" in (tmp_path / "log.txt").read_text()


# -- in the browser, last: the tests above count every rating of this Space, this one only its own rater's --

def _wait_for(read, expected, what, tries=300):
    """Wait (up to 30 s) until ``read()`` satisfies ``expected``; fail with what it last read."""
    for _ in range(tries):
        if expected(seen := read()):
            return seen
        page_wait(0.1)
    raise AssertionError(f"{what}: {seen!r}")


def page_wait(seconds):
    import time

    time.sleep(seconds)  # between two reads of the page only: nothing is asserted about the time


def _paper_id(page):
    return page.get_by_label("paper", exact=True).input_value()


def _status(page):
    return page.get_by_label("status", exact=True).filter(visible=True).first.input_value()


def test_a_rater_rates_skips_and_stops_in_the_browser(chromium, space, tmp_path):
    url, data_dir = space
    out = Path(os.environ.get("SCITASTE_SCREENSHOT_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    page = chromium.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url, wait_until="networkidle")
    page.get_by_role("tab", name="Annotate").click()
    page.get_by_label(NAME_BOX).fill("Browser Rater")
    page.get_by_label("discipline", exact=True).filter(visible=True).first.click()
    page.get_by_role("option", name="chemistry", exact=True).click()
    page.get_by_role("button", name="Next paper").click()
    first = _wait_for(lambda: _paper_id(page), lambda v: v in BY_ID, "the first paper")
    record = BY_ID[first]
    assert record["discipline"] == "chemistry"
    page.get_by_role("heading", name=record["title"]).wait_for(timeout=30000)
    # blind: the tab shows the venue and the year, none of the paper's gold numbers
    tab = page.get_by_role("tabpanel").filter(visible=True).first.inner_text()
    assert record["journal_name"] in tab and str(record["year"]) in tab
    gold_numbers = [f"{float(v)}" for v in (record["innovation_score"], *record["dimension_scores"].values())]
    assert not [n for n in gold_numbers if n in tab], gold_numbers
    page.screenshot(path=str(out / "space-annotate.png"), full_page=True)

    values = [71, 12, 33, 44, 55, 66, 77, 88]
    for number, value in zip(NUMBERS, values):
        box = page.get_by_label(f"number input for {label(number)}")
        box.fill(str(value))
        box.press("Enter")
    page.get_by_role("button", name="Submit rating").click()
    status = _wait_for(lambda: _status(page), lambda s: s.startswith("Stored: "), "the status after submitting")
    assert status.startswith(f"Stored: rating of {first} stored. You have rated 1 paper(s)")
    second = _wait_for(lambda: _paper_id(page), lambda v: v not in ("", first), "the next paper")
    # the sliders start again at 50 for the next paper
    assert [page.get_by_label(f"number input for {label(n)}").input_value() for n in NUMBERS] == ["50"] * 8
    [row] = [r for r in _ratings(data_dir) if r["rater"] == "local:Browser Rater"]
    assert row["bibcode"] == first and [row[n] for n in NUMBERS] == values

    page.get_by_role("button", name="Skip this paper").click()
    _wait_for(lambda: _status(page), lambda s: s.startswith(f"Skipped {second}."), "the status after skipping")
    third = _paper_id(page)
    assert third not in (first, second) and BY_ID[third]["discipline"] == "chemistry"
    page.get_by_role("button", name="Stop").click()
    _wait_for(lambda: _status(page), lambda s: s.startswith("Stopped; come back any time. You have rated 1"),
              "the status after stopping")
    assert _paper_id(page) == ""
    with sqlite3.connect(data_dir / "ratings.sqlite") as db:
        states = dict(db.execute("SELECT bibcode, state FROM assignments WHERE rater = 'local:Browser Rater'"))
    assert states == {first: "rated", second: "skipped", third: "released"}

    page.get_by_role("tab", name="Expert agreement").click()
    page.get_by_role("button", name="Compute the agreement report").click()
    page.get_by_text("ratings of", exact=False).first.wait_for(timeout=60000)
    page.screenshot(path=str(out / "space-expert-agreement.png"), full_page=True)
    assert page.locator(".toast-body.error, .error-message").count() == 0 and errors == []
    page.close()
