"""Helpers for the index tests: small populations from plain rows, and the recorded OpenAlex snowball."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from scitaste_hf.index import Population

FIXTURES = Path(__file__).resolve().parents[2] / "scitaste_hf" / "data" / "recorded" / "openalex"


def make_population(papers: list[dict], citations: list[tuple[str, str]] = (), works: list[dict] = ()) -> Population:
    """A population from rows; missing optional columns stay null."""
    edges = pa.table({"citing": [c for c, _ in citations], "cited": [d for _, d in citations]},
                     schema=pa.schema([("citing", pa.string()), ("cited", pa.string())]))
    works_table = pa.Table.from_pylist(list(works)) if works else None
    return Population.from_arrow(pa.Table.from_pylist(papers), edges, works_table)


def _results(name: str) -> list[dict]:
    return json.loads((FIXTURES / name).read_text("utf-8"))["response"]["body"]["results"]


def _short(openalex_id: str) -> str:
    return openalex_id.rsplit("/", 1)[-1]


@pytest.fixture(scope="session")
def snowball() -> Population:
    """The recorded OpenAlex snowball around W3046863325 and W3045921891: the two papers, their 5 citers and
    38 references, and every citation edge those works list."""
    papers = _results("oa_snowball_1.json")
    others = {w["id"]: w for w in _results("oa_snowball_3.json") + _results("oa_snowball_5.json")}
    for w in papers:
        others.pop(w["id"], None)

    def row(w: dict) -> dict:
        topic = w.get("primary_topic") or {}
        return {"id": _short(w["id"]), "date": w["publication_date"], "text": w["title"],
                "field": (topic.get("field") or {}).get("display_name"),
                "journal": ((w.get("primary_location") or {}).get("source") or {}).get("issn_l")}

    paper_rows = [
        {**row(w), "citation_count": w["cited_by_count"], "author_count": len(w["authorships"]),
         "countries": [c for a in w["authorships"] for c in a["countries"]],
         "topics": [{"field": t["field"]["display_name"], "subfield": t["subfield"]["display_name"],
                     "score": t["score"]} for t in w["topics"]],
         "concept_scores": [c["score"] for c in w["concepts"]]}
        for w in papers
    ]
    edges = [(_short(w["id"]), _short(r)) for w in papers + list(others.values()) for r in w["referenced_works"]]
    return make_population(paper_rows, edges, [row(w) for w in others.values()])


@pytest.fixture(scope="session")
def build():
    """:func:`make_population`, as a fixture (the tests folder is not a package)."""
    return make_population
