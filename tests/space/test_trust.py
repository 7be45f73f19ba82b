"""Trustworthy verdicts on the board: the no-information floors as reference rows, the order by skill over the
constant floor, rank intervals and the top group, the Compare tab's detectable difference, the re-assessment of
runs stored before the integrity rework, and the store's upgrade of old runs. Service and app functions directly
(the Gradio API is covered in test_space_app.py), on a board built from the bundled example gold (300 papers)."""

import json
import runpy
import sqlite3
from importlib import resources

import numpy as np
import pytest

from scitaste_hf.leaderboard import Leaderboard
from scitaste_hf.leaderboard.integrity import RULE_VERSION
from scitaste_hf.leaderboard.service import FLOOR_NAMES
from scitaste_hf.leaderboard.store import FLAGGED, SELF_REPORTED, Meta, Store
from scitaste_hf.leaderboard.views import order_key
from scitaste_hf.records import load_records
from scitaste_hf.resources import bundled_dir
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.scoring import wape
from scitaste_hf.scoring.inputs import as_answer_matrix

GOLD = load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))
G = as_answer_matrix(GOLD, "gold")
#: Five runs whose WAPEs differ by a quarter of a point each, a point in all: in one mode of their own.
NEAR_WAPES = (0.15, 0.1525, 0.155, 0.1575, 0.16)
NEAR_MODE = "native_search"


def _lines(P, gold=GOLD):
    return [{"bibcode": r["bibcode"], "innovation_score": float(p[0]),
             "dimension_scores": dict(zip(DIMENSIONS, map(float, p[1:])))} for r, p in zip(gold, P)]


def _bytes(P, gold=GOLD):
    return "".join(json.dumps(line) + "\n" for line in _lines(P, gold)).encode()


def _noisy(sd, seed):
    """The labels plus independent errors of SD ``sd``: a judge with information about every paper."""
    return np.clip(G + np.random.default_rng(seed).normal(0, sd, G.shape), 0, 100).round(1)


def _with_wape(target, rng):
    """Labels plus independent errors scaled so that the innovation score's WAPE is ``target`` (to rounding)."""
    Z = rng.normal(0, 1, G.shape)
    low, high = 0.0, 40.0
    for _ in range(40):
        scale = (low + high) / 2
        P = np.clip(G + scale * Z, 0, 100).round(1)
        low, high = (scale, high) if wape(P[:, 0], G[:, 0]) < target else (low, scale)
    return P


@pytest.fixture(scope="module")
def app():
    return runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="test")


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    """A board over the example gold with: a gold + N(0, 10) run, five near runs in a mode of their own, a distant
    run, and a copy of the labels (flagged)."""
    b = Leaderboard(tmp_path_factory.mktemp("trust"), GOLD, rate_limit=(1000, 3600))
    b.ids = {"noisy": b.submit(_bytes(_noisy(10, 1)), "noisy-10", "dimagent_v3").run_id,
             "distant": b.submit(_bytes(_noisy(30, 2)), "distant-30", "pure_qa").run_id}
    rng = np.random.default_rng(0)
    for k, target in enumerate(NEAR_WAPES):
        b.ids[f"near-{k}"] = b.submit(_bytes(_with_wape(target, rng)), f"near-{k}", NEAR_MODE).run_id
    copy = b.submit(_bytes(G), "copycat", "dimagent_v3_native")
    assert copy.status == FLAGGED
    b.ids["copy"] = copy.run_id
    yield b
    b.close()


def _floor(board, name, **filters):
    [row] = [f for f in board.floors(**filters) if f["model"] == FLOOR_NAMES[name]]
    return row


def test_the_constant_floor_has_scheme1_skill_0_within_its_interval(board):
    row = _floor(board, "constant")
    assert row["run"] is None and row["kind"] == "floor" and row["status"] == "reference"
    assert row["s1_skill"] == pytest.approx(0.0, abs=1e-9)
    low, high = row["s1_skill_ci"]
    assert low <= 0.0 <= high and row["s1_above_floor"] is False
    assert row["scheme2_grade"] == "C"  # what knowing nothing earns on Scheme 2 (issue: "grade C")


def test_the_discipline_prior_floor_has_its_own_skill_and_interval(board):
    for scope in (None, "physics"):
        row = _floor(board, "discipline_prior", discipline=scope)
        low, high = row["s1_skill_ci"]
        assert row["s1_skill"] is not None and low <= row["s1_skill"] <= high and high > low, scope
        assert row["s2_skill"] is not None and row["s2_skill_ci"][0] <= row["s2_skill"] <= row["s2_skill_ci"][1]
        assert row["scope"] == (scope or "overall")


def test_an_informative_run_is_ordered_above_both_floors_by_default(board, app):
    rows = board.rows()
    noisy = next(r for r in rows if r["run"] == board.ids["noisy"])
    floors = board.floors()
    assert noisy["s1_skill"] > 0.3 and noisy["s1_above_floor"] is True and noisy["rank"] is not None
    # Scheme 2 would put the constant floor first: WAPE rewards answering the mean
    assert noisy["scheme2"] < _floor(board, "constant")["scheme2"]
    for floor in floors:
        assert order_key(noisy) < order_key(floor), floor["model"]
    assert all(f["runs_above"] >= 1 and f["runs"] == len(rows) for f in floors)
    # the app shows the same: the run with its skill and no "not above floor" mark, the floors in their own table
    table = app["table"](board)
    shown = {row[table["headers"].index("run")]: dict(zip(table["headers"], row)) for row in table["data"]}
    assert shown[board.ids["noisy"]]["vs floor"] == "above"
    reference = app["floors_table"](board)
    assert [r[0] for r in reference["data"]] == [FLOOR_NAMES["constant"], FLOOR_NAMES["discipline_prior"],
                                                 app["CEILING_ROW"]]


def test_floors_are_never_runs(board, app, tmp_path):
    names = set(FLOOR_NAMES.values())
    assert not names & {r["model"] for r in board.rows(include_flagged=True)}
    assert len(board.store.states()) == len(board.ids)  # not stored, so not counted
    choices = app["run_choices"](board)
    assert len(choices) == len(board.ids)
    assert not any(label.split(" ", 1)[1].startswith("floor") for label, _ in choices)
    assert None not in {value for _, value in choices}
    # the Hub copy is the store: runs only
    copies = []
    mirrored = Leaderboard(tmp_path / "lb", GOLD[:30], mirror=lambda store: copies.append(store.snapshot()) or True)
    mirrored.submit(_bytes(_noisy(8, 3)[:30], GOLD[:30]), "m", "pure_qa")
    mirrored.floors()
    mirrored.close()
    (tmp_path / "hub.sqlite").write_bytes(copies[-1])
    with sqlite3.connect(tmp_path / "hub.sqlite") as db:
        assert [m for (m,) in db.execute("SELECT model FROM runs")] == ["m"]


def test_runs_a_point_of_wape_apart_overlap_in_rank_and_share_the_top_group(board):
    rows = board.rows(mode=NEAR_MODE)
    assert sorted(r["model"] for r in rows) == [f"near-{k}" for k in range(5)]
    assert [round(100 * r["wape"], 2) for r in sorted(rows, key=lambda r: r["model"])] == [15.0, 15.25, 15.5, 15.75,
                                                                                             16.0]
    intervals = [r["rank"] for r in rows]
    assert all(a[0] <= b[1] and b[0] <= a[1] for a in intervals for b in intervals), intervals
    assert all(r["top_group"] for r in rows) and any(low < high for low, high in intervals)


def test_compare_says_when_two_runs_cannot_be_told_apart(board, app):
    near = app["compare_table"](board, board.ids["near-0"], board.ids["near-1"])
    row = near[(near["scope"] == "overall") & (near["metric"] == "scheme2")].iloc[0]
    assert row["verdict"] == "not distinguishable" and row["detectable (80% power)"] > abs(row["A - B"])
    far = app["compare_table"](board, board.ids["noisy"], board.ids["distant"])
    row = far[(far["scope"] == "overall") & (far["metric"] == "scheme2")].iloc[0]
    assert row["verdict"] == "A better" and row["A - B"] > row["detectable (80% power)"] > 0
    wape_row = far[(far["scope"] == "overall") & (far["metric"] == "wape")].iloc[0]
    assert wape_row["verdict"] == "A better" and wape_row["A - B"] < 0  # a lower WAPE is better


def test_a_flagged_run_is_never_preselected_or_ranked(board, app):
    everything = board.rows(include_flagged=True)
    copy = next(r for r in everything if r["run"] == board.ids["copy"])
    assert copy["status"] == FLAGGED and copy["rank"] is None and everything[-1] is copy  # shown last, unranked
    assert copy["s1_skill"] > max(r["s1_skill"] for r in everything if r is not copy)  # it would lead otherwise
    first, second = app["default_pair"](board)
    assert board.ids["copy"] not in (first, second) and first == board.rows()[0]["run"]
    assert dict((v, label) for label, v in app["run_choices"](board))[board.ids["copy"]].endswith("[flagged]")
    table = app["table"](board, flagged=True)
    row = dict(zip(table["headers"], table["data"][-1]))
    assert (row["run"], row["rank"], row["top group"]) == (board.ids["copy"], "", "")


def test_undefined_statistics_render_blank(board, app):
    """The discipline prior answers one value per discipline: within a discipline its correlations are undefined,
    and so are they for a constant run; both show as blank (None) cells, never as text."""
    table = app["floors_table"](board, discipline="physics")
    prior = dict(zip(table["headers"], table["data"][1]))
    assert prior["reference row"] == FLOOR_NAMES["discipline_prior"] and prior["Spearman"] is None
    b = Leaderboard(board.store.root.parent / "blank", GOLD[:30], rate_limit=(1000, 3600))
    b.submit(_bytes(np.full((30, 8), 50.0), GOLD[:30]), "constant", "pure_qa")
    table = app["table"](b)
    row = dict(zip(table["headers"], table["data"][0]))
    shown = dict(zip(table["headers"], table["metadata"]["display_value"][0]))
    assert row["Spearman"] is None and row["Pearson"] is None and shown["Spearman"] == shown["Pearson"] == ""
    b.close()


def test_a_view_is_cached_until_the_store_changes_whoever_writes(board, tmp_path):
    b = Leaderboard(tmp_path / "lb", GOLD[:30], rate_limit=(1000, 3600))
    b.submit(_bytes(_noisy(8, 4)[:30], GOLD[:30]), "first", "pure_qa")
    generation = b.generation()
    assert b.generation() == generation and [r["model"] for r in b.rows()] == ["first"]
    other = Leaderboard(tmp_path / "lb", GOLD[:30], rate_limit=(1000, 3600))  # another process on the same folder
    other.submit(_bytes(_noisy(12, 5)[:30], GOLD[:30]), "second", "pure_qa")
    assert b.generation() != generation
    rows = b.rows()
    assert [r["model"] for r in rows] == ["first", "second"] and all(r["rank"] for r in rows)
    other.close()
    b.close()


def test_a_rescored_run_shows_its_new_numbers_and_status(app, tmp_path):
    """What the board keeps per run (its formatted scores) goes when the run is rescored; a new status shows."""
    b = Leaderboard(tmp_path / "lb", GOLD[:30], rate_limit=(1000, 3600))
    run = b.submit(_bytes(_noisy(8, 7)[:30], GOLD[:30]), "m", "pure_qa").run_id
    before = dict(zip(app["COLUMNS"], app["table"](b)["data"][0]))
    stored = b.store.run(run)
    summary = json.loads(stored["summary"])
    summary["overall"]["s1_skill"] = 0.123456
    b.store.set_derived(run, summary, json.loads(stored["result"]), b.store.replicates_of(run), b.derived_key)
    after = dict(zip(app["COLUMNS"], app["table"](b)["data"][0]))
    assert before["S1 skill"] != 0.123 and after["S1 skill"] == 0.123
    b.store.set_status(run, "evidence-consistent", RULE_VERSION)
    assert dict(zip(app["COLUMNS"], app["table"](b)["data"][0]))["status"] == "evidence-consistent"
    b.close()


# -- stores written before this version ---------------------------------------------------------------------------

#: The runs table as the previous version created it (no integrity_version, derived, replicates).
OLD_SCHEMA = """
CREATE TABLE runs (id INTEGER PRIMARY KEY AUTOINCREMENT, sha256 TEXT NOT NULL UNIQUE, model TEXT NOT NULL,
    mode TEXT NOT NULL, organisation TEXT NOT NULL DEFAULT '', link TEXT NOT NULL DEFAULT '',
    kind TEXT NOT NULL DEFAULT 'submission', status TEXT NOT NULL, submitter TEXT NOT NULL DEFAULT '',
    submitted_at TEXT NOT NULL, n_scored INTEGER NOT NULL, n_total INTEGER NOT NULL, summary TEXT NOT NULL,
    result TEXT NOT NULL);
CREATE TABLE hub_pending (sha256 TEXT PRIMARY KEY);
"""


def _old_store(folder, runs):
    """A store as the previous version left it: its layout, and each run with the status the old rule gave it
    and the summary it stored (no skill)."""
    folder.mkdir(parents=True)
    with sqlite3.connect(folder / "leaderboard.sqlite") as db:
        db.executescript(OLD_SCHEMA)
    store = Store(folder)
    with sqlite3.connect(folder / "leaderboard.sqlite") as db:
        db.execute("PRAGMA user_version = 0")  # as if written before the migration
    for key, (model, P, status) in runs.items():
        meta = Meta(model=model, mode="pure_qa", submitted_at="2026-11-01T00:00:00+00:00")
        store.store_submission(key, _bytes(P, GOLD[:30]), meta, {})
        store.insert(key, meta, status, {"overall": {"scheme2": 99.0, "scheme2_grade": "A"}}, {}, 30, 30)
    store.close()


def test_an_old_store_is_reassessed_once_and_an_old_copy_is_flagged(tmp_path):
    g = G[:30]
    _old_store(tmp_path / "lb", {"a" * 64: ("copy +0.6", (g + 0.6).round(2), SELF_REPORTED),
                                 "b" * 64: ("honest", _noisy(8, 6)[:30], SELF_REPORTED)})
    board = Leaderboard(tmp_path / "lb", GOLD[:30], background_upgrade=False)
    statuses = {r["model"]: r["status"] for r in board.rows(include_flagged=True)}
    assert statuses == {"copy +0.6": FLAGGED, "honest": SELF_REPORTED}
    assert [r["model"] for r in board.rows()] == ["honest"]
    honest = board.rows()[0]
    assert honest["s1_skill"] is not None and honest["rank"] == (1, 1) and honest["scheme2"] < 99.0  # rescored
    assert set(board.store.replicates_of(honest["run"])) == set(board.scopes)
    assert board.store.stale(RULE_VERSION, board.derived_key) == []
    board.close()
    with sqlite3.connect(tmp_path / "lb" / "leaderboard.sqlite") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] >= 1
    again = Leaderboard(tmp_path / "lb", GOLD[:30])  # idempotent: nothing left, no upgrade started
    assert again.upgrading is None and again.upgrade() == 0
    again.close()


def test_the_upgrade_runs_in_the_background_by_default(tmp_path):
    _old_store(tmp_path / "lb", {"c" * 64: ("copy", G[:30].round(0), SELF_REPORTED)})
    board = Leaderboard(tmp_path / "lb", GOLD[:30])
    assert board.upgrading is not None
    board.upgrading.join(60)
    assert [r["status"] for r in board.rows(include_flagged=True)] == [FLAGGED]
    board.close()


def test_the_scheme2_chart_draws_modes_side_by_side(board, app):
    fig = app["scheme2_chart"](board)
    ax = fig.axes[0]
    bars = [p for p in ax.patches]
    data = app["scheme2_by_model"](board)
    assert len(bars) == len(data) and all(bar.get_y() == 0 for bar in bars)  # none stacked on another
    assert sorted(round(bar.get_height(), 6) for bar in bars) == sorted(round(v, 6) for v in data["Scheme-2"])
    assert len({round(bar.get_x(), 6) for bar in bars}) == len(bars)  # each at its own place
    assert max(bar.get_height() for bar in bars) <= 100


def test_the_status_column_fits_its_longest_status(app):
    columns, widths = app["COLUMNS"], app["WIDTHS"]
    assert len(columns) == len(widths) and len(app["FLOOR_COLUMNS"]) == len(app["FLOOR_WIDTHS"])
    # about 7.5 px a character at the table's 14 px font, plus the cell's 8 px padding on each side
    assert int(widths[columns.index("status")].removesuffix("px")) >= 7.5 * len("evidence-consistent") + 16
    assert int(widths[columns.index("vs floor")].removesuffix("px")) >= 7.5 * len("not above floor") + 16
