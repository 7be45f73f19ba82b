"""A taxonomy cell may hold one or two keywords (the taxonomy's rule is at least one): the world still has three
topics per cell, named after the cell's keywords in turn, and every paper's text draws on them."""

from scitaste_hf.simworld.world import generate
from scitaste_hf.taxonomy import parse_taxonomy

TAXONOMY = {"finance": {"code": "FINA", "sub_disciplines": [
    {"id": "finance.one", "name": "One", "openalex_subfield": 2003, "keywords": ["asset pricing"]},
    {"id": "finance.two", "name": "Two", "openalex_subfield": 2002, "keywords": ["volatility", "garch"]},
]}}


def test_cells_of_one_and_two_keywords_make_a_world():
    world = generate(papers=300, seed=1, taxonomy=parse_taxonomy(TAXONOMY, "sparse"))
    names = [name for _, name, _ in world.topic_table]
    assert names == ["asset pricing research (synthetic topic)"] * 3 + [
        "volatility research (synthetic topic)", "garch research (synthetic topic)",
        "volatility research (synthetic topic)"]
