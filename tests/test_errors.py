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

