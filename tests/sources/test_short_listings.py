"""A listing that ends with fewer records than the service announced (meta.count, numFound, totalResults) is
logged with the numbers and counted, sync and in ``afetch_plan``; an empty page ends a listing whatever cursor it
offers."""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from scitaste_hf.sources import ADSClient, ArxivClient, OpenAlexClient, SnowballPlan


def _openalex_page(ids: list[int], count: int, next_cursor: str | None) -> dict:
    body = {"meta": {"count": count, "next_cursor": next_cursor},
            "results": [{"id": f"https://openalex.org/W{i}"} for i in ids]}
    return {"status": 200, "headers": {"content-type": "application/json"}, "body": json.dumps(body)}


def _atom(ids: list[str], total: int) -> dict:
    entries = "".join(f"<entry><id>http://arxiv.org/abs/{i}v1</id><title>{i}</title></entry>" for i in ids)
    body = ('<?xml version="1.0" encoding="UTF-8"?><feed xmlns="http://www.w3.org/2005/Atom" '
            'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">'
            f"<opensearch:totalResults>{total}</opensearch:totalResults>{entries}</feed>")
    return {"status": 200, "headers": {"content-type": "application/atom+xml"}, "body": body}


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_openalex_listing_cut_short_is_logged_and_counted(faults, caplog, mode):
    faults.add_faults(_openalex_page([20000001, 20000002, 20000003], 20, None))
    oa = OpenAlexClient(base_url=faults.url + "/openalex", rate_limit=None)
    plan = SnowballPlan((), (), (("W1",),))  # the citers of W1, as iter_citing("W1") lists them

    with caplog.at_level(logging.WARNING, "scitaste_hf.sources"):
        works = list(oa.iter_citing("W1")) if mode == "sync" else asyncio.run(oa.afetch_plan(plan))[1]
    assert [w.id for w in works] == ["W20000001", "W20000002", "W20000003"]
    assert oa.stats.short_listings == 1
    (message,) = _warnings(caplog)
    assert "OpenAlex" in message and "3 of the 20 records" in message and "cites%3AW1" in message


def test_an_empty_page_ends_a_listing_whatever_cursor_it_offers(faults, caplog):
    faults.add_faults(*[_openalex_page([], 50, "more")] * 3)
    oa = OpenAlexClient(base_url=faults.url + "/openalex", rate_limit=None)
    with caplog.at_level(logging.WARNING, "scitaste_hf.sources"):
        assert list(oa.iter_references("W1")) == []
    assert len(faults.requests_log()["requests"]) == 1
    assert oa.stats.short_listings == 1 and "0 of the 50 records" in _warnings(caplog)[0]


def test_a_complete_listing_is_not_short(faults, caplog):
    faults.add_faults(_openalex_page([20000001, 20000002], 4, "c2"), _openalex_page([20000003, 20000004], 4, "c3"))
    oa = OpenAlexClient(base_url=faults.url + "/openalex", rate_limit=None, page_size=200)
    with caplog.at_level(logging.WARNING, "scitaste_hf.sources"):
        assert len(list(oa.iter_citing("W1"))) == 4  # two pages shorter than asked: the count decides
    assert oa.stats.short_listings == 0 and not _warnings(caplog)
    assert len(faults.requests_log()["requests"]) == 2


def test_ads_cursor_that_stops_moving_before_num_found(faults, caplog):
    docs = [{"bibcode": "2008ApJ...100..001A"}, {"bibcode": "2008ApJ...100..002B"}]
    page = {"response": {"numFound": 9, "docs": docs}, "nextCursorMark": "*"}
    faults.add_faults({"status": 200, "headers": {"content-type": "application/json"}, "body": json.dumps(page)})
    ads = ADSClient(base_url=faults.url + "/ads/v1", token="t", rate_limit=None)
    with caplog.at_level(logging.WARNING, "scitaste_hf.sources"):
        assert [r.bibcode for r in ads.search("year:2008")] == [d["bibcode"] for d in docs]
    assert ads.stats.short_listings == 1 and "2 of the 9 records" in _warnings(caplog)[0]


def test_arxiv_empty_page_before_total_results(faults, caplog):
    faults.add_faults(_atom(["2101.00001"], 5), _atom([], 5))
    arxiv = ArxivClient(base_url=faults.url + "/arxiv/api", min_interval=0)
    with caplog.at_level(logging.WARNING, "scitaste_hf.sources"):
        assert [e.id for e in arxiv.search("ti:rare", page_size=2)] == ["2101.00001"]
    assert len(faults.requests_log()["requests"]) == 2
    assert arxiv.stats.short_listings == 1 and "1 of the 5 records" in _warnings(caplog)[0]


def test_a_server_that_ignores_the_offset_ends_the_listing(caplog):
    # an arXiv-like server that sends the same one-entry page whatever `start` asks, announcing a million: the
    # listing used to page on forever (7,271 requests in 20 s)
    from scitaste_hf.sources.paging import OffsetListing
    from scitaste_hf.sources.transport import Call

    calls = []
    listing = OffsetListing(lambda start, size: calls.append(start) or Call("GET", "/query", {"start": start}),
                            lambda data: (data["entries"], data["total"]), page_size=100)
    got = []
    while listing.next_call() is not None and len(calls) < 50:
        got += listing.feed({"entries": ["2101.00001"], "total": 1_000_000})
    assert got == ["2101.00001"] and len(calls) == 2
    assert listing.shortfall() == (1, 1_000_000)
