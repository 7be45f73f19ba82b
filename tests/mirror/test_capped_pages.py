"""Every listing of the three clients against a mirror that answers at most 7 records a page, whatever was asked
(a service that caps its page size): sync and async, every record still comes, and no listing counts as short."""

import asyncio
import sys
from pathlib import Path

import numpy as np
import pytest

from scitaste_hf.sources import ADSClient, ArxivClient, OpenAlexClient

#: The same world as the shared `world` fixture (tests/conftest.py: 470 papers, seed 5).
PAPERS, SEED, CAP = 470, 5, 7


@pytest.fixture(scope="module")
def capped(servers, tmp_path_factory):
    start, stop = servers
    scitaste = str(Path(sys.executable).with_name("scitaste"))
    proc, url = start([scitaste, "mirror", "serve", "--papers", str(PAPERS), "--seed", str(SEED), "--max-page",
                       str(CAP), "--port", "{port}"], log=tmp_path_factory.mktemp("capped") / "log.txt",
                      ready="/health")
    yield url.rstrip("/")
    stop(proc)


def _both(sync, make_async):
    """What a sync call returned, after checking that its async twin (an async iterator or an awaitable) returns
    the same records."""
    expected = sync()

    async def run():
        got = make_async()
        return [item async for item in got] if hasattr(got, "__aiter__") else await got

    assert asyncio.run(run()) == expected
    return expected


def _ids(works):
    return [w.id for w in works]


def test_openalex_listings_yield_every_work(capped, world):
    oa = OpenAlexClient(base_url=f"{capped}/openalex", rate_limit=None)
    focal = int(np.argmax(np.diff(world.cite_ptr)[: world.n_candidates]))
    wid = world.work_id(focal)
    citers = sorted(world.work_id(int(c)) for c in world.citers(focal))
    references = sorted(world.work_id(int(r)) for r in world.references(focal))
    assert len(citers) > 3 * CAP and len(references) > CAP

    assert sorted(_ids(_both(lambda: list(oa.iter_citing(wid)), lambda: oa.aiter_citing(wid)))) == citers
    assert sorted(_ids(_both(lambda: list(oa.iter_references(wid)), lambda: oa.aiter_references(wid)))) == references
    batch = [world.work_id(i) for i in range(150)]  # two OR-ed batches, each paged 7 at a time
    assert _ids(_both(lambda: oa.get_works(batch), lambda: oa.aget_works(batch))) == batch
    flt = f"cites:{wid}"
    assert sorted(_ids(_both(lambda: list(oa.iter_works(flt)), lambda: oa.aiter_works(flt)))) == citers
    limit = 2 * CAP + 3
    some = _ids(_both(lambda: list(oa.iter_works(flt, limit=limit)), lambda: oa.aiter_works(flt, limit=limit)))
    assert len(some) == limit and set(some) <= set(citers)
    plan = oa.snowball_plan(oa.get_works([wid]))
    refs, cits = _both(lambda: oa.fetch_plan(plan), lambda: oa.afetch_plan(plan))
    assert (sorted(_ids(refs)), sorted(_ids(cits))) == (references, citers)
    assert oa.stats.short_listings == 0


def test_ads_listings_yield_every_document(capped, world):
    ads = ADSClient(base_url=f"{capped}/ads/v1", token="t", rate_limit=None)
    physics = [i for i in range(world.n_candidates) if i in world.bibcode]
    focal = max(physics, key=lambda i: world.citers(i).shape[0])
    code = world.bibcode[focal]
    citers = sorted(world.bibcode[int(c)] for c in world.citers(focal) if int(c) in world.bibcode)
    assert len(citers) > CAP

    got = _both(lambda: list(ads.citations(code)), lambda: ads.acitations(code))
    assert sorted(r.bibcode for r in got) == citers
    wanted = [world.bibcode[i] for i in physics[:30]]  # one bigquery batch, answered 7 at a time
    got = _both(lambda: ads.get_records(wanted), lambda: ads.aget_records(wanted))
    assert [r.bibcode for r in got] == wanted
    assert ads.stats.short_listings == 0


def test_arxiv_listings_yield_every_entry(capped, world):
    arxiv = ArxivClient(base_url=f"{capped}/arxiv/api", min_interval=0)
    ids = sorted(world.arxiv_id.values())[:30]  # one id_list batch, answered 7 at a time
    assert _ids(_both(lambda: arxiv.get_entries(ids), lambda: arxiv.aget_entries(ids))) == ids
    category = world.arxiv_class[next(iter(world.arxiv_id))]
    expected = sorted(a for i, a in world.arxiv_id.items() if world.arxiv_class[i] == category)
    assert len(expected) > CAP
    got = _both(lambda: list(arxiv.search(f"cat:{category}")), lambda: arxiv.asearch(f"cat:{category}"))
    assert sorted(_ids(got)) == expected
    assert arxiv.stats.short_listings == 0
