"""The package's errors: not ValueErrors (a bare ``except ValueError`` must not swallow them), bad input as its own
subclass, and ``first_line`` on any message."""

import pytest

from scitaste_hf.errors import InvalidInput, ScitasteError, first_line
from scitaste_hf.net.guard import SubmissionError
from scitaste_hf.ratings.store import RatingError
from scitaste_hf.sources.errors import AuthError, ServiceUnavailable, SourceError


@pytest.mark.parametrize("error", [ScitasteError, InvalidInput, ServiceUnavailable, AuthError, SourceError,
                                   SubmissionError, RatingError])
def test_the_package_errors_pass_a_bare_except_value_error(error):
    with pytest.raises(error):
        try:
            raise error("the service is down")
        except ValueError:  # what a parser's caller writes around json.loads or int()
            pytest.fail(f"{error.__name__} was caught as a ValueError")
    assert not issubclass(error, ValueError)


def test_bad_input_is_a_scitaste_error():
    assert issubclass(InvalidInput, ScitasteError) and not issubclass(ServiceUnavailable, InvalidInput)
    with pytest.raises(ScitasteError, match=r"^bad weights$"):
        raise InvalidInput("bad weights")


@pytest.mark.parametrize(("exc", "expected"), [
    (ValueError(""), "ValueError"),
    (KeyError(), "KeyError"),
    (ScitasteError("   \n  "), "ScitasteError"),
    (ValueError("first\nsecond"), "first"),
    (ValueError("\n  indented first\nsecond"), "indented first"),
    (OSError(2, "No such file or directory"), "[Errno 2] No such file or directory"),
])
def test_first_line(exc, expected):
    assert first_line(exc) == expected



def test_bad_input_raises_invalid_input_and_a_missing_file_does_not(tmp_path):
    from scitaste_hf.predictions import parse_predictions, read_predictions
    from scitaste_hf.records import load_records
    from scitaste_hf.schema import DIMENSIONS
    from scitaste_hf.scoring.inputs import as_scores
    from scitaste_hf.weights import validate_weights

    bad = tmp_path / "gold.jsonl"
    bad.write_text('{"bibcode": "X"}\nnot json\n')
    with pytest.raises(InvalidInput, match=r"gold\.jsonl:2: not a JSON line"):
        load_records(bad)
    with pytest.raises(InvalidInput, match="duplicate bibcode X"):
        parse_predictions(['{"bibcode": "X", "failure": "other"}'] * 2, "run.jsonl")
    with pytest.raises(InvalidInput, match="weights must sum to 1"):
        validate_weights(dict.fromkeys(DIMENSIONS, 0.5))
    with pytest.raises(InvalidInput, match=r"scores\[1\] = True is not a number"):
        as_scores([1.0, True], "scores")
    with pytest.raises(ScitasteError, match="predictions file not found") as missing:
        read_predictions(tmp_path / "absent.jsonl")
    assert not isinstance(missing.value, InvalidInput)
