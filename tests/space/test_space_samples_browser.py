"""The newcomer's path in a real browser: stock lm_eval on scitaste_dimagent against a scripted server writes its
samples log; `scitaste score` scores it; the same log, uploaded through the Space's Submit form as the predictions
(and as their evidence), is accepted and shown on the board with lm-eval's own figures."""

import json
import subprocess

import pytest
from stock_samples import SCITASTE, metrics

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::DeprecationWarning")]


@pytest.fixture(scope="module")
def stock(chromium, request):
    """The run's stock lm_eval samples log of scitaste_dimagent (tests/conftest.py) and lm-eval's figures (asked
    for after Chromium: no run for a test that would skip)."""
    data, samples, results, _ = request.getfixturevalue("stock_samples")
    return data, samples, metrics(results)


def _cell(value: float) -> str:
    """A score as the board shows it: one decimal, no trailing zero."""
    return f"{round(value, 1):g}"


def test_a_stock_samples_log_goes_through_the_submit_form_with_lm_evals_scores(stock, chromium, space, tmp_path):
    data, samples, lm = stock
    # `scitaste score` on the log: lm-eval's figures
    out = tmp_path / "score.json"
    scored = subprocess.run([SCITASTE, "score", "--predictions", str(samples), "--gold", str(data), "--json",
                             str(out), "--n-resamples", "0"], capture_output=True, text=True, timeout=300)
    assert scored.returncode == 0, scored.stderr
    overall = json.loads(out.read_text())["overall"]
    assert (overall["scheme1"]["scheme1"], overall["scheme2"]["score"], overall["coverage"]) == pytest.approx(
        (lm["scheme1"], lm["scheme2"], lm["coverage"]), abs=1e-9)
    # the Space's Submit form, as a visitor uses it
    url, _ = space
    page = chromium.new_page()
    page.goto(url, wait_until="networkidle")
    page.get_by_role("tab", name="Submit", exact=True).click()
    page.locator(".block", has_text="predictions (.jsonl)").locator("input[type=file]").set_input_files(str(samples))
    page.locator(".block", has_text="lm-eval samples log").locator("input[type=file]").set_input_files(str(samples))
    page.get_by_role("textbox", name="model name", exact=True).fill("stock-lm-eval")
    page.get_by_role("button", name="Submit", exact=True).click()
    status = page.get_by_role("textbox", name="status", exact=True)
    for _ in range(600):
        if status.input_value():
            break
        page.wait_for_timeout(100)
    message = status.input_value()
    page.screenshot(path=str(tmp_path / "submitted.png"), full_page=True)
    assert message.startswith("Accepted: scored as run #") and "evidence-consistent" in message, message
    # the board's row of the run, as the page shows it after a reload
    page.goto(url, wait_until="networkidle")
    cell = page.get_by_role("gridcell", name="stock-lm-eval", exact=True).first
    cell.wait_for(timeout=30000)
    grid = page.get_by_role("grid").filter(has=page.get_by_role("columnheader", name="top group", exact=True))
    headers = grid.get_by_role("columnheader").all_inner_texts()
    row = grid.get_by_role("row").filter(has=cell)
    shown = dict(zip(headers, (t.strip() for t in row.get_by_role("gridcell").all_inner_texts())))
    page.screenshot(path=str(tmp_path / "board.png"), full_page=True)
    page.close()
    assert (shown["Scheme-1"], shown["Scheme-2"], shown["coverage"], shown["mode"], shown["status"]) == (
        _cell(lm["scheme1"]), _cell(lm["scheme2"]), "210/300", "dimagent_v3", "evidence-consistent")
