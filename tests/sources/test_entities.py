"""Every recorded response parses into typed records (or, for the error bodies, into a one-line detail)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from scitaste_hf.sources.ads import parse_doc
from scitaste_hf.sources.arxiv import parse_feed
from scitaste_hf.sources.entities import ADSRecord, ArxivEntry, Concept, Institution, Source, Topic, Work
from scitaste_hf.sources.errors import BadRequestError
from scitaste_hf.sources.openalex import (
    parse_concept,
    parse_institution,
    parse_source,
    parse_topic,
    parse_work,
)
from scitaste_hf.sources.transport import error_detail

RECORDED = Path(__file__).resolve().parents[2] / "scitaste_hf" / "data" / "recorded"
TEST_RECORDED = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"
FILES = sorted([*RECORDED.rglob("*.json"), *TEST_RECORDED.rglob("*.json")])
ENTITY_PARSERS = {"works": (parse_work, Work), "sources": (parse_source, Source), "topics": (parse_topic, Topic),
                  "concepts": (parse_concept, Concept), "institutions": (parse_institution, Institution)}


def test_all_fixtures_are_here():
    assert len(FILES) == 44
    assert {p.parent.name for p in FILES} == {"openalex", "ads", "arxiv"}


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_recorded_response_parses(path):
    entry = json.loads(path.read_text())
    status, body = entry["response"]["status"], entry["response"]["body"]
    service, url = path.parent.name, urlsplit(entry["request"]["url"])
    if status != 200:
        detail = error_detail(body if isinstance(body, str) else json.dumps(body))
        assert detail and "\n" not in detail and len(detail) <= 300
        assert any(word in detail for word in ("DOESNTEXIST", "API key", "incorrect id format"))
        return
    if service == "openalex":
        if "results" in body:
            works = [parse_work(item) for item in body["results"]]
            assert len(works) == len(body["results"]) and all(isinstance(w, Work) for w in works)
            assert all(w.id.startswith("W") for w in works)
            # select=ids keeps only identifiers; every other listing carries the year.
            assert all(w.publication_year for w in works) or "select=ids" in url.query
            assert {len(w.referenced_works) for w in works if w.referenced_works_count} != {0}
        else:
            parser, kind = ENTITY_PARSERS[url.path.split("/")[1]]
            record = parser(body)
            assert isinstance(record, kind) and record.id == url.path.rsplit("/", 1)[-1]
    elif service == "ads":
        docs = [parse_doc(d) for d in body["response"]["docs"]]
        assert len(docs) == body["response"]["numFound"] and all(isinstance(d, ADSRecord) for d in docs)
    else:
        feed = parse_feed(ET.fromstring(body))
        assert len(feed.entries) == min(feed.total_results - feed.start_index, feed.items_per_page)
        assert all(isinstance(e, ArxivEntry) and e.primary_category and e.title for e in feed.entries)


def test_arxiv_error_feed_sent_with_200_is_a_bad_request():
    body = json.loads((RECORDED / "arxiv" / "id_abc_s0_m100_b79c8dcf6bc3.json").read_text())["response"]["body"]
    with pytest.raises(BadRequestError, match="incorrect id format for abc"):
        parse_feed(ET.fromstring(body))
