"""The async methods of the three clients against the local server: the same records, in the same order, from the
same requests as their sync counterparts; OpenAlex listings run concurrently; arXiv keeps its interval."""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from urllib.parse import parse_qs

import pytest
from replay_server import ServerProcess, SyntheticWorks, write_recordings

from scitaste_hf.sources import ADSClient, ArxivClient, OpenAlexClient
from scitaste_hf.sources.errors import BadRequestError, InvalidIdentifierError
from scitaste_hf.sources.snowball import SnowballPlan

FOCAL = ["W3045921891", "W3046863325"]
# The recording asked for citers and references with the two ids the other way round.
LINKS_ORDER = ["W3046863325", "W3045921891"]
ADS = "https://api.adsabs.harvard.edu/v1"
ARXIV = "https://export.arxiv.org/api/query"
ADS_CITERS = ["2008ApJ...100..001A", "2008ApJ...100..002B", "2009ApJ...100..003C", "2009ApJ...100..004D",
              "2010ApJ...100..005E"]
N_SYNTHETIC = 250


def _sent(server: ServerProcess) -> list[tuple[str, str, str]]:
    return [(r["method"], r["path"], r["query"]) for r in server.requests_log()["requests"]]


def _sync_and_async(server: ServerProcess, sync: Callable[[], object],
                    run_async: Callable[[], Awaitable[object]]) -> tuple[object, list, list]:
    """What the sync call returned, and the requests each of the two sent; fails unless both returned the same."""
    server.reset()
    expected = sync()
    sent_sync = _sent(server)
    server.reset()
    got = asyncio.run(run_async())
    assert got == expected
    return expected, sent_sync, _sent(server)


async def _collect(items: AsyncIterator) -> list:
    return [item async for item in items]


@pytest.fixture(scope="module")
def graph_server():
    """A synthetic OpenAlex of two fields, so that OR-ed batches of 100 works share citers."""
    with ServerProcess(synthetic=N_SYNTHETIC) as server:
        yield server


def _oa(server: ServerProcess, **kwargs) -> OpenAlexClient:
    return OpenAlexClient(base_url=server.url + "/openalex", **{"rate_limit": (1000, 1.0), **kwargs})


# ------------------------------------------------------------------------------------------------- OpenAlex


def test_openalex_recorded_snowball_pages_the_same(replay):
    oa = _oa(replay)

    def sync():
        return (oa.count_works("openalex:" + "|".join(FOCAL)), oa.get_works(FOCAL),
                oa.count_works("cites:" + "|".join(LINKS_ORDER)), list(oa.iter_citing(LINKS_ORDER)),
                oa.count_works("cited_by:" + "|".join(LINKS_ORDER)), list(oa.iter_references(LINKS_ORDER)))

    async def run_async():
        async with oa:
            return (await oa.acount_works("openalex:" + "|".join(FOCAL)), await oa.aget_works(FOCAL),
                    await oa.acount_works("cites:" + "|".join(LINKS_ORDER)),
                    await _collect(oa.aiter_citing(LINKS_ORDER)),
                    await oa.acount_works("cited_by:" + "|".join(LINKS_ORDER)),
                    await _collect(oa.aiter_references(LINKS_ORDER)))

    result, sent_sync, sent_async = _sync_and_async(replay, sync, run_async)
    assert sent_async == sent_sync and len(sent_sync) == 6
    assert [len(part) for part in result[1::2]] == [2, 5, 38]


def test_openalex_cursor_paging_over_batches_is_the_same(graph_server):
    oa = _oa(graph_server, page_size=30)
    focal = [f"W{k}" for k in range(1, 201)]
    select = ["id", "referenced_works"]

    def sync():
        return list(oa.iter_citing(focal, select)), list(oa.iter_references(focal[:60], select))

    async def run_async():
        async with oa:
            return await _collect(oa.aiter_citing(focal, select)), await _collect(oa.aiter_references(focal[:60],
                                                                                                     select))

    (citers, refs), sent_sync, sent_async = _sync_and_async(graph_server, sync, run_async)
    assert sent_async == sent_sync
    graph = SyntheticWorks(N_SYNTHETIC)
    assert [w.id for w in citers] == list(dict.fromkeys(
        f"W{c}" for batch in (range(1, 101), range(101, 201)) for c in graph.listing("cites", list(batch))))
    assert len(refs) == len(graph.listing("cited_by", list(range(1, 61))))
    cursors = [parse_qs(q)["cursor"][0] for _, _, q in sent_sync]
    # Two OR-ed batches of citers and one of references, each over several pages.
    assert cursors.count("*") == 3 and len(cursors) > 10


@pytest.mark.parametrize("limit", [None, 30, 45, 61])
def test_openalex_iter_works_with_a_limit_is_the_same(graph_server, limit):
    oa = _oa(graph_server, page_size=30)
    listing = "cites:W5|W6|W7"

    async def run_async():
        async with oa:
            return await _collect(oa.aiter_works(listing, select="id", limit=limit))

    works, sent_sync, sent_async = _sync_and_async(graph_server, lambda: list(oa.iter_works(listing, select="id",
                                                                                            limit=limit)), run_async)
    assert sent_async == sent_sync
    total = len(SyntheticWorks(N_SYNTHETIC).listing("cites", [5, 6, 7]))
    assert len(works) == min(total, limit or total)


def test_openalex_get_works_in_concurrent_batches_is_the_same(graph_server):
    oa = _oa(graph_server, page_size=40)
    ids = [f"W{k}" for k in range(N_SYNTHETIC, 0, -1)]

    async def run_async():
        async with oa:
            return await oa.aget_works(ids, select=["id", "cited_by_count"])

    works, sent_sync, sent_async = _sync_and_async(
        graph_server, lambda: oa.get_works(ids, select=["id", "cited_by_count"]), run_async)
    assert [w.id for w in works] == ids
    # Batches of 100, 100 and 50 works in pages of 40; the batches interleave, so only the set of requests is the
    # same.
    assert Counter(sent_async) == Counter(sent_sync) and len(sent_sync) == 8


def test_openalex_async_errors_are_the_sync_ones(replay):
    oa = _oa(replay)

    async def bad_filter():
        async with oa:
            return await _collect(oa.aiter_works("DOESNTEXIST:1"))

    with pytest.raises(BadRequestError, match="DOESNTEXIST is not a valid field"):
        asyncio.run(bad_filter())
    with pytest.raises(InvalidIdentifierError):
        asyncio.run(_collect(oa.aiter_citing(["W1", "foo"])))
    assert oa.stats.sent == 1


def test_openalex_async_listings_run_concurrently_within_the_connection_limit():
    latency, connections = 0.1, 3
    graph = SyntheticWorks(N_SYNTHETIC)
    # Six works with 40-60 citers: three pages of 20 each.
    works = [f"W{k}" for k in range(1, N_SYNTHETIC + 1) if 40 < len(graph.citers[k]) <= 60][:6]
    assert len(works) == 6
    with ServerProcess(synthetic=N_SYNTHETIC, latency=latency) as server:
        oa = _oa(server, page_size=20, max_connections=connections)

        async def serial():
            async with oa:
                return [await _collect(oa.aiter_citing(w, "id")) for w in works]

        async def concurrent():
            async with oa:
                return list(await asyncio.gather(*(_collect(oa.aiter_citing(w, "id")) for w in works)))

        expected = asyncio.run(serial())
        server.reset()
        assert asyncio.run(concurrent()) == expected
        arrivals = sorted(r["t"] for r in server.requests_log()["requests"])
    assert len(arrivals) == 18
    # Every answer takes `latency`, so requests that arrive within less than that of each other are in flight
    # together: the listings overlap, up to the connection limit and no further (how much faster that is, is
    # bench/bench_sources.py's to measure, not a test's).
    in_flight = max(sum(1 for u in arrivals if t <= u < t + 0.9 * latency) for t in arrivals)
    assert in_flight == connections


def _pages(n: int, size: int) -> int:
    # Paging stops at meta.count: an empty listing is one request, a full last page needs no empty one after it.
    return max(1, -(-n // size))


def test_snowball_plan_fetches_the_same_works_sync_and_async_in_fewer_requests(graph_server):
    oa = _oa(graph_server, page_size=50)
    graph = SyntheticWorks(N_SYNTHETIC)
    works = oa.get_works([f"W{k}" for k in range(1, N_SYNTHETIC + 1)])
    plan = oa.snowball_plan(works)
    select = ["id", "referenced_works"]
    ticks: list[int] = []

    async def run_async():
        async with oa:
            return await oa.afetch_plan(plan, select, progress=ticks.append)

    (refs, citers), sent_sync, sent_async = _sync_and_async(
        graph_server, lambda: oa.fetch_plan(plan, select, progress=ticks.append), run_async)
    assert Counter(sent_async) == Counter(sent_sync)
    assert ticks == [1] * 2 * len(plan.filters())
    ks = range(1, N_SYNTHETIC + 1)
    assert {w.id for w in refs} == {f"W{r}" for k in ks for r in graph.references[k]}
    assert {w.id for w in citers} == {f"W{c}" for k in ks for c in graph.citers[k]}
    assert len(refs) == len({w.id for w in refs}) and len(citers) == len({w.id for w in citers})

    def listed(flt: str) -> int:
        key, values = flt.split(":")
        return len(graph.listing(key, [int(v[1:]) for v in values.split("|")]))

    assert len(sent_sync) == sum(_pages(listed(flt), 50) for _, flt in plan.filters())
    # OR-ing the works 100 at a time in the given order lists more: the two fields of 125 split three ways.
    consecutive = [list(range(1, 101)), list(range(101, 201)), list(range(201, 251))]
    naive = sum(_pages(len(graph.listing(kind, b)), 50) for kind in ("cites", "cited_by") for b in consecutive)
    assert len(sent_sync) < naive


def test_a_failed_listing_cancels_the_others(graph_server):
    oa = _oa(graph_server, page_size=10, max_connections=2)
    graph_server.reset()
    graph_server.add_faults({"status": 400, "body": json.dumps({"error": "Invalid query parameters error."})})

    async def run():
        async with oa:
            plan = SnowballPlan((), (), (("W1",), ("W2",), ("W3",), ("W4",)))
            with pytest.raises(BadRequestError):
                await oa.afetch_plan(plan, "id")
            # Still inside the loop: a listing left running would go on paging now.
            await asyncio.sleep(0.5)

    asyncio.run(run())
    assert len(graph_server.requests_log()["requests"]) <= 2


# ------------------------------------------------------------------------------------------------- ADS


def _ads_page(docs: list[str], num_found: int, next_mark: str) -> dict:
    return {"responseHeader": {"status": 0}, "nextCursorMark": next_mark,
            "response": {"numFound": num_found, "start": 0, "docs": [{"bibcode": b, "title": [b]} for b in docs]}}


@pytest.fixture(scope="module")
def ads_server(tmp_path_factory):
    """Three cursorMark pages of the citers of one bibcode, and two bigquery batches."""
    q = f"{ADS}/search/query?q=citations(bibcode:2007ApJ...669..741S)&fl=bibcode,title&rows=2&sort=bibcode+asc"
    citers = ADS_CITERS
    big = f"{ADS}/search/bigquery?q=*:*&fl=bibcode,title"
    folder = write_recordings(tmp_path_factory.mktemp("ads"), [
        ("GET", q + "&cursorMark=*", 200, _ads_page(citers[:2], 5, "AoE1")),
        ("GET", q + "&cursorMark=AoE1", 200, _ads_page(citers[2:4], 5, "AoE2")),
        ("GET", q + "&cursorMark=AoE2", 200, _ads_page(citers[4:], 5, "AoE3")),
        ("POST", big + "&rows=2", 200, _ads_page(citers[1::-1], 2, "")),
        ("POST", big + "&rows=1", 200, _ads_page(citers[2:3], 1, "")),
    ])
    with ServerProcess([folder]) as server:
        yield server


def test_ads_recorded_search_is_the_same(replay):
    ads = ADSClient(base_url=replay.url + "/ads/v1", token="tok", rate_limit=(1000, 1.0))

    async def run_async():
        async with ads:
            return await _collect(ads.asearch('first_author:"Sudilovsky"'))

    docs, sent_sync, sent_async = _sync_and_async(replay, lambda: list(ads.search('first_author:"Sudilovsky"')),
                                                  run_async)
    assert sent_async == sent_sync and len(sent_sync) == 1 and len(docs) == 28


@pytest.mark.parametrize("limit", [None, 2, 3])
def test_ads_cursor_mark_paging_is_the_same(ads_server, limit):
    ads = ADSClient(base_url=ads_server.url + "/ads/v1", token="tok", rows=2, rate_limit=(1000, 1.0))
    q = "citations(bibcode:2007ApJ...669..741S)"

    async def run_async():
        async with ads:
            return await _collect(ads.asearch(q, fl=["title"], limit=limit))

    docs, sent_sync, sent_async = _sync_and_async(ads_server, lambda: list(ads.search(q, fl=["title"], limit=limit)),
                                                  run_async)
    assert sent_async == sent_sync
    assert [d.bibcode for d in docs] == ADS_CITERS[:limit]
    # A listing ends once the limit is reached: no request for a page whose documents would all be dropped.
    pages = {None: 3, 2: 1, 3: 2}[limit]
    assert [parse_qs(q)["cursorMark"][0] for _, _, q in sent_sync] == ["*", "AoE1", "AoE2"][:pages]


def test_ads_citations_and_references_are_the_same(ads_server):
    ads = ADSClient(base_url=ads_server.url + "/ads/v1", token="tok", rows=2, rate_limit=(1000, 1.0))

    async def run_async():
        async with ads:
            return await _collect(ads.acitations("2007ApJ...669..741S", fl=["title"]))

    docs, sent_sync, sent_async = _sync_and_async(
        ads_server, lambda: list(ads.citations("2007ApJ...669..741S", fl=["title"])), run_async)
    assert sent_async == sent_sync and len(docs) == 5
    with pytest.raises(InvalidIdentifierError):
        ads.areferences("2007ApJ...669..741")
    assert ads.stats.sent == 6


def test_ads_bigquery_batches_are_the_same(ads_server):
    ads = ADSClient(base_url=ads_server.url + "/ads/v1", token="tok", rows=2, rate_limit=(1000, 1.0))
    wanted = [*ADS_CITERS[:3], ADS_CITERS[0]]

    async def run_async():
        async with ads:
            return await ads.aget_records(wanted, fl=["title"])

    recs, sent_sync, sent_async = _sync_and_async(ads_server, lambda: ads.get_records(wanted, fl=["title"]),
                                                  run_async)
    assert [r.bibcode for r in recs] == ADS_CITERS[:3]
    assert Counter(sent_async) == Counter(sent_sync) and [m for m, _, _ in sent_sync] == ["POST", "POST"]
    with pytest.raises(InvalidIdentifierError):
        asyncio.run(ads.aget_records(["abc"]))


# ------------------------------------------------------------------------------------------------- arXiv


@pytest.fixture
def arxiv(replay):
    return ArxivClient(base_url=replay.url + "/arxiv/api", min_interval=0)


def test_arxiv_id_lookups_are_the_same(arxiv, replay):
    ids = ["0808.05394", "1707.08567", "astro-ph/0601001", "2104.12255v1"]

    def sync():
        return arxiv.get_entries(ids[:2]), [arxiv.get_entry(i) for i in ids[2:]]

    async def run_async():
        async with arxiv:
            return await arxiv.aget_entries(ids[:2]), [await arxiv.aget_entry(i) for i in ids[2:]]

    (batch, single), sent_sync, sent_async = _sync_and_async(replay, sync, run_async)
    assert sent_async == sent_sync and len(sent_sync) == 3
    assert [e.id for e in batch] == ["1707.08567"] and [e.id for e in single] == ["astro-ph/0601001", "2104.12255"]


def test_arxiv_empty_result_and_400_in_async(arxiv, one_line):
    assert asyncio.run(arxiv.aget_entry("0000.0000")) is None
    with pytest.raises(BadRequestError) as err:
        asyncio.run(arxiv.aget_entry("abc"))
    assert "incorrect id format for abc" in one_line(err.value)


@pytest.mark.parametrize("limit", [30, 60])
def test_arxiv_start_max_results_paging_is_the_same(arxiv, replay, limit):
    async def run_async():
        async with arxiv:
            return await _collect(arxiv.asearch("testing", page_size=10, limit=limit))

    entries, sent_sync, sent_async = _sync_and_async(
        replay, lambda: list(arxiv.search("testing", page_size=10, limit=limit)), run_async)
    assert sent_async == sent_sync and len(entries) == limit
    assert [parse_qs(q)["start"][0] for _, _, q in sent_sync] == [str(s) for s in range(0, limit, 10)]


def _atom(ids: list[str], total: int, start: int) -> str:
    entries = "".join(f"<entry><id>http://arxiv.org/abs/{i}v1</id><title>{i}</title></entry>" for i in ids)
    return ('<?xml version="1.0" encoding="UTF-8"?><feed xmlns="http://www.w3.org/2005/Atom" '
            'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">'
            f"<opensearch:totalResults>{total}</opensearch:totalResults>"
            f"<opensearch:startIndex>{start}</opensearch:startIndex>"
            f"<opensearch:itemsPerPage>2</opensearch:itemsPerPage>{entries}</feed>")


def test_arxiv_paging_stops_at_the_total_in_async_too(tmp_path):
    base = f"{ARXIV}?search_query=ti:rare&id_list=&sortBy=submittedDate&sortOrder=ascending"
    folder = write_recordings(tmp_path / "rec", [
        ("GET", f"{base}&start=0&max_results=2", 200, _atom(["2101.00001", "2101.00002"], 3, 0)),
        ("GET", f"{base}&start=2&max_results=2", 200, _atom(["2101.00003"], 3, 2)),
    ])
    with ServerProcess([folder]) as server:
        arxiv = ArxivClient(base_url=server.url + "/arxiv/api", min_interval=0)
        kwargs = {"page_size": 2, "sort_by": "submittedDate", "sort_order": "ascending"}

        async def run_async():
            async with arxiv:
                return await _collect(arxiv.asearch("ti:rare", **kwargs))

        entries, sent_sync, sent_async = _sync_and_async(server, lambda: list(arxiv.search("ti:rare", **kwargs)),
                                                         run_async)
    assert sent_async == sent_sync and len(sent_sync) == 2
    assert [e.id for e in entries] == ["2101.00001", "2101.00002", "2101.00003"]


def test_async_arxiv_keeps_the_interval_between_requests(replay):
    interval = 0.6
    slow = ArxivClient(base_url=replay.url + "/arxiv/api", min_interval=interval)

    async def three_at_once():
        async with slow:
            return await asyncio.gather(*(slow.aget_entry(i) for i in ("1707.08567", "1605.08386", "0000.0000")))

    replay.reset()
    start = time.monotonic()
    found = asyncio.run(three_at_once())
    elapsed = time.monotonic() - start
    assert [e and e.id for e in found] == ["1707.08567", "1605.08386", None]
    arrivals = [r["t"] for r in replay.requests_log()["requests"]]
    assert len(arrivals) == 3 and elapsed >= 2 * interval
    assert all(b - a >= interval for a, b in itertools.pairwise(arrivals))
