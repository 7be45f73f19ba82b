"""The mirror's ADS search answers from its term index exactly what a scan of every work gives: the regex match of
a word or phrase in title and abstract, and the exact-valued fields, over random queries on the shared small world."""

import random
import re

import numpy as np
import pytest

from scitaste_hf.mirror.ads import AdsApi
from scitaste_hf.simworld.render import ADS_DOCTYPES


@pytest.fixture(scope="module")
def small(world):
    """The shared world with one in nine of its ADS works (1,504; a scan of all 13,536 per query would take long)."""
    import dataclasses

    return dataclasses.replace(world, bibcode=dict(list(world.bibcode.items())[::9]))


@pytest.fixture(scope="module")
def api(small):
    return AdsApi(small)


def _scan(world, field, text, haystacks=None):
    """What the search meant before the index: every work with a bibcode, its field matched by a regex
    (``haystacks``: the lower-cased text field of each, made once by the caller)."""
    collections = [world.taxonomy.discipline(c.discipline).ads_collections for c in world.taxonomy.cells]
    pattern = re.compile(r"(?<![a-z0-9])" + re.escape(text.lower()) + r"(?![a-z0-9])")
    mask = np.zeros(world.n_works, dtype=bool)
    for i in world.bibcode:
        if field == "bibstem":
            hit = world.journals[int(world.journal[i])].bibstem == text
        elif field == "arxiv_class":
            hit = world.arxiv_class.get(i) == text
        elif field == "doctype":
            hit = ADS_DOCTYPES[world.work_type(i)] == text
        elif field == "collection":
            hit = text in collections[int(world.cell[i])]
        else:
            hit = pattern.search(haystacks[i]) is not None
        mask[i] = hit
    return mask


def _texts(world, chance, n):
    """Words, phrases, word fragments and punctuation drawn from the world's titles and abstracts, cased at
    random."""
    works = list(world.bibcode)
    out = ["-", "", "x-ray", "of the", "zzzunknown"]
    while len(out) < n:
        i = chance.choice(works)
        text = chance.choice([world.titles[i], world.abstracts[i]])
        words = text.split()
        k = chance.randrange(len(words))
        kind = chance.randrange(4)
        if kind == 0:
            piece = words[k]
        elif kind == 1:
            piece = " ".join(words[k:k + chance.randint(2, 3)])
        elif kind == 2:
            start = chance.randrange(len(text))
            piece = text[start:start + chance.randint(1, 12)]  # cut anywhere: inside words, across spaces
        else:
            piece = words[k].strip(".,;:()")
        out.append(piece.upper() if chance.random() < 0.2 else piece)
    return out


def test_text_search_matches_the_scan(api, small):
    world = small
    chance = random.Random(7)
    texts = _texts(world, chance, 80)
    for field in ("title", "abs"):
        haystacks = {i: (world.titles[i] if field == "title" else f"{world.titles[i]} {world.abstracts[i]}").lower()
                     for i in world.bibcode}
        for text in texts:
            assert (api.match(field, f'"{text}"') == _scan(world, field, text, haystacks)).all(), (field, text)
    assert api.match("abs", texts[5]).any()  # the draws do find works, not only nothing


def test_exact_fields_and_identifiers_match_the_scan(api, small):
    world = small
    works = list(world.bibcode)
    values = {"bibstem": {world.journals[int(world.journal[i])].bibstem for i in works},
              "arxiv_class": set(world.arxiv_class.values()), "doctype": set(ADS_DOCTYPES.values()),
              "collection": {c for cell in world.taxonomy.cells
                             for c in world.taxonomy.discipline(cell.discipline).ads_collections}}
    for field, seen in values.items():
        for value in [*sorted(v for v in seen if v), "nothing", "None"]:
            assert (api.match(field, value) == _scan(world, field, value)).all(), (field, value)
    with_arxiv = next(i for i in works if i in world.arxiv_id)
    for text, expected in ((world.doi(works[3]), works[3]), (f"arXiv:{world.arxiv_id[with_arxiv]}", with_arxiv),
                           (world.bibcode[works[4]], works[4])):
        assert np.flatnonzero(api.match("identifier", text)).tolist() == [expected]
    assert not api.match("doi", "10.5555/none").any()
