"""scitaste_hf.predictions reads predictions lines and lm-eval samples lines, told apart line by line: a samples
line's paper is its doc's bibcode and its answer the filtered reply, read as the task's process_results reads it."""

import json

import pytest

from scitaste_hf.adapters.lmeval.tasks import process_results
from scitaste_hf.errors import ScitasteError
from scitaste_hf.predictions import parse_predictions, prediction_lines
from scitaste_hf.schema import DIMENSIONS, Answer, Failure, failure_text

ANSWER = {"innovation_score": 61.5, "dimension_scores": {k: 40.0 + i for i, k in enumerate(DIMENSIONS)}}
DOC = {"bibcode": "B1", "discipline": "physics", "innovation_score": 50.0,
       "dimension_scores": dict.fromkeys(DIMENSIONS, 50.0), "floor": [50.0] * 8, "scitaste_mode": "pure_qa"}


def _sample(reply, doc=DOC, **extra):
    """A samples line as lm-eval 0.4 writes it (--log_samples), with the metric items process_results made."""
    return json.dumps({"doc_id": 0, "doc": doc, "target": "{}", "arguments": [["prompt", {}]], "resps": [[reply]],
                       "filtered_resps": [reply], "filter": "none", "metrics": ["scheme1"], "doc_hash": "x",
                       "prompt_hash": "y", "target_hash": "z", **extra})


def _parse(*lines, strict=False):
    return parse_predictions(list(lines), "f.jsonl", strict_fields=strict)


@pytest.mark.parametrize("reply", [
    "```json\n" + json.dumps(ANSWER) + "\n```", f"my verdict: {json.dumps(ANSWER)}.", "no answer here",
    json.dumps({**ANSWER, "innovation_score": 250}), failure_text("timeout", "the paper took too long"),
    failure_text("quota", "an unknown reason"), ""])
def test_a_samples_line_is_read_as_process_results_reads_it(reply):
    answer = _parse(_sample(reply))["B1"]
    item = process_results(DOC, [reply])["scheme1"]
    if item["pred"] is None:
        assert isinstance(answer, Failure) and answer.reason == item["reason"]
    else:
        assert isinstance(answer, Answer) and list(answer.vector()) == item["pred"]


def test_a_reply_that_is_not_text_is_a_failure_as_in_the_task():
    answer = _parse(_sample(["a", "b"]))["B1"]
    assert answer == Failure("other", "the model returned list, not text")
    assert process_results(DOC, [["a", "b"]])["scheme1"]["reason"] == "other"


def test_both_formats_in_one_file_and_a_strict_upload_of_raw_replies():
    lines = [_sample(json.dumps(ANSWER)), json.dumps({"bibcode": "B2", **ANSWER})]
    parsed = _parse(*lines, strict=True)  # the replies are the model's: strict checks only the submitter's fields
    assert parsed["B1"].vector() == parsed["B2"].vector()
    assert isinstance(_parse(_sample("no answer"), strict=True)["B1"], Failure)


@pytest.mark.parametrize(("line", "message"), [
    (_sample("x", bibcode="B1"), r"f.jsonl:1: the line has both a predictions line's 'bibcode' and an lm-eval "
                                 r"sample's 'doc' and 'filtered_resps': give one format a line"),
    (_sample("x", doc={"title": "no bibcode"}), r"f.jsonl:1: missing 'doc.bibcode' \(the lm-eval sample's paper\)"),
    (_sample("x", doc="B1"), r"f.jsonl:1: an lm-eval sample needs 'doc', the paper's record"),
    (json.dumps({"doc": DOC}), r"f.jsonl:1: an lm-eval sample needs 'filtered_resps'"),
    (json.dumps({"doc": DOC, "filtered_resps": "x"}), r"f.jsonl:1: an lm-eval sample needs 'filtered_resps'"),
])
def test_a_malformed_samples_line_is_one_line_naming_the_key(line, message):
    with pytest.raises(ScitasteError, match=message):
        _parse(line)


def test_two_modes_samples_run_together_are_named():
    with pytest.raises(ScitasteError, match=r"f.jsonl:2: duplicate bibcode B1 \(first on line 1\): the samples of "
                                            r"modes pure_qa and dimagent_v3; give one task's samples log$"):
        _parse(_sample("x"), _sample("x", doc={**DOC, "scitaste_mode": "dimagent_v3"}))


def test_a_paper_twice_across_formats_is_a_duplicate():
    with pytest.raises(ScitasteError, match=r"f.jsonl:2: duplicate bibcode B1 \(first on line 1\)"):
        _parse(_sample("x"), json.dumps({"bibcode": "B1", **ANSWER}))


def test_a_misspelt_key_is_named_in_the_failure_or_the_strict_error():
    misspelt = json.dumps({"bibcode": "B1", "inovation_score": 5, "dimension_scores": ANSWER["dimension_scores"]})
    assert _parse(misspelt)["B1"] == Failure(
        "schema", "innovation_score: Field required (unknown key 'inovation_score')")
    with pytest.raises(ScitasteError, match=r"invalid answer fields \(schema\): innovation_score: Field required "
                                            r"\(unknown key 'inovation_score'\)"):
        _parse(misspelt, strict=True)
    alone = _parse(json.dumps({"bibcode": "B1", "inovation_score": 5, "answer": 1}))["B1"]
    assert alone.reason == "schema" and alone.detail.endswith("(unknown keys 'inovation_score', 'answer')")
    # keys the readers use, or an answer's optional fields, are never called unknown
    fine = _parse(json.dumps({"bibcode": "B1", **ANSWER, "reasoning": "r", "confidence": 2.0}))["B1"]
    assert fine.reason == "out_of_range" and "unknown" not in fine.detail


def test_prediction_lines_reads_back_to_the_same_answers():
    parsed = _parse(_sample(json.dumps({**ANSWER, "confidence": 0.5})), _sample("none", doc={**DOC, "bibcode": "B2"}),
                    json.dumps({"bibcode": "B3", "failure": "timeout", "detail": "slow"}))
    again = parse_predictions(prediction_lines(parsed).splitlines(), "again", strict_fields=True)
    assert again == parsed
