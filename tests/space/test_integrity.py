"""The integrity rule against disguised copies of the public gold labels, honest runs, baselines and small runs;
the statuses it leads to through the service; and the rename of the old status in an existing store."""

import json
import sqlite3
import time
from importlib import resources

import numpy as np
import pytest

from scitaste_hf.leaderboard import Leaderboard
from scitaste_hf.leaderboard.integrity import gold_copy_reason, near_gold
from scitaste_hf.leaderboard.store import EVIDENCE_CONSISTENT, FLAGGED, SELF_REPORTED, Meta, Store
from scitaste_hf.predictions import parse_predictions
from scitaste_hf.records import jsonl_lines, load_records
from scitaste_hf.schema import DIMENSIONS, Answer, Failure
from scitaste_hf.scoring.inputs import as_answer_matrix

EXAMPLES = resources.files("scitaste_hf").joinpath("data/examples")
GOLD = load_records(str(EXAMPLES.joinpath("gold.jsonl")))
G = as_answer_matrix(GOLD, "gold")


def _file(P):
    """As a predictions file holds them: within 0-100, two decimals."""
    return np.clip(P, 0.0, 100.0).round(2)


def _randomise(P, share, rng):
    P = P.copy()
    k = round(share * P.shape[0])
    P[rng.choice(P.shape[0], k, replace=False)] = rng.uniform(0, 100, (k, P.shape[1])).round(1)
    return P


#: Disguised copies of the labels: each must be flagged, on 300 papers and on 30-paper subsets.
COPIES = {
    "exact": lambda g, rng: g,
    "shifted +0.6": lambda g, rng: g + 0.6,
    "shifted -3": lambda g, rng: g - 3.0,
    "rounded to integers": lambda g, rng: g.round(0),
    "rounded to 1 decimal": lambda g, rng: g.round(1),
    "scaled x0.97": lambda g, rng: 0.97 * g,
    "affine 0.8x+12": lambda g, rng: 0.8 * g + 12.0,
    "per-number affine": lambda g, rng: g * np.linspace(0.9, 1.1, 8) + np.linspace(-4, 4, 8),
    "noise sd 0.5": lambda g, rng: g + rng.normal(0, 0.5, g.shape),
    "4 of 30 randomised": lambda g, rng: _randomise(g, 4 / 30, rng),
    "15% randomised": lambda g, rng: _randomise(g, 0.15, rng),
    "shifted, rounded, noised, 15% randomised": lambda g, rng: _randomise(
        (1.02 * g + 1.3 + rng.normal(0, 0.5, g.shape)).round(0), 0.15, rng),
    "power 1.3 (monotone, not affine)": lambda g, rng: 100 * (g / 100) ** 1.3,
}


def _subsets():
    yield "all 300", G
    for seed in range(3):
        yield f"30 papers, seed {seed}", G[np.random.default_rng(seed).choice(len(G), 30, replace=False)]


@pytest.mark.parametrize("copy", COPIES)
def test_disguised_copies_of_the_gold_labels_are_flagged(copy):
    for name, g in _subsets():
        P = _file(COPIES[copy](g, np.random.default_rng(7)))
        assert gold_copy_reason(P, g) is not None, (copy, name)


def test_a_copy_of_the_ranked_number_alone_is_flagged():
    """Scheme-2 ranks by the innovation score alone: copying it and making up the dimensions is flagged too."""
    rng = np.random.default_rng(3)
    for name, g in _subsets():
        P = rng.uniform(0, 100, g.shape).round(1)
        P[:, 0] = g[:, 0] + 0.4
        reason = gold_copy_reason(_file(P), g)
        assert reason is not None and "innovation score" in reason, name


def _honest(g, rng, kind):
    """Honest-but-strong answers: the labels plus independent errors of a good judge."""
    if kind == "mae 4":
        return g + rng.normal(0, 5.0, g.shape)  # MAE about 4 on every number
    if kind == "spearman 0.9":
        return g + rng.normal(0, 0.48 * g.std(axis=0), g.shape)  # Spearman about 0.9 on every number
    # shrunk towards the mean, as models are, plus errors
    return g.mean(axis=0) + 0.7 * (g - g.mean(axis=0)) + rng.normal(0, 3.0, g.shape)


@pytest.mark.parametrize("kind", ["mae 4", "spearman 0.9", "shrunk"])
def test_honest_strong_runs_are_not_flagged(kind):
    for seed in range(20):
        rng = np.random.default_rng(100 + seed)
        for n in (300, 30, 12):
            g = G[rng.choice(len(G), n, replace=False)]
            P = _file(_honest(g, rng, kind).round(1))
            assert gold_copy_reason(P, g) is None, (kind, seed, n)
    if kind == "mae 4":  # what "strong" means here
        P = _file(_honest(G, np.random.default_rng(0), kind))
        assert 3.5 < np.abs(P - G).mean() < 4.5
    if kind == "spearman 0.9":
        from scitaste_hf.leaderboard.integrity import _spearman

        rho = _spearman(_file(_honest(G, np.random.default_rng(0), kind)), G)
        assert np.all((rho > 0.85) & (rho < 0.95)), rho


def _answer(p):
    return Answer.model_validate({"innovation_score": p[0], "dimension_scores": dict(zip(DIMENSIONS, p[1:]))})


def _answers(P, gold=GOLD):
    return {r["bibcode"]: _answer(p) for r, p in zip(gold, P)}


def test_offline_baselines_and_the_bundled_example_are_not_flagged():
    from scitaste_hf.scoring.floors import PriorBaseline

    constant = _answers(np.full(G.shape, 50.0))
    medians = PriorBaseline.fit(GOLD)  # per-discipline medians of these very labels
    per_discipline = {r["bibcode"]: Answer.model_validate(medians.answer(r)) for r in GOLD}
    example = parse_predictions(jsonl_lines(EXAMPLES.joinpath("predictions.jsonl").read_text("utf-8")), "example")
    for name, predictions in (("constant", constant), ("per-discipline medians", per_discipline),
                              ("bundled example", example)):
        assert near_gold(predictions, GOLD) is None, name


def test_few_papers_are_flagged_only_when_exact():
    assert near_gold({}, GOLD) is None
    assert near_gold({r["bibcode"]: Failure("timeout", "no reply") for r in GOLD}, GOLD) is None
    five = GOLD[:5]
    failures = {r["bibcode"]: Failure("no_json", "") for r in GOLD[5:]}
    rng = np.random.default_rng(0)
    honest = _file(_honest(G[:5], rng, "mae 4"))
    assert near_gold({**_answers(honest, five), **failures}, GOLD) is None
    # five papers cannot show an affine copy apart from luck: not flagged unless the labels themselves
    assert near_gold({**_answers(_file(G[:5] + 3.0), five), **failures}, GOLD) is None
    reason = near_gold({**_answers(G[:5].round(0), five), **failures}, GOLD)
    assert reason == "all 5 scored papers match the public gold labels to within 0.5 points"


def test_the_check_is_fast():
    rng = np.random.default_rng(0)
    runs = [_file(_honest(G, rng, "mae 4")) for _ in range(20)]
    best = min(_timed(gold_copy_reason, P, G) for P in runs)  # the honest case runs every rule
    assert best < 0.010, best


def _timed(f, *args):
    start = time.perf_counter()
    f(*args)
    return time.perf_counter() - start


# -- through the service ------------------------------------------------------------------------------------------


def _lines(P, gold=GOLD):
    return [{"bibcode": r["bibcode"], "response": json.dumps(
        {"innovation_score": float(p[0]), "dimension_scores": dict(zip(DIMENSIONS, map(float, p[1:])))})}
        for r, p in zip(gold, P)]


def _bytes(lines):
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _fabricated_samples_log(lines):
    """A samples log in lm-eval's format whose replies are simply the submitted answers: trivial to write."""
    return "".join(json.dumps({"doc_id": i, "doc": {"bibcode": line["bibcode"]}, "resps": [[line["response"]]],
                               "filtered_resps": [line["response"]]}) + "\n" for i, line in enumerate(lines)).encode()


@pytest.fixture()
def boards(tmp_path):
    """Leaderboards over a given gold set, closed after the test."""
    opened = []

    def open_board(gold=GOLD):
        opened.append(Leaderboard(tmp_path / f"lb{len(opened)}", gold, rate_limit=(1000, 3600)))
        return opened[-1]

    yield open_board
    for b in opened:
        b.store.close()


def test_a_shifted_copy_with_a_fabricated_samples_log_is_flagged_not_ranked(boards):
    board = boards()
    lines = _lines(_file(G + 0.6))
    result = board.submit(_bytes(lines), "copycat", "dimagent_v3", submitter="u",
                          samples=_fabricated_samples_log(lines))
    assert result.status == FLAGGED and "not ranked" in result.message
    assert board.rows() == [] and board.rows(status=EVIDENCE_CONSISTENT) == []
    assert [(r["model"], r["status"]) for r in board.rows(include_flagged=True)] == [("copycat", FLAGGED)]


def test_a_fabricated_log_makes_an_honest_looking_run_evidence_consistent_only(boards):
    """What the status can establish: the log agrees with the answers, whoever wrote it."""
    board = boards()
    lines = _lines(_file(_honest(G, np.random.default_rng(1), "mae 4").round(1)))
    result = board.submit(_bytes(lines), "m", "pure_qa", submitter="u", samples=_fabricated_samples_log(lines))
    assert result.status == EVIDENCE_CONSISTENT
    assert "not that a model produced them" in result.message
    assert [r["status"] for r in board.rows(status=EVIDENCE_CONSISTENT)] == [EVIDENCE_CONSISTENT]
    plain = board.submit(_bytes(_lines(_file(_honest(G, np.random.default_rng(2), "mae 4").round(1)))), "n",
                         "pure_qa", submitter="u")
    assert plain.status == SELF_REPORTED


def test_a_partly_randomised_copy_of_a_30_paper_split_is_flagged(boards):
    board = boards(GOLD[:30])
    P = _file(_randomise(G[:30], 4 / 30, np.random.default_rng(0)))
    result = board.submit(_bytes(_lines(P, GOLD[:30])), "partial", "pure_qa", submitter="u")
    assert result.status == FLAGGED and board.rows() == []


def test_the_old_status_name_is_renamed_when_a_store_is_opened(tmp_path):
    store = Store(tmp_path / "lb")
    meta = Meta(model="old", mode="pure_qa", submitted_at="2025-01-01T00:00:00+00:00")
    summary = {"overall": {"scheme2": 50.0, "scheme2_grade": "D"}}
    for key, status in (("a", "reproducible"), ("b", SELF_REPORTED), ("c", FLAGGED)):
        store.insert(key, meta, status, summary, {}, 300, 300)
    store.close()
    for _ in range(2):  # idempotent: a second opening finds nothing left to rename
        store = Store(tmp_path / "lb")
        assert [(r["sha256"], r["status"]) for r in store.rows()] == [
            ("c", FLAGGED), ("b", SELF_REPORTED), ("a", EVIDENCE_CONSISTENT)]
        store.close()
    with sqlite3.connect(tmp_path / "lb" / "leaderboard.sqlite") as db:
        assert db.execute("SELECT count(*) FROM runs WHERE status = 'reproducible'").fetchone() == (0,)
