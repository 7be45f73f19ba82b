"""A discipline's collection route is data: a custom taxonomy gives two disciplines other than physics the ADS/arXiv
route (each its own ADS collection) and keeps a third on OpenAlex, and the route takes effect in the simulated
worlds, the mirror, the build and the agent's tools."""

import sys
from pathlib import Path

import pytest

from scitaste_hf.agent.tools import PaperRef, ToolBox
from scitaste_hf.builder.pipeline import Build, BuildConfig
from scitaste_hf.mirror.ads import AdsApi
from scitaste_hf.records import load_records
from scitaste_hf.simworld import stream
from scitaste_hf.simworld.render import ads_doc
from scitaste_hf.simworld.world import generate
from scitaste_hf.sources import ADSClient, OpenAlexClient
from scitaste_hf.taxonomy import load_taxonomy

SCITASTE = str(Path(sys.executable).with_name("scitaste"))
PAPERS, SEED = 150, 4
TAXONOMY = """\
astronomy:
  code: ASTR
  route: ads
  ads_collections: [astronomy]
  sub_disciplines:
    - id: astronomy.galaxies
      name: Galaxies and cosmology
      openalex_subfield: 3103
      arxiv_classes: [astro-ph.GA, astro-ph.CO]
      bibstems: [ApJ, MNRAS]
      keywords: [galaxy, dark matter halo, spiral arm, stellar population, cosmology, redshift survey, quasar,
                 galaxy cluster]
      title_terms: [galaxy, galaxies, cosmic, halo]
    - id: astronomy.planets
      name: Planetary science
      openalex_subfield: 1912
      arxiv_classes: [astro-ph.EP]
      bibstems: [Icar, PSJ]
      keywords: [exoplanet, planetary atmosphere, asteroid, comet, protoplanetary disk, lunar surface, impact crater,
                 orbital resonance]
      title_terms: [planet, planetary, asteroid, orbit]
geophysics:
  code: GEOP
  route: ads
  ads_collections: [earthscience]
  sub_disciplines:
    - id: geophysics.seismology
      name: Seismology
      openalex_subfield: 1908
      arxiv_classes: [physics.geo-ph]
      bibstems: [GeoJI, JGRB]
      keywords: [earthquake, seismic wave, fault rupture, crustal deformation, mantle convection, tomography,
                 magnitude, aftershock]
      title_terms: [seismic, earthquake, fault, mantle]
finance:
  code: FINA
  sub_disciplines:
    - id: finance.banking
      name: Banking
      openalex_subfield: 2003
      keywords: [bank, credit, lending, deposit, loan, interest rate, liquidity, capital requirement]
"""
ADS_ROUTED = {"astronomy": "astronomy", "geophysics": "earthscience"}


@pytest.fixture(scope="module")
def taxonomy(tmp_path_factory):
    path = tmp_path_factory.mktemp("taxonomy") / "routes.yaml"
    path.write_text(TAXONOMY, "utf-8")
    return path, load_taxonomy(path)


@pytest.fixture(scope="module")
def world(taxonomy):
    return generate(PAPERS, SEED, taxonomy=taxonomy[1])


def test_the_taxonomy_reads_the_routes(taxonomy):
    tax = taxonomy[1]
    assert [d.name for d in tax.by_route("ads")] == ["astronomy", "geophysics"]
    assert [d.name for d in tax.by_route("openalex")] == ["finance"]
    assert tax.discipline("geophysics").ads_collections == ("earthscience",)
    assert tax.uses_ads("astronomy") and not tax.uses_ads("finance") and not tax.uses_ads("physics")


def test_the_worlds_give_the_ads_route_bibcodes_arxiv_ids_and_bibstem_journals(world, taxonomy):
    routed = {i for i in range(world.n_works) if world.discipline(i) in ADS_ROUTED}
    assert set(world.bibcode) == routed and set(world.arxiv_id) <= routed
    assert {world.discipline(i) for i in world.cascade_stage} == set(ADS_ROUTED)
    assert set(world.cascade_stage) == {i for i in range(world.n_candidates) if i in routed}
    names = {j.name for j in world.journals}
    assert {"Journal GeoJI (synthetic)", "General Astronomy 1 (synthetic)", "General Geophysics 3 (synthetic)"} <= names
    assert not any(j.bibstem for j in world.journals if j.discipline == "finance")
    for i in sorted(world.bibcode)[:50]:
        assert ads_doc(world, i)["collection"] == [ADS_ROUTED[world.discipline(i)]]
    scale = stream.generate(500, seed=1, taxonomy=taxonomy[1])
    assert "Journal PSJ (synthetic)" in {j.name for j in scale.journals}


def test_the_mirror_files_each_discipline_in_its_own_ads_collection(world):
    api = AdsApi(world)
    for discipline, collection in ADS_ROUTED.items():
        status, body = api.answer("/v1/search/query", {"q": f"collection:{collection}", "fl": "bibcode",
                                                       "rows": "2000"})
        assert status == 200
        expected = {b for i, b in world.bibcode.items() if world.discipline(i) == discipline}
        assert body["response"]["numFound"] == len(expected)
        assert {d["bibcode"] for d in body["response"]["docs"]} <= expected
    status, body = api.answer("/v1/search/query", {"q": "collection:physics", "fl": "bibcode"})
    assert status == 200 and body["response"]["numFound"] == 0


@pytest.fixture(scope="module")
def mirror(servers, tmp_path_factory, taxonomy):
    start, stop = servers
    proc, url = start([SCITASTE, "mirror", "serve", "--taxonomy", str(taxonomy[0]), "--papers", str(PAPERS),
                       "--seed", str(SEED), "--port", "{port}"],
                      log=tmp_path_factory.mktemp("mirror") / "log.txt", ready="/health")
    yield url.rstrip("/")
    stop(proc)


@pytest.mark.slow
def test_a_build_collects_the_ads_route_from_ads_and_labels_it_by_the_cascade(mirror, taxonomy, tmp_path):
    tax = taxonomy[1]
    config = BuildConfig(out=tmp_path / "ds", source="mirror", mirror_url=mirror, seed=1, per_discipline=30,
                         selected_per_discipline=6)
    Build(config, taxonomy=tax).run()
    records = load_records(tmp_path / "ds")
    by_discipline = {d: [r for r in records if r["discipline"] == d] for d in tax.names}
    assert all(by_discipline.values())
    for discipline in ADS_ROUTED:
        # an ADS bibcode (year, bibstem, volume, page, initial), never an internal id
        assert all(len(r["bibcode"]) == 19 and not r["bibcode"].startswith("STB.") for r in by_discipline[discipline])
        assert {r["subcategory_id"] for r in by_discipline[discipline]} <= {c.id for c in tax.of(discipline)}
    assert all(r["bibcode"].startswith("STB.FINA.W") for r in by_discipline["finance"])
    card = (tmp_path / "ds" / "README.md").read_text("utf-8")
    assert "1. **Collect**: astronomy and geophysics from NASA ADS" in card
    assert "3. **Classify**: astronomy and geophysics by a four-stage cascade" in card


def test_the_tools_ask_ads_for_the_ads_route(mirror, world, taxonomy):
    i = next(i for i in range(world.n_candidates) if world.discipline(i) == "geophysics" and len(world.citers(i)))
    bibcode = world.bibcode[i]
    refs = {bibcode: PaperRef(bibcode, "geophysics", None, world.doi(i))}

    def history(**kwargs):
        toolbox = ToolBox(OpenAlexClient(base_url=f"{mirror}/openalex", cache_dir=None),
                          ADSClient(base_url=f"{mirror}/ads/v1", token="t", cache_dir=None), refs, **kwargs)
        return toolbox.call("citation_history", {"bibcode": bibcode})

    routed = history(taxonomy=taxonomy[1])
    assert routed["source"] == "ads" and routed["total"] == len(world.citers(i))
    # the packaged taxonomy has no ADS-route geophysics: the same paper is found in OpenAlex by its DOI
    assert history()["source"] == "openalex"
