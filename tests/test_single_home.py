"""One home for every fact: figures that a module or config file owns are not typed again in the texts that show
them (the Space's About tab, the dataset card, help texts, READMEs, docs); those texts are generated from the owner."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Where a fact may be written: its owner. Generated blocks of the docs, the tests, the changelog (history) and
#: the data files are not texts a fact is typed into.
FACTS = {
    "the default weights' raw figures": (r"(?<![\d.])(37\.99|19\.73|128\.86|71\.14|14\.228)(?![\d])",
                                         {"scitaste_hf/config/weights_default.json"}),
    "a middle weight rounded by hand": (r"0\.11041[45]", set()),
    "the selected papers per discipline in the card": (r"\b50 (papers )?per discipline", set()),
    "Scheme 1's points": (r"Spearman 15|15 S_rho|\(15 \*|30 \* 100", set()),
    "the WAPE bands": (r"90 ?-> ?75|\[5%?, 10%\)", set()),
    "the benchmark's size": (r"\b300 papers", set()),
}
TEXTS = ("scitaste_hf", "metrics", "space", "lm_eval_tasks", "bench", "docs")
GENERATED = re.compile(r"<!-- generated: [\w-]+ -->.*?<!-- /generated -->", re.DOTALL)


def _texts():
    files = [p for folder in TEXTS for p in (ROOT / folder).rglob("*")
             if p.suffix in (".py", ".md", ".yaml", ".json") and "data" not in p.relative_to(ROOT).parts]
    return [*files, *ROOT.glob("*.md")]


@pytest.mark.parametrize("fact", FACTS)
def test_a_fact_is_typed_only_in_its_home(fact):
    pattern, homes = FACTS[fact]
    found = []
    for path in _texts():
        name = path.relative_to(ROOT).as_posix()
        # bench_scoring.py times the scoring against an independent numpy rewrite of it, numbers included
        if name in homes or name in ("CHANGELOG.md", "bench/bench_scoring.py"):
            continue
        text = GENERATED.sub("", path.read_text("utf-8"))
        found += [f"{name}: {m.group(0)!r}" for m in re.finditer(pattern, text)]
    if fact == "the benchmark's size":  # measurements may say what they were taken on; cards take the setting
        found = [f for f in found if f.split("/")[0] in ("metrics", "lm_eval_tasks", "space")]
    if fact.endswith("in the card"):  # the benchmark's size may be stated as such; the card must take the build's
        found = [f for f in found if f.startswith("scitaste_hf/builder/")]
    assert not found, f"{fact} typed outside its home: {found}"


def test_the_space_and_the_card_state_the_weights_generated():
    import importlib.util

    from scitaste_hf.builder.layout import card
    from scitaste_hf.weights import DEFAULT_WEIGHTS, weights_note

    note = weights_note()
    assert "37.99" in note and "19.73" in note and "128.86" in note and "71.14" in note
    spec = importlib.util.spec_from_file_location("space_app_about", ROOT / "space" / "app.py")
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    assert note in app.about()
    text = card({"selected": 60, "backup": 120}, DEFAULT_WEIGHTS, synthetic=True)
    assert note in text and "10 papers per discipline give wide intervals" in text


#: Three discipline names close together, in code (a tuple, or a dict keyed by them) or prose: a discipline list.
_LIST = r"\b(?:{0})\b[^\n]{{1,14}}?\b(?:{0})\b[^\n]{{1,14}}?\b(?:{0})\b"


def test_a_discipline_list_is_typed_only_in_the_taxonomy_files():
    """The taxonomy files are the disciplines' one home (order, codes, citation cultures, cells); code takes them
    from `scitaste_hf.taxonomy` (`schema.DISCIPLINES` is read from the default file) and texts from generated
    blocks. Three names of the packaged disciplines in a row anywhere else are a list typed again."""
    from scitaste_hf.taxonomy import packaged_disciplines

    names = "|".join(n.replace("_", r"[ _]") for n in packaged_disciplines())
    pattern = re.compile(_LIST.format(names), re.IGNORECASE)
    found = []
    for path in _texts():
        name = path.relative_to(ROOT).as_posix()
        if name == "CHANGELOG.md" or (name.startswith("scitaste_hf/config/taxonomy") and name.endswith(".yaml")):
            continue
        text = GENERATED.sub("", path.read_text("utf-8"))
        found += [f"{name}: {m.group(0)!r}" for m in pattern.finditer(text)]
    assert not found, f"a discipline list typed outside the taxonomy files: {found}"
