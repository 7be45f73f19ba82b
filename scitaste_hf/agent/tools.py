"""The nine bibliometric tools of the DimAgent-v3 agent.

Each tool takes one ``bibcode`` and returns raw evidence as JSON: never a dimension score and nothing derived
from the gold labels. The papers of a discipline of the ADS route (the taxonomy's ``route``; physics in the
packaged ones) are answered from NASA ADS where ADS is authoritative (metadata, citations, references, authors),
the others from OpenAlex through the paper's OpenAlex work id, as the paper routes them; topics, journals and
neighbours come from OpenAlex for every paper (an ADS paper is found there by DOI).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from scitaste_hf.errors import ScitasteError, first_line
from scitaste_hf.sources.errors import InvalidIdentifierError, NotFoundError, SourceError
from scitaste_hf.taxonomy import ADS_ROUTE, Taxonomy, load_taxonomy

#: How many items a list in the evidence keeps (the model's context is finite; counts are always complete).
MAX_ITEMS = 60
NEIGHBOURS = 10
#: ADS fields the tools read.
ADS_FIELDS = ("bibcode", "title", "year", "pub", "bibstem", "doi", "doctype", "author", "aff", "citation_count",
              "citation", "reference", "identifier")


@dataclass(frozen=True)
class PaperRef:
    """How the tools find a paper: its bibcode, discipline, and ids in the services."""

    bibcode: str
    discipline: str
    openalex_id: str | None = None
    doi: str | None = None


def _param(description: str) -> dict[str, Any]:
    return {"type": "object", "properties": {"bibcode": {"type": "string", "description": description}},
            "required": ["bibcode"], "additionalProperties": False}


_BIBCODE = "The paper's identifier exactly as given in the prompt (Identifier: ...)."
#: name -> what the tool returns, for the model (OpenAI function-calling descriptions).
DESCRIPTIONS: dict[str, str] = {
    "paper_metadata": "Title, year, venue, DOI, document type and number of authors of the paper.",
    "citation_history": "Total citations and citations per year since publication (raw counts).",
    "citation_baseline": "Citation counts of papers of the same field and year: count, mean, quartiles, 90th "
                         "percentile, and where this paper's total falls among them (a percentile).",
    "references": "The works the paper cites, each with year, venue and field, plus counts of distinct venues and "
                  "fields and the span of reference years.",
    "citing_works": "The works citing the paper, each with its year and whether it also cites any of the paper's "
                    "references (citers that do not are disruptive citations).",
    "concepts_topics": "OpenAlex topics (with subfield, field and score) and concepts (with score) of the paper.",
    "authorship": "Authors with their institutions and countries; counts of authors, institutions and countries.",
    "journal_profile": "The journal: name, ISSN, two-year mean citedness, works and citation counts, h-index.",
    "semantic_neighbours": "The most similar papers of the same field and period by text embedding: titles, years "
                           "and cosine similarities.",
}
#: The OpenAI function-calling schema of every tool.
TOOL_SCHEMAS: list[dict[str, Any]] = [
    {"type": "function", "function": {"name": name, "description": text, "parameters": _param(_BIBCODE)}}
    for name, text in DESCRIPTIONS.items()
]
TOOL_NAMES = tuple(DESCRIPTIONS)


def _quantiles(values: list[int]) -> dict[str, float | int]:
    if not values:
        return {"count": 0}
    arr = np.array(values, dtype=float)
    q = np.percentile(arr, [25, 50, 75, 90])
    return {"count": len(values), "mean": round(float(arr.mean()), 2), "p25": float(q[0]), "median": float(q[1]),
            "p75": float(q[2]), "p90": float(q[3])}


#: Why a tool has nothing on a paper whose evidence is withheld
#: (:meth:`scitaste_hf.agent.evidence.FrozenToolBox.withholding`): the words of a live tool whose service has no
#: data on the paper, so that the model cannot tell the two apart.
NO_DATA = "the service has no data for this paper"


def unavailable(name: str, reason: str) -> dict[str, str]:
    """A tool's answer when it has no evidence to give: ``{"error": "NAME failed: REASON"}``, as a live tool reports
    a failed or empty lookup, and as the offline baseline reads a missing result."""
    return {"error": f"{name} failed: {reason}"}


def requested_bibcode(name: str, arguments: Mapping[str, Any] | str, known) -> str | dict[str, str]:
    """The bibcode of a tool call, or the ``{"error": ...}`` the model gets back for an unknown tool, arguments
    that are not a JSON object, or a paper not in ``known``."""
    if name not in TOOL_NAMES:
        return {"error": f"unknown tool {name!r}; the tools are {', '.join(TOOL_NAMES)}"}
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments or "{}")
        except (ValueError, RecursionError):  # nor is nesting past the decoder's limit, or an integer too long
            arguments = None
    if not isinstance(arguments, Mapping):
        return {"error": "arguments must be a JSON object like {\"bibcode\": \"...\"}"}
    bibcode = arguments.get("bibcode")
    if not isinstance(bibcode, str) or bibcode not in known:
        return {"error": f"unknown bibcode {bibcode!r}: use the Identifier given in the prompt"}
    return bibcode


class ToolBox:
    """The nine tools over live clients (or the mirror).

    Parameters
    ----------
    openalex : OpenAlexClient
    ads : ADSClient or None
        Asked about the papers of the taxonomy's ADS-route disciplines (physics, in the packaged one); without it,
        those are answered from OpenAlex too.
    papers : mapping of bibcode to PaperRef
        The papers the tools may be asked about.
    embedder : object with ``embed(texts) -> ndarray``, optional
        For ``semantic_neighbours``; default the offline WordLlama embedder.
    strict : bool
        Raise a failure of the service itself (unreachable, refused credentials, spent budget, offline cache miss,
        rejected request) instead of returning it as the tool's error. Freezing needs this: an outage is not
        evidence about a paper, while "the service has no such record" is.
    taxonomy : Taxonomy, optional
        Whose disciplines of the ADS route ADS answers for; default the packaged taxonomy.
    """

    def __init__(self, openalex, ads, papers: Mapping[str, PaperRef], embedder=None, *, strict: bool = False,
                 taxonomy: Taxonomy | None = None) -> None:
        self.openalex, self.ads, self.papers = openalex, ads, dict(papers)
        self.from_ads = frozenset(d.name for d in (taxonomy or load_taxonomy()).by_route(ADS_ROUTE))
        self._embedder = embedder
        self.strict = strict
        self._works: dict[str, Any] = {}
        self._ads_records: dict[str, Any] = {}
        self.tools: dict[str, Callable[[PaperRef], dict[str, Any]]] = {
            name: getattr(self, name) for name in TOOL_NAMES}

    # -- routing ---------------------------------------------------------------------------------------

    def call(self, name: str, arguments: Mapping[str, Any] | str) -> dict[str, Any]:
        """Run tool ``name``; bad names or arguments come back as ``{"error": ...}`` for the model to read."""
        bibcode = requested_bibcode(name, arguments, self.papers)
        if isinstance(bibcode, dict):
            return bibcode
        try:
            return {"bibcode": bibcode, "tool": name, **self.tools[name](self.papers[bibcode])}
        except SourceError as exc:
            if self.strict and not isinstance(exc, NotFoundError | InvalidIdentifierError):
                raise
            return unavailable(name, first_line(exc))
        except ScitasteError as exc:
            return unavailable(name, first_line(exc))

    def _uses_ads(self, paper: PaperRef) -> bool:
        return self.ads is not None and paper.discipline in self.from_ads

    def _work(self, paper: PaperRef):
        """The paper's OpenAlex work (by id, else by DOI), fetched once."""
        if paper.bibcode not in self._works:
            if paper.openalex_id:
                work = self.openalex.get_work(paper.openalex_id)
            elif paper.doi:
                found = list(self.openalex.iter_works(f"doi:{paper.doi}", limit=1))
                if not found:
                    raise ScitasteError(f"OpenAlex has no work with DOI {paper.doi}")
                work = found[0]
            else:
                raise ScitasteError(f"{paper.bibcode} has neither an OpenAlex id nor a DOI")
            self._works[paper.bibcode] = work
        return self._works[paper.bibcode]

    def _ads(self, paper: PaperRef):
        """The paper's ADS record, fetched once."""
        if paper.bibcode not in self._ads_records:
            records = self.ads.get_records([paper.bibcode], fl=ADS_FIELDS)
            if not records:
                raise ScitasteError(f"ADS has no record {paper.bibcode}")
            self._ads_records[paper.bibcode] = records[0]
        return self._ads_records[paper.bibcode]

    # -- the nine tools --------------------------------------------------------------------------------

    def paper_metadata(self, paper: PaperRef) -> dict[str, Any]:
        """Title, year, venue, DOI, type, number of authors."""
        if self._uses_ads(paper):
            r = self._ads(paper)
            return {"source": "ads", "title": r.title, "year": r.year, "venue": r.pub, "bibstem": r.bibstem,
                    "doi": r.doi, "doctype": r.doctype, "n_authors": len(r.authors), "arxiv_id": r.arxiv_id}
        w = self._work(paper)
        return {"source": "openalex", "title": w.title, "year": w.publication_year,
                "publication_date": w.publication_date.isoformat() if w.publication_date else None,
                "venue": w.source_name, "doi": w.doi, "type": w.type, "n_authors": len(w.authorships)}

    def citation_history(self, paper: PaperRef) -> dict[str, Any]:
        """Total citations and per-year counts."""
        if self._uses_ads(paper):
            r = self._ads(paper)
            years = Counter(int(b[:4]) for b in r.citations if b[:4].isdigit())  # a bibcode starts with its year
            return {"source": "ads", "total": r.citation_count, "by_year": dict(sorted(years.items()))}
        w = self._work(paper)
        return {"source": "openalex", "total": w.cited_by_count, "by_year": dict(sorted(w.counts_by_year))}

    def citation_baseline(self, paper: PaperRef) -> dict[str, Any]:
        """Citation distribution of same-field, same-year articles (first 200 that the service lists)."""
        w = self._work(paper)
        if w.primary_topic is None or w.publication_year is None:
            return {"source": "openalex", "count": 0, "note": "the paper has no field or year in OpenAlex"}
        peers = self.openalex.iter_works(
            f"primary_topic.subfield.id:{w.primary_topic.subfield_id},publication_year:{w.publication_year},"
            "type:article", select=["id", "cited_by_count"], limit=200)
        counts = [p.cited_by_count or 0 for p in peers if p.id != w.id]
        own = w.cited_by_count or 0
        return {"source": "openalex", "field": w.primary_topic.subfield_name, "year": w.publication_year,
                **_quantiles(counts),
                "paper_citations": own,
                "paper_percentile": round(100 * sum(c < own for c in counts) / len(counts), 1) if counts else None}

    def references(self, paper: PaperRef) -> dict[str, Any]:
        """The cited works with year, venue and field."""
        if self._uses_ads(paper):
            refs = [{"id": r.bibcode, "year": r.year, "venue": r.bibstem} for r in self.ads.references(paper.bibcode)]
            fields: list[str] = []
        else:
            works = self.openalex.iter_references(
                self._work(paper).id, select=["id", "publication_year", "primary_location", "primary_topic"])
            refs = [{"id": r.id, "year": r.publication_year, "venue": r.source_name,
                     "field": r.primary_topic.field_name if r.primary_topic else None} for r in works]
            fields = [r["field"] for r in refs if r["field"]]
        years = [r["year"] for r in refs if r["year"]]
        return {"count": len(refs), "distinct_venues": len({r["venue"] for r in refs if r["venue"]}),
                "distinct_fields": len(set(fields)), "year_span": (max(years) - min(years)) if years else None,
                "items": refs[:MAX_ITEMS]}

    def citing_works(self, paper: PaperRef) -> dict[str, Any]:
        """Citers with their year and whether they also cite the paper's references."""
        if self._uses_ads(paper):
            own = set(self._ads(paper).references)
            citers = [{"id": r.bibcode, "year": r.year, "cites_references": bool(own & set(r.references))}
                      for r in self.ads.citations(paper.bibcode, fl=["bibcode", "year", "reference"])]
        else:
            w = self._work(paper)
            own = set(w.referenced_works)
            citers = [{"id": c.id, "year": c.publication_year,
                       "cites_references": bool(own & set(c.referenced_works))}
                      for c in self.openalex.iter_citing(w.id, select=["id", "publication_year", "referenced_works"])]
        also = sum(c["cites_references"] for c in citers)
        return {"count": len(citers), "also_cite_references": also, "cite_only_this_paper": len(citers) - also,
                "items": citers[:MAX_ITEMS]}

    def concepts_topics(self, paper: PaperRef) -> dict[str, Any]:
        """Topics and concepts with their scores."""
        w = self._work(paper)
        return {"topics": [{"name": t.display_name, "subfield": t.subfield_name, "field": t.field_name,
                            "score": t.score} for t in w.topics],
                "concepts": [{"name": c.display_name, "level": c.level, "score": c.score} for c in w.concepts]}

    def authorship(self, paper: PaperRef) -> dict[str, Any]:
        """Authors, institutions and countries."""
        if self._uses_ads(paper):
            r = self._ads(paper)
            return {"source": "ads", "n_authors": len(r.authors), "n_affiliations": len(set(r.affiliations)),
                    "authors": [{"name": a, "affiliation": f} for a, f in zip(r.authors, r.affiliations)][:MAX_ITEMS]}
        w = self._work(paper)
        institutions = {i for a in w.authorships for i in a.institution_ids}
        return {"source": "openalex", "n_authors": len(w.authorships), "n_institutions": len(institutions),
                "countries": list(w.countries),
                "authors": [{"name": a.display_name, "countries": list(a.countries)}
                            for a in w.authorships][:MAX_ITEMS]}

    def journal_profile(self, paper: PaperRef) -> dict[str, Any]:
        """The journal's indicators from OpenAlex."""
        w = self._work(paper)
        if not w.source_id:
            return {"journal": None, "note": "OpenAlex knows no journal for this paper"}
        s = self.openalex.get_source(w.source_id)
        return {"journal": s.display_name, "issn_l": s.issn_l, "type": s.type,
                "two_year_mean_citedness": s.two_year_mean_citedness, "works_count": s.works_count,
                "cited_by_count": s.cited_by_count, "h_index": s.h_index}

    def semantic_neighbours(self, paper: PaperRef) -> dict[str, Any]:
        """Nearest works of the same subfield within two years, by cosine similarity of text embeddings."""
        w = self._work(paper)
        if w.primary_topic is None or w.publication_year is None:
            return {"count": 0, "note": "the paper has no field or year in OpenAlex"}
        year = w.publication_year
        pool = [p for p in self.openalex.iter_works(
            f"primary_topic.subfield.id:{w.primary_topic.subfield_id},"
            f"publication_year:{year - 2}-{year + 2}", select=["id", "title", "publication_year"], limit=200)
            if p.id != w.id and p.title]
        if not pool:
            return {"count": 0, "items": []}
        if self._embedder is None:
            from scitaste_hf.index.embed import WordLlamaEmbedder

            self._embedder = WordLlamaEmbedder()
        vectors = np.asarray(self._embedder.embed([f"{w.title} {w.abstract or ''}", *(p.title for p in pool)]),
                             dtype=np.float64)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        similarity = vectors[1:] @ vectors[0]
        order = np.argsort(-similarity, kind="stable")[:NEIGHBOURS]
        return {"count": len(pool), "items": [{"title": pool[k].title, "year": pool[k].publication_year,
                                               "similarity": round(float(similarity[k]), 4)} for k in order]}
