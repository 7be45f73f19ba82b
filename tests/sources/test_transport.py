"""The shared transport against a real server on 127.0.0.1: retries, Retry-After, cache, offline, record mode,
credentials, the daily budget and the rate limit."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time

import pytest
from replay_server import ServerProcess

from scitaste_hf.sources import ADSClient, OpenAlexClient, SnowballPlan
from scitaste_hf.sources.errors import (
    AuthError,
    BudgetExhausted,
    OfflineCacheMiss,
    ServiceUnavailable,
    SourceError,
)

# Tests need no real backoff: the first step is 10 ms.
FAST = {"max_retries": 5, "rate_limit": (1000, 1.0), "backoff": (0.01, 0.05)}


def client(server, **kwargs) -> OpenAlexClient:
    return OpenAlexClient(base_url=server.url + "/openalex", **{**FAST, **kwargs})


def test_retries_5xx_empty_and_truncated_bodies(faults):
    faults.add_faults({"status": 503}, {"status": 200, "body": ""}, {"status": 200, "body": '{"id": "https://op'},
                      {"status": 502, "body": "<html>bad gateway</html>"})
    c = client(faults)
    work = c.get_work("W2")
    assert work.id == "W2" and work.publication_year == 1997
    assert c.stats.retries == 4 and c.stats.sent == 5
    assert faults.requests_log()["answered"] == 1


def test_non_json_200_is_retried(faults):
    faults.add_faults({"status": 200, "body": "<html>maintenance</html>"}, {"status": 200, "body": "[1, 2]"})
    c = client(faults)
    assert c.get_work("W3").id == "W3"
    assert c.stats.retries == 2


def test_retry_after_is_honoured(faults):
    faults.add_faults({"status": 429, "headers": {"Retry-After": "1"}})
    c = client(faults)
    start = time.monotonic()
    assert c.get_work("W1").id == "W1"
    assert time.monotonic() - start >= 0.95
    assert c.stats.statuses[429] == 1


def test_retry_after_beyond_the_allowed_wait_fails_at_once(faults, one_line):
    faults.add_faults({"status": 503, "headers": {"Retry-After": "3600"}})
    c = client(faults)
    start = time.monotonic()
    with pytest.raises(ServiceUnavailable) as err:
        c.get_work("W1")
    assert time.monotonic() - start < 1
    assert "3600 s" in one_line(err.value)


def test_gives_up_after_the_last_retry(faults, one_line):
    faults.add_faults(*[{"status": 500}] * 3)
    c = client(faults, max_retries=2)
    with pytest.raises(ServiceUnavailable) as err:
        c.get_work("W1")
    msg = one_line(err.value)
    assert "HTTP 500 after 3 attempts" in msg and "/openalex/works/W1" in msg


def test_timeout_is_retried(faults):
    faults.add_faults({"delay": 1.5})
    c = client(faults, timeout=0.3)
    assert c.get_work("W4").id == "W4"
    assert c.stats.retries == 1
    # The abandoned first request is still answered, 1.5 s after it came: wait for it here, or it lands in the
    # counters of whichever test runs next.
    deadline = time.monotonic() + 5
    while faults.requests_log()["answered"] < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert faults.requests_log()["answered"] == 2


@pytest.mark.parametrize("kwargs, message", [
    ({"base_url": "notaurl"}, "is not an http(s) URL"),
    ({"base_url": "ftp://example.org"}, "is not an http(s) URL"),
    ({"max_retries": -1}, "max_retries must be 0 or more"),
])
def test_unusable_settings_fail_at_construction_not_after_retries(kwargs, message, one_line):
    with pytest.raises(SourceError) as err:
        OpenAlexClient(**kwargs)
    assert message in one_line(err.value)


def test_connection_errors_are_retried_then_reported(one_line):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = OpenAlexClient(base_url=f"http://127.0.0.1:{port}", max_retries=2, backoff=(0.01, 0.02))
    with pytest.raises(ServiceUnavailable) as err:
        c.get_work("W1")
    assert "ConnectError" in one_line(err.value) and c.stats.sent == 3


def test_cache_rerun_sends_nothing_and_files_are_plain_json(faults, tmp_path):
    first = client(faults, cache_dir=tmp_path)
    works = first.get_works(["W1", "W2", "W3"])
    citers = list(first.iter_citing("W1"))
    sent = faults.requests_log()["answered"]
    assert sent == first.stats.sent >= 2

    again = client(faults, cache_dir=tmp_path)
    assert again.get_works(["W1", "W2", "W3"]) == works
    assert list(again.iter_citing("W1")) == citers
    assert again.stats.sent == 0 and again.stats.cache_hits == sent
    assert faults.requests_log()["answered"] == sent

    files = sorted(tmp_path.rglob("*.json"))
    assert len(files) == sent
    entry = json.loads(files[0].read_text())
    assert set(entry) == {"request", "response"} and entry["response"]["status"] == 200


def test_offline_serves_the_cache_and_fails_clearly_on_a_miss(faults, tmp_path, one_line):
    client(faults, cache_dir=tmp_path).get_work("W1")
    off = client(faults, cache_dir=tmp_path, offline=True)
    assert off.get_work("W1").id == "W1"
    with pytest.raises(OfflineCacheMiss) as err:
        off.get_work("W2")
    msg = one_line(err.value)
    assert "not in the cache" in msg and "/works/W2" in msg and "--offline" in msg
    assert off.stats.sent == 0


@pytest.mark.parametrize("damage", [b"", b'{"request": {}, "resp', b"{}", b"[1]", b'{"response": {"status": "x"}}'])
def test_an_unreadable_cache_entry_is_a_miss_fetched_again(faults, tmp_path, caplog, damage):
    work = client(faults, cache_dir=tmp_path).get_work("W1")
    (entry,) = tmp_path.rglob("*.json")
    entry.write_bytes(damage)
    off = client(faults, cache_dir=tmp_path, offline=True)
    with pytest.raises(OfflineCacheMiss):
        off.get_work("W1")
    assert "unreadable cache entry" in caplog.text
    again = client(faults, cache_dir=tmp_path)
    assert again.get_work("W1") == work and again.stats.sent == 1
    assert json.loads(entry.read_text())["response"]["status"] == 200  # rewritten whole


def test_offline_without_a_cache_directory_is_refused(one_line):
    with pytest.raises(SourceError) as err:
        OpenAlexClient(offline=True)
    assert "cache" in one_line(err.value)


def test_not_found_is_cached_too(faults, tmp_path, one_line):
    from scitaste_hf.sources.errors import NotFoundError

    for _ in range(2):
        with pytest.raises(NotFoundError) as err:
            client(faults, cache_dir=tmp_path).get_work("W999")
        assert one_line(err.value) == "OpenAlex has no work W999"
    assert faults.requests_log()["answered"] == 1


def test_record_mode_always_asks_and_rewrites(faults, tmp_path):
    client(faults, cache_dir=tmp_path).get_work("W1")
    rec = client(faults, cache_dir=tmp_path, record=True)
    rec.get_work("W1")
    assert rec.stats.sent == 1 and faults.requests_log()["answered"] == 2
    with pytest.raises(SourceError):
        OpenAlexClient(cache_dir=tmp_path, offline=True, record=True)


def test_credentials_reach_the_server_but_never_cache_logs_or_errors(tmp_path, caplog, one_line):
    secret, mail = "sk-SECRET-12345", "someone@example.org"
    with ServerProcess(synthetic=2, require_token=secret) as server:
        caplog.set_level(logging.DEBUG, logger="scitaste_hf.sources")
        keyed = client(server, api_key=secret, mailto=mail, cache_dir=tmp_path / "a")
        keyed.get_work("W1")
        server.add_faults({"status": 503}, {"status": 400, "body": json.dumps({"error": "bad", "message": "no"})})
        with pytest.raises(SourceError) as err:
            keyed.get_work("W2")
        assert secret not in str(err.value) and mail not in str(err.value)
        # Without the key the server refuses: the message says which variable to set.
        with pytest.raises(AuthError) as auth:
            client(server).get_work("W1")
        assert "OPENALEX_API_KEY" in one_line(auth.value) and "no credential was sent" in str(auth.value)
        with pytest.raises(AuthError) as wrong:
            client(server, api_key="sk-WRONG-99999").get_work("W1")
        assert "refused" in one_line(wrong.value) and "sk-WRONG" not in str(wrong.value)

    unkeyed_path = client(server, cache_dir=tmp_path / "b").transport.cache.path_for(
        "GET", keyed.transport.url("/works/W1"))
    keyed_files = list((tmp_path / "a").rglob("*.json"))
    assert [p.name for p in keyed_files] == [unkeyed_path.name]
    for path in keyed_files:
        text = path.read_text()
        assert secret not in text and mail not in text and "api_key" not in text
    assert secret not in caplog.text and mail not in caplog.text
    assert "retry" in caplog.text


def test_credentials_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENALEX_API_KEY", "sk-ENV-777")
    monkeypatch.setenv("ADS_API_TOKEN", "ads-ENV-888")
    with ServerProcess(synthetic=1, require_token="sk-ENV-777") as server:
        assert client(server).get_work("W1").id == "W1"
    assert ADSClient().transport.redact("x ads-ENV-888 y") == "x *** y"


def test_ads_without_a_token_fails_before_sending(faults, monkeypatch, one_line):
    monkeypatch.delenv("ADS_API_TOKEN", raising=False)
    ads = ADSClient(base_url=faults.url + "/ads/v1")
    with pytest.raises(AuthError) as err:
        list(ads.search("star"))
    assert "ADS_API_TOKEN" in one_line(err.value) and ads.stats.sent == 0


def test_daily_budget_stops_before_the_service_refuses(one_line):
    with ServerProcess(synthetic=1, daily_limit=3) as server:
        ads = ADSClient(base_url=server.url + "/ads/v1", token="tok", rate_limit=(1000, 1.0))
        oa = client(server)
        for i in range(3):
            ads.transport.request("GET", "/search/query", {"q": f"star {i}"}, not_found_ok=True)
        status = ads.budget()
        assert (status.limit, status.remaining) == (3, 0) and status.reset_at > time.time()
        with pytest.raises(BudgetExhausted) as err:
            ads.transport.request("GET", "/search/query", {"q": "star 4"}, not_found_ok=True)
        msg = one_line(err.value)
        assert "0 of 3 requests left" in msg and "UTC" in msg
        assert "--offline" not in msg  # no option that the commands running into a budget (build, evidence) have
        assert server.requests_log()["answered"] == 3 and ads.stats.sent == 3
        # Another client of the same host shares what the first one learnt.
        with pytest.raises(BudgetExhausted):
            oa.get_work("W1")
        assert oa.stats.sent == 0


def test_a_429_that_says_the_budget_is_spent_is_not_retried(one_line):
    with ServerProcess(synthetic=1, daily_limit=0) as server:
        oa = client(server)
        with pytest.raises(BudgetExhausted) as err:
            oa.get_work("W1")
        assert "budget exhausted" in one_line(err.value)
        assert oa.stats.sent == 1 and oa.stats.retries == 0


def test_rate_limit_is_kept_without_429s():
    with ServerProcess(synthetic=1, rate_limit=5) as server:
        c = OpenAlexClient(base_url=server.url + "/openalex", rate_limit=(5, 1.0), max_connections=4)
        # Twelve one-page listings at once, the way the builder's snowball sends them.
        burst = SnowballPlan((), (), (("W1",),) * 12)
        start = time.monotonic()
        asyncio.run(c.afetch_plan(burst))
        elapsed = time.monotonic() - start
        log = server.requests_log()
    assert log["rejected_429"] == 0 and log["answered"] == 12
    assert elapsed >= 2.0


def test_concurrency_is_bounded(faults):
    faults.add_faults(*[{"delay": 0.3}] * 6)
    c = client(faults, max_connections=2)
    ticks: list[int] = []
    six = SnowballPlan((), (), tuple((f"W{1 + i % 5}",) for i in range(6)))
    start = time.monotonic()
    _, citers = asyncio.run(c.afetch_plan(six, progress=ticks.append))
    # Six one-page listings, 0.3 s each, two at a time.
    assert len(ticks) == 6 and citers and time.monotonic() - start >= 0.9
    assert faults.requests_log()["answered"] == 6


def test_a_filled_cache_is_a_set_of_recordings_the_server_replays(faults, tmp_path):
    filled = client(faults, cache_dir=tmp_path)
    expected = filled.get_works(["W1", "W2"]), filled.get_work("W3")
    with ServerProcess([tmp_path]) as mirror:
        replayed = client(mirror)
        assert (replayed.get_works(["W1", "W2"]), replayed.get_work("W3")) == expected
        assert mirror.requests_log()["answered"] == 2


def test_a_redirect_loop_is_a_clear_error_without_the_key(faults, one_line):
    faults.add_faults(*[{"status": 302, "headers": {"Location": "/openalex/works/W1"}}] * 25)
    c = client(faults, api_key="sk-LOOP-4242")
    with pytest.raises(SourceError) as err:
        c.get_work("W1")
    msg = one_line(err.value)
    assert "TooManyRedirects" in msg and "sk-LOOP" not in msg and c.stats.retries == 0
