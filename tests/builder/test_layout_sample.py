"""Classification, sampling and the Hub layout of the dataset builder, on small hand-made inputs."""

import hashlib
from collections import Counter

import numpy as np
import pytest

from scitaste_hf.builder.classify import cascade, deduplicate, keyword_hits
from scitaste_hf.builder.layout import card, write_dataset
from scitaste_hf.builder.sample import sample_splits, stratified
from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS, DISCIPLINES, record_features
from scitaste_hf.taxonomy import load_taxonomy
from scitaste_hf.weights import DEFAULT_WEIGHTS, composite

TAX = load_taxonomy()
PHYSICS = TAX.of("physics")


def test_cascade_first_stage_that_fires_decides():
    label = cascade(PHYSICS, arxiv_class="quant-ph", bibstem="PhRvB", title="graphene", abstract="")
    assert (label.cell, label.stage) == ("physics.quantum", "arxiv")
    label = cascade(PHYSICS, arxiv_class="astro-ph", bibstem=None, title="", abstract="")
    assert (label.cell, label.stage) == ("physics.astrophysics", "arxiv")  # old-style archive, no subject class
    label = cascade(PHYSICS, arxiv_class=None, bibstem="MNRAS", title="qubit", abstract="")
    assert (label.cell, label.stage) == ("physics.astrophysics", "journal")
    label = cascade(PHYSICS, arxiv_class=None, bibstem="EPL", title="On pairing",
                             abstract="We relate superconductivity to graphene and phonons.")
    assert (label.cell, label.stage) == ("physics.condensed", "keywords")
    one_hit = cascade(PHYSICS, arxiv_class=None, bibstem=None, title="Galaxy maps",
                               abstract="A study of superconductivity.")
    assert (one_hit.cell, one_hit.stage) == ("physics.astrophysics", "title")  # one keyword is not enough
    none = cascade(PHYSICS, arxiv_class=None, bibstem=None, title="A report", abstract="Nothing here.")
    assert (none.cell, none.stage) == (None, "unclassified")


@pytest.mark.parametrize(("ads", "collect", "classify"), [
    (None, "1. **Collect**: physics from NASA ADS", "3. **Classify**: physics by a four-stage cascade"),
    (["astronomy", "geophysics", "physics"], "1. **Collect**: astronomy, geophysics and physics from NASA ADS",
     "3. **Classify**: astronomy, geophysics and physics by a four-stage cascade"),
    ([], "1. **Collect**: the six disciplines as OpenAlex's API lists them",
     "3. **Classify**: every discipline by construction"),
])
def test_the_card_names_the_disciplines_of_the_ads_route(ads, collect, classify):
    text = card({"selected": 6, "backup": 6}, DEFAULT_WEIGHTS, synthetic=True, ads_disciplines=ads)
    assert collect in text and classify in text
    assert ("NASA ADS" in text) == (ads != [])


def test_keyword_hits_are_whole_words():
    assert keyword_hits("Graphene and laser-driven phonons", ["graphene", "phonon", "laser"]) == 2
    assert keyword_hits("superconductivity", ["superconductivity", "conductivity"]) == 1


def test_deduplicate_keeps_best_matching_cell():
    collected = {"finance.banking": ["W1", "W2"], "finance.asset_pricing": ["W1", "W3"]}
    texts = {"W1": "bank credit lending and expected return", "W2": "x", "W3": "y"}
    assert deduplicate(collected, texts, TAX) == {"W1": "finance.banking", "W2": "finance.banking",
                                                  "W3": "finance.asset_pricing"}
    tie = deduplicate({"finance.banking": ["W9"], "finance.asset_pricing": ["W9"]}, {"W9": ""}, TAX)
    assert tie == {"W9": "finance.asset_pricing"}  # taxonomy order


def _records(per_cell=130, seed=0, unclassified=10):
    rng = np.random.default_rng(seed)
    out = []
    for cell in TAX.cells:
        n = per_cell if cell.discipline != "medicine" else per_cell + 20
        for k in range(n):
            dims = {d: round(float(rng.uniform(0, 100)), 2) for d in DIMENSIONS}
            out.append({"bibcode": f"{cell.id}.{k:04d}", "discipline": cell.discipline, "subcategory_id": cell.id,
                        "subcategory_name": cell.name, "journal_tier": rng.choice(["Q1", "Q2", "Q3", "Q4", None]),
                        "year": int(rng.integers(1995, 2025)), "innovation_score": composite(dims),
                        "dimension_scores": dims, "title": "t", "abstract": "a"})
    out += [{**out[0], "bibcode": f"uncl.{k}", "subcategory_id": None, "subcategory_name": None}
            for k in range(unclassified)]
    return out


def test_splits_have_the_benchmark_shape():
    splits = sample_splits(_records(), TAX, seed=1)
    assert len(splits.selected) == 300 and len(splits.backup) == 5700
    assert Counter(r["discipline"] for r in splits.selected) == dict.fromkeys(DISCIPLINES, 50)
    assert Counter(r["discipline"] for r in splits.backup) == dict.fromkeys(DISCIPLINES, 950)
    assert not {r["bibcode"] for r in splits.selected} & {r["bibcode"] for r in splits.backup}
    assert {r["subcategory_id"] for r in splits.selected} == {c.id for c in TAX.cells}
    assert all(r["subcategory_id"] is not None for r in [*splits.selected, *splits.backup])  # unclassified: neither
    tiers = Counter(r["journal_tier"] for r in splits.selected if r["discipline"] == "physics")
    assert all(10 <= tiers[t] <= 15 for t in ("Q1", "Q2", "Q3", "Q4")), tiers
    core = np.mean([2000 <= r["year"] <= 2020 for r in splits.selected])
    assert core > 0.8
    assert splits.short_cells == [] and splits.short_disciplines == []
    again = sample_splits(_records(), TAX, seed=1)
    assert [r["bibcode"] for r in again.selected] == [r["bibcode"] for r in splits.selected]


def _refreshed(records, rng):
    """The records a later release would score: every score drifted, a tenth of the papers gone, as many new."""
    drifted = []
    for r in records:
        dims = {d: float(np.clip(v + rng.normal(0, 8), 0, 100)) for d, v in r["dimension_scores"].items()}
        drifted.append({**r, "dimension_scores": dims, "innovation_score": composite(dims)})
    gone = set(rng.choice(len(drifted), size=len(drifted) // 10, replace=False).tolist())
    new = [{**r, "bibcode": r["bibcode"] + ".new"} for k, r in enumerate(drifted) if k in gone]
    return [r for k, r in enumerate(drifted) if k not in gone] + new


def test_a_refresh_keeps_the_previous_release_where_the_quotas_allow():
    records = _records()
    old = sample_splits(records, TAX, seed=1)
    previous = {r["bibcode"]: "selected" for r in old.selected} | {r["bibcode"]: "backup" for r in old.backup}
    refreshed = _refreshed(records, np.random.default_rng(5))
    fresh = sample_splits(refreshed, TAX, seed=1)
    sticky = sample_splits(refreshed, TAX, seed=1, previous=previous)
    old_selected = {r["bibcode"] for r in old.selected}
    still_there = old_selected & {r["bibcode"] for r in refreshed}
    # without the previous release, the redraw keeps what chance keeps; with it, nearly every old selected paper
    # still scored is selected again (the pool's quartile balance, recomputed on the drifted scores, comes first)
    assert len(old_selected & {r["bibcode"] for r in fresh.selected}) < 0.5 * len(old_selected)
    again = {r["bibcode"] for r in sticky.selected} & old_selected
    assert again <= still_there and len(again) >= 0.95 * len(still_there)
    assert sticky.previous_selected == (300, len(again)) and fresh.previous_selected is None
    # the shape is the benchmark's all the same: full splits, every cell in selected, the tiers balanced
    assert len(sticky.selected) == 300 and len(sticky.backup) == 5700
    assert {r["subcategory_id"] for r in sticky.selected} == {c.id for c in TAX.cells}
    tiers = Counter(r["journal_tier"] for r in sticky.selected if r["discipline"] == "physics")
    assert all(9 <= tiers[t] <= 16 for t in ("Q1", "Q2", "Q3", "Q4")), tiers
    # the pool keeps the old papers first: a redraw drops some 150 of those still scored for new ones, a refresh
    # a handful (where a quartile holds more old papers than its share)
    old_there = set(previous) & {r["bibcode"] for r in refreshed}
    dropped = [len(old_there - {r["bibcode"] for r in [*s.selected, *s.backup]}) for s in (fresh, sticky)]
    assert dropped[0] > 100 and dropped[1] < 10, dropped
    # an empty previous release changes nothing
    assert [r["bibcode"] for r in sample_splits(refreshed, TAX, seed=1, previous={}).selected] == \
        [r["bibcode"] for r in fresh.selected]


def test_short_cells_are_reported_not_padded():
    records = [r for r in _records() if not (r["subcategory_id"] == "biology.plant" and
                                             int(r["bibcode"].rsplit(".", 1)[1]) >= 40)]
    splits = sample_splits(records, TAX, seed=0)
    assert ("biology.plant", 40, 125) in splits.short_cells
    # the other biology cells had 5 spare papers each: 7 x 5 = 35 fill part of the 85 missing
    assert ("biology", 950, 1000) in splits.short_disciplines
    assert len({r["bibcode"] for r in splits.backup}) == len(splits.backup)


def test_stratified_spreads_over_quartiles():
    rng = np.random.default_rng(0)
    items = [{"innovation_score": float(s)} for s in range(100)]
    picked = stratified(items, 20, rng)
    quartiles = Counter(int(r["innovation_score"]) // 25 for r in picked)
    assert quartiles == {0: 5, 1: 5, 2: 5, 3: 5}


def test_layout_loads_with_load_dataset_and_is_byte_identical(tmp_path):
    import datasets

    splits = sample_splits(_records(per_cell=10, unclassified=0), TAX, seed=2, per_discipline=60,
                           selected_per_discipline=12)
    full = {"selected": [{**dict.fromkeys(record_features()), **r} for r in splits.selected],
            "backup": [{**dict.fromkeys(record_features()), **r} for r in splits.backup]}
    a = write_dataset(tmp_path / "a", full, DEFAULT_WEIGHTS, synthetic=True)
    b = write_dataset(tmp_path / "b", full, DEFAULT_WEIGHTS, synthetic=True)
    for name in ("data/selected-00000-of-00001.parquet", "data/backup-00000-of-00001.parquet", "README.md"):
        assert hashlib.sha256((a / name).read_bytes()).digest() == hashlib.sha256((b / name).read_bytes()).digest()
    ds = datasets.load_dataset(str(a))
    assert set(ds) == {"selected", "backup"}
    assert ds["selected"].num_rows == 72 and ds["backup"].num_rows == 288
    assert ds["selected"].features == record_features()
    row = ds["selected"][0]
    assert row["innovation_score"] == pytest.approx(composite(row["dimension_scores"]), abs=0.01)
    readme = (a / "README.md").read_text()
    assert "Synthetic demo build" in readme and "license: cc0-1.0" in readme
    # its terms fit synthetic data: no third-party terms, no real authors (those belong to a real build's card)
    assert "ADS terms of use" not in readme and "work of their authors" not in readme
    real = (write_dataset(tmp_path / "real", full, DEFAULT_WEIGHTS, synthetic=False) / "README.md").read_text()
    assert "license: other" in real and "ADS terms of use" in real and "describe no real paper" not in real
    with pytest.raises(ScitasteError, match="already exists"):
        write_dataset(a, full, DEFAULT_WEIGHTS, synthetic=True)


def test_the_written_out_schema_and_card_block_are_datasets_own():
    """The writer's Parquet schema and the card's dataset_info block, written without importing datasets, are what
    datasets makes of record_features() (the writer of push_to_hub), metadata included."""
    from datasets import DatasetInfo, SplitDict, SplitInfo
    from datasets.info import DatasetInfosDict
    from huggingface_hub import DatasetCardData

    from scitaste_hf.builder.layout import arrow_schema, dataset_info

    assert arrow_schema().equals(record_features().arrow_schema, check_metadata=True)
    counts, sizes = {"selected": 300, "backup": 5700}, {"selected": 123_456, "backup": 0}
    splits = SplitDict()
    for name in ("selected", "backup"):
        splits.add(SplitInfo(name, sizes[name], counts[name]))
    meta = DatasetCardData(license="cc0-1.0", configs=[{"config_name": "default", "data_files": "data/*"}])
    DatasetInfosDict({"default": DatasetInfo(features=record_features(), splits=splits)}).to_dataset_card_data(meta)
    assert meta.to_dict() == {"license": "cc0-1.0", "configs": [{"config_name": "default", "data_files": "data/*"}],
                              "dataset_info": dataset_info(counts, sizes)}


def test_overwrite_replaces_only_a_dataset_folder_and_files_get_the_umask(tmp_path):
    import os
    import stat

    full = {"selected": [], "backup": []}
    precious = tmp_path / "my thesis"
    precious.mkdir()
    (precious / "thesis.txt").write_text("years of work")
    with pytest.raises(ScitasteError, match=r"not a dataset folder.*nothing was deleted"):
        write_dataset(precious, full, DEFAULT_WEIGHTS, synthetic=True, overwrite=True)
    assert (precious / "thesis.txt").read_text() == "years of work"
    a_file = tmp_path / "notes.txt"
    a_file.write_text("x")
    with pytest.raises(ScitasteError, match="is a file"):
        write_dataset(a_file, full, DEFAULT_WEIGHTS, synthetic=True, overwrite=True)
    assert a_file.read_text() == "x"
    # A dataset folder (or an empty one) is replaced; a missing parent is created next to it, not in /tmp.
    old = os.umask(0o022)
    try:
        ds = write_dataset(tmp_path / "new" / "ds", full, DEFAULT_WEIGHTS, synthetic=True)
        (ds / "stale.txt").write_text("from the old build")
        ds = write_dataset(ds, full, DEFAULT_WEIGHTS, synthetic=True, overwrite=True)
    finally:
        os.umask(old)
    assert not (ds / "stale.txt").exists() and (ds / "README.md").is_file()
    assert stat.S_IMODE(ds.stat().st_mode) == 0o755
    assert stat.S_IMODE((ds / "data" / "selected-00000-of-00001.parquet").stat().st_mode) == 0o644
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["ds"]


def test_an_unusable_journal_table_stops_the_build_before_any_work(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    scitaste = str(Path(sys.executable).with_name("scitaste"))
    done = subprocess.run([scitaste, "build", "--mirror-url", "http://127.0.0.1:9", "--out", str(tmp_path / "ds"),
                           "--journal-table", str(tmp_path / "missing.csv")], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"scitaste: error: journal table not found: {tmp_path}/missing.csv"]
    assert not (tmp_path / "ds").exists() and not (tmp_path / "ds.work").exists()
