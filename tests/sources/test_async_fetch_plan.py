"""The one async path of the clients, `OpenAlexClient.afetch_plan` (the builder's snowball), and `Transport.agather`
under it, against servers on 127.0.0.1: the same records from the same requests as `fetch_plan` and the sync
listings, cursor paging across OR-ed batches, the sync errors, retries, the listings running concurrently within the
connection limit, and a failed listing cancelling the others. `agather` runs any client's pager, so the last part
runs the ADS and arXiv pagers through it too, limits included."""

from __future__ import annotations

import asyncio
import json
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from urllib.parse import parse_qs

import pytest
from replay_server import ServerProcess, SyntheticWorks, write_recordings

from scitaste_hf.sources import ADSClient, ArxivClient, OpenAlexClient, SnowballPlan
from scitaste_hf.sources.ads import DEFAULT_FIELDS
from scitaste_hf.sources.arxiv import _search
from scitaste_hf.sources.errors import AuthError, BadRequestError, InvalidIdentifierError, ServiceUnavailable
from scitaste_hf.sources.transport import Pager

# The recording asked for citers and references with the two ids in this order.
LINKS_ORDER = ("W3046863325", "W3045921891")
ADS = "https://api.adsabs.harvard.edu/v1"
ARXIV = "https://export.arxiv.org/api/query"
ADS_CITERS = ["2008ApJ...100..001A", "2008ApJ...100..002B", "2009ApJ...100..003C", "2009ApJ...100..004D",
              "2010ApJ...100..005E"]
N_SYNTHETIC = 250
# Tests need no real backoff: the first step is 10 ms.
FAST = {"rate_limit": (1000, 1.0), "backoff": (0.01, 0.05)}


def _sent(server: ServerProcess) -> list[tuple[str, str, str]]:
    return [(r["method"], r["path"], r["query"]) for r in server.requests_log()["requests"]]


def _cursors(sent: list[tuple[str, str, str]]) -> dict[str, list[str]]:
    """The cursors each OpenAlex listing (its filter) asked for, in the order it asked."""
    out: dict[str, list[str]] = defaultdict(list)
    for _, _, query in sent:
        params = parse_qs(query)
        out[params["filter"][0]].append(params["cursor"][0])
    return dict(out)


def _fetch_both(server: ServerProcess, oa: OpenAlexClient, plan: SnowballPlan, select=None, **kwargs):
    """What `fetch_plan` returned and the requests it sent, after checking that `afetch_plan` returns the same works
    in the same order from the same requests (in another order across listings: they run concurrently, but each
    listing's pages in sequence)."""
    server.reset()
    expected = oa.fetch_plan(plan, select, **kwargs)
    sent_sync = _sent(server)
    server.reset()
    assert asyncio.run(oa.afetch_plan(plan, select, **kwargs)) == expected
    sent_async = _sent(server)
    assert Counter(sent_async) == Counter(sent_sync)
    if sent_sync and "cursor=" in sent_sync[0][2]:
        assert _cursors(sent_async) == _cursors(sent_sync)
    return expected, sent_sync


@pytest.fixture(scope="module")
def graph_server():
    """A synthetic OpenAlex of two fields, so that OR-ed batches of 100 works share citers."""
    with ServerProcess(synthetic=N_SYNTHETIC) as server:
        yield server


def _oa(server: ServerProcess, **kwargs) -> OpenAlexClient:
    return OpenAlexClient(base_url=server.url + "/openalex", **{**FAST, **kwargs})


# ------------------------------------------------------------------------------------------------- afetch_plan


def test_recorded_listings_page_as_the_service_did(replay):
    oa = _oa(replay)
    plan = SnowballPlan((LINKS_ORDER,), (), (LINKS_ORDER,))
    (refs, citers), sent = _fetch_both(replay, oa, plan)
    assert len(sent) == 2 and (len(refs), len(citers)) == (38, 5)
    # The same works as the single listings, which the recordings were made with.
    assert refs == list(oa.iter_references(LINKS_ORDER)) and citers == list(oa.iter_citing(LINKS_ORDER))


def test_every_kind_of_listing_pages_across_or_ed_batches(graph_server):
    oa = _oa(graph_server, page_size=30)
    focal = [f"W{k}" for k in range(1, 201)]
    by_id = [f"W{k}" for k in range(N_SYNTHETIC, 200, -1)]  # fetched by id, in descending order
    plan = SnowballPlan((tuple(focal[:60]),), tuple(by_id), (tuple(focal[:100]), tuple(focal[100:])))
    (refs, citers), sent = _fetch_both(graph_server, oa, plan, ["id", "referenced_works"])
    graph = SyntheticWorks(N_SYNTHETIC)
    assert [w.id for w in citers] == list(dict.fromkeys(
        f"W{c}" for batch in (range(1, 101), range(101, 201)) for c in graph.listing("cites", list(batch))))
    cited = graph.listing("cited_by", list(range(1, 61)))
    assert [w.id for w in refs] == [f"W{r}" for r in cited] + sorted(by_id, key=lambda w: int(w[1:]))
    cursors = _cursors(sent)
    # One listing of references, one by id (50 works) and two OR-ed batches of citers, each over several pages.
    assert len(cursors) == 4 and all(c[0] == "*" and c.count("*") == 1 for c in cursors.values())
    assert len(cursors[f"openalex:{'|'.join(by_id)}"]) == 2 and len(sent) > 10


def _pages(n: int, size: int) -> int:
    # Paging stops at meta.count: an empty listing is one request, a full last page needs no empty one after it.
    return max(1, -(-n // size))


def test_snowball_plan_fetches_the_same_works_sync_and_async_in_fewer_requests(graph_server):
    oa = _oa(graph_server, page_size=50)
    graph = SyntheticWorks(N_SYNTHETIC)
    works = oa.get_works([f"W{k}" for k in range(1, N_SYNTHETIC + 1)])
    plan = oa.snowball_plan(works)
    ticks: list[int] = []
    (refs, citers), sent_sync = _fetch_both(graph_server, oa, plan, ["id", "referenced_works"],
                                            progress=ticks.append)
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


def test_an_invalid_filter_is_the_sync_error(replay, one_line):
    oa = _oa(replay)
    with pytest.raises(BadRequestError, match="DOESNTEXIST is not a valid field") as sync_err:
        list(oa.iter_works("DOESNTEXIST:1"))
    with pytest.raises(BadRequestError) as async_err:
        asyncio.run(oa.transport.agather([oa._listing("DOESNTEXIST:1", None)]))
    assert one_line(async_err.value) == one_line(sync_err.value) and oa.stats.sent == 2


_PLAN = SnowballPlan((), (), (("W1",),))


@pytest.mark.parametrize(("answers", "error"), [
    ([{"status": 400, "body": json.dumps({"error": "Invalid query parameters error."})}], BadRequestError),
    ([{"status": 403, "body": json.dumps({"error": "Forbidden"})}], AuthError),
    ([{"status": 503}] * 3, ServiceUnavailable),
], ids=["400", "403", "503-until-retries-run-out"])
def test_errors_are_the_sync_ones(faults, one_line, answers, error):
    oa = _oa(faults, max_retries=2)
    faults.add_faults(*answers)
    with pytest.raises(error) as sync_err:
        oa.fetch_plan(_PLAN)
    faults.reset()
    faults.add_faults(*answers)
    with pytest.raises(error) as async_err:
        asyncio.run(oa.afetch_plan(_PLAN))
    assert one_line(async_err.value) == one_line(sync_err.value)


def test_failed_attempts_are_retried_as_in_sync(faults):
    oa = _oa(faults)
    faults.add_faults({"status": 503}, {"status": 200, "body": ""}, {"status": 200, "body": '{"meta": {"cou'})
    refs, citers = asyncio.run(oa.afetch_plan(_PLAN, "id"))
    assert (refs, citers) == oa.fetch_plan(_PLAN, "id") and citers
    assert oa.stats.retries == 3 and oa.stats.statuses[503] == 1


def test_listings_run_concurrently_within_the_connection_limit():
    latency, connections = 0.1, 3
    graph = SyntheticWorks(N_SYNTHETIC)
    # Six works with 40-60 citers: three pages of 20 each.
    works = [f"W{k}" for k in range(1, N_SYNTHETIC + 1) if 40 < len(graph.citers[k]) <= 60][:6]
    assert len(works) == 6
    plan = SnowballPlan((), (), tuple((w,) for w in works))
    with ServerProcess(synthetic=N_SYNTHETIC, latency=latency) as server:
        oa = _oa(server, page_size=20, max_connections=connections)
        _fetch_both(server, oa, plan, "id")
        arrivals = sorted(r["t"] for r in server.requests_log()["requests"])
    assert len(arrivals) == 18
    # Every answer takes `latency`, so requests that arrive within less than that of each other are in flight
    # together: the listings overlap, up to the connection limit and no further (how much faster that is, is
    # bench/bench_sources.py's to measure, not a test's).
    in_flight = max(sum(1 for u in arrivals if t <= u < t + 0.9 * latency) for t in arrivals)
    assert in_flight == connections


def test_a_failed_listing_cancels_the_others(graph_server):
    oa = _oa(graph_server, page_size=10, max_connections=2)
    graph_server.reset()
    graph_server.add_faults({"status": 400, "body": json.dumps({"error": "Invalid query parameters error."})})

    async def run():
        plan = SnowballPlan((), (), (("W1",), ("W2",), ("W3",), ("W4",)))
        with pytest.raises(BadRequestError):
            await oa.afetch_plan(plan, "id")
        # Still inside the loop: a listing left running would go on paging now.
        await asyncio.sleep(0.5)

    asyncio.run(run())
    assert len(graph_server.requests_log()["requests"]) <= 2


# ------------------------------------------------------------------------------ agather with each client's pagers


def _gather_both(server: ServerProcess, client, make: Callable[[], Sequence[Pager]]):
    """The records of the pagers run one after another by `Transport.records`, and the requests sent, after checking
    that `Transport.agather` returns the same records from the same requests (in the same order for one pager)."""
    server.reset()
    expected = [list(client.transport.records(p)) for p in make()]
    sent_sync = _sent(server)
    server.reset()
    pagers = make()
    assert asyncio.run(client.transport.agather(pagers)) == expected
    sent_async = _sent(server)
    assert sent_async == sent_sync if len(pagers) == 1 else Counter(sent_async) == Counter(sent_sync)
    return [record for page in expected for record in page], sent_sync


@pytest.mark.parametrize("limit", [None, 30, 45, 61])
def test_openalex_listing_with_a_limit(graph_server, limit):
    oa = _oa(graph_server, page_size=30)
    works, sent = _gather_both(graph_server, oa, lambda: [oa._listing("cites:W5|W6|W7", "id", limit=limit)])
    assert works == list(oa.iter_works("cites:W5|W6|W7", select="id", limit=limit))
    total = len(SyntheticWorks(N_SYNTHETIC).listing("cites", [5, 6, 7]))
    assert len(works) == min(total, limit or total) and len(sent) == _pages(len(works), 30)


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


def _ads(server: ServerProcess, **kwargs) -> ADSClient:
    return ADSClient(base_url=server.url + "/ads/v1", token="tok", **{**FAST, **kwargs})


def test_ads_recorded_search(replay):
    ads = _ads(replay)
    q = 'first_author:"Sudilovsky"'
    docs, sent = _gather_both(replay, ads, lambda: [ads._listing(q, DEFAULT_FIELDS, "bibcode asc", None)])
    assert docs == list(ads.search(q)) and len(sent) == 1 and len(docs) == 28


@pytest.mark.parametrize("limit", [None, 2, 3])
def test_ads_cursor_mark_paging(ads_server, limit):
    ads = _ads(ads_server, rows=2)
    q = "citations(bibcode:2007ApJ...669..741S)"
    docs, sent = _gather_both(ads_server, ads, lambda: [ads._listing(q, ["title"], "bibcode asc", limit)])
    assert [d.bibcode for d in docs] == ADS_CITERS[:limit]
    # A listing ends once the limit is reached: no request for a page whose documents would all be dropped.
    pages = {None: 3, 2: 1, 3: 2}[limit]
    assert [parse_qs(query)["cursorMark"][0] for _, _, query in sent] == ["*", "AoE1", "AoE2"][:pages]
    if limit is None:
        assert docs == list(ads.citations("2007ApJ...669..741S", fl=["title"]))
        with pytest.raises(InvalidIdentifierError):
            ads.references("2007ApJ...669..741")


def test_ads_bigquery_batches(ads_server):
    ads = _ads(ads_server, rows=2)
    wanted = [*ADS_CITERS[:3], ADS_CITERS[0]]
    docs, sent = _gather_both(ads_server, ads, lambda: ads._lookups(wanted, ["title"])[1])
    assert sorted(d.bibcode for d in docs) == ADS_CITERS[:3]
    assert [r.bibcode for r in ads.get_records(wanted, fl=["title"])] == ADS_CITERS[:3]
    assert [m for m, _, _ in sent] == ["POST", "POST"]


@pytest.fixture
def arxiv(replay):
    return ArxivClient(base_url=replay.url + "/arxiv/api", min_interval=0, backoff=FAST["backoff"])


def test_arxiv_id_lookups(arxiv, replay):
    ids = ["0808.05394", "1707.08567", "astro-ph/0601001", "2104.12255v1"]
    # One batch of two and two single ids, as the recordings were made.
    entries, sent = _gather_both(replay, arxiv, lambda: [p for batch in (ids[:2], ids[2:3], ids[3:])
                                                         for p in arxiv._lookups(batch)[1]])
    assert len(sent) == 3 and [e.id for e in entries] == ["1707.08567", "astro-ph/0601001", "2104.12255"]
    assert entries == arxiv.get_entries(ids[:2]) + [arxiv.get_entry(i) for i in ids[2:]]


@pytest.mark.parametrize("limit", [30, 60])
def test_arxiv_start_max_results_paging(arxiv, replay, limit):
    entries, sent = _gather_both(replay, arxiv, lambda: [_search("testing", 10, limit, "relevance", "descending")])
    assert len(entries) == limit and entries == list(arxiv.search("testing", page_size=10, limit=limit))
    assert [parse_qs(q)["start"][0] for _, _, q in sent] == [str(s) for s in range(0, limit, 10)]


def _atom(ids: list[str], total: int, start: int) -> str:
    entries = "".join(f"<entry><id>http://arxiv.org/abs/{i}v1</id><title>{i}</title></entry>" for i in ids)
    return ('<?xml version="1.0" encoding="UTF-8"?><feed xmlns="http://www.w3.org/2005/Atom" '
            'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">'
            f"<opensearch:totalResults>{total}</opensearch:totalResults>"
            f"<opensearch:startIndex>{start}</opensearch:startIndex>"
            f"<opensearch:itemsPerPage>2</opensearch:itemsPerPage>{entries}</feed>")


def test_arxiv_paging_stops_at_the_total(tmp_path):
    base = f"{ARXIV}?search_query=ti:rare&id_list=&sortBy=submittedDate&sortOrder=ascending"
    folder = write_recordings(tmp_path / "rec", [
        ("GET", f"{base}&start=0&max_results=2", 200, _atom(["2101.00001", "2101.00002"], 3, 0)),
        ("GET", f"{base}&start=2&max_results=2", 200, _atom(["2101.00003"], 3, 2)),
    ])
    with ServerProcess([folder]) as server:
        arxiv = ArxivClient(base_url=server.url + "/arxiv/api", min_interval=0)
        entries, sent = _gather_both(server, arxiv,
                                     lambda: [_search("ti:rare", 2, None, "submittedDate", "ascending")])
    assert len(sent) == 2 and [e.id for e in entries] == ["2101.00001", "2101.00002", "2101.00003"]
