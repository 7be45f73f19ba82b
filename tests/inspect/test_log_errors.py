"""A sample that ended in an error is a counted failure whatever its message: its first line, or none when empty."""

from types import SimpleNamespace

import pytest
from extras import needs

from scitaste_hf.schema import failure_of

pytestmark = needs("inspect_ai", "inspect")


@pytest.mark.parametrize("message, detail", [("", ""), ("boom\nTraceback ...", " boom"), ("\n\n", "")])
def test_an_errored_sample_is_a_failure_with_its_first_line(message, detail):
    from scitaste_hf.adapters.inspect.logs import _reply

    reply = _reply(SimpleNamespace(error=SimpleNamespace(message=message), output=None))
    assert failure_of(reply) == "other"
    assert reply == "[scitaste failure: other]" + detail
