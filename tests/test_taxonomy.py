"""The taxonomy file: the paper's cell counts, real subfield ids, and clear errors for broken files."""

import pytest
import yaml

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DISCIPLINES
from scitaste_hf.taxonomy import EXPECTED_COUNTS, load_taxonomy


def test_packaged_taxonomy():
    tax = load_taxonomy()
    assert [len(tax.of(d)) for d in DISCIPLINES] == [8, 8, 8, 8, 7, 8]
    assert len(tax.cells) == 47 == sum(EXPECTED_COUNTS.values())
    quantum = tax.get("physics.quantum")
    assert "quant-ph" in quantum.arxiv_classes and "PhRvA" in quantum.bibstems
    assert tax.get("physics.condensed").bibstems[:2] == ("PhRvB", "NatMa")
    assert tax.get("finance.accounting").subfield_id == "https://openalex.org/subfields/1402"
    assert all(c.openalex_subfield for c in tax.cells)
    arxiv = [a for c in tax.of("physics") for a in c.arxiv_classes]
    assert len(arxiv) == len(set(arxiv))  # a class decides one sub-discipline only


def _write(tmp_path, data):
    path = tmp_path / "tax.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture()
def raw():
    from importlib import resources

    return yaml.safe_load(resources.files("scitaste_hf").joinpath("config/taxonomy.yaml").read_text())


def test_unknown_discipline(tmp_path, raw):
    raw["astrology"] = raw.pop("finance")
    with pytest.raises(ScitasteError, match="unknown discipline 'astrology'"):
        load_taxonomy(_write(tmp_path, raw))


def test_duplicate_sub_discipline_id(tmp_path, raw):
    raw["chemistry"][1]["id"] = raw["chemistry"][0]["id"]
    with pytest.raises(ScitasteError, match=r"duplicate sub-discipline id 'chemistry\.analytical'"):
        load_taxonomy(_write(tmp_path, raw))


def test_wrong_counts_and_missing_fields(tmp_path, raw):
    bad = {**raw, "medicine": raw["medicine"][:6]}
    with pytest.raises(ScitasteError, match="medicine needs 7 sub-disciplines, has 6"):
        load_taxonomy(_write(tmp_path, bad))
    del raw["biology"][0]["openalex_subfield"]
    with pytest.raises(ScitasteError, match=r"biology\.genetics needs an integer openalex_subfield"):
        load_taxonomy(_write(tmp_path, raw))


def test_unreadable_files(tmp_path):
    with pytest.raises(ScitasteError, match="not found"):
        load_taxonomy(tmp_path / "none.yaml")
    (tmp_path / "bad.yaml").write_text("physics: [unclosed")
    with pytest.raises(ScitasteError, match="not valid YAML"):
        load_taxonomy(tmp_path / "bad.yaml")


def test_keywords_do_not_overlap_within_a_subfield():
    """Cells that share an OpenAlex subfield are told apart by keywords alone, so no keyword of one may occur
    inside a keyword of another (the keyword search would collect the other cell's papers)."""
    from scitaste_hf.builder.classify import keyword_hits

    tax = load_taxonomy()
    for a in tax.cells:
        for b in tax.cells:
            if a.id != b.id and a.openalex_subfield == b.openalex_subfield and a.discipline != "physics":
                clashes = [k for k in b.keywords if keyword_hits(k, a.keywords)]
                assert not clashes, (a.id, b.id, clashes)
