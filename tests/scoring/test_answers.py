"""Parsing model replies into answers or counted failures (docs/answers.md)."""

import json

import pytest

from scitaste_hf.schema import DIMENSIONS, Answer, Failure
from scitaste_hf.scoring import parse_answer

# The paper's worked example, 1998PhRvA..58.3983S (docs/index-dimensions.md#weights).
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


@pytest.mark.parametrize(("reply", "reason"), [
    ('{"a": ' * 1500, "no_json"),
    ('{"a": ' * 1500 + "1" + "}" * 1500, "schema"),  # the innermost levels are objects (without an answer)
    ("```json\n" + "[" * 5000 + "\n```", "no_json"),
    ("Deep: " + '{"a": ' * 100_000 + "1" + "}" * 100_000, "schema"),
])
def test_deeply_nested_reply_is_a_counted_failure(reply, reason):
    # Beyond the decoder's recursion limit json raises RecursionError, not JSONDecodeError.
    result = parse_answer(reply)
    assert isinstance(result, Failure) and result.reason == reason


def test_answer_before_or_after_deeply_nested_junk_still_counts():
    junk = '{"a": ' * 2000
    assert parse_answer(json.dumps(WORKED) + " and then " + junk).innovation_score == 46.36
    assert parse_answer(junk + "1" + "}" * 2000 + " Final: " + json.dumps(WORKED)).innovation_score == 46.36


@pytest.mark.parametrize("before", [
    "".join('{"y": 1925, "c": 3}\n' for _ in range(10_000)),       # 170 kB of small objects
    "{} " * 20_000,
    "".join(f'{{"score": {k % 100}}} ' for k in range(3_000)),
    "".join(f"```\n{{\"n\": {k}}}\n```\n" for k in range(3_000)),  # thousands of small fences
])
def test_long_honest_replies_keep_their_answer(before):
    # the work budget cut these before their final answer; scanning from the end finds it first
    assert parse_answer(before + "Final answer: " + json.dumps(WORKED)).innovation_score == 46.36
    fenced = before + "```json\n" + json.dumps(WORKED) + "\n```"
    assert parse_answer(fenced).innovation_score == 46.36
    # and an answer written before long material is still found
    assert parse_answer("My answer: " + json.dumps(WORKED) + "\n" + before).innovation_score == 46.36


def test_an_unclosed_fence_before_spaces_is_linear():
    # two optional runs of spaces in the fence pattern made this cubic (17 s at 2,000 spaces)
    assert isinstance(parse_answer("```" + " " * 200_000), Failure)
    assert parse_answer("```" + " " * 200_000 + json.dumps(WORKED)).innovation_score == 46.36


class _CountingDecoder(json.JSONDecoder):
    """Counts the characters the answer finder makes the decoder read, failed attempts included."""

    read = 0

    def raw_decode(self, s, idx=0):
        try:
            value, end = super().raw_decode(s, idx)
        except json.JSONDecodeError as exc:
            _CountingDecoder.read += exc.pos - idx
            raise
        _CountingDecoder.read += end - idx
        return value, end


@pytest.mark.slow
@pytest.mark.parametrize("unit", [
    'lorem {" not json ',                 # a failed attempt at every brace
    '{"k":[' + "1," * 500,                # each attempt decodes to the end of the reply: 400 levels deep
    "{}",                                 # an object every two characters
])
def test_work_is_linear_in_the_reply(monkeypatch, unit):
    # Before, a reply of n stray objects cost n full rescans (a 4.8 MiB upload held the Space for minutes).
    from scitaste_hf.scoring import answers

    monkeypatch.setattr(answers, "_DECODER", _CountingDecoder())
    reads = []
    for repeats in (500, 1000):  # well above the work floor, and n rescans would read 100x the budget
        _CountingDecoder.read = 0
        reply = unit * repeats
        assert isinstance(parse_answer(reply), Failure)
        reads.append(_CountingDecoder.read)
        # the budget (twice the reply) is checked before each attempt, so the last one may read the reply once more
        assert _CountingDecoder.read <= 3 * len(reply) + answers._WORK_FLOOR
    assert reads[1] <= 2.2 * reads[0] + answers._WORK_FLOOR


def test_answer_is_found_after_moderate_noise():
    noise = 'He wrote {"x": and {"y" then ' * 300 + "".join(f'tool {i}: {{"n": {i}}}\n' for i in range(500))
    assert parse_answer(noise + "Final: " + json.dumps(WORKED)).innovation_score == 46.36
    # a fenced answer is found whatever precedes it
    flood = '{"k":x' * 400_000
    assert parse_answer(flood + "\n```json\n" + json.dumps(WORKED) + "\n```").innovation_score == 46.36


@pytest.mark.parametrize(("reply", "reason"), [
    ('{"innovation_score": ' + "7" * 5000 + "}", "no_json"),
    ("```json\n" + '{"innovation_score": ' + "7" * 5000 + "}\n```", "no_json"),
    ("Answer: " + '{"innovation_score": 1' + "0" * 5000 + ', "dimension_scores": {}}', "schema"),  # {} is JSON
])
def test_an_integer_too_long_to_convert_is_a_counted_failure(reply, reason):
    # json raises a plain ValueError (Python's int-string conversion limit) for these, not JSONDecodeError
    result = parse_answer(reply)
    assert isinstance(result, Failure) and result.reason == reason
    assert parse_answer(reply + " then " + json.dumps(WORKED)).innovation_score == 46.36
