"""The prospective cycle offline, through the Space's API (issue 33's first check): a mirror whose world's clock
stands at T0, a release built from it with a prospective split, a Space in Hub mode over it, runs sealed at T0 by
two signed-in accounts, then the clock moved to T1 and T2 and `scitaste resolve` as of each. A sealed run is not
readable by another account until the first resolution, a run after it is refused, and each run's resolved score is
`scitaste score` against the gold folder of an as-of-T1 build of those papers (built with the clock at the world's
present, which agrees with the world moved to T1); an oracle that sealed the T1 gold at T0 scores perfectly, and a
copy of the retrospective gold has nothing to copy (the prospective papers are in neither retrospective split, so
it is refused)."""

import hashlib
import importlib.util
import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pyarrow.parquet as pq
import pytest

from scitaste_hf.leaderboard.service import run_key
from scitaste_hf.predictions import parse_predictions
from scitaste_hf.records import jsonl_lines
from scitaste_hf.schema import DIMENSIONS, SPLITS

#: Three builds against the mirror (one T0 release and three small resolutions) and a Space.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
SCITASTE = str(Path(sys.executable).with_name("scitaste"))
T0, T1, T2 = "2021-12-31", "2022-12-31", "2023-12-31"
QUOTAS = ["--per-discipline", "100"]  # every paper of a discipline collected, the young ones too
#: The world of this test's own mirror, whose clock it moves (the shared mirror's must stay put).
PAPERS, SEED = "600", "7"
# The Hub sign-in of the Space's own sign-in test (its session cookie and clients), not a copy of it; read by path,
# as the suite imports in importlib mode (test folders are not on the path).
_spec = importlib.util.spec_from_file_location("hub_signin", Path(__file__).with_name("test_space_hub_signin.py"))
_signin = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_signin)
HUB_ENV, _client = _signin.HUB_ENV, _signin._client


def _run(*args: str) -> str:
    done = subprocess.run([SCITASTE, *args], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _split(folder: Path, split: str) -> list[dict]:
    return pq.read_table(folder / "data" / f"{split}-00000-of-00001.parquet").to_pylist()


def _lines(records: list[dict], answer) -> bytes:
    return "".join(json.dumps({"bibcode": r["bibcode"], **answer(r)}) + "\n" for r in records).encode()


def _move_clock(mirror: str, day: str | None) -> None:
    answer = httpx.post(f"{mirror}/_control/clock", json={"as_of": day}, timeout=30)
    assert answer.json() == {"as_of": day}


@pytest.fixture(scope="module")
def cycle(tmp_path_factory, space_starter, servers):
    """A mirror whose world's clock stands at T0, the T0 release built from it, the T1 gold of an independent
    as-of-T1 build of its prospective papers (with the clock at the world's present: the build's own date filters
    alone), and a Space in Hub mode over the release."""
    root = tmp_path_factory.mktemp("prospective")
    start, stop = servers
    clocked, mirror = start([SCITASTE, "mirror", "serve", "--papers", PAPERS, "--seed", SEED, "--as-of", T0, "--port",
                             "{port}"], log=root / "mirror.log", ready="/health")
    mirror = mirror.rstrip("/")
    release = root / "t0"
    _run("build", "--source", "mirror", "--mirror-url", mirror, "--out", str(release), "--seed", "3", *QUOTAS,
         "--selected-per-discipline", "10", "--as-of", T0, "--prospective-months", "24")
    oracle = root / "oracle-t1"  # a board of its own with no sealed run: only the as-of-T1 gold is wanted
    _move_clock(mirror, None)
    _run("resolve", "--data", str(root / "scratch"), "--dataset", str(release), "--as-of", T1, "--mirror-url", mirror,
         *QUOTAS, "--out", str(oracle))
    _move_clock(mirror, T0)
    data = root / "space"
    proc, url = space_starter(data, data.with_suffix(".log"), {**HUB_ENV, "SCITASTE_SUBMIT_LIMIT": "100",
                                                                "SCITASTE_GOLD": str(release)})
    yield {"release": release, "oracle": oracle, "data": data, "url": url, "mirror": mirror, "root": root}
    stop(proc)
    stop(clocked)


def _seal(client, path: Path, model: str) -> str:
    from gradio_client import handle_file

    return client.predict(handle_file(str(path)), model, "pure_qa", api_name="/prospective_submit")


def test_a_sealed_run_is_unreadable_then_refused_then_scored_as_scitaste_score_scores_it(cycle):
    release, root, url = cycle["release"], cycle["root"], cycle["url"]
    young = _split(release, "prospective")
    assert len(young) >= 10
    assert all(r["innovation_score"] is None and r["dimension_scores"] is None for r in young)
    # nothing to copy: no prospective paper is in a retrospective split, whose gold a copy would send
    retrospective = [r for s in SPLITS for r in _split(release, s)]
    assert not {r["bibcode"] for r in young} & {r["bibcode"] for r in retrospective}
    assert all(r["year"] <= 2019 for r in retrospective) and all(r["year"] in (2020, 2021) for r in young)

    gold_t1 = {r["bibcode"]: r for r in _split(cycle["oracle"], "selected")}
    assert set(gold_t1) == {r["bibcode"] for r in young}
    honest = root / "honest.jsonl"
    honest.write_bytes(_lines(young, lambda r: {"innovation_score": 50.0 + (r["year"] - 2020) * 10,
                                                "dimension_scores": dict.fromkeys(DIMENSIONS, 40.0)}))
    oracle = root / "oracle.jsonl"
    oracle.write_bytes(_lines(young, lambda r: {k: gold_t1[r["bibcode"]][k] for k in
                                                ("innovation_score", "dimension_scores")}))
    copy = root / "copy.jsonl"
    copy.write_bytes(_lines(retrospective, lambda r: {k: r[k] for k in ("innovation_score", "dimension_scores")}))

    ann, bob = _client(url, "ann"), _client(url, "bob")
    sealed = _seal(ann, honest, "ann-model")
    assert sealed.startswith("Sealed: sealed as run #1 (SHA-256 "), sealed
    assert _seal(bob, oracle, "oracle").startswith("Sealed: sealed as run #2"), "oracle"
    refused = _seal(bob, copy, "copycat")
    assert refused.startswith("Rejected: ") and "not in the prospective split" in refused, refused
    # shown sealed, with its digest, which is salted: hashing the answers sent (a guess) does not give it
    table = ann.predict(api_name="/prospective")
    shown = {row[0]: row for row in table["data"]}
    key = run_key(parse_predictions(jsonl_lines(honest.read_text()), "honest"), "pure_qa")
    assert shown[1][1:4] == ["ann-model", "pure_qa", "sealed"] and shown[1][7] is None
    assert len(shown[1][5]) == 64 and shown[1][5] != key and shown[1][-1] == ""
    # only its submitter reads it back while it is sealed
    assert ann.predict("1", api_name="/prospective_answers") == honest.read_text()
    assert bob.predict("1", api_name="/prospective_answers").startswith("Refused: run #1 is sealed until the "
                                                                       "prospective split is resolved")
    assert _client(url).predict("1", api_name="/prospective_answers").startswith("Refused: ")

    _move_clock(cycle["mirror"], T1)
    printed = _run("resolve", "--data", str(cycle["data"]), "--dataset", str(release), "--as-of", T1,
                   "--mirror-url", cycle["mirror"], *QUOTAS)
    assert f"resolved {len(young)} of {len(young)} prospective papers as of {T1}" in printed, printed
    late = _seal(ann, oracle, "late-model")
    assert late == (f"Rejected: the prospective split was resolved as of {T1}: it takes no sealed run after its "
                    "first resolution date"), late
    assert bob.predict("1", api_name="/prospective_answers") == honest.read_text()  # resolved: no longer sealed
    _move_clock(cycle["mirror"], T2)
    _run("resolve", "--data", str(cycle["data"]), "--dataset", str(release), "--as-of", T2,
         "--mirror-url", cycle["mirror"], *QUOTAS)

    # the board's resolved score of each run is scitaste score's against the as-of-T1 gold folder
    resolved = cycle["data"] / "resolutions" / T1
    assert _split(resolved, "selected") == _split(cycle["oracle"], "selected")
    with sqlite3.connect(cycle["data"] / "sealed.sqlite") as con:
        stored = {(run, as_of): json.loads(result) for run, as_of, result in
                  con.execute("SELECT run_id, as_of, result FROM resolved_scores")}
    assert set(stored) == {(1, T1), (2, T1), (1, T2), (2, T2)}
    for run, path in ((1, honest), (2, oracle)):
        out = root / f"score-{run}.json"
        _run("score", "--predictions", str(path), "--gold", str(resolved), "--json", str(out))
        expected = json.loads(out.read_text())
        assert stored[(run, T1)]["overall"] == expected["overall"]
        assert stored[(run, T1)]["by_discipline"] == expected["by_discipline"]
    perfect = stored[(2, T1)]["overall"]
    assert perfect["scheme1"]["scheme1"] == pytest.approx(100.0) and perfect["scheme2"]["wape"] == pytest.approx(0.0)
    assert stored[(1, T1)]["overall"]["scheme1"]["scheme1"] < 90
    # the oracle knew T1's gold, not T2's: the papers aged a year, and its score as of T2 is no longer perfect
    assert stored[(2, T2)]["overall"]["scheme2"]["wape"] > 0

    # the board shows a prospective row per resolution date, beside the retrospective column
    rows = [r for r in ann.predict(api_name="/prospective")["data"] if r[0] == 2]
    assert sorted(r[6] for r in rows) == [T1, T2]
    at_t1 = next(r for r in rows if r[6] == T1)
    assert at_t1[3] == "resolved" and at_t1[9] == pytest.approx(round(perfect["scheme1"]["scheme1"], 1))
    # resolved, the salt is shown: the digest sealed at T0 is the salted key of the answers scored
    [honest_row, *_] = [r for r in ann.predict(api_name="/prospective")["data"] if r[0] == 1]
    assert hashlib.sha256(bytes.fromhex(honest_row[-1]) + key.encode()).hexdigest() == shown[1][5] == honest_row[5]


def test_on_the_hub_only_a_signed_in_submitter_reads_a_sealed_run(tmp_path, monkeypatch):
    """An address is shared by everyone behind it (a lab's NAT, a proxy): on the Hub a sealed run is read back
    by its signed-in account alone, never by the address it was sealed from, until the split is resolved."""
    import runpy
    from importlib import resources
    from types import SimpleNamespace

    from scitaste_hf.builder.prospective import blank_records
    from scitaste_hf.leaderboard.sealed import SealedBoard
    from scitaste_hf.records import load_records
    from scitaste_hf.resources import bundled_dir

    app = runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="test")
    gold = load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))
    board = SealedBoard(tmp_path, blank_records(gold, [None] * len(gold)))
    answers = _lines(gold, lambda r: {"innovation_score": 40.0, "dimension_scores": r["dimension_scores"]})
    board.submit(answers, "m", "pure_qa", submitter="10.0.0.7")
    board.submit(answers.replace(b"40.0", b"41.0"), "m", "pure_qa", submitter="hf:ann")
    monkeypatch.setenv("SYSTEM", "spaces")
    behind = SimpleNamespace(headers={"x-forwarded-for": "10.0.0.7"}, client=SimpleNamespace(host="10.9.9.9"))
    assert app["prospective_answers"](board, "1", behind).startswith("Refused: run #1 is sealed until")
    assert app["prospective_answers"](board, "2", behind, SimpleNamespace(username="ann")) == answers.decode() \
        .replace("40.0", "41.0")
    board.resolve("2022-12-31", gold)
    assert app["prospective_answers"](board, "1", behind) == answers.decode()  # resolved: anyone reads it
    board.close()
