"""The board's table shows a prospective column beside the retrospective one (issue 33: "with the resolution
date"): each run gets the Scheme-1 skill, with its interval, of the best sealed run of its model and mode at the
split's latest resolution, and the date; blank before a resolution and for a model and mode that sealed nothing."""

import json
import random
import runpy
from importlib import resources

from scitaste_hf.builder.prospective import blank_records
from scitaste_hf.leaderboard.sealed import SealedBoard
from scitaste_hf.leaderboard.service import Leaderboard, summary_of
from scitaste_hf.records import load_records
from scitaste_hf.resources import bundled_dir

GOLD = load_records(str(resources.files("scitaste_hf").joinpath("data/examples/gold.jsonl")))


def _honest(shift: float, seed: int):
    """Answers that know something of the gold but copy none of it (half the gold, half noise)."""
    draw = random.Random(seed)
    return lambda r: max(0.0, min(100.0, 0.5 * r["innovation_score"] + draw.uniform(0, 50) + shift))


def _lines(score) -> bytes:
    return "".join(json.dumps({"bibcode": r["bibcode"], "innovation_score": score(r),
                               "dimension_scores": r["dimension_scores"]}) + "\n" for r in GOLD).encode()


def test_each_run_shows_the_prospective_skill_of_its_model_and_mode_with_its_interval_and_date(tmp_path):
    app = runpy.run_path(str(bundled_dir("space") / "app.py"), run_name="test")
    columns = app["COLUMNS"]
    assert columns.index("prospective S1 skill") + 3 == columns.index("S1 skill")  # beside the retrospective one
    board = Leaderboard(tmp_path / "board", GOLD, rate_limit=None, background_upgrade=False)
    board.submit(_lines(_honest(0.0, 1)), "m", "pure_qa")
    board.submit(_lines(lambda r: 50.0 + r["year"] % 7), "other", "pure_qa")
    sealed = SealedBoard(tmp_path / "board", blank_records(GOLD, [None] * len(GOLD)))
    sealed.submit(_lines(_honest(0.0, 2)), "m", "pure_qa", submitter="hf:a")
    sealed.submit(_lines(_honest(-20.0, 3)), "m", "pure_qa", submitter="hf:b")
    sealed.submit(_lines(lambda r: 40.0), "m", "dimagent_v3", submitter="hf:a")

    def cells(view):
        at = [columns.index(c) for c in ("model", "mode", "prospective S1 skill", "prospective S1 skill 95% CI",
                                         "resolved as of")]
        return {row[at[0]]: [row[i] for i in at[1:]] for row in view["data"]}

    assert cells(app["table"](board, sealed=sealed)) == {"m": ["pure_qa", None, "", ""],
                                                          "other": ["pure_qa", None, "", ""]}
    results = sealed.resolve("2022-12-31", GOLD[:150], GOLD[150:])
    view = app["table"](board, sealed=sealed)  # the resolution is seen although the board's runs did not change
    skills = {run: summary_of(result)["overall"] for run, result in results.items()}
    best = max((1, 2), key=lambda run: skills[run]["s1_skill"])  # of the two sealed runs of m in pure_qa
    low, high = skills[best]["s1_skill_ci"]
    assert cells(view) == {"m": ["pure_qa", round(skills[best]["s1_skill"], 3), f"[{low:.3f}, {high:.3f}]",
                                 "2022-12-31"], "other": ["pure_qa", None, "", ""]}
    [shown] = [text for row, text in zip(view["data"], view["metadata"]["display_value"])
               if row[columns.index("model")] == "m"]
    assert shown[columns.index("prospective S1 skill")] == f"{skills[best]['s1_skill']:.3f}"
    # a discipline's view shows the discipline's prospective skill, of the run best there
    scope = next(s for s in board.scopes if s != "overall")
    there = max(summary_of(results[run])[scope]["s1_skill"] for run in (1, 2))
    assert cells(app["table"](board, discipline=scope, sealed=sealed))["m"][1] == round(there, 3)
    sealed.close()
    board.close()
