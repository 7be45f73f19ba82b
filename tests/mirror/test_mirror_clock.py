"""The simulated world's clock (issue 33, item 1): with the clock at a date, the three services answer as they would
have then, checked against the world's own arrays: a work published later is in no listing and not found, and a
work's citation count, per-year counts and citers are those made by then; the clock moves through
``/_control/clock``, and a mirror of recorded responses has none. In process, over the shared tests' world: the shared
mirror server's clock is never moved."""

import json
from datetime import date
from urllib.parse import urlencode

import numpy as np
import pytest
from starlette.testclient import TestClient

from scitaste_hf.mirror.app import build_app
from scitaste_hf.mirror.server import WorldBackend, build_mirror
from scitaste_hf.simworld.params import EPOCH

T = date(2018, 6, 30)
DAY = (T - EPOCH).days


@pytest.fixture(scope="module")
def clocked(world):
    return TestClient(build_app(backend=WorldBackend(world, T)))


def _get(client, path, **query):
    answer = client.get(f"{path}?{urlencode(query)}")
    return answer.status_code, answer.json() if "json" in answer.headers["content-type"] else answer.text


def _cited_then(world, i):
    citers = world.citers(i)
    return citers[world.date[citers] <= DAY]


def test_a_work_reads_as_it_stood_on_the_clocks_date(world, clocked):
    candidates = np.arange(world.n_candidates)
    before = candidates[world.date[candidates] <= DAY]
    # the most cited earlier candidate, which has citers both before and after the date
    i = int(max(before, key=lambda k: world.citers(int(k)).shape[0]))
    then = _cited_then(world, i)
    assert 0 < then.shape[0] < world.citers(i).shape[0]
    status, work = _get(clocked, f"/openalex/works/{world.work_id(i)}")
    assert status == 200 and work["cited_by_count"] == then.shape[0]
    years = world.year[then]
    assert work["counts_by_year"] == [{"year": int(y), "cited_by_count": int((years == y).sum())}
                                      for y in sorted(set(years.tolist()), reverse=True)]
    status, citers = _get(clocked, "/openalex/works", filter=f"cites:{world.work_id(i)}", **{"per-page": 200})
    assert citers["meta"]["count"] == then.shape[0]
    assert {w["id"].rsplit("/", 1)[1] for w in citers["results"]} <= {world.work_id(int(c)) for c in then}
    later = int(candidates[world.date[candidates] > DAY][0])
    assert _get(clocked, f"/openalex/works/{world.work_id(later)}")[0] == 404
    assert _get(clocked, "/openalex/works", filter=f"publication_year:{T.year + 1}")[1]["meta"]["count"] == 0
    this_year = _get(clocked, "/openalex/works", filter=f"publication_year:{T.year}")[1]["meta"]["count"]
    assert this_year == int(((world.year == T.year) & (world.date <= DAY)).sum())


def test_ads_and_arxiv_keep_to_the_date_too(world, clocked):
    dated = sorted(world.bibcode, key=lambda k: -world.citers(k).shape[0])
    i = next(k for k in dated if world.date[k] <= DAY and 0 < _cited_then(world, k).shape[0])
    status, found = _get(clocked, "/ads/v1/search/query", q=f'bibcode:"{world.bibcode[i]}"',
                         fl="bibcode,citation_count")
    assert status == 200 and found["response"]["docs"] == [{"bibcode": world.bibcode[i],
                                                           "citation_count": int(_cited_then(world, i).shape[0])}]
    assert _get(clocked, "/ads/v1/search/query", q=f"year:{T.year + 1}-2024")[1]["response"]["numFound"] == 0
    later = next(k for k in world.arxiv_id if world.date[k] > DAY)
    earlier = next(k for k in world.arxiv_id if world.date[k] <= DAY)
    feed = _get(clocked, "/arxiv/api/query", id_list=f"{world.arxiv_id[later]},{world.arxiv_id[earlier]}")[1]
    entries = feed.split("<entry>")[1:]  # the feed's title echoes the query, both ids in it
    assert len(entries) == 1 and world.arxiv_id[earlier] in entries[0]


def test_the_clock_moves_and_a_recorded_mirror_has_none(world):
    client = TestClient(build_app(backend=WorldBackend(world)))
    later = int(next(k for k in range(world.n_candidates) if world.date[k] > DAY))
    assert client.get("/_control/clock").json() == {"as_of": None}
    assert _get(client, f"/openalex/works/{world.work_id(later)}")[0] == 200
    assert client.post("/_control/clock", content=json.dumps({"as_of": T.isoformat()})).json() == \
        {"as_of": T.isoformat()}
    assert _get(client, f"/openalex/works/{world.work_id(later)}")[0] == 404
    assert client.post("/_control/clock", content=json.dumps({"as_of": "June"})).status_code == 400
    assert client.post("/_control/clock", content=json.dumps({"as_of": None})).json() == {"as_of": None}
    assert _get(client, f"/openalex/works/{world.work_id(later)}")[0] == 200
    recorded = TestClient(build_mirror("recorded"))
    assert recorded.get("/_control/clock").status_code == 404
