"""`scitaste ratings report` and `export` over a Space's data folder: the runs scored against the expert consensus by
the same code as against the gold, the random rater pointed out, nothing written to the board."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from scitaste_hf.cli import main
from scitaste_hf.leaderboard.service import _compact
from scitaste_hf.leaderboard.setup import open_leaderboard
from scitaste_hf.predictions import parse_predictions
from scitaste_hf.ratings import NUMBERS, open_ratings
from scitaste_hf.scoring import score_run

#: Honest raters' error SDs; the fourth rater answers at random.
HONEST = {"local:ann": 8.0, "local:bob": 12.0, "local:cy": 10.0}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A Space's data folder: the example run and a second one, and every physics paper rated by three of four raters
    taking turns, three honest and one random (through the service, as the Annotate tab stores them: the assignment
    completes each paper's panel of three before it opens the next)."""
    data = tmp_path_factory.mktemp("space-data")
    board, _ = open_leaderboard(data)
    gold = board.gold
    rng = np.random.default_rng(11)
    def noisy(x):
        return float(np.clip(x + rng.normal(0, 6), 0, 100))

    lines = [{"bibcode": r["bibcode"], "innovation_score": noisy(r["innovation_score"]),
              "dimension_scores": {k: noisy(v) for k, v in r["dimension_scores"].items()}} for r in gold]
    board.submit("".join(json.dumps(line) + "\n" for line in lines).encode(), "Model-B", "pure_qa", kind="baseline")
    ratings = open_ratings(board)
    truth = {r["bibcode"]: np.array([r["innovation_score"], *(r["dimension_scores"][d] for d in NUMBERS[1:])])
             for r in gold}
    raters = (*HONEST, "local:dice")
    physics = [r for r in gold if r["discipline"] == "physics"]
    for k in range(3 * len(physics)):
        rater = raters[k % len(raters)]
        paper = ratings.next_paper(rater, "physics")
        values = rng.uniform(0, 100, 8) if rater == "local:dice" else \
            np.clip(truth[paper["bibcode"]] + rng.normal(0, HONEST[rater], 8), 0, 100)
        ratings.rate(rater, paper["bibcode"], [float(v) for v in values])
    pseudonyms = {rater: ratings.pseudonym(rater) for rater in (*HONEST, "local:dice")}
    stored = ratings.store.ratings()
    ratings.close()
    board.close()
    return data, gold, pseudonyms, stored


@pytest.fixture(scope="module")
def report(folder, tmp_path_factory):
    data, *_ = folder
    out = tmp_path_factory.mktemp("report") / "report.json"
    before = {p.name: p.stat().st_mtime_ns for p in data.iterdir() if p.name.startswith("leaderboard.sqlite")}
    assert main(["ratings", "report", "--data", str(data), "--json", str(out), "--n-resamples", "300"]) == 0
    after = {p.name: p.stat().st_mtime_ns for p in data.iterdir() if p.name.startswith("leaderboard.sqlite")}
    assert after == before  # the board was read, not written
    return json.loads(out.read_text())


def test_the_random_rater_is_pointed_out(report, folder, capsys):
    _, _, pseudonyms, _ = folder
    assert report["flagged"] == [pseudonyms["local:dice"]]
    _, _, _, stored = folder
    honest_only = {r["bibcode"] for r in stored} - {r["bibcode"] for r in stored if r["rater"] == "local:dice"}
    assert report["n_papers_enough"] == len(honest_only) >= 10
    assert report["n_raters"] == 4 and report["n_ratings"] == 150 and report["n_ratings_waiting"] == 0
    assert not any("local:" in json.dumps(r) for r in report["raters"])  # pseudonyms only


def test_a_run_is_scored_against_the_consensus_by_the_same_code_as_against_the_gold(report, folder):
    """The report's numbers for each run are score_run's, called here directly: once with the gold of the physics
    papers, once with records whose numbers are the honest raters' mean ratings (computed here by hand)."""
    data, gold, _, stored = folder
    honest = [r for r in stored if r["rater"] in HONEST]
    dice = {r["bibcode"] for r in stored if r["rater"] == "local:dice"}
    physics = [r for r in gold if r["discipline"] == "physics" and r["bibcode"] not in dice]
    consensus = [{**r, "innovation_score": float(np.mean([x["innovation_score"] for x in honest
                                                         if x["bibcode"] == r["bibcode"]])),
                  "dimension_scores": {d: float(np.mean([x[d] for x in honest if x["bibcode"] == r["bibcode"]]))
                                       for d in NUMBERS[1:]}} for r in physics]
    assert [r["model"] for r in report["runs"]] == ["Model-B", "synthetic-example-model"]
    for run in report["runs"]:
        sha = next(p for p in (data / "submissions").glob("*.meta.json")
                   if json.loads(p.read_text())["model"] == run["model"]).name.split(".")[0]
        answers = parse_predictions((data / "submissions" / f"{sha}.jsonl").read_text().splitlines(), "run")
        for side, references in (("gold", physics), ("experts", consensus)):
            keep = {r["bibcode"] for r in references}
            expected = _compact(score_run(references, {b: a for b, a in answers.items() if b in keep},
                                          n_resamples=300)["overall"])
            assert json.loads(json.dumps(expected)) == run[side], (run["model"], side)
        assert run["gold"]["scheme1"] != run["experts"]["scheme1"]  # two references, two scores


def test_the_report_prints_every_table(folder, capsys):
    data, _, pseudonyms, _ = folder
    assert main(["ratings", "report", "--data", str(data), "--n-resamples", "100", "--runs", "0"]) == 0
    printed = capsys.readouterr().out
    for text in ("Inter-rater reliability", "Expert consensus against the bibliometric gold", "FLAGGED",
                 pseudonyms["local:dice"], "ratings per paper", "150 ratings of 50 papers by 4 raters", "SYNTHETIC"):
        assert text in printed, text
    assert "Runs scored against" not in printed  # --runs 0


def test_export_writes_the_configuration(folder, tmp_path):
    import datasets

    data, _, pseudonyms, _ = folder
    assert main(["ratings", "export", "--data", str(data), "--out", str(tmp_path / "export-cli")]) == 0
    # a folder name of this test's own: datasets caches a local folder's dataset by the folder's name and its card
    # (not its files' contents), so another test's export of as many ratings under the same name would be read instead
    loaded = datasets.load_dataset(str(tmp_path / "export-cli"), "expert_ratings", split="train")
    assert loaded.num_rows == 150 and set(loaded["rater"]) == set(pseudonyms.values())


def test_a_folder_without_ratings_is_one_line(tmp_path, capsys):
    assert main(["ratings", "report", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"scitaste: error: no expert ratings in {tmp_path} (no ratings.sqlite: the Space's Annotate tab " \
                  "writes it)\n"
    assert list(tmp_path.iterdir()) == []  # nothing created


@pytest.mark.parametrize("content", [b"\x00garbage" * 500, b"SQLite format 3\x00" + b"\xff" * 4000])
def test_a_damaged_database_is_one_line(tmp_path, capsys, content):
    (tmp_path / "ratings.sqlite").write_bytes(content)
    assert main(["ratings", "report", "--data", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scitaste: error: cannot read the ratings in {tmp_path} (") and err.count("\n") == 1, err
    assert main(["ratings", "export", "--data", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "Traceback" not in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_a_lost_salt_is_one_line_and_not_replaced(folder, tmp_path, capsys):
    """A copy of the data folder without its salt: the export would publish new pseudonyms; it is refused."""
    data, *_ = folder
    copy = tmp_path / "copy"
    shutil.copytree(data, copy)
    (copy / "ratings.salt").unlink()
    assert main(["ratings", "export", "--data", str(copy), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err == (f"scitaste: error: {copy / 'ratings.salt'} is missing but {copy / 'ratings.sqlite'} holds ratings; "
                   "restore the salt from a backup (a new one would give every rater a new pseudonym)\n")
    assert not (copy / "ratings.salt").exists() and not (tmp_path / "out").exists()


def test_a_read_only_folder_is_one_line(folder, tmp_path):
    """The folder of a stopped Space, checkpointed (no write-ahead log beside the databases), on a read-only file
    system: SQLite cannot open it, and the command says so in one line. Root writes through any file mode, so the
    folder is mounted read-only in a mount namespace of its own (util-linux's unshare); without one, a user other
    than root gets a folder without write permission."""
    import os
    import sqlite3
    import subprocess
    import sys

    data, *_ = folder
    copy = tmp_path / "data"
    copy.mkdir()
    for name in ("ratings.sqlite", "leaderboard.sqlite"):
        source, target = sqlite3.connect(data / name), sqlite3.connect(copy / name)
        source.backup(target)
        target.execute("PRAGMA journal_mode=WAL")
        source.close()
        target.close()  # the last connection: the log is checkpointed and removed
    (copy / "ratings.salt").write_bytes((data / "ratings.salt").read_bytes())
    shutil.copytree(data / "submissions", copy / "submissions")
    command = [str(Path(sys.executable).with_name("scitaste")), "ratings", "report", "--data", str(copy),
               "--n-resamples", "10"]
    unshare = shutil.which("unshare")
    if unshare and subprocess.run([unshare, "-rm", "true"], capture_output=True).returncode == 0:
        script = 'mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" "$1" && shift && exec "$@"'
        command = [unshare, "-rm", "sh", "-c", script, "sh", str(copy), *command]
    elif os.geteuid() == 0:
        pytest.skip("root without a mount namespace: no folder is read-only to it")
    else:
        for path in (*copy.iterdir(), copy):
            path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    finally:
        copy.chmod(0o755)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"scitaste: error: cannot read the ratings in {copy} (") and \
        done.stderr.count("\n") == 1, done.stderr
    assert sorted(p.name for p in copy.iterdir()) == ["leaderboard.sqlite", "ratings.salt", "ratings.sqlite",
                                                      "submissions"]


@pytest.mark.parametrize("value", ["fifty", "", "1e400x"])
def test_a_text_score_in_the_database_is_one_line(folder, tmp_path, capsys, value):
    """A hand-edited ratings.sqlite with text in a REAL column (SQLite keeps it): one line naming the rating and the
    column, for report and export, and nothing written."""
    import sqlite3

    data, *_ = folder
    copy = tmp_path / "copy"
    shutil.copytree(data, copy)
    with sqlite3.connect(copy / "ratings.sqlite") as db:
        rating = db.execute("SELECT MIN(id) FROM ratings").fetchone()[0]
        db.execute("UPDATE ratings SET semantic_novelty = ? WHERE id = ?", (value, rating))
    expected = (f"scitaste: error: {copy / 'ratings.sqlite'}: rating {rating} has semantic_novelty = {value!r}, "
                "not a number; the file was changed outside the Space (restore it from a backup)\n")
    assert main(["ratings", "report", "--data", str(copy)]) == 2
    assert capsys.readouterr().err == expected
    assert main(["ratings", "export", "--data", str(copy), "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == expected and not (tmp_path / "out").exists()
