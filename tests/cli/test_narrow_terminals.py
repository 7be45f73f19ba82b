"""`scitaste score`'s table and the demo's board in an 80- or 100-column terminal: every number whole (stacked
tables instead of cells cut to `+0.…`), and no httpx request log on stderr."""

import json
import os
import re
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest
from rich.console import Console

from scitaste_hf.cli.demo import BOARD_STACK, board_table
from scitaste_hf.cli.tables import fitted

pytestmark = pytest.mark.slow

SCITASTE = str(Path(sys.executable).with_name("scitaste"))


@pytest.mark.parametrize("columns", [80, 100])
def test_score_shows_every_figure_whole_at_the_terminals_width(tmp_path, columns):
    out = tmp_path / "result.json"
    run = subprocess.run([SCITASTE, "score", "--json", str(out)], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "COLUMNS": str(columns)})
    assert run.returncode == 0, run.stderr
    assert "…" not in run.stdout
    assert max(len(line) for line in run.stdout.splitlines()) <= columns
    tokens = set(re.findall(r"[-+]?\d+\.\d+", run.stdout))
    result = json.loads(out.read_text())
    for block in [result["overall"], *result["by_discipline"].values()]:
        s1, s2, skill = block["scheme1"], block["scheme2"], block["skill"]
        assert {f"{s1['scheme1']:.1f}", f"{s2['score']:.1f}", f"{100 * s2['wape']:.1f}", f"{s1['spearman']:.3f}",
                f"{s1['mae']:.2f}", f"{skill['scheme1']['skill']:+.2f}", f"{s1['ci']['scheme1'][0]:.1f}",
                f"{s2['ci']['score'][1]:.1f}"} <= tokens


def test_a_table_that_fits_stays_one_table():
    console = Console(width=200, record=True)
    from rich.table import Table

    table = Table(title="t")
    for name in ("scope", "a", "b"):
        table.add_column(name)
    table.add_row("overall", "+0.37 [0.35, 0.40]", "58.1")
    assert fitted(console, table, [0], [[1], [2]]) is table


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """A board of the bundled example: its gold, two runs of noisy answers."""
    import numpy as np

    from scitaste_hf.leaderboard import Leaderboard
    from scitaste_hf.records import load_records

    gold = load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))
    board = Leaderboard(tmp_path_factory.mktemp("board"), gold)
    rng = np.random.default_rng(0)
    for mode, sd in (("pure_qa", 15), ("dimagent_v3", 5)):
        lines = [{"bibcode": r["bibcode"],
                  "innovation_score": float(np.clip(r["innovation_score"] + rng.normal(0, sd), 0, 100).round(1)),
                  "dimension_scores": {k: float(np.clip(v + rng.normal(0, sd), 0, 100).round(1))
                                       for k, v in r["dimension_scores"].items()}} for r in gold]
        board.submit("".join(json.dumps(line) + "\n" for line in lines).encode(), "baseline", mode, kind="baseline")
    yield board
    board.close()


@pytest.mark.parametrize("columns", [80, 100])
def test_the_demos_board_shows_every_figure_whole(board, columns):
    console = Console(width=columns, record=True)
    console.print(fitted(console, board_table(board), *BOARD_STACK))
    text = console.export_text()
    assert "…" not in text and max(map(len, text.splitlines())) <= columns
    tokens = set(re.findall(r"[-+]?\d+\.\d+|\d+/\d+|[\w-]+", text))
    for row in [*board.rows(), *board.floors()]:
        figures = {f"{row['scheme1']:.1f}", f"{row['scheme2']:.1f}", f"{100 * row['wape']:.1f}",
                   f"{row['n_scored']}/{row['n_total']}", row["status"]}
        if row.get("s1_skill") is not None:
            figures.add(f"{row['s1_skill']:+.2f}")
        assert figures <= tokens, figures - tokens


def test_no_httpx_request_lines_reach_stderr(scripted_chat, servers, tmp_path):
    proc, url, _ = scripted_chat({"rules": [], "default": "x"}, tmp_path)
    code = ("import logging, sys, httpx\n"
            "logging.basicConfig(level=logging.INFO)  # as lm-eval and datasets turn it on\n"
            "from scitaste_hf.cli import main\n"
            "assert main(['score', '--n-resamples', '0']) == 0\n"
            f"httpx.get('{url}/health')\n"
            "logging.getLogger('httpx').warning('a warning still shows')\n")
    try:
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    finally:
        servers[1](proc)
    assert run.returncode == 0, run.stderr
    assert "HTTP Request" not in run.stderr and "a warning still shows" in run.stderr
