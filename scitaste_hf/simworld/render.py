"""The simulated world in the services' own response shapes: OpenAlex work/source/topic/concept/institution
objects, NASA ADS documents, arXiv Atom entries (compare with the recorded real responses in tests/fixtures).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from xml.sax.saxutils import escape

from scitaste_hf.simworld.params import OPENALEX
from scitaste_hf.simworld.world import World

_CROSSREF_TYPES = {"article": "journal-article", "preprint": "posted-content",
                   "proceedings-article": "proceedings-article", "book-chapter": "book-chapter"}
ADS_DOCTYPES = {"article": "article", "preprint": "eprint", "proceedings-article": "inproceedings",
                 "book-chapter": "inbook"}
#: OpenAlex subfields used by the taxonomy: display name, field (id, name) and domain (id, name).
SUBFIELDS: dict[int, tuple[str, int, str, int, str]] = {
    1105: ("Ecology, Evolution, Behavior and Systematics", 11, "Agricultural and Biological Sciences", 1,
           "Life Sciences"),
    1110: ("Plant Science", 11, "Agricultural and Biological Sciences", 1, "Life Sciences"),
    1303: ("Biochemistry", 13, "Biochemistry, Genetics and Molecular Biology", 1, "Life Sciences"),
    1307: ("Cell Biology", 13, "Biochemistry, Genetics and Molecular Biology", 1, "Life Sciences"),
    1311: ("Genetics", 13, "Biochemistry, Genetics and Molecular Biology", 1, "Life Sciences"),
    1312: ("Molecular Biology", 13, "Biochemistry, Genetics and Molecular Biology", 1, "Life Sciences"),
    1402: ("Accounting", 14, "Business, Management and Accounting", 2, "Social Sciences"),
    1503: ("Catalysis", 15, "Chemical Engineering", 3, "Physical Sciences"),
    1602: ("Analytical Chemistry", 16, "Chemistry", 3, "Physical Sciences"),
    1603: ("Electrochemistry", 16, "Chemistry", 3, "Physical Sciences"),
    1604: ("Inorganic Chemistry", 16, "Chemistry", 3, "Physical Sciences"),
    1605: ("Organic Chemistry", 16, "Chemistry", 3, "Physical Sciences"),
    1606: ("Physical and Theoretical Chemistry", 16, "Chemistry", 3, "Physical Sciences"),
    1607: ("Spectroscopy", 16, "Chemistry", 3, "Physical Sciences"),
    1702: ("Artificial Intelligence", 17, "Computer Science", 3, "Physical Sciences"),
    1703: ("Computational Theory and Mathematics", 17, "Computer Science", 3, "Physical Sciences"),
    1705: ("Computer Networks and Communications", 17, "Computer Science", 3, "Physical Sciences"),
    1707: ("Computer Vision and Pattern Recognition", 17, "Computer Science", 3, "Physical Sciences"),
    1708: ("Hardware and Architecture", 17, "Computer Science", 3, "Physical Sciences"),
    1709: ("Human-Computer Interaction", 17, "Computer Science", 3, "Physical Sciences"),
    1710: ("Information Systems", 17, "Computer Science", 3, "Physical Sciences"),
    1712: ("Software", 17, "Computer Science", 3, "Physical Sciences"),
    1902: ("Atmospheric Science", 19, "Earth and Planetary Sciences", 3, "Physical Sciences"),
    1904: ("Earth-Surface Processes", 19, "Earth and Planetary Sciences", 3, "Physical Sciences"),
    1906: ("Geochemistry and Petrology", 19, "Earth and Planetary Sciences", 3, "Physical Sciences"),
    1907: ("Geology", 19, "Earth and Planetary Sciences", 3, "Physical Sciences"),
    1908: ("Geophysics", 19, "Earth and Planetary Sciences", 3, "Physical Sciences"),
    1910: ("Oceanography", 19, "Earth and Planetary Sciences", 3, "Physical Sciences"),
    1911: ("Paleontology", 19, "Earth and Planetary Sciences", 3, "Physical Sciences"),
    1912: ("Space and Planetary Science", 19, "Earth and Planetary Sciences", 3, "Physical Sciences"),
    2002: ("Economics and Econometrics", 20, "Economics, Econometrics and Finance", 2, "Social Sciences"),
    2003: ("Finance", 20, "Economics, Econometrics and Finance", 2, "Social Sciences"),
    2404: ("Microbiology", 24, "Immunology and Microbiology", 1, "Life Sciences"),
    2501: ("General Materials Science", 25, "Materials Science", 3, "Physical Sciences"),
    2502: ("Biomaterials", 25, "Materials Science", 3, "Physical Sciences"),
    2503: ("Ceramics and Composites", 25, "Materials Science", 3, "Physical Sciences"),
    2504: ("Electronic, Optical and Magnetic Materials", 25, "Materials Science", 3, "Physical Sciences"),
    2505: ("Materials Chemistry", 25, "Materials Science", 3, "Physical Sciences"),
    2506: ("Metals and Alloys", 25, "Materials Science", 3, "Physical Sciences"),
    2507: ("Polymers and Plastics", 25, "Materials Science", 3, "Physical Sciences"),
    2508: ("Surfaces, Coatings and Films", 25, "Materials Science", 3, "Physical Sciences"),
    2602: ("Algebra and Number Theory", 26, "Mathematics", 3, "Physical Sciences"),
    2603: ("Analysis", 26, "Mathematics", 3, "Physical Sciences"),
    2604: ("Applied Mathematics", 26, "Mathematics", 3, "Physical Sciences"),
    2605: ("Computational Mathematics", 26, "Mathematics", 3, "Physical Sciences"),
    2606: ("Control and Optimization", 26, "Mathematics", 3, "Physical Sciences"),
    2607: ("Discrete Mathematics and Combinatorics", 26, "Mathematics", 3, "Physical Sciences"),
    2608: ("Geometry and Topology", 26, "Mathematics", 3, "Physical Sciences"),
    2613: ("Statistics and Probability", 26, "Mathematics", 3, "Physical Sciences"),
    2705: ("Cardiology and Cardiovascular Medicine", 27, "Medicine", 4, "Health Sciences"),
    2712: ("Endocrinology, Diabetes and Metabolism", 27, "Medicine", 4, "Health Sciences"),
    2725: ("Infectious Diseases", 27, "Medicine", 4, "Health Sciences"),
    2728: ("Neurology", 27, "Medicine", 4, "Health Sciences"),
    2730: ("Oncology", 27, "Medicine", 4, "Health Sciences"),
    2738: ("Psychiatry and Mental health", 27, "Medicine", 4, "Health Sciences"),
    2739: ("Public Health, Environmental and Occupational Health", 27, "Medicine", 4, "Health Sciences"),
    2804: ("Cellular and Molecular Neuroscience", 28, "Neuroscience", 1, "Life Sciences"),
    3102: ("Acoustics and Ultrasonics", 31, "Physics and Astronomy", 3, "Physical Sciences"),
    3103: ("Astronomy and Astrophysics", 31, "Physics and Astronomy", 3, "Physical Sciences"),
    3104: ("Condensed Matter Physics", 31, "Physics and Astronomy", 3, "Physical Sciences"),
    3105: ("Instrumentation", 31, "Physics and Astronomy", 3, "Physical Sciences"),
    3106: ("Nuclear and High Energy Physics", 31, "Physics and Astronomy", 3, "Physical Sciences"),
    3107: ("Atomic and Molecular Physics, and Optics", 31, "Physics and Astronomy", 3, "Physical Sciences"),
    3109: ("Statistical and Nonlinear Physics", 31, "Physics and Astronomy", 3, "Physical Sciences"),
    3303: ("Development", 33, "Social Sciences", 2, "Social Sciences"),
    3304: ("Education", 33, "Social Sciences", 2, "Social Sciences"),
    3308: ("Law", 33, "Social Sciences", 2, "Social Sciences"),
    3310: ("Linguistics and Language", 33, "Social Sciences", 2, "Social Sciences"),
    3312: ("Sociology and Political Science", 33, "Social Sciences", 2, "Social Sciences"),
    3315: ("Communication", 33, "Social Sciences", 2, "Social Sciences"),
    3317: ("Demography", 33, "Social Sciences", 2, "Social Sciences"),
    3320: ("Political Science and International Relations", 33, "Social Sciences", 2, "Social Sciences"),
}


def journal_table_csv(world: World) -> str:
    """The world's journals as a journal table (``issn,name,impact_factor,jcr_quartile,cas_zone``), the format
    ``scitaste build --journal-table`` reads: the synthetic stand-in for a licensed JCR/CAS table, which the
    services' own responses do not carry."""
    lines = ["issn,name,impact_factor,jcr_quartile,cas_zone"]
    for j in world.journals:
        fields = (j.issn, f'"{j.name}"', "" if j.impact_factor is None else f"{j.impact_factor:g}",
                  j.jcr_quartile or "", "" if j.cas_zone is None else str(j.cas_zone))
        lines.append(",".join(fields))
    return "\n".join(lines) + "\n"


def inverted_index(text: str) -> dict[str, list[int]]:
    """OpenAlex's ``abstract_inverted_index``: each word with the positions where it occurs."""
    index: dict[str, list[int]] = {}
    for position, word in enumerate(text.split()):
        positions = index.get(word)
        if positions is None:
            index[word] = [position]
        else:
            positions.append(position)
    return index


def openalex_topic(world: World, k: int, score: float | None = None) -> dict:
    """An OpenAlex topic object (with ``score`` when it is a work's topic)."""
    topic_id, name, cell = world.topic_table[k]
    sub = world.taxonomy.cells[cell].openalex_subfield
    sub_name, field_id, field_name, domain_id, domain_name = SUBFIELDS[sub]
    out = {"id": OPENALEX + topic_id, "display_name": name}
    if score is not None:
        out["score"] = score
    out.update({"subfield": {"id": f"{OPENALEX}subfields/{sub}", "display_name": sub_name},
                "field": {"id": f"{OPENALEX}fields/{field_id}", "display_name": field_name},
                "domain": {"id": f"{OPENALEX}domains/{domain_id}", "display_name": domain_name}})
    return out


def openalex_source(world: World, j: int) -> dict:
    """An OpenAlex source (journal) object with ``summary_stats``."""
    journal = world.journals[j]
    return {"id": OPENALEX + journal.id, "display_name": journal.name, "issn_l": journal.issn, "issn": [journal.issn],
            "type": "journal", "is_oa": False, "is_in_doaj": False, "host_organization": None,
            "summary_stats": {"2yr_mean_citedness": journal.mean_citedness, "h_index": None, "i10_index": None}}


def openalex_institution(world: World, k: int) -> dict:
    """An OpenAlex institution object."""
    name, country = world.institutions[k]
    return {"id": f"{OPENALEX}I9{k:08d}", "display_name": name, "country_code": country, "type": "education"}


def openalex_concept(world: World, k: int, score: float | None = None) -> dict:
    """An OpenAlex concept object (with ``score`` when it is a work's concept)."""
    concept_id, name = world.concept_table[k]
    out = {"id": OPENALEX + concept_id, "wikidata": None, "display_name": name, "level": 2}
    if score is not None:
        out["score"] = score
    return out


#: The top-level fields of an OpenAlex work object, in OpenAlex's order (what ``select=`` may name).
WORK_FIELDS = ("id", "doi", "title", "display_name", "publication_year", "publication_date", "ids", "language",
               "primary_location", "type", "type_crossref", "authorships", "countries_distinct_count",
               "institutions_distinct_count", "cited_by_count", "is_retracted", "is_paratext", "primary_topic",
               "topics", "keywords", "concepts", "referenced_works_count", "referenced_works", "related_works",
               "abstract_inverted_index", "cited_by_api_url", "counts_by_year", "updated_date", "created_date")
_AUTHORSHIP_FIELDS = frozenset({"authorships", "countries_distinct_count", "institutions_distinct_count"})


def openalex_work(world: World, i: int, fields: Collection[str] | None = None) -> dict:
    """The OpenAlex work object of work ``i``, with all its fields (:data:`WORK_FIELDS`, in that order) or only
    ``fields``: the parts that no asked field needs (authorships, the abstract's inverted index, topics, concepts,
    citers' years) are not computed, which is most of a work's cost when a listing selects a few fields."""
    # A mirror build renders some 10^4 works: the loops below read plain Python lists (tolist) rather than numpy
    # scalars one at a time, and count the citers' years from the world's year array.
    want = frozenset(WORK_FIELDS if fields is None else fields)
    wid = world.work_id(i)
    doi = f"https://doi.org/{world.doi(i)}"
    published = world.pub_date(i)
    source = openalex_source(world, int(world.journal[i]))
    del source["summary_stats"]
    work = {
        "id": OPENALEX + wid, "doi": doi, "title": world.titles[i], "display_name": world.titles[i],
        "publication_year": published.year, "publication_date": published.isoformat(),
        "ids": {"openalex": OPENALEX + wid, "doi": doi}, "language": "en",
        "primary_location": {"is_oa": False, "landing_page_url": doi, "pdf_url": None, "source": source,
                             "license": None, "version": "publishedVersion", "is_accepted": True,
                             "is_published": True},
        "type": world.work_type(i), "type_crossref": _CROSSREF_TYPES[world.work_type(i)],
        "is_retracted": False, "is_paratext": False, "keywords": [], "related_works": [],
        "cited_by_api_url": f"https://api.openalex.org/works?filter=cites:{wid}",
        "updated_date": "2025-12-31T00:00:00", "created_date": published.isoformat(),
    }
    if want & _AUTHORSHIP_FIELDS:
        work.update(_authorships(world, i))
    if want & {"cited_by_count", "counts_by_year"}:
        citers = world.citers(i)
        counts = Counter(world.year[citers].tolist())
        work["cited_by_count"] = int(citers.shape[0])
        work["counts_by_year"] = [{"year": y, "cited_by_count": n} for y, n in sorted(counts.items(), reverse=True)]
    if "topics" in want:
        work["topics"] = [openalex_topic(world, k, s) for k, s in world.topics[i]]
        work["primary_topic"] = work["topics"][0]
    elif "primary_topic" in want:  # the snowball's listings: the first topic alone
        work["primary_topic"] = openalex_topic(world, *world.topics[i][0])
    if "concepts" in want:
        work["concepts"] = [openalex_concept(world, k, s) for k, s in world.concepts[i]]
    if want & {"referenced_works", "referenced_works_count"}:
        references = world.references(i).tolist()
        work["referenced_works_count"] = len(references)
        work["referenced_works"] = [OPENALEX + world.work_id(r) for r in references]
    if "abstract_inverted_index" in want:
        work["abstract_inverted_index"] = inverted_index(world.abstracts[i])
    return {k: work[k] for k in WORK_FIELDS if k in want}


def _authorships(world: World, i: int) -> dict:
    """A work's ``authorships`` and its distinct countries' and institutions' counts."""
    first, last = int(world.author_ptr[i]), int(world.author_ptr[i + 1])
    authorships, countries, institutions = [], set(), set()
    author_idx = world.author_idx[first:last].tolist()
    for position, (author, inst) in enumerate(zip(author_idx, world.author_inst[first:last].tolist())):
        institution = openalex_institution(world, inst)
        countries.add(institution["country_code"])
        institutions.add(inst)
        role = "first" if position == 0 else "last" if position == len(author_idx) - 1 else "middle"
        name = world.authors[author]
        authorships.append({"author_position": role, "author": {"id": f"{OPENALEX}A9{author:08d}",
                                                                "display_name": name, "orcid": None},
                            "institutions": [institution], "countries": [institution["country_code"]],
                            "is_corresponding": position == 0, "raw_author_name": name})
    return {"authorships": authorships, "countries_distinct_count": len(countries),
            "institutions_distinct_count": len(institutions)}


def ads_doc(world: World, i: int) -> dict:
    """The NASA ADS document of work ``i``, one of an ADS-route discipline (all fields; the server keeps those in
    ``fl``)."""
    published = world.pub_date(i)
    journal = world.journals[int(world.journal[i])]
    first, last = int(world.author_ptr[i]), int(world.author_ptr[i + 1])
    doc = {
        "bibcode": world.bibcode[i], "title": [world.titles[i]], "abstract": world.abstracts[i],
        "year": str(published.year), "pubdate": f"{published.year}-{published.month:02d}-00",
        "pub": journal.name, "bibstem": [journal.bibstem], "doi": [world.doi(i)],
        "doctype": ADS_DOCTYPES[world.work_type(i)],
        "author": [world.authors[int(world.author_idx[k])] for k in range(first, last)],
        "aff": [world.institutions[int(world.author_inst[k])][0] for k in range(first, last)],
        "citation_count": int(world.citers(i).shape[0]),
        "reference": [world.bibcode[int(r)] for r in world.references(i) if int(r) in world.bibcode],
        "citation": [world.bibcode[int(c)] for c in world.citers(i) if int(c) in world.bibcode],
        "identifier": [world.bibcode[i], world.doi(i)], "collection": list(world.ads_collections(i)),
    }
    if i in world.arxiv_id:
        doc["identifier"].append(f"arXiv:{world.arxiv_id[i]}")
        doc["arxiv_class"] = [world.arxiv_class[i]]
    return doc


def arxiv_entry(world: World, i: int) -> str:
    """The Atom ``<entry>`` of the arXiv e-print of work ``i``, one of an ADS-route discipline."""
    arxiv = world.arxiv_id[i]
    stamp = f"{world.pub_date(i).isoformat()}T12:00:00Z"
    first, last = int(world.author_ptr[i]), int(world.author_ptr[i + 1])
    authors = "".join(f"\n    <author>\n      <name>{escape(world.authors[int(world.author_idx[k])])}</name>\n"
                      "    </author>" for k in range(first, last))
    return (f"  <entry>\n    <id>http://arxiv.org/abs/{arxiv}v1</id>\n    <title>{escape(world.titles[i])}</title>\n"
            f"    <updated>{stamp}</updated>\n"
            f'    <link href="https://arxiv.org/abs/{arxiv}v1" rel="alternate" type="text/html"/>\n'
            f"    <summary>{escape(world.abstracts[i])}</summary>\n"
            f'    <category term="{world.arxiv_class[i]}" scheme="http://arxiv.org/schemas/atom"/>\n'
            f"    <published>{stamp}</published>\n    <arxiv:doi>{world.doi(i)}</arxiv:doi>\n"
            f'    <arxiv:primary_category term="{world.arxiv_class[i]}"/>{authors}\n  </entry>\n')
