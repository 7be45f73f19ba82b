"""Gold-label uncertainty on the simulated world: the weights' intervals that `scitaste weights derive` finds on a
build of the shared mirror's world, put in the board's folder, give a board whose noise ceiling is reported beside
each run's skill in the Space's table, and whose second rank interval is drawn against them."""

import json
import runpy

import numpy as np
import pytest

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def built(once, mirror):
    from world_build import built_with_evidence

    return built_with_evidence(once, mirror)


def test_the_simulated_worlds_noise_ceiling_is_reported_beside_each_runs_skill(built, tmp_path):
    from world_build import baseline_run

    from scitaste_hf.cli import main
    from scitaste_hf.leaderboard.setup import GOLD_WEIGHTS_FILE, gold_draws, open_leaderboard
    from scitaste_hf.predictions import prediction_lines
    from scitaste_hf.records import load_records
    from scitaste_hf.resources import bundled_dir
    from scitaste_hf.scoring.gold_uncertainty import noise_ceiling
    from scitaste_hf.weights import DEFAULT_WEIGHTS

    folder = tmp_path / "board"
    folder.mkdir()
    assert main(["weights", "derive", "--records", str(built), "--json", str(folder / GOLD_WEIGHTS_FILE)]) == 0
    derived = json.loads((folder / GOLD_WEIGHTS_FILE).read_text())["weights_interval"]
    draws = gold_draws(folder)
    assert not draws.trivial and dict(draws.intervals) == {k: tuple(v) for k, v in derived.items()}
    gold = load_records(built)
    app = runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="test")
    board, synthetic = open_leaderboard(folder, str(built))
    try:
        assert not synthetic and board.gold_draws == draws
        for mode in ("dimagent_v3", "pure_qa"):
            run = baseline_run(built, gold, mode=mode)
            assert board.submit(prediction_lines(run.predictions).encode(), "scitaste-baseline", mode).run_id
        # the ceiling: what a predictor of the expected gold scores against the world's gold redrawn from the
        # weights' intervals; below a perfect skill, and above every run's
        ceiling = board.noise_ceiling()
        G = np.array([[r["innovation_score"], *r["dimension_scores"].values()] for r in gold])
        assert ceiling == noise_ceiling(G, board._floor_answers["constant"], draws, weights=DEFAULT_WEIGHTS)
        s1 = ceiling["scheme1_skill"]
        assert 0.5 < s1["value"] < 1.0 and s1["interval"][0] < s1["value"] < s1["interval"][1]
        rows = board.rows()
        assert len(rows) == 2 and all(r["s1_skill"] < s1["value"] for r in rows)
        assert all(r["rank_gold"] is not None for r in rows)
        # the Space shows it as a reference row, in the runs' own S1 skill column
        floors = app["floors_table"](board)
        shown = dict(zip(floors["headers"], floors["data"][-1]))
        assert shown["reference row"] == app["CEILING_ROW"] and shown["S1 skill"] == round(s1["value"], 3)
        table = app["table"](board)
        assert table["headers"][:2] == ["rank", "rank (gold redrawn)"]
        print(f"noise ceiling of the simulated world: S1 skill {s1['value']:.3f} {s1['interval']}, "
              f"S2 skill {ceiling['scheme2_skill']['value']:.3f}; runs' S1 skill {[r['s1_skill'] for r in rows]}")
    finally:
        board.close()
