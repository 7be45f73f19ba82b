"""The taxonomy files: the paper's cell counts, real subfield ids, the extended taxonomy on top of the default,
and clear errors for broken files."""

import ast
import re
from pathlib import Path

import pytest
import yaml

import scitaste_hf
from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DISCIPLINES
from scitaste_hf.taxonomy import discipline_order, load_taxonomy, packaged_disciplines

NEW = ("computer_science", "materials_science", "earth_science", "social_sciences")


def test_packaged_taxonomy():
    tax = load_taxonomy()
    assert tax.names == DISCIPLINES == ("physics", "mathematics", "chemistry", "biology", "medicine", "finance")
    assert [len(tax.of(d)) for d in DISCIPLINES] == [8, 8, 8, 8, 7, 8]  # paper Table 2
    assert len(tax.cells) == 47
    assert [d.code for d in tax.disciplines] == ["PHYS", "MATH", "CHEM", "BIOL", "MEDI", "FINA"]
    assert tax.discipline("medicine").citation_culture == 0.15 and tax.discipline("physics").citation_culture == 0
    quantum = tax.get("physics.quantum")
    assert "quant-ph" in quantum.arxiv_classes and "PhRvA" in quantum.bibstems
    assert tax.get("physics.condensed").bibstems[:2] == ("PhRvB", "NatMa")
    assert tax.get("finance.accounting").subfield_id == "https://openalex.org/subfields/1402"
    assert all(c.openalex_subfield for c in tax.cells)
    arxiv = [a for c in tax.of("physics") for a in c.arxiv_classes]
    assert len(arxiv) == len(set(arxiv))  # a class decides one sub-discipline only
    assert load_taxonomy("default") is tax
    assert [d.name for d in tax.by_route("ads")] == ["physics"]
    assert tax.discipline("physics").ads_collections == ("physics", "astronomy")
    assert all(d.route == "openalex" and not d.ads_collections for d in tax.disciplines[1:])


def test_extended_taxonomy_adds_four_disciplines_to_the_default_unchanged():
    default, extended = load_taxonomy(), load_taxonomy("extended")
    assert extended.names == (*DISCIPLINES, *NEW) == packaged_disciplines()
    assert extended.cells[:len(default.cells)] == default.cells
    assert [len(extended.of(d)) for d in NEW] == [8, 7, 8, 8]
    assert [extended.discipline(d).code for d in NEW] == ["COMP", "MATS", "EART", "SOCI"]
    # Each new discipline sits in its OpenAlex field (the subfield id's first two digits), none in a default cell's
    # subfield (a work would be collected for two disciplines).
    fields = {"computer_science": 17, "materials_science": 25, "earth_science": 19, "social_sciences": 33}
    assert all(c.openalex_subfield // 100 == fields[c.discipline] for d in NEW for c in extended.of(d))
    assert not {c.openalex_subfield for d in NEW for c in extended.of(d)} & {c.openalex_subfield for c in default.cells}
    assert "cs.CV" in extended.get("computer_science.vision").arxiv_classes
    assert "physics.geo-ph" in extended.get("earth_science.geophysics").arxiv_classes


def test_the_simulated_world_knows_every_packaged_subfield():
    from scitaste_hf.simworld.render import SUBFIELDS

    cells = load_taxonomy("extended").cells
    assert all(SUBFIELDS[c.openalex_subfield][1] == c.openalex_subfield // 100 for c in cells)


def test_discipline_order_follows_the_taxonomies_then_names():
    assert discipline_order(["zoology", "social_sciences", "finance", "physics", "astrology"]) == [
        "physics", "finance", "social_sciences", "astrology", "zoology"]


def _write(tmp_path, data, name="tax.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.fixture()
def raw():
    from importlib import resources

    return yaml.safe_load(resources.files("scitaste_hf").joinpath("config/taxonomy.yaml").read_text())


def test_a_file_extends_a_packaged_taxonomy_or_another_file(tmp_path, raw):
    astro = {"code": "ASTR", "sub_disciplines": [{"id": "astrology.signs", "name": "Signs", "openalex_subfield": 3103,
                                                  "keywords": ["zodiac"]}]}
    tax = load_taxonomy(_write(tmp_path, {"extends": "extended", "astrology": astro}))
    assert tax.names == (*DISCIPLINES, *NEW, "astrology") and tax.discipline("astrology").citation_culture == 0
    # A discipline the base has keeps what the file does not set: here its code and citation culture.
    cells = raw["finance"]["sub_disciplines"][:2]
    child = _write(tmp_path, {"extends": "tax.yaml", "finance": {"sub_disciplines": cells}}, "child.yaml")
    tax = load_taxonomy(child)
    assert [c.id for c in tax.of("finance")] == ["finance.asset_pricing", "finance.corporate"]
    assert tax.discipline("finance").code == "FINA" and tax.names[-1] == "astrology"


def test_bad_extends(tmp_path):
    with pytest.raises(ScitasteError, match=r"extends an unknown taxonomy 'nonesuch'"):
        load_taxonomy(_write(tmp_path, {"extends": "nonesuch"}))
    _write(tmp_path, {"extends": "b.yaml"}, "a.yaml")
    with pytest.raises(ScitasteError, match="which extends it in turn"):
        load_taxonomy(_write(tmp_path, {"extends": "a.yaml"}, "b.yaml"))


def test_unknown_packaged_name(tmp_path):
    with pytest.raises(ScitasteError, match=r"taxonomy 'extnded' not found: neither a packaged one \(default, "):
        load_taxonomy("extnded")


def test_discipline_without_a_code(tmp_path, raw):
    del raw["finance"]["code"]
    with pytest.raises(ScitasteError, match="discipline 'finance' needs a code of 2-8 capital letters"):
        load_taxonomy(_write(tmp_path, raw))
    raw["finance"]["code"] = "MATH"
    with pytest.raises(ScitasteError, match="discipline 'finance' reuses the code 'MATH'"):
        load_taxonomy(_write(tmp_path, raw))


def test_malformed_disciplines(tmp_path, raw):
    with pytest.raises(ScitasteError, match="discipline name 'Astrology' must be lower-case"):
        load_taxonomy(_write(tmp_path, {**raw, "Astrology": raw["finance"]}))
    # The old layout, a bare list of cells, names what an entry needs.
    with pytest.raises(ScitasteError, match="discipline 'finance' needs a mapping of code, citation_culture"):
        load_taxonomy(_write(tmp_path, {**raw, "finance": raw["finance"]["sub_disciplines"]}))
    with pytest.raises(ScitasteError, match="discipline 'finance' has an unknown key 'cells'"):
        load_taxonomy(_write(tmp_path, {**raw, "finance": {"code": "FINA", "cells": []}}))
    with pytest.raises(ScitasteError, match="discipline 'finance' has no sub_disciplines"):
        load_taxonomy(_write(tmp_path, {**raw, "finance": {"code": "FINA", "sub_disciplines": []}}))
    with pytest.raises(ScitasteError, match="discipline 'finance' needs a numeric citation_culture"):
        load_taxonomy(_write(tmp_path, {**raw, "finance": {**raw["finance"], "citation_culture": "high"}}))


def test_duplicate_sub_discipline_id(tmp_path, raw):
    cells = raw["chemistry"]["sub_disciplines"]
    cells[1]["id"] = cells[0]["id"]
    with pytest.raises(ScitasteError, match=r"duplicate sub-discipline id 'chemistry\.analytical'"):
        load_taxonomy(_write(tmp_path, raw))


def test_missing_fields(tmp_path, raw):
    del raw["biology"]["sub_disciplines"][0]["openalex_subfield"]
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

    tax = load_taxonomy("extended")
    for a in tax.cells:
        for b in tax.cells:
            if a.id != b.id and a.openalex_subfield == b.openalex_subfield and not tax.uses_ads(a.discipline):
                clashes = [k for k in b.keywords if keyword_hits(k, a.keywords)]
                assert not clashes, (a.id, b.id, clashes)


def _cell(**changes):
    return {"id": "astrology.signs", "name": "Signs", "openalex_subfield": 3103, "keywords": ["zodiac"], **changes}


def _astrology(tmp_path, **changes):
    astrology = {"code": "ASTR", "sub_disciplines": [_cell(**changes)]}
    return _write(tmp_path, {"extends": "default", "astrology": astrology})


@pytest.mark.parametrize(("changes", "message"), [
    # a string where a list belongs was split into one-character keywords
    ({"keywords": "alpha"}, r"astrology\.signs: keywords must be a list of non-empty strings, got 'alpha'"),
    ({"keywords": 7}, r"astrology\.signs: keywords must be a list of non-empty strings, got 7"),
    ({"keywords": ["zodiac", {"a": 1}]}, r"astrology\.signs: keywords must be a list of non-empty strings"),
    ({"title_terms": "sign"}, r"astrology\.signs: title_terms must be a list of non-empty strings"),
    ({"arxiv_classes": 3}, r"astrology\.signs: arxiv_classes must be a list of non-empty strings"),
    ({"name": {"en": "Signs"}}, r"astrology\.signs: name must be a non-empty string, got \{'en': 'Signs'\}"),
    ({"id": {"a": 1}}, r"every astrology sub-discipline needs an id of letters, digits, '\.', '_' and '-', got "),
    ({"openalex_subfield": int("9" * 4000)}, r"astrology\.signs: openalex_subfield must be an OpenAlex subfield id "
                                               r"\(1 to 99999\), got 9999"),
    ({"openalex_subfield": -3}, r"astrology\.signs: openalex_subfield must be an OpenAlex subfield id"),
    ({"keyword": ["zodiac"]}, r"astrology\.signs has an unknown key 'keyword'; expected id, name, openalex_subfield"),
])
def test_a_cell_of_the_wrong_shape_is_refused_in_one_line(tmp_path, changes, message):
    with pytest.raises(ScitasteError, match=message) as error:
        load_taxonomy(_astrology(tmp_path, **changes))
    assert "\n" not in str(error.value) and "tax.yaml" in str(error.value)


def test_hostile_taxonomy_files_are_refused_in_one_line(tmp_path):
    import os

    laughs = "\n".join([f"l0: &l0 [{', '.join(['lol'] * 9)}]"] + [
        f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 10)])
    bomb = tmp_path / "laughs.yaml"
    bomb.write_text(f"{laughs}\nastrology:\n  code: ASTR\n  sub_disciplines:\n"
                    "    - {id: a.b, name: B, openalex_subfield: 3103, keywords: *l9}\n")
    with pytest.raises(ScitasteError, match=r"laughs\.yaml has more than 1,000,000 values once its aliases are"):
        load_taxonomy(bomb)
    digits = tmp_path / "digits.yaml"
    digits.write_text(f"astrology:\n  code: ASTR\n  sub_disciplines:\n    - {{id: a.b, name: B, keywords: [x], "
                      f"openalex_subfield: {'9' * 5000}}}\n")
    with pytest.raises(ScitasteError, match=r"digits\.yaml is not valid YAML \(Exceeds the limit"):
        load_taxonomy(digits)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("astrology:\n  code: ASTR # Astrologie f\xfcr alle\n".encode("latin-1"))
    with pytest.raises(ScitasteError, match=r"latin\.yaml is not UTF-8 text \(byte 38 is 0xfc\); save it as UTF-8"):
        load_taxonomy(latin)
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)  # nobody writes it: a blocking open would wait for ever
    with pytest.raises(ScitasteError, match=r"fifo\.yaml is not a regular file"):
        load_taxonomy(fifo)
    _write(tmp_path, {"extends": "fifo.yaml"}, "over_fifo.yaml")
    with pytest.raises(ScitasteError, match=r"fifo\.yaml is not a regular file"):
        load_taxonomy(tmp_path / "over_fifo.yaml")


def test_an_extends_chain_is_bounded(tmp_path):
    from scitaste_hf.taxonomy import MAX_EXTENDS

    astro = {"code": "ASTR", "sub_disciplines": [_cell()]}
    _write(tmp_path, {"extends": "default", "astrology": astro}, "t0.yaml")
    for i in range(1, 1500):
        _write(tmp_path, {"extends": f"t{i - 1}.yaml"}, f"t{i}.yaml")
    # t<i> follows i + 1 links, the last to the packaged default
    assert load_taxonomy(tmp_path / f"t{MAX_EXTENDS - 1}.yaml").names[-1] == "astrology"
    with pytest.raises(ScitasteError, match=rf"t{MAX_EXTENDS}\.yaml: a chain of more than {MAX_EXTENDS} extends "
                                            rf"\(stopped at \S*t0\.yaml, which extends 'default'\)"):
        load_taxonomy(tmp_path / f"t{MAX_EXTENDS}.yaml")
    with pytest.raises(ScitasteError, match=rf"t1499\.yaml: a chain of more than {MAX_EXTENDS} extends "
                                            rf"\(stopped at \S*t{1499 - MAX_EXTENDS}\.yaml") as e:
        load_taxonomy(tmp_path / "t1499.yaml")
    assert "\n" not in str(e.value)
    _write(tmp_path, {"extends": "self.yaml"}, "self.yaml")
    with pytest.raises(ScitasteError, match="which extends it in turn"):
        load_taxonomy(tmp_path / "self.yaml")


@pytest.mark.parametrize("name", ["overall"])
def test_a_discipline_may_not_take_a_name_the_board_reserves(tmp_path, name):
    from scitaste_hf.taxonomy import OVERALL, RESERVED_NAMES

    assert OVERALL in RESERVED_NAMES and name in RESERVED_NAMES
    path = _write(tmp_path, {"extends": "default", name: {"code": "ALLX", "sub_disciplines": [_cell()]}})
    with pytest.raises(ScitasteError, match=rf"tax\.yaml: discipline name '{name}' is reserved: the leaderboard "):
        load_taxonomy(path)


def test_a_discipline_named_twice_is_refused_not_merged(tmp_path):
    # YAML kept the second entry only: the first one's cells were silently gone
    cell = "    - {{id: bio.{0}, name: B{0}, openalex_subfield: 1311, keywords: [k{0}]}}\n"
    path = tmp_path / "twice.yaml"
    path.write_text("biology:\n  code: BIOL\n  sub_disciplines:\n" + cell.format(1)
                    + "biology:\n  code: BIOX\n  sub_disciplines:\n" + cell.format(2))
    with pytest.raises(ScitasteError, match=r"^\S+twice\.yaml repeats the key 'biology' in one mapping \(line 5\)$"):
        load_taxonomy(path)
    # a cell that names a key twice is refused the same way
    path.write_text("biology:\n  code: BIOL\n  sub_disciplines:\n"
                    "    - {id: bio.1, name: B, openalex_subfield: 1311, keywords: [a], keywords: [b]}\n")
    with pytest.raises(ScitasteError, match=r"repeats the key 'keywords' in one mapping \(line 4\)$"):
        load_taxonomy(path)


def _routed(tmp_path, cell=None, **entry):
    astrology = {"code": "ASTR", **entry, "sub_disciplines": [cell or _cell(
        arxiv_classes=["astro-ph.GA"], bibstems=["ApJ"], title_terms=["sign"])]}
    return _write(tmp_path, {"extends": "default", "astrology": astrology})


@pytest.mark.parametrize(("entry", "message"), [
    ({"route": "crossref"}, r"discipline 'astrology': route must be one of openalex, ads, got 'crossref'$"),
    ({"route": ["ads"]}, r"discipline 'astrology': route must be one of openalex, ads, got \['ads'\]$"),
    ({"route": "ads"}, r"discipline 'astrology' of route ads needs ads_collections \(the ADS collections"),
    ({"route": "ads", "ads_collections": "astronomy"},
     r"discipline 'astrology': ads_collections must be a list of non-empty strings, got 'astronomy'$"),
    ({"ads_collections": ["astronomy"]},
     r"discipline 'astrology': ads_collections are for a discipline of route ads, not openalex$"),
    ({"route": "ads", "ads_collections": ["astronomy"], "cell": _cell()},
     r"astrology\.signs needs arxiv_classes, bibstems and title_terms \(its discipline 'astrology' is of route ads"),
])
def test_a_bad_route_is_refused_in_one_line(tmp_path, entry, message):
    with pytest.raises(ScitasteError, match=message) as error:
        load_taxonomy(_routed(tmp_path, **entry))
    assert "\n" not in str(error.value) and "tax.yaml" in str(error.value)


def test_a_file_chooses_each_discipline_s_route(tmp_path):
    tax = load_taxonomy(_routed(tmp_path, route="ads", ads_collections=["astronomy"]))
    assert [d.name for d in tax.by_route("ads")] == ["physics", "astrology"]
    assert tax.uses_ads("astrology") and tax.discipline("astrology").ads_collections == ("astronomy",)
    # a file that extends the default may take physics off the ADS route (its inherited collections with it)
    path = _write(tmp_path, {"extends": "default", "physics": {"route": "openalex", "ads_collections": None}})
    assert load_taxonomy(path).by_route("ads") == ()
    # an openalex cell needs no cascade data
    assert not load_taxonomy(_routed(tmp_path, cell=_cell())).uses_ads("astrology")


def _discipline_literals(tree: ast.AST) -> list[int]:
    """Lines of the string literals that name the physics discipline or one of its cells (``"physics"``,
    ``'physics.quantum'``): a route or a label keyed on the name rather than read from the taxonomy."""
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and re.fullmatch(r"physics(\.\w+)?", node.value.strip(), re.IGNORECASE)]


def test_no_module_of_the_package_names_physics():
    """A discipline is data: which disciplines come from ADS and are labelled by the cascade is the taxonomy's
    ``route``, so no module of the package compares a discipline with the literal name of one."""
    package = Path(scitaste_hf.__file__).parent
    found = {str(p.relative_to(package)): lines for p in sorted(package.rglob("*.py"))
             if (lines := _discipline_literals(ast.parse(p.read_text("utf-8"))))}
    assert not found, found
    # the scan sees such a literal wherever it stands: compared, a key, in a tuple, an argument, a cell id
    for code in ('if d == "physics": pass', "x = {'physics': 1}", 'x = ("physics", "astronomy")',
                 'tax.of("Physics ")', 'f"{x}" == "physics.quantum"'):
        assert _discipline_literals(ast.parse(code)) == [1], code
    prose = '"""physics papers"""\nx = "astrophysics"\ny = "Physics and Astronomy"'
    assert _discipline_literals(ast.parse(prose)) == []
