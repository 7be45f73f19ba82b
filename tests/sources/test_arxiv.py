"""ArxivClient against the replayed real Atom feeds: id lookups, the empty result, the 400, paged queries."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from urllib.parse import parse_qs

import pytest

from scitaste_hf.sources import ArxivClient
from scitaste_hf.sources.errors import BadRequestError, InvalidIdentifierError


@pytest.fixture
def arxiv(replay):
    return ArxivClient(base_url=replay.url + "/arxiv/api", min_interval=0)


def test_old_style_id_with_version(arxiv):
    e = arxiv.get_entry("quant-ph/0201082v1")
    assert (e.id, e.version, e.primary_category) == ("quant-ph/0201082", 1, "quant-ph")
    assert e.categories == ("quant-ph", "cs.PL") and e.authors == ("Stephen Blaha",)
    assert e.title.startswith("Quantum Computers and Quantum Computer Languages")
    assert e.published == datetime(2002, 1, 18, 15, 8, 5, tzinfo=UTC) and e.comment == "32 pages"
    assert e.summary.startswith("We show a representation of Quantum Computers")


def test_batch_lookup_leaves_out_unknown_ids(arxiv, replay):
    replay.reset()
    entries = arxiv.get_entries(["0808.05394", "1707.08567"])
    assert [e.id for e in entries] == ["1707.08567"]
    assert len(replay.requests_log()["requests"]) == 1
    assert [arxiv.get_entry(i).primary_category for i in ("astro-ph/0601001", "1605.08386", "2104.12255v1")] \
        == ["astro-ph", "math.CO", "cs.CR"]


def test_empty_result_is_none(arxiv):
    assert arxiv.get_entry("0000.0000") is None


def test_an_empty_id_fails_before_any_request(arxiv, replay, one_line):
    replay.reset()
    with pytest.raises(InvalidIdentifierError) as err:
        arxiv.get_entries(["1707.08567", "  "])
    assert "empty" in one_line(err.value)
    assert replay.requests_log()["requests"] == []


def test_invalid_id_is_a_clear_error(arxiv, one_line):
    with pytest.raises(BadRequestError) as err:
        arxiv.get_entry("abc")
    assert "incorrect id format for abc" in one_line(err.value)


def test_query_pages_with_start_and_max_results(arxiv, replay):
    replay.reset()
    entries = list(arxiv.search("testing", page_size=10, limit=30))
    assert len(entries) == 30 and len({e.id for e in entries}) == 30
    starts = [parse_qs(r["query"])["start"][0] for r in replay.requests_log()["requests"]]
    assert starts == ["0", "10", "20"]
    assert all(e.primary_category for e in entries)


def test_non_atom_200_is_retried(faults):
    faults.add_faults({"status": 200, "body": "<html><body>Rate exceeded</body></html>"},
                      {"status": 200, "body": "<?xml version='1.0'?><feed><truncated"})
    arxiv = ArxivClient(base_url=faults.url + "/arxiv/api", min_interval=0, backoff=(0.01, 0.02))
    assert arxiv.get_entries([]) == [] and arxiv.stats.sent == 0
    assert [e.id for e in arxiv.get_entries(["1707.08567"])] == ["1707.08567"]
    assert arxiv.stats.retries == 2


def test_one_request_per_interval(arxiv, replay):
    slow = ArxivClient(base_url=replay.url + "/arxiv/api", min_interval=0.6)
    start = time.monotonic()
    slow.get_entry("1707.08567")
    slow.get_entry("1605.08386")
    slow.get_entry("0000.0000")
    assert time.monotonic() - start >= 1.2
