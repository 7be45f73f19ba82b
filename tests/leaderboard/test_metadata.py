"""Model metadata (issue 29, item 4) against the fake Hub's model repos (tests/fixtures/fake_hub.py, a real server on
127.0.0.1): what a model's repo and card give appears in the board's columns and its open-weights filter; a model id
the Hub does not have, a card without metadata, a Hub that does not answer and an offline board each leave the run
stored with the fields unknown; a stated knowledge cutoff is kept as stated, for an upload and for a request's
server run."""

import json
import runpy
from importlib import resources

import httpx
import numpy as np
import pytest

from scitaste_hf.leaderboard import Leaderboard, SubmissionError
from scitaste_hf.leaderboard.metadata import NOT_FOUND, READ, STATED, UNKNOWN, UNVERIFIED
from scitaste_hf.leaderboard.service import FLOOR_NAMES
from scitaste_hf.records import load_records
from scitaste_hf.resources import bundled_dir
from scitaste_hf.schema import DIMENSIONS

GOLD = load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))[:12]
#: A model repo as the Hub's model_info answers it: 135 M parameters in safetensors, a card naming a licence and a
#: base model, a weights file.
OPEN = {"safetensors": {"parameters": {"BF16": 134_515_008}, "total": 134_515_008},
        "cardData": {"license": "apache-2.0", "base_model": ["org/base-135m"]},
        "siblings": [{"rfilename": "config.json"}, {"rfilename": "model.safetensors"}]}
#: A repo whose card has no metadata and which holds no weights (a model served elsewhere).
BARE = {"siblings": [{"rfilename": "README.md"}]}


@pytest.fixture(scope="module")
def app():
    return runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="test")


@pytest.fixture()
def online(hub, monkeypatch):
    """The fake Hub with two model repos set up; this process's board asks it (HF_ENDPOINT, online)."""
    url = hub[0]
    for model_id, info in (("org/open-135m", OPEN), ("org/bare-card", BARE)):
        httpx.post(f"{url}/_model", json={"id": model_id, "info": info}, timeout=5).raise_for_status()
    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("SCITASTE_WORKER_SECRET", "metadata-test-secret")
    return url


def _answers(seed):
    """A predictions file of the gold papers: the labels moved by noise (each seed another run)."""
    rng = np.random.default_rng(seed)
    lines = []
    for r in GOLD:
        noise = rng.normal(0, 8, 1 + len(DIMENSIONS))
        lines.append({"bibcode": r["bibcode"],
                      "innovation_score": float(np.clip(r["innovation_score"] + noise[0], 0, 100)),
                      "dimension_scores": {d: float(np.clip(r["dimension_scores"][d] + e, 0, 100))
                                           for d, e in zip(DIMENSIONS, noise[1:])}})
    return "".join(json.dumps(line) + "\n" for line in lines).encode()


def _cells(app, board, **filters):
    """Run -> {column: (value, text shown)} of the Space's board table."""
    frame = app["table"](board, **filters)
    headers = frame["headers"]
    return {row[headers.index("run")]: {h: (v, t) for h, v, t in zip(headers, row, shown)}
            for row, shown in zip(frame["data"], frame["metadata"]["display_value"])}


def test_what_the_hub_gives_appears_in_the_columns_and_unknown_is_never_guessed(online, app, tmp_path):
    board = Leaderboard(tmp_path, GOLD, background_upgrade=False)
    try:
        submit = board.submit
        read = submit(_answers(0), "open model", "pure_qa", hub_id="org/open-135m", knowledge_cutoff="2024-06").run_id
        bare = submit(_answers(1), "bare model", "pure_qa", hub_id="org/bare-card", revision="v1").run_id
        missing = submit(_answers(2), "missing model", "pure_qa", hub_id="org/no-such-model").run_id
        stated = submit(_answers(3), "api model", "pure_qa", knowledge_cutoff="2023").run_id
        cells = _cells(app, board)
    finally:
        board.close()
    shown = {run: {c: cells[run][c][1] for c in ("params (B)", "open weights", "licence", "base model",
                                                  "knowledge cutoff", "model metadata")} for run in cells}
    assert shown[read] == {"params (B)": "0.135", "open weights": "yes", "licence": "apache-2.0",
                           "base model": "org/base-135m", "knowledge cutoff": "2024-06", "model metadata": READ}
    assert cells[read]["params (B)"][0] == pytest.approx(0.134515008)  # a number, to sort by
    # read: the card names nothing and the repo holds no weights
    assert shown[bare] == {"params (B)": UNKNOWN, "open weights": "no", "licence": UNKNOWN, "base model": UNKNOWN,
                           "knowledge cutoff": UNKNOWN, "model metadata": READ}
    assert shown[missing] == {**dict.fromkeys(shown[bare], UNKNOWN), "model metadata": NOT_FOUND}
    assert shown[stated] == {**dict.fromkeys(shown[bare], UNKNOWN), "knowledge cutoff": "2023",
                             "model metadata": STATED}
    assert cells[missing]["params (B)"][0] is None


def test_the_open_weights_filter_ranks_only_open_weight_runs(online, app, tmp_path):
    board = Leaderboard(tmp_path, GOLD, background_upgrade=False)
    try:
        runs = [board.submit(_answers(k), f"model {k}", "pure_qa", hub_id=hub).run_id
                for k, hub in enumerate(["org/open-135m", "org/bare-card", ""])]
        everything, open_only = _cells(app, board), _cells(app, board, open_weights=True)
        floors = app["floors_table"](board, open_weights=True)
    finally:
        board.close()
    assert set(everything) == set(runs) and list(open_only) == [runs[0]]
    assert open_only[runs[0]]["rank"][1] == "1"  # ranked among the open-weight runs alone
    runs_above = floors["headers"].index("runs above it")
    counted = [row[runs_above] for row in floors["data"] if row[0] in FLOOR_NAMES.values()]
    assert len(counted) == len(FLOOR_NAMES) and all(count.endswith(" of 1") for count in counted)


def test_an_unreachable_or_offline_hub_leaves_the_run_stored_unverified(online, app, tmp_path, monkeypatch):
    board = Leaderboard(tmp_path, GOLD, background_upgrade=False)
    try:
        httpx.post(f"{online}/_fault", json={"mode": "close"}, timeout=5)  # every connection closed unanswered
        closed = board.submit(_answers(0), "open model", "pure_qa", hub_id="org/open-135m", revision="main").run_id
        httpx.post(f"{online}/_fault", json={"mode": "ok"}, timeout=5)
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        offline = board.submit(_answers(1), "open model", "pure_qa", hub_id="org/open-135m").run_id
        meta = {run: board.store.rows_by_id([run])[0]["model_meta"] for run in (closed, offline)}
        cells = _cells(app, board)
    finally:
        board.close()
    for run in (closed, offline):
        stored = json.loads(meta[run])
        assert stored["hub_id"] == "org/open-135m" and stored["checked"] == UNVERIFIED  # as given, unverified
        assert [cells[run][c][1] for c in ("params (B)", "open weights", "licence", "model metadata")] == [
            UNKNOWN, UNKNOWN, UNKNOWN, UNVERIFIED]
    assert json.loads(meta[closed])["revision"] == "main"


def test_a_request_states_its_cutoff_and_its_server_run_reads_the_hub(online, app, tmp_path):
    board = Leaderboard(tmp_path, GOLD, background_upgrade=False)
    try:
        for hub_id, cutoff in (("org/x", "June 2024"), ("not a hub id", "")):
            with pytest.raises(SubmissionError) as refused:
                board.request(hub_id, ["pure_qa"], knowledge_cutoff=cutoff)
            assert "\n" not in str(refused.value)
        with pytest.raises(SubmissionError, match="Hub model id"):
            board.submit(_answers(0), "m", "pure_qa", hub_id="<b>org</b>/x")
        board.request("org/open-135m", ["pure_qa"], knowledge_cutoff="2024-01", submitter="alice")
        claimed = board.requests.claim("worker-1")
        stored = board.store_server_run(claimed, _answers(4), {"revision": "f" * 40})
        cells = _cells(app, board)[stored.run_id]
    finally:
        board.close()
    assert (cells["status"][1], cells["params (B)"][1], cells["open weights"][1], cells["knowledge cutoff"][1],
            cells["model metadata"][1]) == ("server-run", "0.135", "yes", "2024-01", READ)


def test_the_cutoff_and_size_filters_keep_what_they_say_and_list_unknown_runs_apart(online, app, tmp_path):
    big = {**OPEN, "safetensors": {"parameters": {"BF16": 70_553_706_496}, "total": 70_553_706_496}}
    httpx.post(f"{online}/_model", json={"id": "org/big-70b", "info": big}, timeout=5).raise_for_status()
    board = Leaderboard(tmp_path, GOLD, background_upgrade=False)
    try:
        submit = board.submit
        small = submit(_answers(0), "small", "pure_qa", hub_id="org/open-135m", knowledge_cutoff="2023-06").run_id
        large = submit(_answers(1), "large", "pure_qa", hub_id="org/big-70b", knowledge_cutoff="2024").run_id
        stated = submit(_answers(2), "api model", "pure_qa", knowledge_cutoff="2022-12-31").run_id
        unknown = submit(_answers(3), "unknown model", "pure_qa").run_id
        # (cutoff, params in billions) as stored, and the filters' rule computed here: one choice of a kind holds
        facts = {small: ("2023-06", 0.134515008), large: ("2024", 70.553706496), stated: ("2022-12-31", None),
                 unknown: (None, None)}

        def expected(cutoff_before=(), cutoff_unknown=False, params_bands=(), params_unknown=False):
            out = set()
            for run, (cutoff, params) in facts.items():
                if cutoff_before or cutoff_unknown:
                    if not ((cutoff is None and cutoff_unknown) or (cutoff is not None and any(
                            int(cutoff[:4]) < year for year in cutoff_before))):
                        continue
                if params_bands or params_unknown:
                    if not ((params is None and params_unknown) or (params is not None and any(
                            low <= params < high for low, high in params_bands))):
                        continue
                out.add(run)
            return out

        cases = [(["cutoff before 2024"], expected(cutoff_before=[2024])),
                 (["cutoff unknown"], expected(cutoff_unknown=True)),
                 (["cutoff before 2023", "cutoff unknown"], expected(cutoff_before=[2023], cutoff_unknown=True)),
                 (["params under 3B"], expected(params_bands=[(0, 3)])),
                 (["params unknown"], expected(params_unknown=True)),
                 (["params 15B to 80B", "cutoff before 2025"], expected(cutoff_before=[2025],
                                                                        params_bands=[(15, 80)]))]
        assert [c[1] for c in cases] == [{small, stated}, {unknown}, {stated, unknown}, {small}, {stated, unknown},
                                         {large}]
        for chosen, runs in cases:
            rows = board.rows(model=chosen)
            assert {r["run"] for r in rows} == runs, chosen
            assert sorted(r["rank"][0] for r in rows)[0] == 1  # ranked among themselves
            assert set(_cells(app, board, model=chosen)) == runs, chosen
            floors = app["floors_table"](board, model=chosen)
            counts = [row[floors["headers"].index("runs above it")] for row in floors["data"]
                      if row[0] in FLOOR_NAMES.values()]
            assert counts and all(c.endswith(f" of {len(runs)}") for c in counts)
        assert {r["run"] for r in board.rows(open_weights=True, model=["cutoff before 2024"])} == {small}
        with pytest.raises(SubmissionError, match="model filter 'params huge': one of cutoff before"):
            board.rows(model=["params huge"])
    finally:
        board.close()


@pytest.mark.parametrize("chosen", [5, True, 3.5, [["params unknown"]], [{"x": 1}], {"params unknown": 1}])
def test_a_model_filter_that_is_not_a_list_of_choices_is_refused_in_one_line(chosen):
    from scitaste_hf.leaderboard.metadata import check_filters

    with pytest.raises(SubmissionError, match=r"^model filter") as refused:
        check_filters(chosen)
    assert "\n" not in str(refused.value)
    assert check_filters(["params unknown", "cutoff unknown"]) == ("cutoff unknown", "params unknown")


def test_a_stated_cutoff_is_a_real_date():
    from scitaste_hf.leaderboard.metadata import check_cutoff

    for wrong in ("2023-02-30", "2023-04-31", "0000", "2023-00", "2023-1"):
        with pytest.raises(SubmissionError, match="knowledge cutoff"):
            check_cutoff(wrong)
    assert [check_cutoff(v) for v in ("2024-02-29", " 2023-06 ", "1999", "")] == ["2024-02-29", "2023-06", "1999", ""]


def test_a_stated_cutoff_after_today_is_refused():
    from datetime import date, timedelta

    from scitaste_hf.leaderboard.metadata import check_cutoff

    today, tomorrow = date.today(), date.today() + timedelta(days=1)
    assert check_cutoff(today.isoformat()) == today.isoformat() and check_cutoff(str(today.year)) == str(today.year)
    for wrong in (tomorrow.isoformat(), str(today.year + 1), "2999-01"):
        with pytest.raises(SubmissionError, match="after today"):
            check_cutoff(wrong)
