"""A closed simulated world of any size, generated in order of publication so that it can be written as it goes.

:mod:`scitaste_hf.simworld` builds the world at benchmark size (a few thousand candidates among ~10^5 works,
whole in memory, its background works citing two to six others). The index at scale needs 10^4 to 10^6 works in
which every work is a paper with about twenty references, so this module draws the same kind of world (the
taxonomy's cells, the hidden traits of :mod:`scitaste_hf.simworld.latent`, journals per cell, real OpenAlex
subfields as topics, keyword titles and abstracts from :mod:`scitaste_hf.simworld.text`) with a generator that
keeps only integer arrays in memory:

* every work gets a date (output grows 4.5% a year from 1965 to 2024, :mod:`scitaste_hf.simworld.params`), a cell
  and its traits;
* works are visited in date order, in chunks; each cites earlier works, mostly of its own cell (the novelty
  trait sends a share to other disciplines), chosen with probability proportional to their attractiveness
  (the citation trait) within a look-back window, so that citations are heavy-tailed and recent;
* for each work it cites, it also cites one of that work's references with a probability that falls with the
  cited work's disruption trait (consolidating citations), so the CD index spreads over its range;
* the records themselves (authors, topics, concepts, text) are drawn per chunk from a generator seeded by the
  chunk, and discarded once written.

Memory is the graph (about 4 bytes per citation and 60 bytes per work: some 180 MB at 10^6 works and 2x10^7
citations), never the records. The world is closed: every reference is a work of the world, and a work's
``cited_by_count`` is the number of its citers in it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np
from scipy.special import ndtr, ndtri

from scitaste_hf.simworld import latent, text
from scitaste_hf.simworld.params import (
    ABROAD,
    EPOCH,
    FOREIGN_REFERENCES,
    FOREIGN_TOPICS,
    FOREIGN_WORDS,
    INSTITUTIONS,
    JOURNAL_IMPACT,
    JOURNAL_NOISE,
    JOURNALS_PER_CELL,
    LAST_YEAR,
    OPENALEX,
    TEAM,
    WORLD_FIRST_YEAR,
)
from scitaste_hf.simworld.render import SUBFIELDS, inverted_index
from scitaste_hf.taxonomy import Taxonomy, load_taxonomy

#: Yearly growth of the world's output.
GROWTH = 0.045
#: Works linked at a time: a chunk cites only earlier chunks, so chunks are small next to the world (1/256 of
#: it, 64 to 8192 works).
CHUNK_SHARE, CHUNK_RANGE = 256, (64, 8192)
#: log of a work's own choice of references = a + b * breadth trait; consolidating citations come on top
#: (about half as many again), for some 20 references a work.
REFERENCES, MAX_REFERENCES = (2.62, 0.6), 100
#: Chance that citing a work also cites one of its references = Phi(-b * disruption trait of the cited work).
CONSOLIDATING = 1.6
#: A reference is drawn among the works of the last (exponential, this mean) days, plus half a year.
LOOKBACK_DAYS, MIN_LOOKBACK_DAYS = 8 * 365.0, 182.0
#: log attractiveness of a work per unit of its citation trait.
FITNESS = 1.0
#: Authors of the world.
AUTHORS = 20_000
#: The date every record says it was last updated on is one of these (the snapshot's partitions).
UPDATED_DATES = ("2025-09-30", "2025-10-31", "2025-11-30", "2025-12-31")


@dataclass(frozen=True)
class SimJournal:
    """A journal of the world: what an OpenAlex source object says about it."""

    id: str
    name: str
    issn: str
    mean_citedness: float


@dataclass
class ScaleWorld:
    """The world's graph and what every work's record is drawn from; works are numbered in date order."""

    seed: int
    taxonomy: Taxonomy
    day: np.ndarray        # days since 1970-01-01, ascending
    cell: np.ndarray       # taxonomy cell of each work
    journal: np.ndarray    # index into journals
    traits: latent.Traits
    ref_ptr: np.ndarray    # CSR: references of work i are ref_idx[ref_ptr[i]:ref_ptr[i + 1]], ascending
    ref_idx: np.ndarray
    cited_by: np.ndarray   # number of citers of each work
    journals: list[SimJournal]
    institutions: list[tuple[str, str]]  # (name, country code)
    authors: list[str]

    @property
    def n_works(self) -> int:
        """Number of works."""
        return int(self.day.shape[0])

    @property
    def n_citations(self) -> int:
        """Number of citation links."""
        return int(self.ref_idx.shape[0])


def work_id(i: int) -> str:
    """The short OpenAlex-style id of work ``i`` (W8..., outside the range of real OpenAlex ids)."""
    return f"W8{i:09d}"


def _journals(tax: Taxonomy, rng: np.random.Generator) -> tuple[list[SimJournal], np.ndarray, np.ndarray]:
    """Journals of every cell, each cell's from the lowest impact up; returns them, each cell's first journal
    and each cell's number of journals."""
    journals: list[SimJournal] = []
    first, size = np.zeros(len(tax.cells), np.int64), np.zeros(len(tax.cells), np.int64)
    for c, cell in enumerate(tax.cells):
        names = [f"Journal {stem}" for stem in cell.bibstems] if tax.uses_ads(cell.discipline) else \
            [f"{cell.name} Letters {k + 1}" for k in range(JOURNALS_PER_CELL)]
        quantiles = (np.arange(len(names)) + rng.uniform(0.2, 0.8, len(names))) / len(names)
        impact = np.round(np.exp(JOURNAL_IMPACT[0] + JOURNAL_IMPACT[1] * ndtri(quantiles)), 3)
        first[c], size[c] = len(journals), len(names)
        for name, value in zip(names, impact):
            k = len(journals)
            journals.append(SimJournal(id=f"S8{k:08d}", name=f"{name} (synthetic)", issn=text.issn(8, k),
                                       mean_citedness=float(value)))
    return journals, first, size


def _dates(rng: np.random.Generator, n: int) -> np.ndarray:
    years = np.arange(WORLD_FIRST_YEAR, LAST_YEAR + 1)
    weight = np.exp(GROWTH * (years - WORLD_FIRST_YEAR))
    year = rng.choice(years, size=n, p=weight / weight.sum())
    start = np.array([(date(int(y), 1, 1) - EPOCH).days for y in years])
    return np.sort(start[year - WORLD_FIRST_YEAR] + rng.integers(0, 365, size=n)).astype(np.int32)


def _cells(tax: Taxonomy, rng: np.random.Generator, n: int) -> np.ndarray:
    """Each work's cell: the disciplines equally often, then the cells of each discipline equally often."""
    disciplines = list(dict.fromkeys(c.discipline for c in tax.cells))
    per = {d: sum(c.discipline == d for c in tax.cells) for d in disciplines}
    p = np.array([1.0 / (len(disciplines) * per[c.discipline]) for c in tax.cells])
    return rng.choice(len(tax.cells), size=n, p=p / p.sum()).astype(np.int16)


def _references(rng: np.random.Generator, day: np.ndarray, cell: np.ndarray, discipline: np.ndarray,
                traits: latent.Traits, progress) -> tuple[np.ndarray, np.ndarray]:
    """The citation graph, chunk by chunk in date order: references are earlier works (see the module doc)."""
    n, n_cells = day.shape[0], int(discipline.shape[0])
    order = np.argsort(cell, kind="stable")  # works by (cell, number)
    key = cell[order].astype(np.int64) * n + order
    mass = np.concatenate([[0.0], np.cumsum(np.exp(FITNESS * traits.citation[order]))])
    ptr = np.zeros(n + 1, dtype=np.int64)
    buf = np.empty(max(1024, 24 * n), dtype=np.int32)
    chunk = int(np.clip(n // CHUNK_SHARE, *CHUNK_RANGE))
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        idx = np.arange(s, e)
        wanted = np.clip(np.round(np.exp(REFERENCES[0] + REFERENCES[1] * traits.breadth[idx])), 1, MAX_REFERENCES)
        owner = np.repeat(idx, wanted.astype(np.int64))
        foreign = rng.random(owner.size) < ndtr(FOREIGN_REFERENCES[0] + FOREIGN_REFERENCES[1] * traits.novelty[owner])
        other = rng.integers(0, n_cells, size=owner.size)
        same = discipline[other] == discipline[cell[owner]]
        other[same] = (other[same] + n_cells // 2) % n_cells
        ref_cell = np.where(foreign, other, cell[owner]).astype(np.int64) * n
        lookback = MIN_LOOKBACK_DAYS + rng.exponential(LOOKBACK_DAYS, owner.size)
        earliest = np.searchsorted(day, day[owner] - lookback)
        lo = np.searchsorted(key, ref_cell + np.minimum(earliest, s))
        hi = np.searchsorted(key, ref_cell + s)
        # No earlier work of the cell in the window: any earlier work of the cell; none at all: no reference.
        lo = np.where(hi > lo, lo, np.searchsorted(key, ref_cell))
        ok = hi > lo
        owner, lo, hi = owner[ok], lo[ok], hi[ok]
        target = mass[lo] + rng.random(owner.size) * (mass[hi] - mass[lo])
        pos = np.clip(np.searchsorted(mass, target, "right") - 1, lo, hi - 1)
        refs = order[pos]
        n_theirs = ptr[refs + 1] - ptr[refs]
        copy = (rng.random(refs.size) < ndtr(-CONSOLIDATING * traits.disruption[refs])) & (n_theirs > 0)
        theirs = buf[ptr[refs[copy]] + (rng.random(int(copy.sum())) * n_theirs[copy]).astype(np.int64)]
        pairs = np.unique(np.concatenate([owner, owner[copy]]) * n + np.concatenate([refs, theirs]))
        owner, refs = pairs // n, pairs % n
        counts = np.bincount(owner - s, minlength=e - s)
        ptr[s + 1:e + 1] = ptr[s] + np.cumsum(counts)
        if ptr[e] > buf.shape[0]:
            buf = np.resize(buf, max(int(ptr[e]), 2 * buf.shape[0]))
        buf[ptr[s]:ptr[e]] = refs
        if progress:
            progress(e - s)
    return ptr, buf[:ptr[n]].copy()


def generate(works: int, seed: int = 0, taxonomy: Taxonomy | None = None, progress=None) -> ScaleWorld:
    """Generate the world's graph and vocabulary (records are drawn later, chunk by chunk, by :func:`records`).

    Parameters
    ----------
    works : int
        Number of works, at least 1.
    seed : int
        The same seed and size give the same world.
    taxonomy : Taxonomy, optional
        Default: the packaged taxonomy.
    progress : callable, optional
        Called with the number of works just linked, chunk by chunk.

    Returns
    -------
    ScaleWorld
    """
    tax = taxonomy or load_taxonomy()
    rng = np.random.default_rng(seed)
    day = _dates(rng, works)
    cell = _cells(tax, rng, works)
    traits = latent.draw(rng, works)
    disciplines = list(dict.fromkeys(c.discipline for c in tax.cells))
    discipline = np.array([disciplines.index(c.discipline) for c in tax.cells])
    journals, first, size = _journals(tax, rng)
    placement = ndtr(traits.journal + JOURNAL_NOISE * rng.standard_normal(works))
    journal = (first[cell] + np.minimum((placement * size[cell]).astype(np.int64), size[cell] - 1)).astype(np.int32)
    institutions = text.institutions(rng, INSTITUTIONS)
    authors = text.people(rng, AUTHORS)
    ref_ptr, ref_idx = _references(rng, day, cell, discipline, traits, progress)
    cited_by = np.bincount(ref_idx, minlength=works).astype(np.int64)
    return ScaleWorld(seed=seed, taxonomy=tax, day=day, cell=cell, journal=journal, traits=traits, ref_ptr=ref_ptr,
                      ref_idx=ref_idx, cited_by=cited_by, journals=journals, institutions=institutions,
                      authors=authors)


def source_record(journal: SimJournal, works_count: int) -> dict:
    """The OpenAlex source object of a journal (with the ``summary_stats`` the open journal table reads)."""
    return {"id": OPENALEX + journal.id, "display_name": journal.name, "issn_l": journal.issn,
            "issn": [journal.issn], "type": "journal", "is_oa": False, "is_in_doaj": False,
            "works_count": works_count, "host_organization": None,
            "summary_stats": {"2yr_mean_citedness": journal.mean_citedness, "h_index": None, "i10_index": None},
            "updated_date": f"{UPDATED_DATES[-1]}T00:00:00"}


def _topic(world: ScaleWorld, k: int, score: float) -> dict:
    c = k // 3
    cell = world.taxonomy.cells[c]
    sub_name, field_id, field_name, domain_id, domain_name = SUBFIELDS[cell.openalex_subfield]
    return {"id": f"{OPENALEX}T8{c:02d}{k % 3:02d}",
            "display_name": f"{cell.keywords[k % 3]} research (synthetic topic)", "score": score,
            "subfield": {"id": f"{OPENALEX}subfields/{cell.openalex_subfield}", "display_name": sub_name},
            "field": {"id": f"{OPENALEX}fields/{field_id}", "display_name": field_name},
            "domain": {"id": f"{OPENALEX}domains/{domain_id}", "display_name": domain_name}}


def updated_date(i: int) -> str:
    """The ``updated_date`` of work ``i`` (its snapshot partition)."""
    return UPDATED_DATES[i % len(UPDATED_DATES)]


def records(world: ScaleWorld, start: int, stop: int) -> Iterator[dict]:
    """The full OpenAlex work objects of works ``start .. stop-1``.

    The draws come from a generator seeded by the world's seed and ``start``, so a range renders the same
    records whichever ranges were rendered before it.
    """
    tax, n = world.taxonomy, stop - start
    rng = np.random.default_rng((world.seed, 1, start))
    idx = np.arange(start, stop)
    t = world.traits
    cell = world.cell[idx].astype(np.int64)
    n_cells = len(tax.cells)
    disciplines = list(dict.fromkeys(c.discipline for c in tax.cells))
    discipline = np.array([disciplines.index(c.discipline) for c in tax.cells])

    def foreign_cells(size: tuple[int, ...]) -> np.ndarray:
        other = rng.integers(0, n_cells, size=size)
        clash = discipline[other] == discipline[cell.reshape(-1, *([1] * (len(size) - 1)))]
        other[clash] = (other[clash] + n_cells // 2) % n_cells
        return other

    team = np.clip(np.round(np.exp(TEAM[0] + TEAM[1] * t.team[idx])), 1, 60).astype(np.int64)
    home = rng.integers(0, INSTITUTIONS, size=n)
    abroad = ndtr(ABROAD[0] + ABROAD[1] * t.team[idx])
    author_pick = rng.integers(0, AUTHORS, size=(n, 60))
    away = rng.random((n, 60)) < abroad[:, None]
    away_inst = rng.integers(0, INSTITUTIONS, size=(n, 60))
    primary = 3 * cell + rng.integers(0, 3, size=n)
    primary_score = np.round(0.5 + 0.5 * ndtr(t.concepts[idx] + 0.3 * rng.standard_normal(n)), 4)
    own_second = rng.random(n) < 0.5
    second = 3 * cell + rng.integers(0, 3, size=n)
    n_foreign = np.clip(np.round(FOREIGN_TOPICS[0] + FOREIGN_TOPICS[1] * t.novelty[idx]
                                 + 0.3 * rng.standard_normal(n)), 0, 4).astype(np.int64)
    foreign_topic = 3 * foreign_cells((n, 4)) + rng.integers(0, 3, size=(n, 4))
    topic_scores = np.round(rng.uniform(0.3, 0.9, size=(n, 5)), 4)
    n_concepts = np.clip(np.round(4.5 + 2.0 * t.concepts[idx] + 0.5 * rng.standard_normal(n)), 1, 8).astype(np.int64)
    concept_order = np.argsort(rng.random((n, 8)), axis=1)
    core = np.round(0.45 + 0.5 * ndtr(t.concepts[idx] + 0.3 * rng.standard_normal(n)), 4)
    concept_scores = np.minimum(np.round(rng.uniform(0.2, 0.95, size=(n, 8)), 4), core[:, None])
    concept_scores[:, 0] = core
    # Title and abstract: four of the cell's keywords; the novelty trait swaps some for another discipline's.
    picks = rng.integers(0, 8, size=(n, 4))
    word_cell = np.repeat(cell[:, None], 4, axis=1)
    n_words = np.clip(np.round(FOREIGN_WORDS[0] + FOREIGN_WORDS[1] * t.novelty[idx]
                               + 0.3 * rng.standard_normal(n)), 0, 3).astype(np.int64)
    swap = np.arange(4)[None, :] >= 4 - n_words[:, None]
    word_cell = np.where(swap, np.repeat(foreign_cells((n,))[:, None], 4, axis=1), word_cell)
    words = [[tax.cells[c].keywords[k] for c, k in zip(cr, kr)] for cr, kr in zip(word_cell.tolist(), picks.tolist())]
    titles = text.titles(rng, [w[0] for w in words], [w[1] for w in words], [None] * n)
    abstracts = text.abstracts(rng, words, np.zeros(n, dtype=bool))

    for k, i in enumerate(idx.tolist()):
        wid = work_id(i)
        published = EPOCH + timedelta(days=int(world.day[i]))
        journal = world.journals[int(world.journal[i])]
        authorships = []
        for position in range(int(team[k])):
            inst = int(away_inst[k, position]) if away[k, position] else int(home[k])
            name, country = world.institutions[inst]
            person = int(author_pick[k, position])
            authorships.append({
                "author_position": "first" if position == 0 else "last" if position == team[k] - 1 else "middle",
                "author": {"id": f"{OPENALEX}A8{person:08d}", "display_name": world.authors[person], "orcid": None},
                "institutions": [{"id": f"{OPENALEX}I8{inst:08d}", "display_name": name, "country_code": country,
                                  "type": "education"}],
                "countries": [country], "is_corresponding": position == 0,
                "raw_author_name": world.authors[person]})
        topics = [_topic(world, int(primary[k]), float(primary_score[k]))]
        if own_second[k]:
            topics.append(_topic(world, int(second[k]), float(topic_scores[k, 0])))
        topics += [_topic(world, int(foreign_topic[k, j]), float(topic_scores[k, 1 + j])) for j in range(n_foreign[k])]
        keywords = tax.cells[int(cell[k])].keywords
        concepts = [{"id": f"{OPENALEX}C8{int(cell[k]):02d}{int(c):03d}", "wikidata": None,
                     "display_name": keywords[int(c)], "level": 2, "score": float(concept_scores[k, j])}
                    for j, c in enumerate(concept_order[k, :n_concepts[k]])]
        refs = world.ref_idx[world.ref_ptr[i]:world.ref_ptr[i + 1]]
        doi = f"https://doi.org/10.5555/scaleworld.{world.seed}.{i}"
        source = {"id": OPENALEX + journal.id, "display_name": journal.name, "issn_l": journal.issn,
                  "issn": [journal.issn], "type": "journal"}
        yield {
            "id": OPENALEX + wid, "doi": doi, "title": titles[k], "display_name": titles[k],
            "publication_year": published.year, "publication_date": published.isoformat(),
            "ids": {"openalex": OPENALEX + wid, "doi": doi}, "language": "en", "type": "article",
            "primary_location": {"is_oa": False, "landing_page_url": doi, "pdf_url": None, "source": source,
                                 "version": "publishedVersion", "is_accepted": True, "is_published": True},
            "authorships": authorships,
            "countries_distinct_count": len({a["countries"][0] for a in authorships}),
            "institutions_distinct_count": len({a["institutions"][0]["id"] for a in authorships}),
            "cited_by_count": int(world.cited_by[i]), "is_retracted": False, "is_paratext": False,
            "primary_topic": topics[0], "topics": topics, "concepts": concepts,
            "referenced_works_count": int(refs.shape[0]),
            "referenced_works": [OPENALEX + work_id(int(r)) for r in refs],
            "abstract_inverted_index": inverted_index(abstracts[k]),
            "updated_date": f"{updated_date(i)}T00:00:00", "created_date": published.isoformat(),
        }
