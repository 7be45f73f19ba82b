"""The leaderboard page in headless Chromium (Debian's `chromium`, which `.ci/run` installs where it is missing):
what a visitor sees, read back from the page and checked against what the Space's API serves.

The board holds the bundled example run plus three runs submitted through the API before the page opens: one model
in two modes (the chart's groups) and an exact copy of the gold labels (flagged: never ranked, never preselected).
Screenshots go to the test's temporary folder, or to $SCITASTE_SCREENSHOT_DIR when set (never into git); the
screenshots of every tab at three widths are taken only when it is set.
"""

import base64
import io
import json
import os
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

TABS = ("Leaderboard", "Compare", "Papers", "Report", "Plots", "Submit", "Queue", "Annotate", "Expert agreement",
        "About")
COLUMNS = ["rank", "rank (gold redrawn)", "top group", "run", "model", "mode", "prospective S1 skill",
           "prospective S1 skill 95% CI", "resolved as of", "S1 skill", "S1 skill 95% CI",
           "vs floor", "Scheme-1", "S1 grade", "S1 95% CI", "S2 skill", "S2 skill 95% CI", "Scheme-2", "S2 grade",
           "S2 95% CI", "WAPE %", "Spearman", "Pearson", "MAE", "bias", "coverage", "status", "kind", "params (B)",
           "open weights", "licence", "base model", "knowledge cutoff", "model metadata", "date", "organisation",
           "link"]
#: The filter settings the page is driven through (mode, discipline, grade, status, show flagged runs).
DEFAULT = ("all", "overall", "all", "all", False)
VIEWS = (DEFAULT, ("pure_qa", "overall", "all", "all", False), ("pure_qa", "physics", "all", "all", False),
         ("dimagent_v3", "physics", "all", "all", True))
#: matplotlib's first two colours: those of the chart's first and second mode (of the modes it shows, in the order
#: of schema.MODES).
BAR_COLOURS = ((31, 119, 180), (255, 127, 14))
COVERAGE_HIGHLIGHT = "rgb(253, 230, 138)"  # the app's #fde68a: coverage below 100%
FLAGGED_HIGHLIGHT = "rgb(254, 202, 202)"  # the app's #fecaca: a flagged run's status


def _answers(sd, seed):
    """The example's gold labels with errors of SD ``sd`` (0: an exact copy)."""
    from importlib import resources

    import numpy as np

    from scitaste_hf.records import load_records

    rng = np.random.default_rng(seed)

    def noisy(x):
        return float(np.clip(x + rng.normal(0, sd), 0, 100).round(1)) if sd else x

    gold = load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))
    return [{"bibcode": r["bibcode"], "innovation_score": noisy(r["innovation_score"]),
             "dimension_scores": {k: noisy(v) for k, v in r["dimension_scores"].items()}} for r in gold]


@pytest.fixture(scope="module")
def board(space, tmp_path_factory):
    """The Space with its runs submitted; returns its URL and the API's rows (as shown) of each of :data:`VIEWS`
    for the board and for the floors."""
    from gradio_client import handle_file
    from suite_http import space_client

    url, _ = space
    folder = tmp_path_factory.mktemp("uploads")
    client = space_client(url)
    for name, mode, sd, seed in (("Model-A", "dimagent_v3", 5, 1), ("Model-A", "pure_qa", 12, 2),
                                 ("Copycat", "dimagent_v3", 0, 0)):
        path = folder / f"{name}-{mode}.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in _answers(sd, seed)))
        message = client.predict(handle_file(str(path)), name, mode, "", "", api_name="/submit")
        assert message.startswith("Accepted"), message
    assert "flagged" in message  # the copy of the labels

    def view(api_name):
        # the page shows each cell's text (numbers with their column's decimals), which the API sends beside it
        shown = {v: client.predict(*v, api_name=api_name) for v in VIEWS}
        return {v: [list(row) for row in table["metadata"]["display_value"]] for v, table in shown.items()}

    return url, view("/leaderboard"), view("/floors")


@pytest.fixture()
def page(chromium, board):
    """A fresh visit of the page, once the board shows its runs; ``page.errors`` collects uncaught page errors."""
    page = chromium.new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    page.goto(board[0], wait_until="networkidle")
    page.get_by_role("gridcell", name="Model-A", exact=True).first.wait_for(timeout=30000)
    yield page
    page.close()


def _grid(page, header):
    """The table that has a column ``header``."""
    return page.get_by_role("grid").filter(has=page.get_by_role("columnheader", name=header, exact=True))


def _rows(page, header) -> list[list[str]]:
    """The cells of that table's rows, as shown."""
    rows = _grid(page, header).get_by_role("row").filter(has=page.get_by_role("gridcell")).all()
    return [[text.strip() for text in row.get_by_role("gridcell").all_inner_texts()] for row in rows]


def _wait_for_rows(page, header, expected, what):
    """Wait (up to 15 s) until the table shows ``expected``; fail with what it shows."""
    for _ in range(150):
        if (seen := _rows(page, header)) == expected:
            return seen
        page.wait_for_timeout(100)
    assert seen == expected, what


def _choose(page, label, option):
    page.get_by_label(label, exact=True).filter(visible=True).first.click()
    page.get_by_role("option", name=option, exact=True).click()


def test_board_shows_its_columns_runs_and_floors(page, board):
    _, views, floors = board
    assert _grid(page, "top group").get_by_role("columnheader").all_inner_texts() == COLUMNS
    rows = _rows(page, "top group")
    assert rows == views[DEFAULT]
    assert all(len(row) == len(COLUMNS) for row in rows)
    shown = [dict(zip(COLUMNS, row)) for row in rows]
    # ordered by Scheme-1 skill, rank intervals from the bootstrap; the copy of the labels is not among the runs
    assert [(r["model"], r["mode"], r["rank"], r["top group"]) for r in shown] == [
        ("Model-A", "dimagent_v3", "1", "\u2605"), ("Model-A", "pure_qa", "2", ""),
        ("synthetic-example-model", "dimagent_v3", "3", "")]
    assert [r["status"] for r in shown] == ["self-reported"] * 3
    # one precision per column (0.630 beside 0.564, never 0.63), the API's numbers behind them
    for column, digits in (("S1 skill", 3), ("S2 skill", 3), ("Scheme-1", 1), ("Scheme-2", 1), ("Spearman", 3),
                           ("MAE", 2)):
        assert all(re.fullmatch(rf"-?\d+\.\d{{{digits}}}", r[column]) for r in shown), (column, shown)
    # nothing selected yet: the details box says how to fill it
    assert page.get_by_text("select a row of the table").first.is_visible()
    assert float(shown[0]["S1 skill"]) > float(shown[1]["S1 skill"]) > float(shown[2]["S1 skill"]) > 0
    # the example run's coverage below 100% is highlighted, a complete run's is not
    coverage = _grid(page, "top group").get_by_role("gridcell").filter(has_text="/300")
    backgrounds = {c.inner_text().strip(): c.evaluate("e => getComputedStyle(e).backgroundColor")
                   for c in coverage.all()}
    assert backgrounds["295/300"] == COVERAGE_HIGHLIGHT and backgrounds["300/300"] != COVERAGE_HIGHLIGHT
    # the floors: reference rows of their own, which every shown run beats
    assert _rows(page, "reference row") == floors[DEFAULT]
    assert [(r[0], r[1]) for r in floors[DEFAULT]] == [
        ("floor: constant (knows nothing)", "3 of 3"), ("floor: discipline prior", "3 of 3"),
        ("noise ceiling: the expected gold against the redrawn gold", "")]  # a ceiling, which no run is above


def test_a_filter_change_renders_both_tables_again(page, board):
    _, views, floors = board
    _choose(page, "mode", "pure_qa")
    view = views[VIEWS[1]]
    rows = _wait_for_rows(page, "top group", view, "the runs of mode pure_qa")
    # ranked again within the view: the only run of the mode leads it
    assert [(r["model"], r["mode"], r["rank"], r["top group"]) for r in (dict(zip(COLUMNS, r)) for r in rows)] == [
        ("Model-A", "pure_qa", "1", "\u2605")]
    _wait_for_rows(page, "reference row", floors[VIEWS[1]], "the floors of mode pure_qa")
    assert [r[1] for r in floors[VIEWS[1]]] == ["1 of 1", "1 of 1", ""]  # the two floors, and the noise ceiling

    _choose(page, "discipline", "physics")
    rows = _wait_for_rows(page, "top group", views[VIEWS[2]], "mode pure_qa in physics")
    assert rows[0][COLUMNS.index("Scheme-2")] != view[0][COLUMNS.index("Scheme-2")]  # physics alone, not overall
    _wait_for_rows(page, "reference row", floors[VIEWS[2]], "the floors of mode pure_qa in physics")
    assert floors[VIEWS[2]] != floors[VIEWS[1]]

    page.get_by_label("show flagged runs").check()
    _choose(page, "mode", "dimagent_v3")
    rows = [dict(zip(COLUMNS, r)) for r in _wait_for_rows(page, "top group", views[VIEWS[3]],
                                                          "mode dimagent_v3 in physics with flagged runs")]
    # the flagged copy comes last, unranked, though its scores are perfect
    assert [(r["model"], r["status"], r["rank"]) for r in rows][-1] == ("Copycat", "flagged", "")
    # and marked: its status cell is highlighted
    status = _grid(page, "top group").get_by_role("gridcell", name="flagged", exact=True).first
    assert status.evaluate("e => getComputedStyle(e).backgroundColor") == FLAGGED_HIGHLIGHT
    assert rows[-1]["Scheme-2"] == "100.0" and [r["model"] for r in rows[:-1]] == ["Model-A", "synthetic-example-model"]
    _wait_for_rows(page, "reference row", floors[VIEWS[3]], "the floors of mode dimagent_v3 in physics")
    assert page.locator(".toast-body.error, .error-message").count() == 0


def _bars(pixels, colour, box):
    """The bars of one colour inside the axes ``box`` (top, bottom, left, right in pixels), left to right: each as
    (first column, last column, height in the axes' units of 0-100)."""
    import numpy as np

    top, bottom, left, right = box
    inside = pixels[top:bottom, left + 1:right].astype(int)
    mask = np.abs(inside - colour).max(axis=2) < 40  # the picture comes as a lossy WebP
    columns = np.flatnonzero(mask.sum(axis=0) >= 3)
    bars = []
    for run in np.split(columns, np.flatnonzero(np.diff(columns) > 1) + 1):
        if len(run) >= 4:
            highest = np.median([np.flatnonzero(mask[:, c]).min() for c in run[1:-1]])
            bars.append((left + 1 + run[0], left + 1 + run[-1], 100 * (bottom - top - highest) / (bottom - top)))
    return bars


def _axes_box(pixels):
    """The axes' frame: the rows and columns that hold the longest unbroken dark lines (the spines)."""
    import numpy as np

    dark = (pixels.max(axis=2) < 90).astype(np.int8)

    def longest(lines):
        best = []
        for line in lines:
            edges = np.flatnonzero(np.diff(np.concatenate(([0], line, [0]))))
            best.append((edges[1::2] - edges[::2]).max(initial=0))
        best = np.array(best)
        return np.flatnonzero(best > 0.8 * best.max())

    rows, columns = longest(dark), longest(dark.T)
    return rows.min(), rows.max(), columns.min(), columns.max()


def test_the_model_filter_says_how_unknown_is_treated_and_lists_those_runs(page, board):
    from suite_http import space_client

    from scitaste_hf.leaderboard.metadata import FILTER_RULE

    url, views, _ = board
    label = "model: knowledge cutoff, size"
    assert page.get_by_text(FILTER_RULE, exact=True).is_visible()
    # no run here names a Hub model: none has a known size, so a band keeps none and 'params unknown' keeps them all
    client = space_client(url)
    banded = client.predict(*DEFAULT, False, ["params under 3B"], api_name="/leaderboard")
    assert banded["data"] == []
    _choose(page, label, "params under 3B")
    _wait_for_rows(page, "top group", [], "no run of a known size under 3B")
    _choose(page, label, "params unknown")
    shown = client.predict(*DEFAULT, False, ["params under 3B", "params unknown"], api_name="/leaderboard")
    expected = [list(row) for row in shown["metadata"]["display_value"]]
    assert expected == views[DEFAULT]
    _wait_for_rows(page, "top group", expected, "every run, its size unknown")
    assert page.locator(".toast-body.error, .error-message").count() == 0


def test_scheme2_chart_draws_the_modes_side_by_side(page):
    import numpy as np
    from PIL import Image

    from scitaste_hf.modes import MODES

    board = [dict(zip(COLUMNS, row)) for row in _rows(page, "top group")]
    scheme2 = {(r["model"], r["mode"]): float(r["Scheme-2"]) for r in board}
    page.get_by_role("tab", name="Plots").click()
    chart = page.get_by_test_id("matplotlib").filter(visible=True).first.locator("img")
    src = chart.get_attribute("src")
    assert src.startswith("data:image/"), src[:40]
    pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))).convert("RGB"))
    box = _axes_box(pixels)
    assert box[1] - box[0] > 100 and box[3] - box[2] > 100, box
    colours = dict(zip([m for m in MODES if m in ("pure_qa", "dimagent_v3")], BAR_COLOURS))
    pure_qa, dimagent = (_bars(pixels, colours[mode], box) for mode in ("pure_qa", "dimagent_v3"))
    # one bar per model and mode, models in the board's order, each as tall as the run's Scheme-2 (axes 0-100)
    assert len(pure_qa) == 1 and len(dimagent) == 2, (pure_qa, dimagent)
    heights = [pure_qa[0][2], dimagent[0][2], dimagent[1][2]]
    expected = [scheme2["Model-A", "pure_qa"], scheme2["Model-A", "dimagent_v3"],
                scheme2["synthetic-example-model", "dimagent_v3"]]
    assert np.allclose(heights, expected, atol=1.0), (heights, expected)
    # sized to its frame, not a third of it
    frame = chart.evaluate("e => e.closest('.block').getBoundingClientRect().width")
    assert chart.bounding_box()["width"] >= 0.7 * frame, (chart.bounding_box(), frame)
    assert max(heights) < 99  # stacked, Model-A's two modes would reach 134
    # grouped: Model-A's two bars stand side by side, equally wide, neither on top of the other
    (a_left, a_right, _), (b_left, b_right, _) = sorted([pure_qa[0], dimagent[0]])
    assert a_right < b_left <= a_right + 4, (pure_qa, dimagent)
    assert abs((a_right - a_left) - (b_right - b_left)) <= 3


def _colour_bar_height(pixels):
    """The height in pixels of the longest column stretch of viridis colours that runs from the top of the scale
    to its bottom: the colour bar (a heatmap's cells are flat blocks of a few colours each)."""
    import numpy as np
    from matplotlib import colormaps

    lut = (colormaps["viridis"](np.linspace(0, 1, 256))[:, :3] * 255).astype(int)
    best = 0
    for column in pixels.transpose(1, 0, 2).astype(int):
        distance = np.abs(column[:, None, :] - lut[None, :, :]).max(axis=2)
        index = np.where(distance.min(axis=1) < 30, distance.argmin(axis=1), -1)
        start = 0
        for row in range(1, len(index) + 1):  # stretches where the scale falls a little from one row to the next
            if row == len(index) or index[row] < 0 or not 0 <= index[row - 1] - index[row] <= 24:
                if index[start] >= 0 and index[start] - index[row - 1] > 200:
                    best = max(best, row - start)
                start = row
    return best


def test_heatmap_colour_bar_spans_the_heatmap(page):
    import numpy as np
    from PIL import Image

    page.get_by_role("tab", name="Plots").click()
    heat = page.get_by_test_id("matplotlib").filter(visible=True).nth(1).locator("img")
    src = heat.get_attribute("src")
    pixels = np.asarray(Image.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))).convert("RGB"))
    top, bottom, _, _ = _axes_box(pixels)
    # as tall as the heatmap's rows (a scale squashed into two rows' height reads as nothing)
    assert _colour_bar_height(pixels) >= (bottom - top) - 6, (_colour_bar_height(pixels), top, bottom)
    assert bottom - top > 150, (top, bottom)


def test_no_header_of_the_board_or_floors_is_cut(page):
    floor_columns = 2 + COLUMNS.index("coverage") + 1 - COLUMNS.index("S1 skill")  # reference row, runs above it
    for width in (1500, 1280):  # a laptop's widths
        page.set_viewport_size({"width": width, "height": 1000})
        page.wait_for_timeout(300)
        for header, count in (("top group", len(COLUMNS)), ("reference row", floor_columns)):
            shown = _grid(page, header).locator("th").evaluate_all(
                "ths => ths.map(th => { const t = th.querySelector('.header') || th;"
                " return [t.innerText.trim(), t.scrollWidth, t.clientWidth] })")
            assert len(shown) == count, shown
            assert [s for s in shown if s[1] > s[2] + 1] == [], (width, header)  # "S1 skill 95..." is cut


def test_compare_preselects_the_leader_never_a_flagged_run(page):
    leader, second = (dict(zip(COLUMNS, row)) for row in _rows(page, "top group")[:2])
    page.get_by_role("tab", name="Compare").click()
    run_a, run_b = (page.get_by_label(label, exact=True) for label in ("run A", "run B"))
    assert run_a.input_value() == f"#{leader['run']} {leader['model']} ({leader['mode']})"
    assert run_b.input_value() == f"#{second['run']} {second['model']} ({second['mode']})"
    # the flagged copy, whose scores are the best of all, is offered last and marked, not preselected
    run_a.click()
    options = [o.strip() for o in page.get_by_role("option").all_inner_texts()]
    assert len(options) == 4 and options[-1].endswith("Copycat (dimagent_v3) [flagged]"), options
    page.keyboard.press("Escape")
    page.get_by_role("button", name="Compare (paired bootstrap)").click()
    _grid(page, "verdict").get_by_role("gridcell", name="overall", exact=True).first.wait_for(timeout=30000)
    overall = [r for r in _rows(page, "verdict") if r[0] == "overall"]
    assert [(r[1], r[2], r[7]) for r in overall] == [("300", m, "A better") for m in ("scheme1", "scheme2", "wape")]
    # a p-value as read: never "0"
    assert all(re.fullmatch(r"< 0\.001|[01]\.\d{3}", r[5]) for r in _rows(page, "verdict")), _rows(page, "verdict")


def test_every_tab_renders(page, tmp_path):
    out = Path(os.environ.get("SCITASTE_SCREENSHOT_DIR") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    for tab in TABS:
        page.get_by_role("tab", name=tab).click()
        page.wait_for_timeout(500)
        page.screenshot(path=str(out / f"space-{tab.lower()}.png"), full_page=True)
        assert page.locator(".toast-body.error, .error-message").count() == 0, f"error on tab {tab}"
        if tab == "Annotate":  # the sliders' captions in a dark grey, not the light one that looked disabled
            caption = page.get_by_text("how much later work in the field builds", exact=False).first
            colour = caption.evaluate("e => getComputedStyle(e).color")
            assert max(map(int, re.findall(r"\d+", colour)[:3])) < 120, colour
        if tab == "About":  # each of the board's headers is explained there
            explained = [t.strip() for t in page.locator(".prose td").all_inner_texts()]
            assert [c for c in COLUMNS if c not in explained] == []
        if tab == "Expert agreement":  # before Compute, each table has its own headers, not "1 2 3"
            assert _grid(page, "flagged").get_by_role("columnheader").all_inner_texts() == [
                "rater", "ratings", "judged", "flagged"]
    assert page.get_by_text("What SciTaste-Bench measures").is_visible()
    assert page.errors == []
    assert all((out / f"space-{t.lower()}.png").stat().st_size > 10_000 for t in TABS)


def test_a_narrow_screen_keeps_the_flagged_box_label(page, tmp_path):
    out = Path(os.environ.get("SCITASTE_SCREENSHOT_DIR") or tmp_path)
    page.set_viewport_size({"width": 420, "height": 900})
    page.get_by_role("tab", name="Leaderboard").click()
    page.wait_for_timeout(500)
    page.screenshot(path=str(out / "space-leaderboard-420px.png"))
    label = page.get_by_text("show flagged runs", exact=True).first
    assert label.is_visible()
    box = label.bounding_box()
    assert box["width"] > 80 and box["x"] + box["width"] <= 420, box
    assert label.evaluate("e => e.scrollWidth <= e.clientWidth + 1")


def test_each_header_gives_its_meaning_on_hover_as_about_does(page):
    page.get_by_role("tab", name="About").click()
    # Gradio draws a tab's content when it is first shown: under load, after the click returns (CI of session 13
    # read no row at all once)
    page.locator(".prose tr:has(td)").first.wait_for(timeout=15_000)
    about = {}  # column -> meaning, from About's table of the board's columns (the first row of a name)
    for row in page.locator(".prose tr").all():
        cells = [c.strip() for c in row.locator("td").all_inner_texts()]
        if len(cells) == 2:
            about.setdefault(*cells)
    page.get_by_role("tab", name="Leaderboard").click()
    page.wait_for_timeout(300)  # the titles are set on the next frame after a table is drawn
    for header in ("top group", "reference row"):
        titles = _grid(page, header).locator("th").evaluate_all(
            "ths => ths.map(th => [(th.querySelector('.header') || th).innerText.trim(), th.title])")
        named = [(name, title) for name, title in titles if name in about]
        assert named and [name for name, title in named if title != about[name]] == [], (header, titles)
    board = _grid(page, "top group")
    assert board.locator("th[title]").count() == board.locator("th").count() > 0  # every column has its meaning


#: A laptop's widths, at which every tab must read, and a narrower screen (1024 px), at which every tab but the
#: Leaderboard's (whose table scrolls sideways there) must too.
WIDTHS = (1440, 1280, 1024)
#: What is cut in a tab: a header or cell of a visible table whose text is wider than its box.
CUT = """() => [...new Set([...document.querySelectorAll('[role=grid]')].filter(g => g.offsetParent !== null)
  .flatMap(g => [...g.querySelectorAll('th, th *, [role=gridcell], [role=gridcell] *')].filter(e =>
    e.offsetParent !== null && e.innerText.trim() && e.scrollWidth > e.clientWidth + 1)
  .map(e => e.innerText.trim())))]"""


def _open(page, tab):
    """Click ``tab``, or, where the screen is too narrow for every tab, its entry in Gradio's overflow menu."""
    button = page.get_by_role("tab", name=tab, exact=True)
    if not button.is_visible():
        page.locator(".overflow-menu").first.click()
        button = page.locator(".overflow-dropdown button").filter(has_text=tab).first
    button.click()


def test_every_tab_reads_at_a_laptops_width(page):
    # what is cut is read from the page; the full-page screenshots, a third of the test's CPU, only for a person
    out = os.environ.get("SCITASTE_SCREENSHOT_DIR")
    tabs = [t.strip() for t in page.get_by_role("tab").all_inner_texts()]
    cut = {}
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 1000})
        for tab in tabs:
            _open(page, tab)
            page.wait_for_timeout(400)
            if out:
                Path(out).mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(Path(out) / f"space-{tab.lower()}-{width}px.png"), full_page=True)
            if shown := page.evaluate(CUT):
                cut[width, tab] = shown
    assert cut == {}
