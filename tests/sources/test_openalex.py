"""OpenAlexClient against the replayed real responses (and a few recordings written by the test)."""

from __future__ import annotations

import json
import time
from datetime import date
from urllib.parse import parse_qs, parse_qsl, urlsplit

import pytest
from replay_server import ServerProcess, SyntheticWorks, write_recordings

from scitaste_hf.sources import OpenAlexClient
from scitaste_hf.sources.errors import AuthError, BadRequestError, InvalidIdentifierError, NotFoundError

FOCAL = ["W3045921891", "W3046863325"]
# The recording asked for citers and references with the two ids the other way round.
LINKS_ORDER = ["W3046863325", "W3045921891"]


@pytest.fixture
def oa(replay):
    return OpenAlexClient(base_url=replay.url + "/openalex", rate_limit=(1000, 1.0))


def _params(query: str) -> set[tuple[str, str]]:
    return {(k.replace("_", "-") if k == "per_page" else k, v) for k, v in parse_qsl(query)}


def test_get_work_parses_the_full_record(oa):
    w = oa.get_work("https://openalex.org/W2741809807")
    assert (w.id, w.publication_year, w.publication_date) == ("W2741809807", 2018, date(2018, 2, 13))
    assert w.doi == "10.7717/peerj.4375" and w.type == "article" and w.cited_by_count == 962
    assert len(w.referenced_works) == w.referenced_works_count == 45
    assert all(r.startswith("W") for r in w.referenced_works)
    assert (w.source_id, w.source_name, w.issn_l) == ("S1983995261", "PeerJ", "2167-8359")
    assert w.primary_topic.id == "T10102" and w.primary_topic.subfield_id == "1804"
    assert w.primary_topic.field_name == "Decision Sciences"
    assert w.countries == ("CA", "US") and len(w.authorships) == 9
    assert w.authorships[0].display_name == "Heather Piwowar" and w.authorships[0].countries == ("US",)
    assert w.concepts[0].display_name == "Citation" and w.concepts[0].level == 2
    assert w.abstract.startswith("Despite growing interest in Open Access (OA) to scholarly literature")
    assert w.counts_by_year[0] == (2025, 30) and w.pmid == "29456894"


def test_snowball_pages_exactly_as_the_service_did(replay, oa, recorded):
    replay.reset()
    assert oa.count_works("openalex:" + "|".join(FOCAL)) == 2
    focal = oa.get_works(FOCAL)
    assert oa.count_works("cites:" + "|".join(LINKS_ORDER)) == 5
    citers = list(oa.iter_citing(LINKS_ORDER))
    assert oa.count_works("cited_by:" + "|".join(LINKS_ORDER)) == 38
    refs = list(oa.iter_references(LINKS_ORDER))

    sent = [_params(r["query"]) for r in replay.requests_log()["requests"]]
    expected = []
    for i in range(6):
        url = json.loads((recorded / "openalex" / f"oa_snowball_{i}.json").read_text())["request"]["url"]
        expected.append(_params(urlsplit(url).query))
    # Same six requests in the same order; no request for the (empty) page after the last.
    assert sent == expected

    assert [w.id for w in focal] == FOCAL
    by_id = {w.id: w for w in focal}
    assert [by_id[f].cited_by_count for f in FOCAL] == [0, 5]
    assert len(citers) == 5 and len({w.id for w in citers}) == 5
    assert all(set(c.referenced_works) & set(FOCAL) for c in citers)
    assert all(c.publication_date > by_id["W3046863325"].publication_date for c in citers)
    focal_refs = set(by_id["W3045921891"].referenced_works) | set(by_id["W3046863325"].referenced_works)
    # OpenAlex lists only the references it can resolve: 38 of the 42 ids the two works name.
    assert len(refs) == 38 and {r.id for r in refs} < focal_refs and len(focal_refs) == 42


def test_listing_with_a_limit_stops_after_one_page(replay, oa):
    replay.reset()
    works = list(oa.iter_works("title_and_abstract.search:biodiversity AND finance,to_publication_date:2010-01-01",
                               limit=200))
    assert len(works) == 200 and len({w.id for w in works}) == 200
    assert all(w.publication_year <= 2010 for w in works)
    assert len(replay.requests_log()["requests"]) == 1


def test_rate_limit_headers_are_read(oa):
    oa.get_work("W4234567890")
    status = oa.rate_limit_status
    assert (status.limit, status.remaining) == (10000, 9655)
    assert abs(status.reset_at - (time.time() + 39959)) < 60


def test_source_topic_concept_institution(oa):
    nature = oa.get_source("S137773608")
    assert nature.display_name == "Nature" and nature.issn_l == "0028-0836"
    assert nature.two_year_mean_citedness == pytest.approx(16.2611434684417) and nature.h_index == 1782
    topic = oa.get_topic("T11636")
    assert (topic.subfield_id, topic.field_name, topic.domain_id) == ("2718", "Medicine", "4")
    concept = oa.get_concept("C71924100")
    assert concept.display_name == "Medicine" and concept.level == 0
    inst = oa.get_institution("I27837315")
    assert inst.country_code == "US" and inst.display_name == "University of Michigan"


def test_bad_filter_and_bad_select_are_clear_errors(oa, one_line):
    with pytest.raises(BadRequestError) as err:
        list(oa.iter_works("DOESNTEXIST:1"))
    msg = one_line(err.value)
    assert msg.startswith("OpenAlex rejected the request (HTTP 400: Invalid query parameters error.: DOESNTEXIST is "
                          "not a valid field.")
    assert len(msg) < 500
    with pytest.raises(BadRequestError) as err:
        oa.get_work("W1775749144", select="DOESNTEXIST")
    assert "DOESNTEXIST is not a valid select field" in one_line(err.value)


def test_401_names_the_variable_to_set(oa, one_line):
    with pytest.raises(AuthError) as err:
        oa.transport.request("GET", "/rate-limit")
    msg = one_line(err.value)
    assert "HTTP 401: Invalid or missing API key: API key not found" in msg and "OPENALEX_API_KEY" in msg


@pytest.mark.parametrize("bad", ["foo", "12345", "S137773608", "https://openalex.org/", ""])
def test_bad_work_ids_fail_before_any_request(oa, bad, one_line):
    with pytest.raises(InvalidIdentifierError) as err:
        oa.get_works(["W2741809807", bad])
    assert "not an OpenAlex work id" in one_line(err.value)
    assert oa.stats.sent == 0


def test_unknown_work_is_not_found(oa, one_line):
    with pytest.raises(NotFoundError) as err:
        oa.get_work("W1")
    assert one_line(err.value) == "OpenAlex has no work W1"


def test_subfield_candidates_back_fill_from_the_subfield(tmp_path):
    def work(k: int, cites: int) -> dict:
        return {"id": f"https://openalex.org/W{k}", "publication_year": 2020, "cited_by_count": cites,
                "referenced_works": []}

    base = "https://api.openalex.org/works?filter=primary_topic.subfield.id:1804,type:article"
    folder = write_recordings(tmp_path / "rec", [
        ("GET", f"{base}&search=taste&sort=cited_by_count:desc&per-page=3&cursor=*", 200,
         {"meta": {"count": 2, "next_cursor": "x"}, "results": [work(1, 90), work(2, 50)]}),
        ("GET", f"{base}&sort=cited_by_count:desc&per-page=5&cursor=*", 200,
         {"meta": {"count": 4, "next_cursor": "y"}, "results": [work(3, 99), work(1, 90), work(4, 70), work(2, 50)]}),
    ])
    with ServerProcess([folder]) as server:
        oa = OpenAlexClient(base_url=server.url + "/openalex")
        picked = oa.subfield_candidates("https://openalex.org/subfields/1804", "taste", 3)
        assert [w.id for w in picked] == ["W1", "W2", "W3"]
        assert oa.stats.sent == 2
        with pytest.raises(InvalidIdentifierError):
            oa.subfield_candidates("physics", "taste", 3)


def test_snowball_fetches_works_references_and_citers_once_each(faults):
    graph = SyntheticWorks(5)
    oa = OpenAlexClient(base_url=faults.url + "/openalex", rate_limit=(1000, 1.0), page_size=50)
    snow = oa.snowball([f"W{k}" for k in range(1, 6)], select=["id", "referenced_works", "publication_date"])
    refs = {r for k in range(1, 6) for r in graph.references[k]}
    citers = {c for k in range(1, 6) for c in graph.citers[k]}
    assert [w.id for w in snow.works] == [f"W{k}" for k in range(1, 6)]
    assert {w.id for w in snow.references} == {f"W{r}" for r in refs}
    assert {w.id for w in snow.citers} == {f"W{c}" for c in citers}
    # One metadata request, then every page of the two OR-ed listings and nothing more.
    assert oa.stats.sent == 1 + -(-len(refs) // 50) + -(-len(citers) // 50)
    for citer in snow.citers:
        assert {int(r[1:]) for r in citer.referenced_works} & set(range(1, 6))


def test_a_focal_work_cited_by_another_is_a_reference_without_being_fetched_again(faults):
    graph = SyntheticWorks(5)
    citer = graph.citers[1][0]
    oa = OpenAlexClient(base_url=faults.url + "/openalex", rate_limit=(1000, 1.0))
    snow = oa.snowball(["W1", f"W{citer}"], select=["id", "referenced_works"])
    cited = {*graph.references[1], *(int(r.rsplit("/W", 1)[1]) for r in graph.record(citer)["referenced_works"])}
    assert {w.id for w in snow.references} == {f"W{r}" for r in cited}
    assert next(w for w in snow.references if w.id == "W1") is snow.works[0]
    # The only id fetch is the two focal works' metadata: W1 itself is never asked for by id again.
    ids_asked = [parse_qs(r["query"])["filter"][0] for r in faults.requests_log()["requests"]]
    assert sum(f.startswith("openalex:") and "W1" in f.split(":")[1].split("|") for f in ids_asked) == 1
