"""Every listing of the three clients against a mirror that answers at most 7 records a page, whatever was asked
(a service that caps its page size): sync, through ``OpenAlexClient.afetch_plan`` and through ``Transport.agather``
with the ADS and arXiv pagers, every record still comes, and no listing counts as short."""

import asyncio
import sys
from pathlib import Path

import numpy as np
import pytest

from scitaste_hf.sources import ADSClient, ArxivClient, OpenAlexClient, SnowballPlan
from scitaste_hf.sources.ads import DEFAULT_FIELDS
from scitaste_hf.sources.arxiv import _search

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


def _gathered(client, pagers) -> list:
    """The records of listings run concurrently by ``Transport.agather``, one list after the other."""
    return [record for page in asyncio.run(client.transport.agather(pagers)) for record in page]


def _ids(works):
    return [w.id for w in works]


def test_openalex_listings_yield_every_work(capped, world):
    oa = OpenAlexClient(base_url=f"{capped}/openalex", rate_limit=None)
    focal = int(np.argmax(np.diff(world.cite_ptr)[: world.n_candidates]))
    wid = world.work_id(focal)
    citers = sorted(world.work_id(int(c)) for c in world.citers(focal))
    references = sorted(world.work_id(int(r)) for r in world.references(focal))
    assert len(citers) > 3 * CAP and len(references) > CAP

    assert sorted(_ids(oa.iter_citing(wid))) == citers
    assert sorted(_ids(oa.iter_references(wid))) == references
    batch = [world.work_id(i) for i in range(150)]  # two OR-ed batches, each paged 7 at a time
    assert _ids(oa.get_works(batch)) == batch
    flt = f"cites:{wid}"
    assert sorted(_ids(oa.iter_works(flt))) == citers
    limit = 2 * CAP + 3
    some = _ids(oa.iter_works(flt, limit=limit))
    assert len(some) == limit and set(some) <= set(citers)
    assert _ids(_gathered(oa, [oa._listing(flt, None, limit=limit)])) == some
    # The async path: every kind of listing a plan has (cited_by:, openalex: in two batches, cites:), concurrently.
    plan = SnowballPlan(((wid,),), tuple(batch), ((wid,),))
    refs, cits = asyncio.run(oa.afetch_plan(plan))
    assert (refs, cits) == oa.fetch_plan(plan)
    assert (sorted(_ids(refs)), sorted(_ids(cits))) == (sorted({*references, *batch}), citers)
    plan = oa.snowball_plan(oa.get_works([wid]))
    refs, cits = asyncio.run(oa.afetch_plan(plan))
    assert (sorted(_ids(refs)), sorted(_ids(cits))) == (references, citers)
    assert oa.stats.short_listings == 0


def test_ads_listings_yield_every_document(capped, world):
    ads = ADSClient(base_url=f"{capped}/ads/v1", token="t", rate_limit=None)
    physics = [i for i in range(world.n_candidates) if i in world.bibcode]
    focal = max(physics, key=lambda i: world.citers(i).shape[0])
    code = world.bibcode[focal]
    citers = sorted(world.bibcode[int(c)] for c in world.citers(focal) if int(c) in world.bibcode)
    assert len(citers) > CAP

    got = list(ads.citations(code))
    assert sorted(r.bibcode for r in got) == citers
    assert _gathered(ads, [ads._listing(f"citations(bibcode:{code})", DEFAULT_FIELDS, "bibcode asc", None)]) == got
    wanted = [world.bibcode[i] for i in physics[:30]]  # one bigquery batch, answered 7 at a time
    got = ads.get_records(wanted)
    assert [r.bibcode for r in got] == wanted
    assert sorted(_gathered(ads, ads._lookups(wanted, DEFAULT_FIELDS)[1]), key=lambda r: wanted.index(r.bibcode)) == got
    assert ads.stats.short_listings == 0


def test_arxiv_listings_yield_every_entry(capped, world):
    arxiv = ArxivClient(base_url=f"{capped}/arxiv/api", min_interval=0)
    ids = sorted(world.arxiv_id.values())[:30]  # one id_list batch, answered 7 at a time
    got = arxiv.get_entries(ids)
    assert _ids(got) == ids
    assert sorted(_gathered(arxiv, arxiv._lookups(ids)[1]), key=lambda e: ids.index(e.id)) == got
    category = world.arxiv_class[next(iter(world.arxiv_id))]
    expected = sorted(a for i, a in world.arxiv_id.items() if world.arxiv_class[i] == category)
    assert len(expected) > CAP
    got = list(arxiv.search(f"cat:{category}"))
    assert sorted(_ids(got)) == expected
    assert _gathered(arxiv, [_search(f"cat:{category}", 100, None, "relevance", "descending")]) == got
    assert arxiv.stats.short_listings == 0
