"""A seeded, synthetic bibliographic world at the scale of the benchmark.

``generate(papers=6000, seed=0)`` builds the candidate papers of every sub-discipline of the taxonomy (1,000 per
discipline at the default size, split evenly over its sub-disciplines: 125 per cell, about 143 in medicine) and
the surrounding works that they cite and that cite them, with journals, institutions, authors, OpenAlex-style
topics and concepts (real OpenAlex subfield ids), ADS bibcodes and arXiv ids for the disciplines of the ADS
route (physics, in the packaged taxonomies), exact publication dates and heavy-tailed citation counts. A
paper-specific share of a paper's citers also cite its references, so the CD index spreads over its range, and
background works cite each other, so papers' references are also cited without them.

A smaller world is the default world with fewer candidates, not a smaller field: every cell keeps the
default size's works around its candidates, and candidates come in research fronts of :data:`FRONT` papers that
share their keywords, so that a paper's nearest neighbours in text are its front's whatever the number of
candidates. The index computed over 600 papers then has the structure it has over 6,000
(bench/bench_calibration.py).

The world is columnar (NumPy arrays and a CSR reference graph) so that 6,000 candidates and some 10^5 works
generate in seconds. It is a test and demo corpus, never the benchmark: every record says it is synthetic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import cached_property

import numpy as np
from scipy.special import ndtr, ndtri

from scitaste_hf.errors import ScitasteError
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
    TEAM,
    WORLD_FIRST_YEAR,
)
from scitaste_hf.taxonomy import ADS_ROUTE, Taxonomy, load_taxonomy

DEFAULT_PAPERS = 6000
#: The first publication year of the candidates (the collection window's, 1995-2024); the works around them
#: start at :data:`~scitaste_hf.simworld.params.WORLD_FIRST_YEAR`.
CANDIDATE_FIRST_YEAR = 1995
#: The world's present: citation counts are those up to it.
TODAY = date(2025, 12, 31)
#: How a candidate of an ADS-route discipline is meant to be classified by the four-stage cascade, and how often.
CASCADE_STAGES = (("arxiv", 0.72), ("journal", 0.15), ("keywords", 0.07), ("title", 0.04), ("unclassified", 0.02))
#: Bibstems of the general venues of an ADS-route discipline, where the candidates meant for the late cascade
#: stages publish: no cell lists them, so the journal stage does not label those papers.
GENERIC_BIBSTEMS = ("EPL", "PhyS", "JPhCS")
#: OpenAlex types of the works around the candidates (see :meth:`World.work_type`).
BACKGROUND_TYPES = ("preprint", "proceedings-article", "book-chapter")
#: Candidates per sub-discipline relative to its share of ``papers``: room for a build's 1.2x collection, its
#: de-duplication across cells that share an OpenAlex subfield and its quality check.
SURPLUS = 1.5
#: Works around the candidates, per candidate of a cell at the default size or larger.
BACKGROUND_PER_CANDIDATE = 8
#: Share of journals in no JCR/CAS table (and without an impact factor: journal impact 0 for their papers,
#: whatever their journal trait). What keeps G from being read off A-F (the paper's RF R2 of 0.17): a paper in one
#: says nothing of its citations, yet it costs G's importance for A less than noise on every placement would.
UNLISTED_JOURNALS = 0.12
#: log references = a + b * breadth trait.
REFERENCES = (3.1, 0.6)
#: log citations = a + culture + b * citation trait + CITATION_AGE * log(age / 10 years), where culture is the
#: discipline's citation_culture in the taxonomy. The median candidate has some 50 citations: with fewer, many
#: papers share a count and so their citation impact, and the forest that predicts G from A-F finds fewer places
#: to split A than B-F (A's derived weight is some 2 points lower with a median of 15).
CITATIONS, CITATION_AGE = (3.9, 1.0), 0.15
#: Share of citers that also cite a reference = Phi(-a - b * disruption trait).
CONSOLIDATING = (0.0, 1.6)
#: Share of candidates outside the ADS route whose text names none of their cell's keywords (a build finds them by
#: the subfield back-fill only).
KEYWORDLESS = 0.10
#: Candidates of a cell per research front (consecutive candidates of the cell): they draw their keywords together.
FRONT = 24
#: Draws of a consolidating citation's reference before one that keeps another citation disruptive is given up.
REDRAWS = 3
_STAGE = {name: k for k, (name, _) in enumerate(CASCADE_STAGES)}


@dataclass
class Journal:
    """A journal of the world, with the bibliometric indicators the journal-impact dimension reads."""

    id: str
    name: str
    issn: str
    discipline: str
    impact_factor: float | None
    jcr_quartile: str | None
    cas_zone: int | None
    mean_citedness: float
    bibstem: str | None = None


class Ragged:
    """Rows of (index, score) pairs stored flat, so that some 10^5 works' topics and concepts take a few MB
    rather than a Python list of tuples each: ``rows[i]`` is row ``i`` as a list of ``(int, float)``."""

    def __init__(self, ptr: np.ndarray, index: np.ndarray, score: np.ndarray) -> None:
        self.ptr, self.index, self.score = ptr, index, score

    @classmethod
    def from_rows(cls, take: np.ndarray, index: np.ndarray, score: np.ndarray) -> Ragged:
        """Rows from a mask ``take`` (one row per work) and the chosen entries, in row-major order."""
        ptr = np.concatenate([[0], np.cumsum(take.sum(axis=1))]).astype(np.int64)
        return cls(ptr, index.astype(np.int32), score.astype(np.float64))

    def __len__(self) -> int:
        return int(self.ptr.shape[0]) - 1

    def first(self) -> np.ndarray:
        """The index of every row's first entry (every row has one)."""
        return self.index[self.ptr[:-1]]

    def __getitem__(self, i: int) -> list[tuple[int, float]]:
        first, last = int(self.ptr[i]), int(self.ptr[i + 1])
        return list(zip(self.index[first:last].tolist(), self.score[first:last].tolist()))


@dataclass
class World:
    """The generated world. Work arrays have one entry per work; candidates are works ``0 .. n_candidates-1``."""

    seed: int
    taxonomy: Taxonomy
    n_candidates: int
    cell: np.ndarray           # taxonomy cell index of each work
    date: np.ndarray           # days since 1970-01-01
    journal: np.ndarray        # index into journals
    ref_ptr: np.ndarray        # CSR: references of work i are ref_idx[ref_ptr[i]:ref_ptr[i + 1]]
    ref_idx: np.ndarray
    cite_ptr: np.ndarray       # CSR of the transposed graph: citers of work i
    cite_idx: np.ndarray
    author_ptr: np.ndarray     # authorships of work i are author_idx[author_ptr[i]:author_ptr[i + 1]]
    author_idx: np.ndarray     # index into authors
    author_inst: np.ndarray    # institution of each authorship
    topics: Ragged             # (topic index, score) per work, primary first
    concepts: Ragged           # (concept index, score) per work
    titles: list[str]
    abstracts: list[str]
    journals: list[Journal]
    institutions: list[tuple[str, str]]      # (name, country code)
    authors: list[str]
    topic_table: list[tuple[str, str, int]]  # (id, name, cell)
    concept_table: list[tuple[str, str]]     # (id, name)
    arxiv_id: dict[int, str] = field(default_factory=dict)
    arxiv_class: dict[int, str] = field(default_factory=dict)
    bibcode: dict[int, str] = field(default_factory=dict)
    cascade_stage: dict[int, str] = field(default_factory=dict)  # candidate -> the stage meant to label it

    @property
    def n_works(self) -> int:
        """All works, candidates included."""
        return int(self.cell.shape[0])

    def work_id(self, i: int) -> str:
        """The OpenAlex-style id of work ``i`` (W9..., outside the range of real OpenAlex ids)."""
        return f"W9{i:09d}"

    def index_of(self, work_id: str) -> int:
        """The work number of an OpenAlex-style id, or -1 when the world has no such work."""
        if len(work_id) != 11 or not work_id.startswith("W9") or not work_id[2:].isdigit():
            return -1
        i = int(work_id[2:])
        return i if i < self.n_works else -1

    def doi(self, i: int) -> str:
        """A DOI under the 10.5555 test prefix."""
        return f"10.5555/simworld.{self.seed}.{i}"

    @cached_property
    def year(self) -> np.ndarray:
        """Publication year of every work (computed once: the services' year filters and counts read it)."""
        return self.date.astype("datetime64[D]").astype("datetime64[Y]").astype(int) + 1970

    def pub_date(self, i: int) -> date:
        """Exact publication date of work ``i``."""
        return EPOCH + timedelta(days=int(self.date[i]))

    def references(self, i: int) -> np.ndarray:
        """Work numbers that work ``i`` cites."""
        return self.ref_idx[self.ref_ptr[i]:self.ref_ptr[i + 1]]

    def citers(self, i: int) -> np.ndarray:
        """Work numbers that cite work ``i``."""
        return self.cite_idx[self.cite_ptr[i]:self.cite_ptr[i + 1]]

    def work_type(self, i: int) -> str:
        """OpenAlex ``type``: candidates are journal articles; the works around them are preprints, proceedings
        papers and book chapters, so that a collection restricted to articles finds exactly the candidates."""
        return "article" if i < self.n_candidates else BACKGROUND_TYPES[i % len(BACKGROUND_TYPES)]

    def discipline(self, i: int) -> str:
        """The discipline of work ``i``."""
        return self.taxonomy.cells[int(self.cell[i])].discipline

    def ads_collections(self, i: int) -> tuple[str, ...]:
        """The ADS collections work ``i`` is filed in: its discipline's (none outside the ADS route)."""
        return self.taxonomy.discipline(self.discipline(i)).ads_collections


def _csr(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((dst, src))
    src, dst = src[order], dst[order]
    keep = np.ones(src.shape[0], dtype=bool)
    keep[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])  # no duplicate edges
    src, dst = src[keep], dst[keep]
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(ptr, src + 1, 1)
    return np.cumsum(ptr), dst.astype(np.int32)


class _DisruptiveCitations:
    """The disruptive citations of a world: which of a set of edges ``src -> dst`` would make one of them
    consolidating (``src`` cites the paper disruptively and ``dst`` is one of its references)."""

    def __init__(self, citer: np.ndarray, paper: np.ndarray, consolidating_citer: np.ndarray,
                 consolidating_paper: np.ndarray, refs: np.ndarray, ref_ptr: np.ndarray, n_works: int) -> None:
        n_cand = ref_ptr.size - 1
        # A citer drawn twice for one paper, once to consolidate it, consolidates it.
        both = np.isin(citer * n_cand + paper, consolidating_citer * n_cand + consolidating_paper)
        citer, paper = citer[~both], paper[~both]
        order = np.argsort(citer, kind="stable")
        self.paper = paper[order]
        self.ptr = np.concatenate([[0], np.cumsum(np.bincount(citer, minlength=n_works))]).astype(np.int64)
        # (paper, reference) keys in increasing order: the CSR rows are sorted by paper, then by reference.
        self.ref_key = np.repeat(np.arange(n_cand, dtype=np.int64), np.diff(ref_ptr)) * n_works + refs
        self.n_works = n_works

    def hit(self, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
        """Whether each edge ``src -> dst`` cites a reference of a paper that ``src`` cites disruptively."""
        sizes = self.ptr[src + 1] - self.ptr[src]
        edge = np.repeat(np.arange(src.size), sizes)
        _, at = _repeat_ranges(self.ptr, src)
        key = self.paper[at] * self.n_works + dst[edge]
        found = np.searchsorted(self.ref_key, key).clip(max=self.ref_key.size - 1)
        out = np.zeros(src.size, dtype=bool)
        out[edge[self.ref_key[found] == key]] = True
        return out


def _days(year: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    start = np.array([(date(int(y), 1, 1) - EPOCH).days for y in range(WORLD_FIRST_YEAR, LAST_YEAR + 2)])
    return start[year - WORLD_FIRST_YEAR] + rng.integers(0, 365, size=year.shape[0])


def _journals(tax: Taxonomy, rng: np.random.Generator
              ) -> tuple[list[Journal], dict[int, np.ndarray], dict[str, np.ndarray]]:
    """Journals per cell (a cell of an ADS-route discipline: one per bibstem of the cell) and a few general venues
    of every ADS-route discipline, each cell's listed from the lowest impact factor up.

    Impact factors spread evenly over the same log-normal range in every cell, so a paper's journal impact says
    where it was published, not what field it is in. JCR quartiles and CAS zones follow the impact factor within
    the discipline (the zones coarser, as CAS's are); a few journals are in neither table, like real ones.
    """
    journals: list[Journal] = []

    def add(discipline: str, names: list[tuple[str, str | None]]) -> np.ndarray:
        quantiles = (np.arange(len(names)) + rng.uniform(0.2, 0.8, len(names))) / len(names)
        impact = np.round(np.exp(JOURNAL_IMPACT[0] + JOURNAL_IMPACT[1] * ndtri(quantiles)), 3)
        first = len(journals)
        for (name, stem), value in zip(names, impact):
            k = len(journals)
            journals.append(Journal(id=f"S9{k:08d}", name=f"{name} (synthetic)", issn=text.issn(9, k),
                                    discipline=discipline, impact_factor=float(value), jcr_quartile=None,
                                    cas_zone=None, mean_citedness=float(np.round(value * rng.uniform(0.8, 1.2), 3)),
                                    bibstem=stem))
        return np.arange(first, len(journals))

    by_cell: dict[int, np.ndarray] = {}
    for c, cell in enumerate(tax.cells):
        if tax.uses_ads(cell.discipline):
            by_cell[c] = add(cell.discipline, [(f"Journal {stem}", stem) for stem in cell.bibstems])
        else:
            by_cell[c] = add(cell.discipline, [(f"{cell.name} Letters {k + 1}", None)
                                               for k in range(JOURNALS_PER_CELL)])
    generic = {d.name: add(d.name, [(f"General {d.name.replace('_', ' ').title()} {k + 1}", stem)
                                    for k, stem in enumerate(GENERIC_BIBSTEMS)]) for d in tax.by_route(ADS_ROUTE)}
    for discipline in dict.fromkeys(j.discipline for j in journals):  # a fixed order: the draws below
        mine = [j for j in journals if j.discipline == discipline]
        order = np.argsort([-j.impact_factor for j in mine], kind="stable")
        for rank, k in enumerate(order):
            j = mine[k]
            quartile = 1 + 4 * rank // len(mine)
            if rng.random() < UNLISTED_JOURNALS:
                j.impact_factor = None
                continue
            j.jcr_quartile = f"Q{quartile}"
            j.cas_zone = int(np.clip(quartile + rng.choice((-1, 0, 0, 0, 1)), 1, 4))
    return journals, by_cell, generic


def _by_cell_and_date(cell: np.ndarray, days: np.ndarray, works: np.ndarray):
    """A picker of random ``works`` of a cell dated before or after a day: ``pick(cells, day, later, u)`` with
    ``u`` uniform in [0, 1) gives one work per row, or -1 where the cell has none on that side."""
    span = int(days.max()) - int(days.min()) + 2
    base = int(days.min()) - 1
    key = cell[works].astype(np.int64) * span + (days[works] - base)
    order = np.argsort(key, kind="stable")
    key, works = key[order], works[order]

    def pick(cells: np.ndarray, day: np.ndarray, later: bool, u: np.ndarray) -> np.ndarray:
        start = cells.astype(np.int64) * span
        at = start + (day - base)
        lo = np.searchsorted(key, at, "right") if later else np.searchsorted(key, start, "left")
        hi = np.searchsorted(key, start + span, "left") if later else np.searchsorted(key, at, "left")
        found = hi > lo
        out = np.full(cells.shape[0], -1, dtype=np.int64)
        out[found] = works[lo[found] + (u[found] * (hi - lo)[found]).astype(np.int64)]
        return out

    return pick


def _counts(tax: Taxonomy, papers: int) -> np.ndarray:
    """The quota of every cell: ``papers`` spread evenly over the disciplines, then over their cells."""
    disciplines = list(dict.fromkeys(c.discipline for c in tax.cells))
    per_discipline = np.full(len(disciplines), papers // len(disciplines))
    per_discipline[: papers % len(disciplines)] += 1
    quota = np.zeros(len(tax.cells), dtype=np.int64)
    for d, total in zip(disciplines, per_discipline):
        cells = [c for c, s in enumerate(tax.cells) if s.discipline == d]
        quota[cells] = total // len(cells)
        quota[cells[: total % len(cells)]] += 1
    return quota


def _repeat_ranges(ptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For CSR pointers, the row of each item of ``rows`` and the item positions, concatenated."""
    sizes = ptr[rows + 1] - ptr[rows]
    owner = np.repeat(rows, sizes)
    first = np.repeat(ptr[rows] - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes)
    return owner, first + np.arange(int(sizes.sum()))


def _bibcode(year: int, bibstem: str, volume: int, page: int, initial: str) -> str:
    """An ADS bibcode: year, bibstem padded with dots to 5, volume right-aligned in 4, qualifier, page in 4,
    first author's initial (19 characters)."""
    return f"{year}{bibstem:.<5}{volume:.>4}.{page:.>4}{initial}"


@dataclass(frozen=True)
class _Layout:
    """Where every work of the world is: its cell, which works are candidates and how many of them the benchmark
    is offered, and each cell's discipline and route."""

    taxonomy: Taxonomy
    cell: np.ndarray             # cell of every work, candidates first
    cand_cell: np.ndarray        # cell of every candidate
    n_offered: int               # the first n_offered candidates are offered to the benchmark
    disciplines: list[str]       # the disciplines, in taxonomy order
    cell_discipline: np.ndarray  # index into disciplines of every cell
    ads_cell: np.ndarray         # whether every cell's discipline is of the ADS route

    @property
    def n_cells(self) -> int:
        """Cells of the taxonomy."""
        return len(self.taxonomy.cells)

    @property
    def n_cand(self) -> int:
        """Candidates, the offered ones and those that stay as works around them."""
        return int(self.cand_cell.shape[0])

    @property
    def n_works(self) -> int:
        """All works."""
        return int(self.cell.shape[0])

    @property
    def cand(self) -> np.ndarray:
        """The candidates' work numbers."""
        return np.arange(self.n_cand)

    def foreign_cells(self, cells: np.ndarray, own: np.ndarray) -> np.ndarray:
        """``cells`` (drawn at random) moved half-way round the taxonomy where they are of ``own``'s discipline,
        so that each is a cell of another discipline."""
        clash = self.cell_discipline[cells] == self.cell_discipline[own]
        cells[clash] = (cells[clash] + self.n_cells // 2) % self.n_cells
        return cells


def _layout(tax: Taxonomy, papers: int) -> _Layout:
    """The candidates of every cell (:data:`SURPLUS` times its quota of ``papers``) and the works around them.

    A smaller world is the default world with fewer of its candidates offered to the benchmark: the others are
    drawn as candidates too, then stay as works around them (no article, so no collection finds them). A cell's
    literature, how often two of its draws meet (a citer that happens to cite a reference, one work drawn twice as
    a paper's citer) and how much its works are cited stay what they are at the default size.
    """
    n_cells = len(tax.cells)
    if papers < n_cells:
        raise ScitasteError(f"--papers must be at least {n_cells} (one per sub-discipline), got {papers}")
    disciplines = list(dict.fromkeys(c.discipline for c in tax.cells))
    per_cell = np.ceil(_counts(tax, papers) * SURPLUS).astype(np.int64)
    whole = np.maximum(per_cell, np.ceil(_counts(tax, DEFAULT_PAPERS) * SURPLUS).astype(np.int64))
    cand_cell = np.concatenate([np.repeat(np.arange(n_cells), k) for k in (per_cell, whole - per_cell)])
    cell = np.concatenate([cand_cell, np.repeat(np.arange(n_cells), BACKGROUND_PER_CANDIDATE * whole)])
    return _Layout(taxonomy=tax, cell=cell.astype(np.int16), cand_cell=cand_cell, n_offered=int(per_cell.sum()),
                   disciplines=disciplines,
                   cell_discipline=np.array([disciplines.index(c.discipline) for c in tax.cells]),
                   ads_cell=np.array([tax.uses_ads(c.discipline) for c in tax.cells]))


def _traits(rng: np.random.Generator, lay: _Layout, field_weights: latent.FieldWeights | None) -> latent.Traits:
    """The candidates' hidden traits, with their discipline's loadings when ``field_weights`` gives them."""
    if field_weights is None:
        return latent.draw(rng, lay.n_cand)
    loadings = tuple(field_weights.for_discipline(d) for d in lay.disciplines)
    return latent.draw(rng, lay.n_cand, loadings, lay.cell_discipline[lay.cand_cell])


def _years(rng: np.random.Generator, lay: _Layout) -> tuple[np.ndarray, np.ndarray]:
    """Every work's year and day: candidates 1995-2024, most of them between 2000 and 2020; the works around them
    from 1965, most of them recent."""
    cand_year = np.clip(np.round(rng.normal(2010, 7, lay.n_cand)).astype(int), CANDIDATE_FIRST_YEAR, LAST_YEAR)
    back_year = np.clip(LAST_YEAR + 1 - np.floor(rng.exponential(14.0, lay.n_works - lay.n_cand)).astype(int),
                        WORLD_FIRST_YEAR, LAST_YEAR + 1)
    year = np.concatenate([cand_year, back_year])
    return year, _days(year, rng).astype(np.int64)


def _cascade_stages(rng: np.random.Generator, lay: _Layout) -> np.ndarray:
    """The cascade stage (an index into :data:`CASCADE_STAGES`) meant to label each candidate of an ADS-route
    discipline; -1 for the others."""
    stage = np.full(lay.n_cand, -1)
    routed = lay.ads_cell[lay.cand_cell]
    stage[routed] = rng.choice(len(CASCADE_STAGES), size=int(routed.sum()), p=[p for _, p in CASCADE_STAGES])
    return stage


def _publish(rng: np.random.Generator, lay: _Layout, traits: latent.Traits, stage: np.ndarray
             ) -> tuple[list[Journal], np.ndarray]:
    """The journals and every work's journal: a candidate's follows its journal trait (the late cascade stages'
    candidates publish in their discipline's general venues); the works around them are spread evenly."""
    journals, by_cell, generic = _journals(lay.taxonomy, rng)
    n_cand = lay.n_cand
    placement = ndtr(traits.journal + JOURNAL_NOISE * rng.standard_normal(n_cand))
    journal = np.empty(lay.n_works, dtype=np.int32)
    sizes = np.array([by_cell[c].size for c in range(lay.n_cells)])
    offsets = np.array([by_cell[c][0] for c in range(lay.n_cells)])
    journal[:n_cand] = offsets[lay.cand_cell] + (placement * sizes[lay.cand_cell]).astype(np.int64)
    late = stage >= _STAGE["keywords"]
    for name, venues in generic.items():
        mine = late & (lay.cell_discipline[lay.cand_cell] == lay.disciplines.index(name))
        journal[:n_cand][mine] = venues[(placement[mine] * venues.size).astype(int)]
    back = lay.cell[n_cand:]
    journal[n_cand:] = offsets[back] + (rng.random(back.size) * sizes[back]).astype(np.int64)
    return journals, journal


@dataclass(frozen=True)
class _Graph:
    """The citation graph: CSR of the references and of the citers of every work."""

    ref_ptr: np.ndarray
    ref_idx: np.ndarray
    cite_ptr: np.ndarray
    cite_idx: np.ndarray


def _graph(rng: np.random.Generator, lay: _Layout, traits: latent.Traits, days: np.ndarray) -> _Graph:
    """Who cites whom: the works around the candidates cite earlier works of their cell, the candidates cite their
    references and are cited by later works, and a share of a candidate's citers also cite one of its references
    (:func:`_consolidating`)."""
    pick = _by_cell_and_date(lay.cell, days, np.arange(lay.n_cand, lay.n_works))
    background = _background_citations(rng, lay, days, pick)
    references = _references(rng, lay, traits, days, pick)
    citations = _citations(rng, lay, traits, days, pick)
    background, consolidating = _consolidating(rng, lay, traits, background, references, citations)
    src = np.concatenate([background[0], references[0], citations[1], consolidating[0]]).astype(np.int64)
    dst = np.concatenate([background[1], references[1], citations[0], consolidating[1]]).astype(np.int64)
    ref_ptr, ref_idx = _csr(src, dst, lay.n_works)
    cite_ptr, cite_idx = _csr(dst, src, lay.n_works)
    return _Graph(ref_ptr, ref_idx, cite_ptr, cite_idx)


def _background_citations(rng: np.random.Generator, lay: _Layout, days: np.ndarray, pick
                          ) -> tuple[np.ndarray, np.ndarray]:
    """The works around the candidates cite two to six earlier works of their cell (the citers of a paper's
    references); returns (citing, cited)."""
    back = np.arange(lay.n_cand, lay.n_works)
    k = rng.integers(2, 7, size=back.size)
    citing = np.repeat(back, k)
    cited = pick(lay.cell[citing], days[citing], False, rng.random(citing.size))
    return citing[cited >= 0], cited[cited >= 0]


def _references(rng: np.random.Generator, lay: _Layout, traits: latent.Traits, days: np.ndarray, pick
                ) -> tuple[np.ndarray, np.ndarray]:
    """The candidates' references: as many as the breadth trait says, from the candidate's cell; the novelty trait
    sends a share of them to other disciplines' works. Returns (candidate, reference)."""
    n_refs = np.clip(np.round(np.exp(REFERENCES[0] + REFERENCES[1] * traits.breadth)), 4, 150).astype(np.int64)
    owner = np.repeat(lay.cand, n_refs)
    foreign_share = ndtr(FOREIGN_REFERENCES[0] + FOREIGN_REFERENCES[1] * traits.novelty)
    foreign = rng.random(owner.size) < foreign_share[owner]
    other = lay.foreign_cells(rng.integers(0, lay.n_cells, size=owner.size), lay.cand_cell[owner])
    ref_cell = np.where(foreign, other, lay.cand_cell[owner])
    refs = pick(ref_cell, days[owner], False, rng.random(owner.size))
    keep = refs >= 0
    return owner[keep], refs[keep]


def _citations(rng: np.random.Generator, lay: _Layout, traits: latent.Traits, days: np.ndarray, pick
               ) -> tuple[np.ndarray, np.ndarray]:
    """The candidates' citers: as many as the citation trait says (disciplines keep their citation cultures; older
    papers had longer to be cited), later works of the cell. Returns (candidate, citer)."""
    tax, n_cand = lay.taxonomy, lay.n_cand
    age = (TODAY - EPOCH).days - days[:n_cand]
    culture = np.array([tax.discipline(d).citation_culture for d in lay.disciplines])[
        lay.cell_discipline[lay.cand_cell]]
    wanted = np.exp(CITATIONS[0] + culture + CITATIONS[1] * traits.citation + CITATION_AGE * np.log(age / 3650.0))
    owner = np.repeat(lay.cand, np.clip(np.round(wanted), 0, 2000).astype(np.int64))
    citers = pick(lay.cand_cell[owner], days[owner], True, rng.random(owner.size))
    keep = citers >= 0
    return owner[keep], citers[keep]


def _consolidating(rng: np.random.Generator, lay: _Layout, traits: latent.Traits,
                   background: tuple[np.ndarray, np.ndarray], references: tuple[np.ndarray, np.ndarray],
                   citations: tuple[np.ndarray, np.ndarray]
                   ) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """A share of a candidate's citers also cite one of its references (consolidating citations), the more the
    less disruptive the paper; the rest cite it alone (disruptive citations).

    A disruptive citer cites none of the paper's references: not through its own citations of the cell, nor
    through a reference of another paper it consolidates. By chance alone it would, as often as the cell's
    literature is small, and the CD index would say less about the disruption trait in a small cell. Returns the
    background citations without those and the consolidating citations (citer, reference).
    """
    cand_ref_ptr, cand_refs = _csr(references[0], references[1], lay.n_cand)
    owner, citers = citations
    share = ndtr(-CONSOLIDATING[0] - CONSOLIDATING[1] * traits.disruption)
    n_paper_refs = np.diff(cand_ref_ptr)
    consolidating = (rng.random(owner.size) < share[owner]) & (n_paper_refs[owner] > 0)
    who, paper = citers[consolidating], owner[consolidating]
    position = cand_ref_ptr[paper] + (rng.random(paper.size) * n_paper_refs[paper]).astype(np.int64)
    alone = _DisruptiveCitations(citers[~consolidating], owner[~consolidating], who, paper, cand_refs, cand_ref_ptr,
                                 lay.n_works)
    chance = alone.hit(*background)
    for _ in range(REDRAWS):
        again = alone.hit(who, cand_refs[position])
        position[again] = cand_ref_ptr[paper[again]] + (rng.random(int(again.sum())) * n_paper_refs[paper[again]]
                                                        ).astype(np.int64)
    kept = ~alone.hit(who, cand_refs[position])
    return (background[0][~chance], background[1][~chance]), (who[kept], cand_refs[position[kept]])


@dataclass(frozen=True)
class _People:
    """The institutions and authors, and every work's authorships."""

    institutions: list[tuple[str, str]]
    authors: list[str]
    author_ptr: np.ndarray
    author_idx: np.ndarray
    author_inst: np.ndarray


def _people(rng: np.random.Generator, lay: _Layout, traits: latent.Traits) -> _People:
    """People and places: the team trait sets a candidate's team size and how many of its authors work abroad."""
    n_works, n_cand = lay.n_works, lay.n_cand
    institutions = text.institutions(rng, INSTITUTIONS)
    authors = text.people(rng, max(2000, n_works // 4))
    team = np.clip(rng.geometric(0.25, n_works), 1, 40)
    team[:n_cand] = np.clip(np.round(np.exp(TEAM[0] + TEAM[1] * traits.team)), 1, 60).astype(np.int64)
    author_ptr = np.concatenate([[0], np.cumsum(team)]).astype(np.int64)
    n_authorships = int(author_ptr[-1])
    author_idx = rng.integers(0, len(authors), size=n_authorships).astype(np.int32)
    home = np.repeat(rng.integers(0, INSTITUTIONS, size=n_works), team)
    abroad = np.full(n_works, 0.4)
    abroad[:n_cand] = ndtr(ABROAD[0] + ABROAD[1] * traits.team)
    stay = rng.random(n_authorships) >= np.repeat(abroad, team)
    author_inst = np.where(stay, home, rng.integers(0, INSTITUTIONS, n_authorships)).astype(np.int32)
    return _People(institutions, authors, author_ptr, author_idx, author_inst)


def _vocabulary(tax: Taxonomy) -> tuple[list[tuple[str, str, int]], list[tuple[str, str]], np.ndarray, np.ndarray]:
    """The topic table (three per cell, named after its first keywords), the concept table (a cell's keywords) and
    each cell's first concept and number of concepts."""
    topic_table, concept_table = [], []
    concept_first, concept_count = np.zeros(len(tax.cells), dtype=np.int64), np.zeros(len(tax.cells), dtype=np.int64)
    for c, sub in enumerate(tax.cells):
        topic_table.extend((f"T9{c:02d}{k:02d}", f"{sub.keywords[k % len(sub.keywords)]} research (synthetic topic)", c)
                           for k in range(3))  # a cell of one or two keywords names its topics after them in turn
        concept_first[c], concept_count[c] = len(concept_table), len(sub.keywords)
        concept_table.extend((f"C9{c:02d}{k:03d}", kw) for k, kw in enumerate(sub.keywords))
    return topic_table, concept_table, concept_first, concept_count


def _topics(rng: np.random.Generator, lay: _Layout, traits: latent.Traits) -> Ragged:
    """Every work's topics (real OpenAlex subfields): the primary one, its cell's second one where drawn, then
    topics of other disciplines, as many more as the novelty trait says; the concepts trait sets how strongly a
    candidate holds its primary topic."""
    n_works, n_cand, cell = lay.n_works, lay.n_cand, lay.cell
    primary = 3 * cell.astype(np.int64) + rng.integers(0, 3, size=n_works)
    primary_score = rng.uniform(0.9, 1.0, n_works)
    primary_score[:n_cand] = 0.5 + 0.5 * ndtr(traits.concepts + 0.3 * rng.standard_normal(n_cand))
    n_foreign_topics = rng.integers(0, 2, size=n_works)
    n_foreign_topics[:n_cand] = np.clip(np.round(FOREIGN_TOPICS[0] + FOREIGN_TOPICS[1] * traits.novelty
                                                 + 0.3 * rng.standard_normal(n_cand)), 0, 4).astype(np.int64)
    n_own_topics = rng.integers(0, 2, size=n_works)
    topic_other_cell = lay.foreign_cells(rng.integers(0, lay.n_cells, size=(n_works, 4)), cell[:, None])
    topic_other = 3 * topic_other_cell + rng.integers(0, 3, size=(n_works, 4))
    topic_own = 3 * cell.astype(np.int64) + rng.integers(0, 3, size=n_works)
    topic_scores = np.round(rng.uniform(0.3, 0.9, size=(n_works, 5)), 4)
    # Row by row: the primary topic, the own second one where drawn, then the foreign ones.
    take = np.column_stack([np.ones(n_works, dtype=bool), n_own_topics > 0,
                            np.arange(4)[None, :] < n_foreign_topics[:, None]])
    return Ragged.from_rows(take, np.column_stack([primary, topic_own, topic_other])[take],
                            np.column_stack([np.round(primary_score, 4), topic_scores])[take])


def _concepts(rng: np.random.Generator, lay: _Layout, traits: latent.Traits, concept_first: np.ndarray,
              concept_count: np.ndarray) -> Ragged:
    """Every work's concepts: the first few of a random order of its cell's vocabulary, scored in the order chosen;
    the concepts trait sets how many a candidate has and how strongly it holds its core concept."""
    n_works, n_cand, cell = lay.n_works, lay.n_cand, lay.cell
    n_concepts = rng.integers(2, 7, size=n_works)
    n_concepts[:n_cand] = np.clip(np.round(4.5 + 2.0 * traits.concepts + 0.5 * rng.standard_normal(n_cand)), 1, 8)
    n_concepts = np.minimum(n_concepts, concept_count[cell])
    order = np.argsort(rng.random((n_works, int(concept_count.max()))), axis=1)
    scores = np.round(rng.uniform(0.2, 0.95, size=(n_works, int(concept_count.max()))), 4)
    core = np.round(0.45 + 0.5 * ndtr(traits.concepts + 0.3 * rng.standard_normal(n_cand)), 4)
    scores[:n_cand, 0] = core
    scores[:n_cand, 1:] = np.minimum(scores[:n_cand, 1:], core[:, None])
    in_cell = order < concept_count[cell][:, None]
    rank = np.cumsum(in_cell, axis=1) - 1
    take = in_cell & (rank < n_concepts[:, None])
    return Ragged.from_rows(take, (concept_first[cell][:, None] + order)[take],
                            np.take_along_axis(scores, rank.clip(0), axis=1)[take])


def _texts(rng: np.random.Generator, lay: _Layout, traits: latent.Traits, stage: np.ndarray
           ) -> tuple[list[str], list[str]]:
    """Titles and abstracts: four picks of the cell's keywords, one draw per research front; the novelty trait
    swaps some of a paper's for another discipline's. Candidates meant for the late cascade stages name no keyword
    (the title stage: a characteristic term in the title), nor do :data:`KEYWORDLESS` of the other candidates."""
    tax, n_works, n_cand, cell, cand_cell = lay.taxonomy, lay.n_works, lay.n_cand, lay.cell, lay.cand_cell
    keywords = [kw for sub in tax.cells for kw in sub.keywords]
    kw_first = np.cumsum([0] + [len(sub.keywords) for sub in tax.cells])
    kw_count = np.diff(kw_first)
    picks = kw_first[cell][:, None] + (rng.random((n_works, 4)) * kw_count[cell][:, None]).astype(np.int64)
    cand = lay.cand
    run = np.flatnonzero(np.concatenate([[True], cand_cell[1:] != cand_cell[:-1]]))  # first candidate of each run
    first = run[np.searchsorted(run, cand, side="right") - 1]
    picks[:n_cand] = picks[first + (cand - first) // FRONT * FRONT]  # the keywords of the front's first candidate
    foreign_cell = lay.foreign_cells(rng.integers(0, lay.n_cells, size=n_cand), cand_cell)
    n_words = np.clip(np.round(FOREIGN_WORDS[0] + FOREIGN_WORDS[1] * traits.novelty
                               + 0.3 * rng.standard_normal(n_cand)), 0, 3).astype(np.int64)
    n_words[stage >= _STAGE["keywords"]] = 0
    swap = np.arange(4)[None, :] >= 4 - n_words[:, None]
    swapped = kw_first[foreign_cell][:, None] + (rng.random((n_cand, 4)) * kw_count[foreign_cell][:, None]).astype(
        np.int64)
    picks[:n_cand] = np.where(swap, swapped, picks[:n_cand])
    words = np.array(keywords, dtype=object)[picks]
    neutral = np.zeros(n_works, dtype=bool)
    neutral[:n_cand] = (stage >= _STAGE["title"]) | (~lay.ads_cell[cand_cell] & (rng.random(n_cand) < KEYWORDLESS))
    words[neutral] = ""
    terms: list[str | None] = [None] * n_works
    for i in np.flatnonzero(stage == _STAGE["title"]):
        own = tax.cells[int(cand_cell[i])].title_terms
        terms[i] = str(own[int(rng.integers(len(own)))])
    word_rows = words.tolist()
    titles = text.titles(rng, [w[0] for w in word_rows], [w[1] for w in word_rows], terms)
    return titles, text.abstracts(rng, word_rows, neutral)


@dataclass(frozen=True)
class _AdsIds:
    """The identifiers of the ADS-route works: bibcodes, arXiv ids and classes, and the candidates' cascade
    stages."""

    arxiv_id: dict[int, str]
    arxiv_class: dict[int, str]
    bibcode: dict[int, str]
    cascade_stage: dict[int, str]


def _ads_ids(rng: np.random.Generator, lay: _Layout, year: np.ndarray, days: np.ndarray, journals: list[Journal],
             journal: np.ndarray, people: _People, stage: np.ndarray) -> _AdsIds:
    """ADS bibcodes for every work of an ADS-route discipline, arXiv ids for the candidates of the arXiv stage and
    for most works around them (posted when published)."""
    n_works = lay.n_works
    cascade_stage = {int(i): CASCADE_STAGES[stage[i]][0]
                     for i in np.flatnonzero(lay.ads_cell[lay.cand_cell][:lay.n_offered])}
    arxiv_id, arxiv_class, bibcode = {}, {}, {}
    routed = np.flatnonzero(lay.ads_cell[lay.cell])
    on_arxiv = np.zeros(n_works, dtype=bool)
    on_arxiv[routed] = rng.random(routed.size) < 0.6
    on_arxiv[:lay.n_cand] = stage == _STAGE["arxiv"]
    volume = rng.integers(1, 999, size=n_works)
    page = rng.integers(1, 9999, size=n_works)
    serial = rng.integers(0, 10**5, size=n_works)
    class_pick = rng.random(n_works)
    for i in routed.tolist():
        sub = lay.taxonomy.cells[int(lay.cell[i])]
        y = int(year[i])
        initial = people.authors[int(people.author_idx[people.author_ptr[i]])].split()[-1][0]
        bibcode[i] = _bibcode(y, journals[int(journal[i])].bibstem, int(volume[i]), int(page[i]), initial)
        if not on_arxiv[i]:
            continue
        arxiv_class[i] = sub.arxiv_classes[int(class_pick[i] * len(sub.arxiv_classes))]
        month = f"{y % 100:02d}{(EPOCH + timedelta(days=int(days[i]))).month:02d}"
        if y >= 2008:  # new-style ids: four digits after the dot until 2014, five since 2015
            digits = 5 if y >= 2015 else 4
            arxiv_id[i] = f"{month}.{1 + int(serial[i]) % (10**digits - 1):0{digits}d}"
        else:
            arxiv_id[i] = f"{arxiv_class[i].split('.')[0]}/{month}{1 + int(serial[i]) % 998:03d}"
    return _AdsIds(arxiv_id, arxiv_class, bibcode, cascade_stage)


def generate(papers: int = DEFAULT_PAPERS, seed: int = 0, taxonomy: Taxonomy | None = None,
             field_weights: latent.FieldWeights | None = None) -> World:
    """Generate the world.

    Parameters
    ----------
    papers : int
        Papers the benchmark keeps from the world, spread evenly over the disciplines and, within each, over its
        sub-disciplines (default 6,000: 1,000 per discipline, as the benchmark's two splits hold). Each
        sub-discipline gets :data:`SURPLUS` times its share of candidates, so that a build's collection (1.2x its
        quota) and de-duplication leave every cell full; an ADS-route discipline adds the candidates no cascade
        stage labels.
    seed : int
        The same seed and size give the same world.
    taxonomy : Taxonomy, optional
        Default: the packaged taxonomy.
    field_weights : FieldWeights, optional
        Each discipline's latent loadings (:func:`scitaste_hf.simworld.latent.load_field_weights`), so that the
        disciplines' derived weights differ; it must cover every discipline of the taxonomy. Default: every
        discipline the default loadings.
    """
    tax = taxonomy or load_taxonomy()
    lay = _layout(tax, papers)
    # One generator, drawn from by the stages in this order: a stage's draws depend on those before it.
    rng = np.random.default_rng(seed)
    traits = _traits(rng, lay, field_weights)
    year, days = _years(rng, lay)
    stage = _cascade_stages(rng, lay)
    journals, journal = _publish(rng, lay, traits, stage)
    graph = _graph(rng, lay, traits, days)
    people = _people(rng, lay, traits)
    topic_table, concept_table, concept_first, concept_count = _vocabulary(tax)
    topics = _topics(rng, lay, traits)
    concepts = _concepts(rng, lay, traits, concept_first, concept_count)
    titles, abstracts = _texts(rng, lay, traits, stage)
    ids = _ads_ids(rng, lay, year, days, journals, journal, people, stage)
    return World(seed=seed, taxonomy=tax, n_candidates=lay.n_offered, cell=lay.cell, date=days.astype(np.int32),
                 journal=journal, ref_ptr=graph.ref_ptr, ref_idx=graph.ref_idx, cite_ptr=graph.cite_ptr,
                 cite_idx=graph.cite_idx, author_ptr=people.author_ptr, author_idx=people.author_idx,
                 author_inst=people.author_inst, topics=topics, concepts=concepts, titles=titles,
                 abstracts=abstracts, journals=journals, institutions=people.institutions, authors=people.authors,
                 topic_table=topic_table, concept_table=concept_table, arxiv_id=ids.arxiv_id,
                 arxiv_class=ids.arxiv_class, bibcode=ids.bibcode, cascade_stage=ids.cascade_stage)
