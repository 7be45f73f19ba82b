"""`scitaste score` says which key is wrong, and fails when nothing could be scored."""

import json

from scitaste_hf.cli import main
from scitaste_hf.schema import DIMENSIONS


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _gold(n):
    return [{"bibcode": f"B{i}", "discipline": "physics", "innovation_score": 10.0 + 5 * i,
             "dimension_scores": dict.fromkeys(DIMENSIONS, 10.0 + 5 * i)} for i in range(n)]


def test_a_misspelt_key_on_every_line_fails_with_one_line_naming_it(tmp_path, capsys, monkeypatch):
    # a wide terminal, so that the table's caption holds the note on one line whatever the worker's stdout is
    monkeypatch.setenv("COLUMNS", "300")
    gold = _gold(6)
    pred = [{"bibcode": r["bibcode"], "inovation_score": 50, "dimension_scores": r["dimension_scores"]} for r in gold]
    json_out = tmp_path / "out.json"
    code = main(["score", "--predictions", _write(tmp_path / "p.jsonl", pred), "--gold",
                 _write(tmp_path / "g.jsonl", gold), "--n-resamples", "0", "--json", str(json_out)])
    out, err = capsys.readouterr()
    assert code == 2 and not json_out.exists()
    assert err == ("scitaste: error: nothing could be scored: 6 of 6 papers unscored (schema 6); first, B0: "
                   "innovation_score: Field required (unknown key 'inovation_score')\n")
    assert "first schema: B0: innovation_score: Field required (unknown key 'inovation_score')" in out


def test_a_partly_scored_run_names_the_first_failure_of_each_reason_and_succeeds(tmp_path, capsys):
    gold = _gold(6)
    pred = [{"bibcode": r["bibcode"], "innovation_score": r["innovation_score"] + 2,
             "dimension_scores": r["dimension_scores"]} for r in gold]
    pred[2] = {"bibcode": "B2", "response": "I cannot say."}
    pred[4] = {"bibcode": "B4", "score": 3}
    code = main(["score", "--predictions", _write(tmp_path / "p.jsonl", pred), "--gold",
                 _write(tmp_path / "g.jsonl", gold), "--n-resamples", "0"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert "unscored: no_json 1, schema 1" in out
    assert "first no_json: B2: no JSON object in the reply" in out
    assert ("first schema: B4: the line has no answer fields (innovation_score, dimension_scores), response or "
            "failure (unknown key 'score')") in out
