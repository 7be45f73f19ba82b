"""The leaderboard service: validation, integrity, storage, crash recovery, concurrency, abuse."""

import json
import re
import threading

import numpy as np
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.leaderboard import Leaderboard, SubmissionError
from scitaste_hf.leaderboard.store import Meta
from scitaste_hf.schema import DIMENSIONS, DISCIPLINES
from scitaste_hf.scoring import score_run


def _gold(n=24):
    rng = np.random.default_rng(0)
    out = []
    for i in range(n):
        dims = {k: float(x) for k, x in zip(DIMENSIONS, rng.uniform(5, 95, 7).round(1))}
        out.append({"bibcode": f"P{i:03d}", "discipline": DISCIPLINES[i % 6],
                    "innovation_score": round(float(rng.uniform(10, 90)), 1), "dimension_scores": dims})
    return out


GOLD = _gold()


def _lines(noise=8.0, seed=1, gold=GOLD, response=False):
    rng = np.random.default_rng(seed)
    out = []
    for r in gold:
        answer = {"innovation_score": float(np.clip(r["innovation_score"] + rng.normal(0, noise), 0, 100).round(1)),
                  "dimension_scores": {k: float(np.clip(v + rng.normal(0, noise), 0, 100).round(1))
                                       for k, v in r["dimension_scores"].items()}}
        out.append({"bibcode": r["bibcode"], "response": "```json\n" + json.dumps(answer) + "\n```"} if response
                   else {"bibcode": r["bibcode"], **answer})
    return out


def _bytes(lines):
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


@pytest.fixture()
def board(tmp_path):
    b = Leaderboard(tmp_path / "lb", GOLD, rate_limit=(1000, 3600))
    yield b
    b.store.close()


def test_submission_is_scored_by_the_server(board):
    data = _bytes(_lines())
    result = board.submit(data, "my-model 7B", "dimagent_v3", "Lab", "https://example.org/model", submitter="u1")
    assert result.status == "self-reported" and not result.duplicate
    stored = board.result(result.run_id)
    from scitaste_hf.predictions import parse_predictions

    expected = score_run(GOLD, parse_predictions(data.decode().splitlines(), "x"))
    assert stored["overall"]["scheme1"]["scheme1"] == pytest.approx(expected["overall"]["scheme1"]["scheme1"])
    rows = board.rows()
    assert len(rows) == 1 and rows[0]["model"] == "my-model 7B" and rows[0]["n_scored"] == 24
    assert rows[0]["scheme2"] == pytest.approx(expected["overall"]["scheme2"]["score"])


def test_uploaded_scores_are_never_trusted(board):
    lines = _lines(noise=30)
    for line in lines:
        line["scheme1"] = 100.0
        line["score"] = 100.0
    result = board.submit(_bytes(lines), "m", "pure_qa", submitter="u")
    assert board.rows()[0]["scheme1"] < 90 and result.run_id == 1


def test_same_file_twice_is_a_no_op(board):
    data = _bytes(_lines())
    first = board.submit(data, "m", "pure_qa", submitter="u")
    second = board.submit(data, "other name", "pure_qa", submitter="u")
    assert second.duplicate and second.run_id == first.run_id
    assert len(board.rows()) == 1 and board.rows()[0]["model"] == "m"
    other_mode = board.submit(data, "m", "native_search", submitter="u")  # same answers, another mode: a new run
    assert not other_mode.duplicate and len(board.rows()) == 2


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"x" * 2048, "over the limit"),
        (b"\xff\xfe\x00", "not UTF-8"),
        (b"not json\n", "upload:1: not a JSON line"),
        (_bytes(_lines()[:-1]), "1 bibcode.s. of the selected split missing, e.g. P023"),
        (_bytes([*_lines(), {"bibcode": "EXTRA", "failure": "timeout"}]), "not in the selected split, e.g. EXTRA"),
        (_bytes([*_lines(), _lines()[0]]), "duplicate bibcode P000"),
        (_bytes([{**_lines()[0], "innovation_score": float("nan")}, *_lines()[1:]]), "upload:1: invalid answer fields"),
        (_bytes([{**_lines()[0], "innovation_score": float("inf")}, *_lines()[1:]]), "out_of_range"),
        (_bytes([{**_lines()[0], "innovation_score": 101}, *_lines()[1:]]), "out_of_range"),
        (b'{"bibcode": "P000", "innovation_score": ' + b"9" * 5000 + b"}\n" + _bytes(_lines()[1:]),
         r"upload:1: not a JSON line \(a number has too many digits\)"),
    ],
)
def test_bad_files_are_rejected_and_nothing_is_stored(tmp_path, data, message):

    b = Leaderboard(tmp_path / "lb", GOLD, max_bytes=1024 if len(data) == 2048 else 10**6, rate_limit=(1000, 1))
    with pytest.raises(SubmissionError, match=message):
        b.submit(data, "m", "pure_qa", submitter="u")
    assert b.rows() == [] and list(b.store.files.iterdir()) == []
    with pytest.raises(SubmissionError) as raised:
        b.parse(data)
    assert re.search(message, str(raised.value)) and "\n" not in str(raised.value)


@pytest.mark.parametrize(
    ("model", "mode", "org", "link", "message"),
    [
        ("<script>alert(1)</script>", "pure_qa", "", "", "model name"),
        ("m", "pure_qa", "<b>Lab</b>", "", "organisation"),
        ("m", "web", "", "", "mode must be one of"),
        ("m", "pure_qa", "", "javascript:alert(1)", "link must be an http"),
        ("m", "pure_qa", "", 'https://x.org/"onmouseover=', "link must be an http"),
        ("", "pure_qa", "", "", "model name"),
    ],
)
def test_metadata_is_plain_text(board, model, mode, org, link, message):
    with pytest.raises(SubmissionError, match=message):
        board.submit(_bytes(_lines()), model, mode, org, link, submitter="u")


def test_flood_is_rate_limited(tmp_path):
    b = Leaderboard(tmp_path / "lb", GOLD, rate_limit=(3, 3600))
    for seed in range(3):
        b.submit(_bytes(_lines(seed=seed)), "m", "pure_qa", submitter="flooder")
    with pytest.raises(SubmissionError, match="too many submissions: at most 3 per 3600 s"):
        b.submit(_bytes(_lines(seed=9)), "m", "pure_qa", submitter="flooder")
    b.submit(_bytes(_lines(seed=9)), "m", "pure_qa", submitter="someone else")
    assert len(b.rows()) == 4


def test_only_accepted_submissions_count_against_the_limit(tmp_path):
    """A duplicate and rejected files do not lock a submitter out: only stored runs count against the limit; the
    bound on attempts of any outcome is separate and far larger (ATTEMPTS_PER_ACCEPTED times the limit)."""
    from scitaste_hf.leaderboard.service import ATTEMPTS_PER_ACCEPTED

    b = Leaderboard(tmp_path / "lb", GOLD, rate_limit=(2, 3600))
    b.submit(_bytes(_lines(seed=0)), "m", "pure_qa", submitter="u")
    assert b.submit(_bytes(_lines(seed=0)), "m", "pure_qa", submitter="u").duplicate
    for bad in (b"not json\n", b"", _bytes(_lines(seed=1))[:-40]):
        with pytest.raises(SubmissionError):
            b.submit(bad, "m", "pure_qa", submitter="u")
    second = b.submit(_bytes(_lines(seed=1)), "m", "pure_qa", submitter="u")  # 6th attempt, 2nd accepted
    assert not second.duplicate
    with pytest.raises(SubmissionError, match=r"^too many submissions: at most 2 per 3600 s; try again in "):
        b.submit(_bytes(_lines(seed=2)), "m", "pure_qa", submitter="u")
    assert len(b.rows()) == 2

    # attempts: a submitter sending rejected files is stopped at 12 times the limit, and stored nothing
    c = Leaderboard(tmp_path / "lc", GOLD, rate_limit=(2, 3600))
    for _ in range(2 * ATTEMPTS_PER_ACCEPTED):
        with pytest.raises(SubmissionError, match=r"^upload:1: not a JSON line"):
            c.submit(b"not json\n", "m", "pure_qa", submitter="script")
    with pytest.raises(SubmissionError, match=r"^too many submission attempts: at most 24 per 3600 s"):
        c.submit(_bytes(_lines(seed=3)), "m", "pure_qa", submitter="script")
    c.submit(_bytes(_lines(seed=3)), "m", "pure_qa", submitter="someone else")


def test_concurrent_uploads_of_one_submitter_never_pass_the_limit(tmp_path):
    b = Leaderboard(tmp_path / "lb", GOLD, rate_limit=(2, 3600))
    outcomes = []

    def go(seed):
        try:
            b.submit(_bytes(_lines(seed=seed)), "m", "pure_qa", submitter="u")
            outcomes.append("stored")
        except SubmissionError as exc:
            outcomes.append(str(exc).split(":")[0])

    threads = [threading.Thread(target=go, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["stored"] * 2 + ["too many submissions"] * 4
    assert len(b.rows()) == 2


def test_no_limit_when_the_board_has_none(tmp_path):
    b = Leaderboard(tmp_path / "lb", GOLD, rate_limit=None)
    for seed in range(8):
        b.submit(_bytes(_lines(seed=seed)), "m", "pure_qa", submitter="u")
    assert len(b.rows()) == 8


def test_concurrent_submissions_are_serialised_and_both_stored(board):
    errors = []

    def go(seed):
        try:
            board.submit(_bytes(_lines(seed=seed)), f"m{seed}", "pure_qa", submitter=f"u{seed}")
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=go, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert sorted(r["model"] for r in board.rows()) == [f"m{s}" for s in range(6)]


def test_crash_between_file_and_result_is_reconciled(tmp_path):
    data = _bytes(_lines())
    b = Leaderboard(tmp_path / "lb", GOLD)
    import hashlib

    sha = hashlib.sha256(data + b"\n#mode=pure_qa").hexdigest()
    b.store.store_submission(sha, data, Meta(model="crashed", mode="pure_qa", submitted_at="2026-01-01T00:00:00"), {})
    b.store.close()  # the process died before the row was written
    again = Leaderboard(tmp_path / "lb", GOLD)
    assert again.reconciled == 1
    assert [r["model"] for r in again.rows()] == ["crashed"]
    again.store.close()
    third = Leaderboard(tmp_path / "lb", GOLD)
    assert third.reconciled == 0 and len(third.rows()) == 1
    assert third.submit(data, "crashed", "pure_qa").duplicate


def _samples_log(lines, mode="dimagent_v3"):
    return "".join(json.dumps({"doc_id": i, "doc": {"bibcode": line["bibcode"], "scitaste_mode": mode},
                               "resps": [[line["response"]]], "filtered_resps": [line["response"]]}) + "\n"
                   for i, line in enumerate(lines)).encode()


def test_evidence_makes_a_run_evidence_consistent(board):
    lines = _lines(response=True)
    result = board.submit(_bytes(lines), "m", "dimagent_v3", submitter="u", samples=_samples_log(lines))
    assert result.status == "evidence-consistent"
    other = _lines(response=True, seed=5)
    result = board.submit(_bytes(_lines(seed=3)), "m2", "dimagent_v3", submitter="u", samples=_samples_log(other))
    assert result.status == "self-reported" and "differs" in result.message
    # the samples of another mode (the live loop's) do not show a dimagent_v3 run's answers
    live = _lines(response=True, seed=7)
    result = board.submit(_bytes(live), "m3", "dimagent_v3", submitter="u",
                          samples=_samples_log(live, "dimagent_v3_live"))
    assert result.status == "self-reported" and "other papers" in result.message
    assert [r["model"] for r in board.rows(status="evidence-consistent")] == ["m"]


def test_near_gold_copy_is_flagged_not_ranked(board):
    copy = [{"bibcode": r["bibcode"], "innovation_score": r["innovation_score"],
             "dimension_scores": r["dimension_scores"]} for r in GOLD]
    result = board.submit(_bytes(copy), "copycat", "pure_qa", submitter="u")
    assert result.status == "flagged"
    assert board.rows() == []
    assert [r["model"] for r in board.rows(include_flagged=True)] == ["copycat"]


def test_filters_compare_and_scatter(board):
    a = board.submit(_bytes(_lines(noise=3, seed=1)), "good", "dimagent_v3", submitter="u").run_id
    b = board.submit(_bytes(_lines(noise=25, seed=2)), "bad", "pure_qa", submitter="u").run_id
    assert [r["model"] for r in board.rows()] == ["good", "bad"]
    assert [r["model"] for r in board.rows(mode="pure_qa")] == ["bad"]
    physics = board.rows(discipline="physics")
    assert all(r["scope"] == "physics" and r["n_total"] == 4 for r in physics)
    grade = board.rows()[0]["scheme2_grade"]
    assert all(r["scheme2_grade"] == grade for r in board.rows(grade=grade))
    diff = board.compare(a, b, n_resamples=200)
    assert diff["overall"]["n"] == 24 and diff["overall"]["scheme2"]["difference"] > 0
    assert diff["overall"]["scheme2"]["interval"][0] > 0
    points = board.scatter(a)
    assert len(points) == 24 and {"gold", "predicted", "discipline"} <= set(points[0])
    with pytest.raises(ScitasteError, match="no run #99"):
        board.result(99)


def test_baseline_rows_are_shown_and_labelled(board):
    """The offline baseline's runs (written by the demo) sit in the table as kind 'baseline', not rate-limited."""
    for seed in range(3):
        board.submit(_bytes(_lines(seed=seed)), "scitaste-baseline", MODES_FOR_BASELINE[seed], kind="baseline")
    rows = board.rows()
    assert {r["kind"] for r in rows} == {"baseline"} and len(rows) == 3
    assert sorted(r["mode"] for r in rows) == sorted(MODES_FOR_BASELINE[:3])


MODES_FOR_BASELINE = ("pure_qa", "native_search", "dimagent_v3", "dimagent_v3_native")


def test_demo_dataset_is_recognised_as_synthetic(tmp_path):
    """A dataset folder in DATA/dataset is the gold set; its card's `synthetic` tag turns the Space's banner on."""
    from scitaste_hf.builder.layout import write_dataset
    from scitaste_hf.leaderboard.setup import gold_source
    from scitaste_hf.schema import record_features
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    rows = [{**dict.fromkeys(record_features()), **r, "title": "t", "year": 2000} for r in GOLD[:4]]
    for synthetic in (True, False):
        data = tmp_path / str(synthetic)
        write_dataset(data / "dataset", {"selected": rows[:2], "backup": rows[2:]}, DEFAULT_WEIGHTS,
                      synthetic=synthetic)
        assert gold_source(data) == (str(data / "dataset"), synthetic)


def test_a_replay_with_other_whitespace_or_line_order_is_the_same_run(board):
    lines = _lines()
    first = board.submit(_bytes(lines), "m", "pure_qa", submitter="u")
    text = _bytes(lines).decode()
    replays = {
        "one more trailing newline": text + "\n",
        "CRLF line endings": text.replace("\n", "\r\n"),
        "trailing whitespace": text.replace("\n", "  \t\n"),
        "other spacing inside the JSON": "".join(json.dumps(line, indent=None, separators=(",", ":")) + "\n"
                                                 for line in lines),
        "other line order": "".join(json.dumps(line) + "\n" for line in reversed(lines)),
    }
    for what, replay in replays.items():
        again = board.submit(replay.encode(), "m", "pure_qa", submitter="u")
        assert again.duplicate and again.run_id == first.run_id, what
    assert len(board.rows()) == 1 and len(list(board.store.files.glob("*.jsonl"))) == 1
    changed = _lines()
    changed[0]["innovation_score"] = round(changed[0]["innovation_score"] + 0.1, 1)
    assert not board.submit(_bytes(changed), "m", "pure_qa", submitter="u").duplicate


def test_oversized_evidence_is_rejected_and_nothing_is_stored(tmp_path):
    b = Leaderboard(tmp_path / "lb", GOLD, max_evidence_bytes=2048, rate_limit=(1000, 1))
    lines = _lines(response=True)
    for field in ("samples", "trace"):
        with pytest.raises(SubmissionError) as raised:
            b.submit(_bytes(lines), "m", "dimagent_v3", submitter="u", **{field: b"x" * 4096})
        name = "samples log" if field == "samples" else "trace"
        assert str(raised.value) == f"the {name} is 0.0 MiB, over the limit of 0.0 MiB"
    assert b.rows() == [] and list(b.store.files.iterdir()) == []


def test_default_evidence_limit_refuses_a_22_mb_samples_log(tmp_path):
    from scitaste_hf.leaderboard.service import MAX_EVIDENCE_BYTES

    b = Leaderboard(tmp_path / "lb", GOLD, rate_limit=(1000, 1))
    lines = _lines(response=True)
    log = _samples_log(lines)
    padded = log + b" " * (22_000_000 - len(log))  # blank padding: a valid log, just too large
    with pytest.raises(SubmissionError, match=r"the samples log is 21\.0 MiB, over the limit of 20\.0 MiB"):
        b.submit(_bytes(lines), "m", "dimagent_v3", submitter="u", samples=padded)
    assert b.rows() == [] and MAX_EVIDENCE_BYTES == 20 * 2**20
    assert b.submit(_bytes(lines), "m", "dimagent_v3", submitter="u", samples=log).status == "evidence-consistent"


def _baseline_trace(mode, fit_on, fail=()):
    """Run the offline baseline through the agent loop as `scitaste eval` does: the predictions file lines it
    yields (lm-eval's reply per paper) and the trace lines `_LoopLM._trace` writes."""
    from scitaste_hf.agent.baseline import BaselineChat
    from scitaste_hf.agent.chat import ChatError
    from scitaste_hf.agent.loop import run_item
    from scitaste_hf.schema import failure_text
    from scitaste_hf.scoring.floors import PriorBaseline

    baseline = BaselineChat(PriorBaseline.fit(fit_on))

    def chat(messages, **options):
        if any(f"Identifier: {b}\n" in m["content"] for m in messages for b in fail):
            raise ChatError("timeout", "no reply in 120 s")
        return baseline(messages, **options)

    predictions, trace = [], []
    for record in GOLD:
        outcome = run_item(chat, None, {**record, "title": "A paper", "abstract": "It studies things."}, mode)
        text = failure_text(outcome.failure, outcome.trace.get("error", "")) if outcome.failure else outcome.text
        predictions.append({"bibcode": record["bibcode"], "response": text})
        trace.append(json.dumps(outcome.trace, default=str) + "\n")
    return predictions, "".join(trace).encode()


def test_an_agent_trace_is_evidence(board):
    """The trace that `scitaste eval` writes makes a run evidence-consistent: the reply is the last assistant message, a
    failed item carries none, and lines of the other modes in the same trace file are left out."""
    predictions, trace = _baseline_trace("pure_qa", GOLD, fail=("P005",))
    assert json.loads(trace.splitlines()[5])["error"] == "no reply in 120 s"
    assert "messages" not in json.loads(trace.splitlines()[5])
    _, other_mode = _baseline_trace("native_search", GOLD[:12])  # other priors: other answers
    result = board.submit(_bytes(predictions), "baseline", "pure_qa", submitter="u", trace=trace + other_mode)
    assert (result.status, result.message) == (
        "evidence-consistent", "scored as run #1: evidence-consistent (the evidence records every submitted answer; "
                               "this shows they agree, not that a model produced them)")
    assert board.result(result.run_id)["overall"]["n_scored"] == 23
    changed, _ = _baseline_trace("pure_qa", GOLD[:12], fail=("P005",))
    second = board.submit(_bytes(changed), "other", "pure_qa", submitter="u", trace=trace)
    assert second.status == "self-reported" and "the evidence's answer for P000 differs" in second.message
    answered, _ = _baseline_trace("pure_qa", GOLD)  # P005 answered here, failed in the trace
    third = board.submit(_bytes(answered), "third", "pure_qa", submitter="u", trace=trace)
    assert third.status == "self-reported" and "the evidence's answer for P005 differs" in third.message


def test_two_stores_on_one_folder_write_while_one_is_read(tmp_path):
    """Two writers on one folder (the Space, and `scitaste demo` storing its runs) while the Space's pages read its
    store: no write fails with "database is locked" and every run is kept."""
    import hashlib

    from scitaste_hf.leaderboard.store import Store

    space, other = Store(tmp_path), Store(tmp_path)
    summary = {"overall": {"note": "y" * 200}}

    def insert(store, name):
        return store.insert(hashlib.sha256(name.encode()).hexdigest(), Meta(model=name, mode="pure_qa",
                            submitted_at="2026-01-01T00:00:00"), "self-reported", summary, {}, 1, 1, copy=True)

    for i in range(300):
        insert(space, f"before-{i}")
    errors, writing_done = [], threading.Event()

    def write(store, k):
        try:
            for i in range(60):
                insert(store, f"w{k}-{i}")
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    def read():
        try:
            while not writing_done.is_set():
                space.rows()
                space.copy_pending()
        except Exception as exc:  # collected and asserted below
            errors.append(exc)

    readers = [threading.Thread(target=read) for _ in range(3)]
    writers = [threading.Thread(target=write, args=(space if k % 2 else other, k)) for k in range(4)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join()
    writing_done.set()
    for t in readers:
        t.join()
    assert errors == []
    assert len(space.rows()) == 540 and len(other.copy_pending()) == 540
    space.close()
    other.close()
