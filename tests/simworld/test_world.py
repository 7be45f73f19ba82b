"""The simulated world: deterministic, at scale, and shaped like the real services' data."""

import re
from collections import Counter

import numpy as np
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.simworld.text import SYNTHETIC_NOTE
from scitaste_hf.simworld.world import generate

BIBCODE = re.compile(r"^\d{4}[A-Za-z&.]{5}[\d.]{4}[A-Z.][\d.]{4}[A-Z]$")
ARXIV = re.compile(r"^(\d{4}\.\d{4,5}|[a-z-]+/\d{7})$")


def test_same_seed_same_world(world, fresh_worlds):
    again = generate(papers=470, seed=3)
    assert np.array_equal(again.ref_idx, world.ref_idx) and np.array_equal(again.date, world.date)
    assert again.titles == world.titles and again.bibcode == world.bibcode
    other = generate(papers=470, seed=4)
    assert other.titles != world.titles


def test_candidates_per_discipline_and_cell(world):
    counts = Counter(world.cell[: world.n_candidates].tolist())
    assert len(counts) == 47
    # 470 papers: 78 or 79 per discipline, spread over its cells, then SURPLUS (1.5x) candidates per cell
    finance = [counts[c] for c, s in enumerate(world.taxonomy.cells) if s.discipline == "finance"]
    assert finance == [15] * 6 + [14] * 2  # quotas 10, 10, 10, 10, 10, 10, 9, 9
    medicine = [counts[c] for c, s in enumerate(world.taxonomy.cells) if s.discipline == "medicine"]
    assert medicine == [18] + [17] * 6  # quotas 12, 11, ..., 11
    assert world.n_candidates == sum(counts.values()) > 1.45 * 470
    with pytest.raises(ScitasteError, match="at least 47"):
        generate(papers=20)


def test_journal_table_spans_the_partitions(world, tmp_path):
    from scitaste_hf.index import JournalTable
    from scitaste_hf.simworld.render import journal_table_csv

    path = tmp_path / "journals.csv"
    path.write_text(journal_table_csv(world))
    table = JournalTable.read(path)
    assert len(table.entries) == len(world.journals)
    listed = [e for e in table.entries if e.impact_factor is not None]
    assert {e.jcr_quartile for e in listed} == {"Q1", "Q2", "Q3", "Q4"}
    assert {e.cas_zone for e in listed} == {1, 2, 3, 4}
    assert 0 < len(table.entries) - len(listed) < 0.15 * len(table.entries)  # a few in neither table
    # quartiles follow the impact factor within a discipline
    for d in {j.discipline for j in world.journals}:
        mine = [j for j in world.journals if j.discipline == d and j.jcr_quartile]
        q1 = min(j.impact_factor for j in mine if j.jcr_quartile == "Q1")
        q4 = max(j.impact_factor for j in mine if j.jcr_quartile == "Q4")
        assert q1 > q4


def test_citation_graph_respects_dates(world):
    for i in range(world.n_candidates):
        refs, citers = world.references(i), world.citers(i)
        assert np.all(world.date[refs] < world.date[i])
        assert np.all(world.date[citers] > world.date[i])
    counts = np.diff(world.cite_ptr)[: world.n_candidates]
    assert counts.max() > 5 * max(1, np.median(counts))  # heavy tailed
    # some citers also cite the paper's references and some do not: the CD index is spread out
    shares = []
    for i in range(world.n_candidates):
        refs = set(world.references(i).tolist())
        citers = world.citers(i)
        if len(citers) >= 5 and refs:
            shares.append(np.mean([bool(refs & set(world.references(c).tolist())) for c in citers]))
    assert min(shares) < 0.3 and max(shares) > 0.7
    # about half on average, as the disruption trait draws them: a citer meant to cite the paper alone never cites
    # one of its references by chance (which in this small world's cells would make it some 0.7)
    assert 0.35 < np.mean(shares) < 0.55


def test_a_smaller_world_is_the_default_world_with_fewer_candidates(world):
    """A 470-paper world has the 6,000-paper world's works in every cell: ceil(1.5 x 125) = 188 drawn as candidates
    in most cells (215 or 213 in medicine's seven), of which it offers its own quota, and 8 works around each."""
    works = Counter(world.cell.tolist())
    medicine = {c for c, s in enumerate(world.taxonomy.cells) if s.discipline == "medicine"}
    assert {n for c, n in works.items() if c not in medicine} == {9 * 188}
    assert sorted(works[c] for c in medicine) == [9 * 213] + [9 * 215] * 6
    # the candidates it does not offer are works around the others: no article, cited by none of them
    assert world.work_type(world.n_candidates) != "article"
    assert not np.isin(world.ref_idx[: world.ref_ptr[world.n_candidates]], np.arange(world.n_candidates, 9023)).any()


def test_candidates_come_in_research_fronts(world):
    """The candidates of a front (FRONT consecutive ones of a cell) draw their keywords together: nearly every title
    of a front that names a keyword of its cell names the same one (independent draws would share one in about a
    third)."""
    from scitaste_hf.simworld.world import FRONT

    counts = Counter(world.cell[: world.n_candidates].tolist())
    start, shares = 0, []
    for c, sub in enumerate(world.taxonomy.cells):
        for first in range(start, start + counts[c], FRONT):
            named = [{k for k in sub.keywords if re.search(rf"\b{re.escape(k)}\b", world.titles[i].lower())}
                     for i in range(first, min(start + counts[c], first + FRONT))]
            named = [k for k in named if k]
            if sub.discipline != "physics" and named:  # physics' late cascade stages title with other terms
                shares.append(Counter(k for ks in named for k in ks).most_common(1)[0][1] / len(named))
        start += counts[c]
    assert len(shares) == 39 and min(shares) > 0.8


def test_physics_identifiers_and_cascade_stages(world):
    physics = [i for i in range(world.n_candidates) if world.discipline(i) == "physics"]
    assert all(BIBCODE.match(world.bibcode[i]) for i in physics), [world.bibcode[i] for i in physics[:5]]
    assert all(ARXIV.match(a) for a in world.arxiv_id.values())
    stages = Counter(world.cascade_stage[i] for i in physics)
    assert stages["arxiv"] > stages["journal"] > 0
    for i in physics:
        has_class = i in world.arxiv_class
        assert has_class == (world.cascade_stage[i] == "arxiv")
        stem = world.journals[int(world.journal[i])].bibstem
        own = world.taxonomy.cells[int(world.cell[i])].bibstems
        if world.cascade_stage[i] in ("arxiv", "journal"):
            assert stem in own
        else:
            assert stem not in own


def test_everything_says_synthetic(world):
    assert all(a.endswith(SYNTHETIC_NOTE) for a in world.abstracts)
    assert all(j.name.endswith("(synthetic)") for j in world.journals)
    sub = world.taxonomy.cells[int(world.cell[0])]
    assert world.topic_table[world.topics[0][0][0]][2] == 0 and sub.id == "physics.classical"


def test_same_world_in_every_process(fresh_worlds):
    """Nothing in the generation depends on Python's per-process string hashing."""
    import os
    import subprocess
    import sys

    code = ("import hashlib; from scitaste_hf.simworld.world import generate; "
            "from scitaste_hf.simworld.render import journal_table_csv; w = generate(60, 1); "
            "print(hashlib.sha256((journal_table_csv(w) + ''.join(w.titles) + str(w.ref_idx.tolist())).encode())"
            ".hexdigest())")
    digests = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(digests) == 1
