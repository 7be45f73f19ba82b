"""The retry pieces every HTTP client shares: Retry-After in both of its forms, and a backoff floored by it."""

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
import tenacity

from scitaste_hf.net.retry import AtLeastRetryAfter, retry_after_seconds


@pytest.mark.parametrize(("value", "seconds"), [
    (None, None), ("", None), ("soon", None), ("nan", None),
    ("7", 7.0), ("1.5", 1.5), ("-3", 0.0), ("inf", float("inf")),
    ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date in the past: no wait
])
def test_retry_after_reads_seconds_and_dates(value, seconds):
    assert retry_after_seconds(value) == seconds


def test_retry_after_reads_a_future_http_date():
    value = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    assert 110 < retry_after_seconds(value) <= 120


class _Busy(Exception):
    retry_after = 9.0


def test_backoff_is_never_shorter_than_what_the_server_asked():
    state = tenacity.RetryCallState(tenacity.Retrying(), fn=None, args=(), kwargs={})
    wait = AtLeastRetryAfter(tenacity.wait_fixed(0.5))
    state.set_exception((_Busy, _Busy(), None))
    assert wait(state) == 9.0
    state.set_exception((ValueError, ValueError(), None))
    assert wait(state) == 0.5
