"""The Annotate and Expert agreement tabs in headless Chromium: a rater types a name, gets a paper (never its gold
numbers), moves the sliders, submits, skips and stops; what the page showed is what the store holds. Screenshots
go to the test's temporary folder, or to $SCITASTE_SCREENSHOT_DIR when set (never into git)."""

import os
import sqlite3
from importlib import resources
from pathlib import Path

import pytest

from scitaste_hf.ratings.guide import NUMBERS, label
from scitaste_hf.records import load_records

pytestmark = pytest.mark.slow

GOLD = {r["bibcode"]: r for r in load_records(str(resources.files("scitaste_hf").joinpath(
    "data/examples/gold.jsonl")))}
NAME_BOX = "your name (run locally: not verified; on the Hub you sign in instead)"


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


def _ratings(data_dir):
    with sqlite3.connect(data_dir / "ratings.sqlite") as db:
        db.row_factory = sqlite3.Row
        return [dict(r) for r in db.execute("SELECT * FROM ratings ORDER BY id")]


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
    first = _wait_for(lambda: _paper_id(page), lambda v: v in GOLD, "the first paper")
    record = GOLD[first]
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
    assert third not in (first, second) and GOLD[third]["discipline"] == "chemistry"
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
