"""Parsing model replies into answers or counted failures (DESIGN.md section 9)."""

import json

import pytest

from scitaste_hf.schema import DIMENSIONS, Answer, Failure
from scitaste_hf.scoring import parse_answer

# The paper's worked example, 1998PhRvA..58.3983S (DESIGN.md section 4).
WORKED = {"innovation_score": 46.36,
          "dimension_scores": dict(zip(DIMENSIONS, (51.55, 35.33, 34.39, 79.22, 44.51, 13.77, 57.58)))}


def test_worked_example_from_fenced_reply():
    reply = ("I ran all nine tools. Citation impact is strong.\n\n```json\n"
             + json.dumps({**WORKED, "reasoning": "solid", "confidence": 0.7}, indent=2) + "\n```\nDone.")
    answer = parse_answer(reply)
    assert isinstance(answer, Answer)
    assert answer.vector() == (46.36, 51.55, 35.33, 34.39, 79.22, 44.51, 13.77, 57.58)
    assert answer.confidence == 0.7


def test_object_in_prose_and_last_answer_wins():
    first = {**WORKED, "innovation_score": 10.0}
    reply = f"An example answer: {json.dumps(first)}. My final answer: {json.dumps(WORKED)} -- thanks."
    assert parse_answer(reply).innovation_score == 46.36


def test_fenced_block_preferred_over_prose():
    prose = {**WORKED, "innovation_score": 99.0}
    reply = f"```\n{json.dumps(WORKED)}\n```\nFor comparison, a weaker paper would be {json.dumps(prose)}"
    assert parse_answer(reply).innovation_score == 46.36


def test_bare_json_and_integers():
    obj = {"innovation_score": 50, "dimension_scores": {k: 50 for k in DIMENSIONS}}
    assert parse_answer(json.dumps(obj)).vector() == (50.0,) * 8


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("I cannot score this paper.", "no_json"),
        ("", "no_json"),
        ("{not json at all", "no_json"),
        ('{"verdict": "novel"}', "schema"),
        (json.dumps({"innovation_score": 40}), "schema"),
        (json.dumps({**WORKED, "innovation_score": "46"}), "schema"),
        (json.dumps({**WORKED, "dimension_scores": {**WORKED["dimension_scores"], "extra": 1}}), "schema"),
        (json.dumps({**WORKED, "innovation_score": 146}), "out_of_range"),
        (json.dumps({**WORKED, "innovation_score": -0.5}), "out_of_range"),
        ('{"innovation_score": NaN, "dimension_scores": ' + json.dumps(WORKED["dimension_scores"]) + "}",
         "out_of_range"),
        (json.dumps({**WORKED, "confidence": 3}), "out_of_range"),
        (None, "schema"),
    ],
)
def test_failures_carry_reasons(reply, reason):
    result = parse_answer(reply)
    assert isinstance(result, Failure)
    assert result.reason == reason
    assert result.detail


def test_failure_reason_is_checked():
    with pytest.raises(ValueError, match="unknown failure reason"):
        Failure("oops")


@pytest.mark.parametrize("reply", [
    '{"a": ' * 1500,
    '{"a": ' * 1500 + "1" + "}" * 1500,
    "```json\n" + "[" * 5000 + "\n```",
    "Deep: " + '{"a": ' * 100_000 + "1" + "}" * 100_000,
])
def test_deeply_nested_reply_is_a_counted_failure(reply):
    # Beyond the decoder's recursion limit json raises RecursionError, not JSONDecodeError.
    result = parse_answer(reply)
    assert isinstance(result, Failure) and result.reason == "no_json"


def test_answer_before_deeply_nested_junk_still_counts():
    reply = json.dumps(WORKED) + " and then " + '{"a": ' * 2000
    assert parse_answer(reply).innovation_score == 46.36
