"""Scoring a whole run: coverage, failures, per-discipline breakdown."""

import numpy as np
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS, DISCIPLINES, Answer, Failure
from scitaste_hf.scoring import scheme1, score_pairs, score_run, wape


def _record(bibcode, discipline, row):
    return {"bibcode": bibcode, "discipline": discipline, "innovation_score": row[0],
            "dimension_scores": dict(zip(DIMENSIONS, row[1:]))}


def _answer(row):
    return Answer.model_validate({"innovation_score": row[0], "dimension_scores": dict(zip(DIMENSIONS, row[1:]))})


@pytest.fixture(scope="module")
def gold_and_predictions():
    rng = np.random.default_rng(4)
    G = rng.uniform(0, 100, (60, 8)).round(1)
    P = np.clip(G + rng.normal(0, 10, G.shape), 0, 100).round(1)
    gold = [_record(f"B{i:03d}", DISCIPLINES[i % 3], G[i]) for i in range(60)]
    predictions = {f"B{i:03d}": _answer(P[i]) for i in range(60)}
    predictions["B000"] = Failure("no_json", "prose only")
    predictions["B003"] = Failure("timeout")
    del predictions["B001"]
    return gold, predictions, P, G


def test_overall_excludes_failures_and_reports_coverage(gold_and_predictions):
    gold, predictions, P, G = gold_and_predictions
    result = score_run(gold, predictions, n_resamples=200)
    overall = result["overall"]
    assert (overall["n_total"], overall["n_scored"]) == (60, 57)
    assert overall["coverage"] == pytest.approx(57 / 60)
    assert overall["failures"] == {"missing": 1, "no_json": 1, "timeout": 1}
    keep = [i for i in range(60) if i not in (0, 1, 3)]
    assert overall["scheme1"]["scheme1"] == pytest.approx(scheme1(P[keep], G[keep])["scheme1"])
    assert overall["scheme2"]["wape"] == pytest.approx(wape(P[keep, 0], G[keep, 0]))
    lo, hi = overall["scheme1"]["ci"]["scheme1"]
    assert lo < overall["scheme1"]["scheme1"] < hi


def test_by_discipline(gold_and_predictions):
    gold, predictions, P, G = gold_and_predictions
    result = score_run(gold, predictions, n_resamples=0)
    assert list(result["by_discipline"]) == list(DISCIPLINES[:3])
    physics = result["by_discipline"]["physics"]
    keep = [i for i in range(0, 60, 3) if i not in (0, 3)]
    assert (physics["n_total"], physics["n_scored"]) == (20, 18)
    assert physics["scheme2"]["wape"] == pytest.approx(wape(P[keep, 0], G[keep, 0]))
    assert physics["scheme2"]["ci"]["wape"] is None


def test_no_scored_item_is_none_not_zero(gold_and_predictions):
    gold = gold_and_predictions[0]
    result = score_run(gold, {}, n_resamples=0)
    assert result["overall"]["scheme1"] is None and result["overall"]["scheme2"] is None
    assert result["overall"]["coverage"] == 0.0 and result["overall"]["failures"] == {"missing": 60}


def test_bad_runs(gold_and_predictions):
    gold, predictions, _, _ = gold_and_predictions
    with pytest.raises(ScitasteError, match="not in the gold set"):
        score_run(gold, {**predictions, "NOPE": Failure("other")})
    with pytest.raises(ScitasteError, match="duplicate bibcodes: B000"):
        score_run(gold + gold[:1], predictions)
    with pytest.raises(ScitasteError, match="empty"):
        score_run([], predictions)


def test_score_pairs_counts_bad_predictions():
    result = score_pairs([50.0, None, float("nan"), 140.0, "x", 30.0], [50.0, 20.0, 20.0, 20.0, 20.0, 40.0],
                         with_dimensions=False, n_resamples=0)
    assert result["n_scored"] == 2
    assert result["failures"] == {"missing": 1, "out_of_range": 2, "schema": 1}
    assert result["scheme2"]["wape"] == pytest.approx(10 / 90)
    with pytest.raises(ScitasteError, match="differ in length"):
        score_pairs([1.0], [1.0, 2.0], with_dimensions=False)
    with pytest.raises(ScitasteError, match="NaN"):
        score_pairs([1.0], [float("nan")], with_dimensions=False)


def test_malformed_gold_records_are_named(gold_and_predictions):
    gold, predictions, _, _ = gold_and_predictions
    with pytest.raises(ScitasteError, match=r"^gold item 2: expected a record object, got int$"):
        score_run([*gold[:2], 42], predictions)
    with pytest.raises(ScitasteError, match=r"^my.parquet item 1: missing 'bibcode'$"):
        score_run([gold[0], {k: v for k, v in gold[1].items() if k != "bibcode"}], {}, gold_name="my.parquet")
    with pytest.raises(ScitasteError, match=r"^gold has a score outside 0-100 at item 1: an integer too large"):
        score_run([gold[0], {**gold[1], "innovation_score": 10**400}], {})
    bib = gold[1]["bibcode"]
    with pytest.raises(ScitasteError, match=rf"^gold item 1 \({bib}\): missing 'discipline'$"):
        score_run([gold[0], {k: v for k, v in gold[1].items() if k != "discipline"}], {})
    with pytest.raises(ScitasteError, match=r"discipline 'Physics'; the benchmark's is 'physics'$"):
        score_run([gold[0], {**gold[1], "discipline": "Physics"}], {})
    # A discipline of one's own (a custom gold set) is scored in a row of its own.
    custom = score_run([gold[0], {**gold[1], "discipline": "astronomy"}], {}, n_resamples=0)
    assert "astronomy" in custom["by_discipline"]


def test_huge_integers_are_out_of_range_not_a_crash():
    result = score_pairs([10**400, 30.0], [50.0, 40.0], with_dimensions=False, n_resamples=0)
    assert result["failures"] == {"out_of_range": 1} and result["n_scored"] == 1
    with pytest.raises(ScitasteError, match="references has a score outside 0-100 at item 1: an integer too large"):
        score_pairs([1.0, 2.0], [50, 10**400], with_dimensions=False)
