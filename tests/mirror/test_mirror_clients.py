"""The clients of scitaste_hf.sources, pointed at the mirror by base URL, work unchanged and see the world."""

import json

import httpx
import numpy as np
import pytest

from scitaste_hf.sources import ADSClient, ArxivClient, OpenAlexClient
from scitaste_hf.sources.errors import SourceError


def _recorded_keys(kind):
    from scitaste_hf.mirror.server import recorded_dir

    body = json.loads((recorded_dir() / "openalex" / f"entity_{kind}.json").read_text())["response"]["body"]
    return set(body)


def test_openalex_works_citers_references(mirror, world):
    client = OpenAlexClient(base_url=f"{mirror}/openalex", cache_dir=None)
    focal = int(np.argmax(np.diff(world.cite_ptr)[: world.n_candidates]))
    wid = world.work_id(focal)
    work = client.get_work(wid)
    assert work.id == wid and work.cited_by_count == world.citers(focal).shape[0]
    assert work.publication_year == world.pub_date(focal).year
    assert sorted(work.referenced_works) == sorted(world.work_id(int(r)) for r in world.references(focal))
    citing = {w.id for w in client.iter_citing(wid)}
    assert citing == {world.work_id(int(c)) for c in world.citers(focal)}
    refs = {w.id for w in client.iter_references(wid)}
    assert refs == {world.work_id(int(r)) for r in world.references(focal)}
    batch = client.get_works([world.work_id(i) for i in range(150)])  # two OR-batches of up to 100 ids
    assert [w.id for w in batch] == [world.work_id(i) for i in range(150)]


def test_openalex_shapes_match_the_real_service(mirror):
    full = httpx.get(f"{mirror}/openalex/works/W9000000001").json()
    missing = set(full) - _recorded_keys("W2741809807")
    assert not missing, missing  # every field we serve is a field OpenAlex serves
    source = httpx.get(f"{mirror}/openalex/sources/S900000000").json()
    assert set(source) <= _recorded_keys("S137773608") and "2yr_mean_citedness" in source["summary_stats"]
    top = httpx.get(f"{mirror}/openalex/works", params={"sort": "cited_by_count:desc", "per_page": 5}).json()
    counts = [w["cited_by_count"] for w in top["results"]]
    assert counts == sorted(counts, reverse=True) and top["meta"]["count"] > 470


def test_a_selected_work_is_the_full_work_cut_to_its_fields(world):
    """openalex_work with fields computes only what they need, and gives what the full object has for them."""
    from scitaste_hf.builder.collect import SNOWBALL_SELECT, WORK_SELECT
    from scitaste_hf.simworld.render import WORK_FIELDS, openalex_work

    selections = [SNOWBALL_SELECT, WORK_SELECT, ("primary_topic",), ("topics",), ("counts_by_year", "id"),
                  ("authorships",), ("institutions_distinct_count",), ("concepts", "referenced_works_count")]
    for i in [0, world.n_candidates - 1, world.n_candidates, world.n_works - 1]:
        full = openalex_work(world, i)
        assert tuple(full) == WORK_FIELDS
        for fields in selections:
            assert openalex_work(world, i, fields) == {k: full[k] for k in WORK_FIELDS if k in fields}, (i, fields)


def test_openalex_sources_in_batches(mirror, world):
    """get_sources asks /sources?filter=openalex:S1|S2|... per 100 ids, as OpenAlex offers it; each source is the one
    /sources/{id} answers, in the order asked, and an id the world lacks is left out."""
    client = OpenAlexClient(base_url=f"{mirror}/openalex", cache_dir=None)
    wanted = [j.id for j in reversed(world.journals[:150])] + ["S999999999"]
    got = client.get_sources(wanted + wanted[:3])
    assert client.stats.sent == 2  # 151 distinct ids: two batches of one page each
    assert [s.id for s in got] == wanted[:-1]
    assert got[0] == client.get_source(wanted[0])
    assert [(s.issn_l, s.two_year_mean_citedness) for s in got] == \
        [(j.issn, j.mean_citedness) for j in reversed(world.journals[:150])]
    page = httpx.get(f"{mirror}/openalex/sources", params={"filter": f"openalex:{wanted[0]}|{wanted[1]}",
                                                           "select": "id,issn_l", "per-page": 1}).json()
    first = world.journals[148]  # of the two asked (149 and 148), the first in the world's order
    assert page["meta"]["count"] == 2 and page["results"] == [{"id": f"https://openalex.org/{first.id}",
                                                               "issn_l": first.issn}]
    for params, message in [({"filter": "cites:W1"}, "is not a valid field"),
                            ({"select": "DOESNTEXIST"}, "not a valid select field")]:
        bad = httpx.get(f"{mirror}/openalex/sources", params=params)
        assert bad.status_code == 400 and message in bad.json()["message"]


def test_openalex_errors_like_the_service(mirror):
    bad = httpx.get(f"{mirror}/openalex/works", params={"filter": "DOESNTEXIST:1"})
    assert bad.status_code == 400 and "is not a valid field" in bad.json()["message"]
    bad = httpx.get(f"{mirror}/openalex/works/W9000000001", params={"select": "DOESNTEXIST"})
    assert bad.status_code == 400 and "not a valid select field" in bad.json()["message"]
    client = OpenAlexClient(base_url=f"{mirror}/openalex", cache_dir=None)
    with pytest.raises(SourceError, match="not a valid field"):
        client.count_works("DOESNTEXIST:1")


def test_subfield_candidates_with_backfill(mirror, world):
    client = OpenAlexClient(base_url=f"{mirror}/openalex", cache_dir=None)
    cell = next(c for c in world.taxonomy.cells if c.id == "mathematics.algebra")
    mine = [i for i in range(world.n_candidates) if world.taxonomy.cells[int(world.cell[i])].id == cell.id]
    found = client.subfield_candidates(cell.openalex_subfield, " OR ".join(f'"{k}"' for k in cell.keywords),
                                       n=len(mine))
    assert {w.id for w in found} == {world.work_id(i) for i in mine}  # keyword hits plus the back-fill


def test_ads_search_citations_and_bigquery(mirror, world):
    client = ADSClient(base_url=f"{mirror}/ads/v1", token="mirror-token", cache_dir=None)
    physics = [i for i in range(world.n_candidates) if i in world.bibcode]
    focal = max(physics, key=lambda i: world.citers(i).shape[0])
    code = world.bibcode[focal]
    citing = {r.bibcode for r in client.citations(code)}
    assert citing == {world.bibcode[int(c)] for c in world.citers(focal)}
    refs = {r.bibcode for r in client.references(code)}
    assert refs == {world.bibcode[int(r)] for r in world.references(focal) if int(r) in world.bibcode}
    records = client.get_records([world.bibcode[i] for i in physics[:30]])
    assert sorted(r.bibcode for r in records) == sorted(world.bibcode[i] for i in physics[:30])
    hits = list(client.search("bibstem:PhRvB AND doctype:article"))
    assert hits and all(r.bibcode[4:9].rstrip(".") == "PhRvB" for r in hits)


def test_arxiv_lookups(mirror, world):
    client = ArxivClient(base_url=f"{mirror}/arxiv/api", cache_dir=None, min_interval=0)
    ids = list(world.arxiv_id.values())[:5]
    entries = client.get_entries(ids)
    assert [e.id for e in entries] == ids
    assert [e.primary_category for e in entries] == [world.arxiv_class[i] for i in list(world.arxiv_id)[:5]]
    with pytest.raises(SourceError):
        client.get_entries(["not-an-id"])
