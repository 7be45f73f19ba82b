"""`scitaste release diff` on small hand-made releases whose every statistic is known: membership per split,
citation changes and the direction check, the drift of each score (distribution and per paper), quartile moves,
runs re-scored on both golds with paired intervals, the order of runs and their resolved differences, a leaderboard
store as the source of runs, and one-line errors for bad input."""

import json
import re
import shutil
from datetime import date
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import ks_2samp

from scitaste_hf.builder.layout import write_dataset
from scitaste_hf.release import diff_releases
from scitaste_hf.release.drift import score_quartiles
from scitaste_hf.release.folder import CITATION_COUNTS_FILE, provenance, read_release
from scitaste_hf.release.rescore import Run, load_runs
from scitaste_hf.schema import DIMENSIONS, Failure, record_features
from scitaste_hf.taxonomy import load_taxonomy
from scitaste_hf.weights import DEFAULT_WEIGHTS

BOOT = {"n_resamples": 200, "seed": 0}


def paper(bibcode, split, score, *, year=2010, discipline="physics", dims=None):
    return {"bibcode": bibcode, "split": split, "year": year, "discipline": discipline, "innovation_score": score,
            "dimension_scores": dims or dict.fromkeys(DIMENSIONS, score)}


def release(folder, papers, *, as_of=None, counts=None, graph=None, recorded=True):
    """A release folder as `scitaste build` writes it, from hand-made papers."""
    splits = {"selected": [], "backup": []}
    for p in papers:
        record = {**dict.fromkeys(record_features()), **{k: v for k, v in p.items() if k != "split"}}
        splits[p["split"]].append(record)
    extra = {CITATION_COUNTS_FILE: json.dumps(counts)} if counts is not None else {}
    made = provenance(as_of, DEFAULT_WEIGHTS, load_taxonomy(),
                      graph or {"papers": len(papers), "works_around": 0, "citations": 0}) if recorded else None
    return read_release(write_dataset(folder, splits, DEFAULT_WEIGHTS, synthetic=True, extra_files=extra,
                                      provenance=made))


@pytest.fixture()
def pair(tmp_path):
    old = release(tmp_path / "old", [paper("p1", "selected", 10), paper("p2", "selected", 20),
                                     paper("p3", "backup", 30), paper("p4", "backup", 40),
                                     paper("p5", "backup", 50), paper("p6", "backup", 60)],
                  as_of=date(2019, 12, 31), counts={"p1": 5, "p2": 3, "p3": 0, "p4": 10, "p5": 1, "p6": 2},
                  graph={"papers": 6, "works_around": 40, "citations": 21})
    new = release(tmp_path / "new", [paper("p2", "selected", 25), paper("p3", "selected", 30),
                                     paper("p4", "backup", 45), paper("p5", "backup", 50),
                                     paper("p6", "backup", 60), paper("p7", "selected", 70, year=2022)],
                  as_of=date(2024, 12, 31), counts={"p2": 4, "p3": 0, "p4": 15, "p5": 1, "p6": 2, "p7": 1},
                  graph={"papers": 6, "works_around": 55, "citations": 23})
    return old, new


def test_membership_citations_and_the_direction(pair):
    old, new = pair
    assert old.as_of == date(2019, 12, 31) and new.provenance["graph"]["works_around"] == 55
    report = diff_releases(old, new, **BOOT)
    assert report["shared"] == 5
    m = report["membership"]
    assert m["selected"] == {"old": 2, "new": 3, "stayed": 1, "left": {"to_other_split": 0, "out_of_release": 1},
                             "joined": {"from_other_split": 1, "new_to_release": 1}}
    assert m["backup"] == {"old": 4, "new": 3, "stayed": 3, "left": {"to_other_split": 1, "out_of_release": 0},
                           "joined": {"from_other_split": 0, "new_to_release": 0}}
    assert m["published_after_old_as_of"] == {"year_after": 2019, "in_new": 1, "in_old": 0}
    c = report["citations"]
    assert (c["n"], c["grew"], c["same"], c["fell"], c["total_old"], c["total_new"]) == (5, 2, 3, 0, 16, 22)
    assert c["mean_change"]["value"] == pytest.approx(1.2) and c["median_change"]["value"] == 0
    lo, hi = c["mean_change"]["interval"]
    assert 0 <= lo <= 1.2 <= hi <= 5  # the largest change is +5 (p4), the smallest 0
    d = report["direction"]
    assert d["new_is_later"] and d["as_expected"] is True
    assert d["graph"] == {"papers": [6, 6], "works_around": [40, 55], "citations": [21, 23]}


def test_a_count_that_fell_or_a_later_paper_in_the_old_release_is_not_the_expected_direction(tmp_path, pair):
    old, new = pair
    fell = release(tmp_path / "fell", [paper("p2", "selected", 25), paper("p9", "backup", 5, year=2021)],
                   as_of=date(2024, 12, 31), counts={"p2": 2, "p9": 0})
    d = diff_releases(old, fell, **BOOT)["direction"]
    assert d["citations_fell"] == 1 and d["as_expected"] is False
    # compared the other way round, the newer release is OLD: the check does not apply
    backwards = diff_releases(new, old, **BOOT)["direction"]
    assert backwards["new_is_later"] is False and backwards["as_expected"] is None
    # an "as of 2019" release holding a paper of 2021 is not one
    late = release(tmp_path / "late", [paper("p2", "selected", 20), paper("p9", "backup", 5, year=2021)],
                   as_of=date(2019, 12, 31), counts={"p2": 3, "p9": 0})
    d = diff_releases(late, new, **BOOT)["direction"]
    assert (d["citations_fell"], d["newer_papers_in_old"], d["as_expected"]) == (0, 1, False)


def test_drift_per_score_as_distributions_and_per_paper(tmp_path):
    x = np.linspace(5, 95, 40)
    rows_old, rows_new = [], []
    for i, v in enumerate(x):
        dims = dict.fromkeys(DIMENSIONS, float(v))
        rows_old.append(paper(f"p{i:02d}", "backup", float(v), dims=dims))
        # the composite moves up 5 for everyone; disruptiveness is turned upside down; the rest stays
        rows_new.append(paper(f"p{i:02d}", "backup", float(v) + 5,
                              dims={**dims, "disruptiveness": float(100 - v)}))
    report = diff_releases(release(tmp_path / "a", rows_old), release(tmp_path / "b", rows_new), **BOOT)
    drift = report["drift"]
    up = drift["innovation_score"]
    assert up["distribution"]["shift"] == pytest.approx(5.0)
    lo, hi = up["distribution"]["interval"]
    assert lo < 5 < hi  # two samples resampled apart: the interval is wide, and around the shift
    assert up["distribution"]["ks"] == pytest.approx(ks_2samp(x, x + 5).statistic)
    per = up["per_paper"]
    assert per["mean_change"]["value"] == pytest.approx(5) and per["mean_change"]["interval"] == pytest.approx([5, 5])
    assert per["spearman"]["value"] == pytest.approx(1) and per["spearman"]["interval"] == pytest.approx([1, 1])
    assert drift["disruptiveness"]["per_paper"]["spearman"]["value"] == pytest.approx(-1)
    assert drift["disruptiveness"]["per_paper"]["largest"][0] == {"bibcode": "p00", "old": 5.0, "new": 95.0}
    still = drift["journal_impact"]
    assert still["distribution"]["ks"] == 0 and still["per_paper"]["mean_abs_change"]["value"] == 0
    assert report["citations"] is None and report["direction"]["as_expected"] is None  # no as-of dates, no counts


def test_selected_papers_that_move_quartile(tmp_path):
    assert score_quartiles([1, 2, 3, 4, 5, 6, 7, 8]).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    scores = [1, 2, 3, 4, 5, 6, 7, 8]
    swapped = [8, 2, 3, 4, 5, 6, 7, 1]  # the lowest and the highest trade places
    old = release(tmp_path / "a", [paper(f"p{i}", "selected", s) for i, s in enumerate(scores)]
                  + [paper("q", "backup", 4.5, discipline="finance")])
    new = release(tmp_path / "b", [paper(f"p{i}", "selected", s) for i, s in enumerate(swapped)]
                  + [paper("q", "backup", 4.5, discipline="finance")])
    moves = diff_releases(old, new, **BOOT)["quartile_moves"]
    assert (moves["n"], moves["moved"], moves["share"]) == (8, 2, 0.25)
    assert moves["transitions"][0][3] == 1 and moves["transitions"][3][0] == 1
    assert sum(moves["transitions"][q][q] for q in range(4)) == 6
    assert 0 <= moves["interval"][0] <= 0.25 <= moves["interval"][1] <= 1
    assert diff_releases(old, old, **BOOT)["quartile_moves"]["moved"] == 0


def _answer(record):
    from scitaste_hf.scoring import validate_answer

    return validate_answer({"innovation_score": record["innovation_score"],
                            "dimension_scores": record["dimension_scores"]})


def _gold(n, seed, shift=0.0):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        dims = {k: float(np.clip(rng.uniform(5, 95) + shift, 0, 100)) for k in DIMENSIONS}
        out.append(paper(f"p{i:02d}", "selected", float(np.clip(rng.uniform(5, 95) + shift, 0, 100)), dims=dims))
    return out


def test_runs_rescored_on_both_golds_with_paired_intervals(tmp_path):
    g_old, g_new = _gold(40, 1), _gold(40, 2)  # the gold changed completely
    old, new = release(tmp_path / "a", g_old), release(tmp_path / "b", g_new)
    knows_old = Run("knows-old", {r["bibcode"]: _answer(r) for r in g_old})
    knows_new = Run("knows-new", {**{r["bibcode"]: _answer(r) for r in g_new}, "p00": Failure("timeout")})
    elsewhere = Run("elsewhere", {"zz": _answer(g_old[0])})
    report = diff_releases(old, new, [knows_old, knows_new, elsewhere], **BOOT)
    first, second, third = report["runs"]
    s1 = first["scheme1"]
    assert first["n"] == 40 and s1["old"]["value"] == pytest.approx(100)
    assert s1["change"]["value"] == pytest.approx(s1["new"]["value"] - 100)
    assert s1["change"]["interval"][1] < 0 and s1["change"]["resolved"] is True
    assert s1["old"]["interval"] == pytest.approx([100, 100])  # perfect on every resample
    assert second["n"] == 39 and second["scheme1"]["change"]["value"] > 0  # a failure is not scored
    assert third == {"run": "elsewhere", "n": 0, "scheme1": None, "scheme2": None}
    k = report["conclusions"]
    assert k["order_old"] == ["knows-old", "knows-new"] and k["order_new"] == ["knows-new", "knows-old"]
    assert k["order_changed"] is True
    (pair,) = k["pairs"]  # the run with no shared paper has no pair
    assert pair["n"] == 39 and pair["old"]["resolved"] and pair["new"]["resolved"]
    assert pair["old"]["difference"] > 0 > pair["new"]["difference"] and pair["changed"] is True
    assert k["conclusions_changed"] == ["knows-old vs knows-new"]


def test_an_unchanged_release_changes_no_score_and_no_conclusion(tmp_path):
    gold = _gold(30, 3)
    old = release(tmp_path / "a", gold)
    run = Run("r", {r["bibcode"]: _answer({**r, "innovation_score": 50.0}) for r in gold})
    report = diff_releases(old, old, [run, Run("s", {r["bibcode"]: _answer(r) for r in gold})], **BOOT)
    change = report["runs"][0]["scheme2"]["change"]
    assert change == {"value": 0.0, "interval": [0.0, 0.0], "resolved": False}
    assert report["conclusions"]["order_changed"] is False and report["conclusions"]["conclusions_changed"] == []


def test_runs_from_a_leaderboard_store_and_from_files(tmp_path):
    from scitaste_hf.leaderboard.store import Meta, Store

    line = json.dumps({"bibcode": "p1", "innovation_score": 40.0, "dimension_scores": dict.fromkeys(DIMENSIONS, 40.0)})
    store = Store(tmp_path / "board")
    meta = Meta(model="m-1", mode="pure_qa", submitted_at="2026-01-01T00:00:00")
    store.store_submission("abc", (line + "\n").encode(), meta, {})
    store.insert("abc", meta, "self-reported", {}, {}, 1, 1)
    store.close()
    (tmp_path / "run.jsonl").write_text(line + "\n")
    runs = load_runs([tmp_path / "board", tmp_path / "run.jsonl"])
    assert [r.label for r in runs] == ["#1 m-1 (pure_qa)", "run.jsonl"]
    assert runs[0].predictions["p1"].innovation_score == 40.0


def test_a_store_whose_row_names_a_file_outside_it_is_one_line(tmp_path, pair, capsys):
    # the row's sha256 names the submission file: "../../x" read a .jsonl anywhere on the machine as a run
    import sqlite3

    from scitaste_hf.leaderboard.store import Meta, Store

    old, new = pair
    outside = tmp_path / "outside.jsonl"
    outside.write_text(json.dumps({"bibcode": "p1", "innovation_score": 40.0,
                                   "dimension_scores": dict.fromkeys(DIMENSIONS, 40.0)}) + "\n")
    store = Store(tmp_path / "board")
    meta = Meta(model="m-1", mode="pure_qa", submitted_at="2026-01-01T00:00:00")
    store.store_submission("abc", outside.read_bytes(), meta, {})
    store.insert("abc", meta, "self-reported", {}, {}, 1, 1)
    store.close()
    with sqlite3.connect(tmp_path / "board" / "leaderboard.sqlite") as db:
        db.execute("UPDATE runs SET sha256 = '../../outside'")
    _one_line(capsys, [old.path, new.path, "--runs", tmp_path / "board"],
              r"^--runs \S+board: run #1 names its file '\.\./\.\./outside', which is not a file of the store$")


def test_bad_input_is_one_line(tmp_path, pair, capsys):
    from scitaste_hf.cli import main

    old, _ = pair
    lonely = release(tmp_path / "lonely", [paper("x1", "selected", 10)], recorded=False)
    assert lonely.provenance == {} and lonely.as_of is None and lonely.citations == {}
    (tmp_path / "empty").mkdir()
    broken = Path(shutil.copytree(old.path, tmp_path / "broken"))
    (broken / "README.md").write_text("---\nfoo: [unclosed\n---\n")
    undated = Path(shutil.copytree(old.path, tmp_path / "undated"))
    card = (undated / "README.md").read_text()
    (undated / "README.md").write_text(card.replace("as_of: '2019-12-31'", "as_of: someday"))
    cases = [([str(broken), str(old.path)], "README.md's card metadata is not valid YAML (did not find expected"),
             ([str(undated), str(old.path)], "as_of 'someday' is not an ISO date"),
             ([str(tmp_path / "empty"), str(old.path)], f"OLD {tmp_path / 'empty'} is not a release folder"),
             ([str(old.path), str(lonely.path)], "share no paper"),
             ([str(old.path), str(old.path), "--runs", str(tmp_path)], "neither a predictions file nor a leaderboard")]
    for args, message in cases:
        assert main(["release", "diff", *args]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and message in err[0], err


# -- hostile folders ------------------------------------------------------------------------------------------------

def _diff(capsys, *args):
    """Exit status, stdout and the stderr lines of ``scitaste release diff ARGS``."""
    from scitaste_hf.cli import main

    code = main(["release", "diff", *map(str, args), "--n-resamples", "0"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err.strip().splitlines()


def _one_line(capsys, args, message):
    code, out, err = _diff(capsys, *args)
    assert code == 2 and out == "" and len(err) == 1, (code, out, err)
    assert re.search(message, err[0].removeprefix("scitaste: error: ")), err


def _with_split(folder, rows, tmp_path, name):
    """A copy of a release folder whose selected split is ``rows``, as any Parquet writer may write them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    copy = Path(shutil.copytree(folder, tmp_path / name))
    for part in (copy / "data").glob("selected-*.parquet"):
        part.unlink()
    pq.write_table(pa.Table.from_pylist(rows), copy / "data" / "selected-00000-of-00001.parquet")
    return copy


@pytest.mark.parametrize(("change", "message"), [
    ({"innovation_score": None}, r"record 1 \(p1\): innovation_score must be a number from 0 to 100, got None"),
    ({"innovation_score": float("nan")}, r"record 1 \(p1\): innovation_score must be a number from 0 to 100, got nan"),
    ({"dimension_scores": {**dict.fromkeys(DIMENSIONS, 1.0), "citation_impact": float("inf")}},
     r"record 1 \(p1\): dimension_scores\.citation_impact must be a number from 0 to 100, got inf"),
    # finite, and the drift's sums overflowed to inf (RuntimeWarnings, then null statistics)
    ({"innovation_score": 1e308}, r"record 1 \(p1\): innovation_score must be a number from 0 to 100, got 1e\+308"),
    ({"dimension_scores": {**dict.fromkeys(DIMENSIONS, 1.0), "team_collaboration": -0.5}},
     r"record 1 \(p1\): dimension_scores\.team_collaboration must be a number from 0 to 100, got -0\.5"),
    ({"dimension_scores": None}, r"record 1 \(p1\): dimension_scores must map each of the 7 dimensions to its score"),
    ({"discipline": None}, r"record 1 \(p1\): discipline must be a non-empty string, got None"),
    ({"year": "2010"}, r"record 1 \(p1\): year must be an integer or null, got '2010'"),
])
def test_a_record_without_its_scores_discipline_or_year_is_one_line(tmp_path, pair, capsys, change, message):
    old, new = pair
    rows = [{**r, **change} if r["bibcode"] == "p1" else r for r in old.splits["selected"]]
    if change.get("year") == "2010":  # one type per column in Parquet: every year a string
        rows = [{**r, "year": str(r["year"])} for r in rows]
    bad = _with_split(old.path, rows, tmp_path, "bad")
    _one_line(capsys, [bad, new.path], rf"^OLD {re.escape(str(bad))}/data/selected-00000-of-00001\.parquet: {message}")


def test_a_paper_held_twice_is_one_line(tmp_path, pair, capsys):
    # records() keeps one of them: the counts of every table were silently off by the repeats
    old, new = pair
    rows = old.splits["selected"]
    twice = _with_split(old.path, [*rows, rows[0]], tmp_path, "twice")
    _one_line(capsys, [twice, new.path], r"^OLD \S+/selected-00000-of-00001\.parquet: record 3 \(p1\) repeats the "
                                         r"paper of selected record 1 of selected-00000-of-00001\.parquet; a release "
                                         r"holds each paper once$")
    both = _with_split(new.path, [*new.splits["selected"], new.splits["backup"][0]], tmp_path, "both")
    code, _, err = _diff(capsys, old.path, both)
    assert code == 2 and len(err) == 1
    assert re.search(r"record 1 \(p4\) repeats the paper of selected record 4 of ", err[0])


def test_a_split_part_that_is_not_a_regular_file_is_one_line(tmp_path, pair, capsys):
    import os

    old, new = pair
    copy = Path(shutil.copytree(old.path, tmp_path / "fifo"))
    os.mkfifo(copy / "data" / "backup-00001-of-00002.parquet")  # nobody writes it
    _one_line(capsys, [copy, new.path], r"^OLD \S+backup-00001-of-00002\.parquet is not a regular file$")


def test_a_paper_without_a_year_is_not_counted_as_published_after(tmp_path, pair):
    old, new = pair
    rows = [{**r, "year": None} for r in new.splits["selected"]]
    undated = read_release(_with_split(new.path, rows, tmp_path, "undated"))
    after = diff_releases(old, undated, n_resamples=0, seed=0)["membership"]["published_after_old_as_of"]
    assert after == {"year_after": 2019, "in_new": 0, "in_old": 0}  # p7 (2022) lost its year


def _card(folder, tmp_path, name, edit):
    copy = Path(shutil.copytree(folder, tmp_path / name))
    card = copy / "README.md"
    card.write_text(edit(card.read_text()))
    return copy


def test_hostile_cards_and_citation_counts_are_one_line(tmp_path, pair, capsys):
    old, new = pair
    laughs = "\n".join([f"l0: &l0 [{', '.join(['lol'] * 9)}]"] + [
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 10)])
    bomb = _card(old.path, tmp_path, "bomb", lambda t: t.replace("---\n", f"---\n{laughs}\n", 1))
    _one_line(capsys, [bomb, new.path], r"README\.md's card metadata has more than 1,000,000 values once its aliases")
    graph = _card(old.path, tmp_path, "graph", lambda t: t.replace("  graph:\n", "  graph: lots\n  old_graph:\n"))
    _one_line(capsys, [graph, new.path], r"^OLD \S+graph/README\.md: scitaste_release\.graph must be a mapping of "
                                         r"papers, works_around, citations to counts, got 'lots'$")
    works = _card(old.path, tmp_path, "works", lambda t: t.replace("works_around: 40", "works_around: .nan"))
    _one_line(capsys, [works, new.path], r"scitaste_release\.graph\.works_around must be a count, got nan$")
    listed = _card(old.path, tmp_path, "listed", lambda t: t.replace("scitaste_release:\n", "scitaste_release: [1]\n"
                                                                                           "old_release:\n"))
    _one_line(capsys, [listed, new.path], r"scitaste_release must be a mapping")

    def counts(name, data):
        copy = Path(shutil.copytree(old.path, tmp_path / name))
        (copy / CITATION_COUNTS_FILE).write_bytes(data)
        return copy

    huge = counts("huge", json.dumps({"p1": 10**400}).encode())
    _one_line(capsys, [huge, new.path], r"citation_counts\.json: 'p1' must be a citation count \(0 to "
                                        r"1,000,000,000\), got 1000000000000000000000")
    deep = counts("deep", b'{"p1": ' + b"[" * 200_000 + b"]" * 200_000 + b"}")
    _one_line(capsys, [deep, new.path], r"^OLD \S+citation_counts\.json is nested more than 64 deep$")
    latin = counts("latin", '{"p1": 1, "M\xfcller": 2}'.encode("latin-1"))
    _one_line(capsys, [latin, new.path], r"^OLD \S+citation_counts\.json is not UTF-8 text \(byte 12 is 0xfc\)")
    boolean = counts("boolean", b'{"p1": true}')
    _one_line(capsys, [boolean, new.path], r"'p1' must be a citation count \(0 to 1,000,000,000\), got True")


def test_nan_in_the_provenance_is_written_as_null(tmp_path, pair, capsys):
    old, new = pair
    nan = _card(old.path, tmp_path, "nan", lambda t: t.replace("citation_impact: 0.29", "citation_impact: .nan #"))
    code, out, err = _diff(capsys, nan, new.path, "--json", tmp_path / "d.json")
    assert code == 0 and err == [] and "wrote" in out
    report = json.loads((tmp_path / "d.json").read_text())  # strict JSON: no NaN
    assert report["old"]["provenance"]["weights"]["citation_impact"] is None
    weight = report["new"]["provenance"]["weights"]["citation_impact"]
    assert weight == pytest.approx(DEFAULT_WEIGHTS["citation_impact"])
    assert report["old"]["provenance"]["as_of"] == "2019-12-31"


def test_user_text_is_printed_as_written(tmp_path, pair, capsys):
    """A folder or a run named like rich markup is printed as it is, not parsed (a MarkupError before)."""
    old, new = pair
    odd = Path(shutil.copytree(old.path, tmp_path / "[/bold] [red]x"))
    run = tmp_path / "[red]run.jsonl"
    run.write_text(json.dumps({"bibcode": "p2", "innovation_score": 20.0,
                               "dimension_scores": dict.fromkeys(DIMENSIONS, 20.0)}) + "\n")
    code, out, err = _diff(capsys, odd, new.path, "--runs", run)
    assert code == 0 and err == []
    assert f"OLD {odd} " in out and "[red]run.jsonl" in out


def test_runs_of_a_foreign_sqlite_file_are_refused_and_it_is_left_as_it_was(tmp_path, pair, capsys):
    import hashlib
    import sqlite3

    old, new = pair
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    db = sqlite3.connect(foreign / "leaderboard.sqlite")
    db.execute("CREATE TABLE notes (text TEXT)")
    db.execute("INSERT INTO notes VALUES ('mine')")
    db.commit()
    db.close()
    digest = hashlib.sha256((foreign / "leaderboard.sqlite").read_bytes()).hexdigest()
    _one_line(capsys, [old.path, new.path, "--runs", foreign],
              r"^\S+leaderboard\.sqlite is not a leaderboard store of this version \(layout 0, tables notes; ")
    assert hashlib.sha256((foreign / "leaderboard.sqlite").read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in foreign.iterdir()) == ["leaderboard.sqlite"]  # no submissions/ folder made
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "leaderboard.sqlite").write_bytes(b"not a database at all" * 100)
    _one_line(capsys, [old.path, new.path, "--runs", garbage],
              r"^\S+leaderboard\.sqlite is not a leaderboard store \(file is not a database\)$")
