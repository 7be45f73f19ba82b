"""ADSClient against the replayed real search response, recordings written by the test, and injected errors."""

from __future__ import annotations

import json

import pytest
from replay_server import ServerProcess, write_recordings

from scitaste_hf.sources import ADSClient
from scitaste_hf.sources.ads import bibcode
from scitaste_hf.sources.errors import AuthError, BadRequestError, InvalidIdentifierError

ADS = "https://api.adsabs.harvard.edu/v1"


def test_search_parses_the_recorded_response(replay):
    replay.reset()
    ads = ADSClient(base_url=replay.url + "/ads/v1", token="tok-123")
    docs = list(ads.search('first_author:"Sudilovsky"'))
    assert len(docs) == 28 and ads.stats.sent == 1
    first = docs[0]
    assert (first.bibcode, first.year, first.doi) == ("1971Sci...174..142S", 1971, "10.1126/science.174.4005.142")
    assert first.title.startswith("Cyclic Adenosine") and first.authors[0] == "Sudilovsky, Oscar"
    apj = next(d for d in docs if d.bibcode == "2007ApJ...669..741S")
    assert apj.arxiv_id == "0705.0706" and len(apj.references) == 53 and apj.citation_count == 30
    assert apj.arxiv_class == ("Astrophysics",) and "REFEREED" in apj.properties
    assert sum(1 for d in docs if d.references) == 3 and sum(1 for d in docs if d.citations) == 8
    assert all(bibcode(d.bibcode) == d.bibcode for d in docs)
    log = replay.requests_log()["requests"]
    assert log[-1]["authorization"] and "cursorMark=%2A" in log[-1]["query"]


def test_citations_page_with_cursor_mark(tmp_path):
    q = f"{ADS}/search/query?q=citations(bibcode:2007ApJ...669..741S)&fl=bibcode,title&rows=2&sort=bibcode+asc"
    page = {"responseHeader": {"status": 0}, "response": {"numFound": 3, "start": 0, "docs": []}}
    first = {**page, "response": {**page["response"], "docs": [{"bibcode": "2008ApJ...1A", "title": ["A"]},
                                                                {"bibcode": "2009ApJ...2B", "title": ["B"]}]},
             "nextCursorMark": "AoE1"}
    second = {**page, "response": {**page["response"], "docs": [{"bibcode": "2010ApJ...3C", "title": ["C"]}]},
              "nextCursorMark": "AoE2"}
    folder = write_recordings(tmp_path / "rec", [("GET", q + "&cursorMark=*", 200, first),
                                                 ("GET", q + "&cursorMark=AoE1", 200, second)])
    with ServerProcess([folder]) as server:
        ads = ADSClient(base_url=server.url + "/ads/v1", token="tok", rows=2)
        docs = list(ads.citations("2007ApJ...669..741S", fl=["title"]))
        assert [d.title for d in docs] == ["A", "B", "C"]
        assert ads.stats.sent == 2


def test_bigquery_batches_bibcodes(tmp_path):
    answer = {"response": {"numFound": 2, "docs": [{"bibcode": "2009ApJ...699...56S", "year": "2009"},
                                                   {"bibcode": "2007ApJ...669..741S", "year": "2007"}]}}
    folder = write_recordings(tmp_path / "rec",
                              [("POST", f"{ADS}/search/bigquery?q=*:*&fl=bibcode,year&rows=2", 200, answer)])
    with ServerProcess([folder]) as server:
        ads = ADSClient(base_url=server.url + "/ads/v1", token="tok")
        recs = ads.get_records(["2007ApJ...669..741S", "2009ApJ...699...56S", "2007ApJ...669..741S"], fl=["year"])
        assert [(r.bibcode, r.year) for r in recs] == [("2007ApJ...669..741S", 2007), ("2009ApJ...699...56S", 2009)]
        log = server.requests_log()["requests"]
        assert [r["method"] for r in log] == ["POST"] and log[0]["authorization"]


def test_solr_400_and_401_bodies_become_clear_errors(faults, one_line):
    ads = ADSClient(base_url=faults.url + "/ads/v1", token="tok-SECRET-42")
    solr = {"responseHeader": {"status": 400}, "error": {
        "msg": "org.apache.solr.search.SyntaxError: Cannot parse 'citations(bibcode:': Encountered <EOF>",
        "code": 400}}
    faults.add_faults({"status": 400, "body": json.dumps(solr)})
    with pytest.raises(BadRequestError) as err:
        list(ads.search("citations(bibcode:"))
    assert "NASA ADS rejected the request (HTTP 400: org.apache.solr.search.SyntaxError: Cannot parse" in one_line(
        err.value)
    faults.add_faults({"status": 401, "body": json.dumps({"error": "Unauthorized"})})
    with pytest.raises(AuthError) as err:
        list(ads.search("star"))
    msg = one_line(err.value)
    assert "HTTP 401: Unauthorized" in msg and "ADS_API_TOKEN" in msg and "tok-SECRET" not in msg


@pytest.mark.parametrize("bad", ["abc", "2007ApJ...669..741", "2007ApJ...669..741SX", ""])
def test_bad_bibcodes_fail_before_any_request(bad, one_line):
    ads = ADSClient(token="tok")
    with pytest.raises(InvalidIdentifierError) as err:
        list(ads.references(bad))
    assert "not an ADS bibcode" in one_line(err.value) and ads.stats.sent == 0


def test_a_404_is_a_clear_error(faults, one_line):
    from scitaste_hf.sources.errors import NotFoundError

    ads = ADSClient(base_url=faults.url + "/ads/v2", token="tok")
    with pytest.raises(NotFoundError) as err:
        list(ads.search("star"))
    assert "NASA ADS answered HTTP 404" in one_line(err.value) and "base_url" in str(err.value)
