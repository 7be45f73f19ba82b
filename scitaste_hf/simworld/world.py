"""A seeded, synthetic bibliographic world at the scale of the benchmark.

``generate(papers=6000, seed=0)`` builds the candidate papers of every sub-discipline of the taxonomy (1,000 per
discipline at the default size, split evenly over its sub-disciplines: 125 per cell, about 143 in medicine) and
the surrounding works that they cite and that cite them, with journals, institutions, authors, OpenAlex-style
topics and concepts (real OpenAlex subfield ids), ADS bibcodes and arXiv ids for physics, exact publication
dates and heavy-tailed citation counts. A paper-specific share of a paper's citers also cite its references,
so the CD index spreads over its range, and background works cite each other, so papers' references are also
cited without them.

The world is columnar (NumPy arrays and a CSR reference graph) so that 6,000 candidates and some 10^5 works
generate in seconds. It is a test and demo corpus, never the benchmark: every record says it is synthetic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

import numpy as np

from scitaste_hf.errors import ScitasteError
from scitaste_hf.simworld import text
from scitaste_hf.taxonomy import Taxonomy, load_taxonomy

DEFAULT_PAPERS = 6000
FIRST_YEAR, LAST_YEAR = 1995, 2024  # candidates' years
BACKGROUND_FIRST_YEAR, TODAY = 1965, date(2025, 12, 31)
#: How a physics candidate is meant to be classified by the four-stage cascade, and how often.
PHYSICS_STAGES = (("arxiv", 0.72), ("journal", 0.15), ("keywords", 0.07), ("title", 0.04), ("unclassified", 0.02))
_EPOCH = date(1970, 1, 1)
#: OpenAlex types of the works around the candidates (see :meth:`World.work_type`).
BACKGROUND_TYPES = ("preprint", "proceedings-article", "book-chapter")


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
    topics: list[list[tuple[int, float]]]    # (topic index, score) per work, primary first
    concepts: list[list[tuple[int, float]]]  # (concept index, score) per work
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
    physics_stage: dict[int, str] = field(default_factory=dict)

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

    def pub_date(self, i: int) -> date:
        """Exact publication date of work ``i``."""
        return _EPOCH + timedelta(days=int(self.date[i]))

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


def _csr(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.lexsort((dst, src))
    src, dst = src[order], dst[order]
    keep = np.ones(src.shape[0], dtype=bool)
    keep[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])  # no duplicate edges
    src, dst = src[keep], dst[keep]
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.add.at(ptr, src + 1, 1)
    return np.cumsum(ptr), dst.astype(np.int32)


def _days(year: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    start = np.array([(date(int(y), 1, 1) - _EPOCH).days for y in range(BACKGROUND_FIRST_YEAR, LAST_YEAR + 2)])
    return start[year - BACKGROUND_FIRST_YEAR] + rng.integers(0, 365, size=year.shape[0])


def _issn(k: int) -> str:
    digits = f"9{k:06d}"
    check = (11 - sum(int(d) * w for d, w in zip(digits, range(8, 1, -1))) % 11) % 11
    return f"{digits[:4]}-{digits[4:]}{'X' if check == 10 else check}"


def _journals(tax: Taxonomy, rng: np.random.Generator) -> tuple[list[Journal], dict[int, list[int]], list[int]]:
    """Journals per cell (physics: one per bibstem of the cell) and a few generic physics venues."""
    journals: list[Journal] = []
    by_cell: dict[int, list[int]] = {}

    def add(discipline: str, name: str, bibstem: str | None) -> int:
        k = len(journals)
        impact = float(np.round(rng.lognormal(1.0, 0.8), 3))
        quartile = int(np.clip(4 - np.searchsorted([1.5, 3.0, 6.0], impact), 1, 4))
        known = rng.random() > 0.08  # some journals have no JCR/CAS entry, like the real tables
        journals.append(Journal(
            id=f"S9{k:08d}", name=f"{name} (synthetic)", issn=_issn(k), discipline=discipline,
            impact_factor=impact if known else None, jcr_quartile=f"Q{quartile}" if known else None,
            cas_zone=int(np.clip(quartile + rng.integers(-1, 2), 1, 4)) if known else None,
            mean_citedness=float(np.round(impact * rng.uniform(0.7, 1.3), 3)), bibstem=bibstem))
        return k

    for c, cell in enumerate(tax.cells):
        if cell.discipline == "physics":
            by_cell[c] = [add("physics", f"Journal {stem}", stem) for stem in cell.bibstems]
        else:
            by_cell[c] = [add(cell.discipline, f"{cell.name} Letters {k + 1}", None) for k in range(3)]
    generic = [add("physics", f"General Physics {k + 1}", stem) for k, stem in enumerate(("EPL", "PhyS", "JPhCS"))]
    return journals, by_cell, generic


def _bibcode(year: int, bibstem: str, volume: int, page: int, initial: str) -> str:
    """An ADS bibcode: year, bibstem padded with dots to 5, volume right-aligned in 4, qualifier, page in 4,
    first author's initial (19 characters)."""
    return f"{year}{bibstem:.<5}{volume:.>4}.{page:.>4}{initial}"


def generate(papers: int = DEFAULT_PAPERS, seed: int = 0, taxonomy: Taxonomy | None = None) -> World:
    """Generate the world.

    Parameters
    ----------
    papers : int
        Number of candidate papers, spread evenly over the disciplines and, within each, over its
        sub-disciplines (default 6,000: 1,000 per discipline, as the benchmark's two splits hold).
    seed : int
        The same seed and size give the same world.
    taxonomy : Taxonomy, optional
        Default: the packaged taxonomy.
    """
    tax = taxonomy or load_taxonomy()
    n_cells = len(tax.cells)
    if papers < n_cells:
        raise ScitasteError(f"--papers must be at least {n_cells} (one per sub-discipline), got {papers}")
    rng = np.random.default_rng(seed)
    disciplines = list(dict.fromkeys(c.discipline for c in tax.cells))
    per_discipline = np.full(len(disciplines), papers // len(disciplines))
    per_discipline[: papers % len(disciplines)] += 1
    per_cell = np.zeros(n_cells, dtype=np.int64)
    for d, total in zip(disciplines, per_discipline):
        cells = [c for c, s in enumerate(tax.cells) if s.discipline == d]
        per_cell[cells] = total // len(cells)
        per_cell[cells[: total % len(cells)]] += 1
    background = np.maximum(300, 12 * per_cell)
    cand_cell = np.repeat(np.arange(n_cells), per_cell)
    back_cell = np.repeat(np.arange(n_cells), background)
    cell = np.concatenate([cand_cell, back_cell]).astype(np.int16)
    n_cand, n_works = int(papers), int(cell.shape[0])

    # Years: candidates 1995-2024 leaning recent; background works from 1965, most of them recent too.
    cand_year = np.clip(LAST_YEAR - np.floor(rng.exponential(9.0, n_cand)).astype(int), FIRST_YEAR, LAST_YEAR)
    back_year = np.clip(LAST_YEAR + 1 - np.floor(rng.exponential(14.0, n_works - n_cand)).astype(int),
                        BACKGROUND_FIRST_YEAR, LAST_YEAR + 1)
    year = np.concatenate([cand_year, back_year])
    days = _days(year, rng)

    journals, journals_by_cell, generic_physics = _journals(tax, rng)
    journal = np.array([rng.choice(journals_by_cell[int(c)]) for c in cell], dtype=np.int32)

    # Background works cite ~10 earlier works of their cell: the citers of a paper's references.
    members = [np.flatnonzero(back_cell == c) + n_cand for c in range(n_cells)]
    src, dst = [], []
    for c in range(n_cells):
        pool = members[c]
        order = pool[np.argsort(days[pool], kind="stable")]
        for position, w in enumerate(order[1:], start=1):
            k = min(position, int(rng.integers(4, 16)))
            picks = order[rng.integers(0, position, size=k)]
            src.append(np.full(k, w))
            dst.append(picks)

    # Candidates: references from their cell's earlier works (some from the discipline at large), and citers
    # from later works, each of which also cites a paper-specific share of the candidate's references.
    by_discipline = {}
    for c, sub in enumerate(tax.cells):
        by_discipline.setdefault(sub.discipline, []).append(members[c])
    by_discipline = {d: np.concatenate(v) for d, v in by_discipline.items()}
    for i in range(n_cand):
        c = int(cell[i])
        pool = members[c]
        earlier = pool[days[pool] < days[i]]
        if earlier.size:
            k = min(earlier.size, int(np.clip(rng.lognormal(3.1, 0.5), 3, 150)))
            refs = rng.choice(earlier, size=k, replace=False)
            wide = by_discipline[tax.cells[c].discipline]
            wide = wide[days[wide] < days[i]]
            if wide.size:
                refs = np.unique(np.concatenate([refs, rng.choice(wide, size=max(1, k // 6))]))
            src.append(np.full(refs.size, i))
            dst.append(refs)
        else:
            refs = np.empty(0, dtype=np.int64)
        later = pool[days[pool] > days[i]]
        age = (TODAY - _EPOCH).days - int(days[i])
        wanted = int(rng.lognormal(2.6, 1.2) * (age / 3650.0) ** 0.6)
        n_cite = min(later.size, wanted)
        if n_cite:
            citing = rng.choice(later, size=n_cite, replace=False)
            src.append(citing)
            dst.append(np.full(n_cite, i))
            # A paper-specific share of its citers also cite its references (consolidating citations); the
            # rest cite it alone (disruptive citations). The share spreads the CD index over its range.
            share = rng.beta(0.9, 1.6)
            consolidating = citing[rng.random(n_cite) < share]
            if refs.size and consolidating.size:
                hits = rng.random((consolidating.size, refs.size)) < 0.15
                hits[np.arange(consolidating.size), rng.integers(0, refs.size, consolidating.size)] = True
                rows, cols = np.nonzero(hits)
                src.append(consolidating[rows])
                dst.append(refs[cols])
    src = np.concatenate(src).astype(np.int64)
    dst = np.concatenate(dst).astype(np.int64)
    ref_ptr, ref_idx = _csr(src, dst, n_works)
    cite_ptr, cite_idx = _csr(dst, src, n_works)

    # People and places.
    weights = np.array([w for _, w in text.COUNTRIES], dtype=float)
    countries = rng.choice([c for c, _ in text.COUNTRIES], size=400, p=weights / weights.sum())
    institutions = [(f"{text.name(rng, 3)} Institute of Science (synthetic)", str(cc)) for cc in countries]
    authors = [text.person(rng) for _ in range(max(2000, n_works // 4))]
    team = np.clip(rng.geometric(0.25, n_works), 1, 40)
    author_ptr = np.concatenate([[0], np.cumsum(team)]).astype(np.int64)
    author_idx = rng.integers(0, len(authors), size=int(author_ptr[-1])).astype(np.int32)
    home = rng.integers(0, len(institutions), size=n_works)
    stay = rng.random(int(author_ptr[-1])) < 0.6  # most co-authors share the first author's institution
    author_inst = np.where(stay, np.repeat(home, team), rng.integers(0, len(institutions), int(author_ptr[-1])))

    # Topics (real OpenAlex subfields) and concepts from each cell's vocabulary.
    topic_table, concept_table, cell_topics, cell_concepts = [], [], [], []
    for c, sub in enumerate(tax.cells):
        cell_topics.append([len(topic_table) + k for k in range(3)])
        for k in range(3):
            topic_table.append((f"T9{c:02d}{k:02d}", f"{sub.keywords[k]} research (synthetic topic)", c))
        cell_concepts.append([len(concept_table) + k for k in range(len(sub.keywords))])
        concept_table.extend((f"C9{c:02d}{k:03d}", kw) for k, kw in enumerate(sub.keywords))
    topics, concepts, titles, abstracts = [], [], [], []
    physics_stage: dict[int, str] = {}
    arxiv_id, arxiv_class, bibcode = {}, {}, {}
    disc_cells: dict[str, list[int]] = {}
    for c, s in enumerate(tax.cells):
        disc_cells.setdefault(s.discipline, []).append(c)
    stages, stage_p = zip(*PHYSICS_STAGES)
    for i in range(n_works):
        c = int(cell[i])
        sub = tax.cells[c]
        primary = int(rng.choice(cell_topics[c]))
        mine = [(primary, float(np.round(rng.uniform(0.9, 1.0), 4)))]
        for other in rng.choice(disc_cells[sub.discipline], size=int(rng.integers(0, 3))):
            mine.append((int(rng.choice(cell_topics[int(other)])), float(np.round(rng.uniform(0.3, 0.9), 4))))
        topics.append(mine)
        picks = rng.choice(cell_concepts[c], size=min(len(cell_concepts[c]), int(rng.integers(2, 7))), replace=False)
        concepts.append([(int(k), float(np.round(rng.uniform(0.2, 0.95), 4))) for k in picks])
        keywords = list(sub.keywords)
        stage = None
        if i < n_cand and sub.discipline == "physics":
            stage = str(rng.choice(stages, p=stage_p))
            physics_stage[i] = stage
        elif i < n_cand and rng.random() < 0.15:
            keywords = []  # found by the subfield back-fill only, not by the keyword search
        if stage in ("title", "unclassified"):
            titles.append(text.title(rng, [], str(rng.choice(sub.title_terms)) if stage == "title" else None))
            abstracts.append(text.abstract(rng, []))
        else:
            titles.append(text.title(rng, keywords))
            abstracts.append(text.abstract(rng, keywords))
        if sub.discipline != "physics":
            continue
        if stage in ("keywords", "title", "unclassified"):
            journal[i] = rng.choice(generic_physics)
        stem = journals[int(journal[i])].bibstem
        y = int(year[i])
        initial = authors[int(author_idx[author_ptr[i]])].split()[-1][0]
        bibcode[i] = _bibcode(y, stem, int(rng.integers(1, 999)), int(rng.integers(1, 9999)), initial)
        if stage == "arxiv" or (stage is None and rng.random() < 0.6):
            arxiv_class[i] = str(rng.choice(sub.arxiv_classes))
            month = f"{y % 100:02d}{(_EPOCH + timedelta(days=int(days[i]))).month:02d}"  # posted when published
            if y >= 2008:  # new-style ids: four digits after the dot until 2014, five since 2015
                digits = 5 if y >= 2015 else 4
                arxiv_id[i] = f"{month}.{int(rng.integers(1, 10**digits)):0{digits}d}"
            else:
                arxiv_id[i] = f"{arxiv_class[i].split('.')[0]}/{month}{int(rng.integers(1, 999)):03d}"
    return World(seed=seed, taxonomy=tax, n_candidates=n_cand, cell=cell, date=days.astype(np.int32),
                 journal=journal, ref_ptr=ref_ptr, ref_idx=ref_idx, cite_ptr=cite_ptr, cite_idx=cite_idx,
                 author_ptr=author_ptr, author_idx=author_idx, author_inst=author_inst.astype(np.int32),
                 topics=topics, concepts=concepts, titles=titles, abstracts=abstracts, journals=journals,
                 institutions=institutions, authors=authors, topic_table=topic_table, concept_table=concept_table,
                 arxiv_id=arxiv_id, arxiv_class=arxiv_class, bibcode=bibcode, physics_stage=physics_stage)
