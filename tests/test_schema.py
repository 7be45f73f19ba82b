"""The shared facts: weights, keys, bands, record features."""

import itertools
import json

import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.schema import DIMENSIONS, WAPE_BANDS, record_features
from scitaste_hf.weights import DEFAULT_WEIGHTS, composite, load_weights, validate_weights


def test_default_weights_are_the_published_figures_and_an_equal_split():
    assert list(DEFAULT_WEIGHTS) == list(DIMENSIONS)
    assert DEFAULT_WEIGHTS["citation_impact"] == pytest.approx(0.29482, abs=5e-6)
    assert DEFAULT_WEIGHTS["journal_impact"] == pytest.approx(0.15311, abs=5e-6)
    for key in DIMENSIONS[1:6]:
        assert DEFAULT_WEIGHTS[key] == pytest.approx(14.228 / 128.86, abs=1e-12)
    assert sum(DEFAULT_WEIGHTS.values()) == pytest.approx(1.0, abs=1e-12)


def test_composite_of_worked_example():
    dims = dict(zip(DIMENSIONS, (51.55, 35.33, 34.39, 79.22, 44.51, 13.77, 57.58)))
    # 46.89 with the equal B..F split; the paper's 46.36 used B..F weights it does not publish.
    assert composite(dims) == 46.89
    assert composite(dims, {k: 1.0 if k == "journal_impact" else 0.0 for k in DIMENSIONS}) == 57.58


def test_validate_weights_rejects_bad_vectors():
    good = dict(DEFAULT_WEIGHTS)
    with pytest.raises(ScitasteError, match="missing journal_impact"):
        validate_weights({k: v for k, v in good.items() if k != "journal_impact"})
    with pytest.raises(ScitasteError, match="unknown novelty"):
        validate_weights({**good, "novelty": 0.0})
    with pytest.raises(ScitasteError, match="sum to 1"):
        validate_weights({**good, "citation_impact": 0.5})
    with pytest.raises(ScitasteError, match=">= 0"):
        validate_weights({**good, "citation_impact": -0.1, "journal_impact": good["journal_impact"] + 0.39482})


def test_load_weights_files(tmp_path):
    raw = tmp_path / "raw.json"
    raw.write_text(json.dumps({"raw": {k: 2.0 for k in DIMENSIONS}}))
    assert load_weights(str(raw)) == {k: pytest.approx(1 / 7) for k in DIMENSIONS}
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ScitasteError, match="not valid JSON"):
        load_weights(str(bad))
    with pytest.raises(ScitasteError, match="not found"):
        load_weights(str(tmp_path / "missing.json"))


def test_bands_are_contiguous():
    for a, b in itertools.pairwise(WAPE_BANDS):
        assert a.high == b.low and a.score_at_high == b.score_at_low


def test_record_features_round_trip():
    from datasets import Dataset

    record = {"bibcode": "1998PhRvA..58.3983S", "doi": None, "openalex_id": None, "arxiv_id": "quant-ph/9801001",
              "title": "t", "abstract": "a", "year": 1998, "discipline": "physics", "subcategory_id": "phys.quantum",
              "subcategory_name": "Quantum physics", "journal_name": "Physical Review A", "journal_tier": "Q1",
              "innovation_score": 46.36, "dimension_scores": dict.fromkeys(DIMENSIONS, 50.0)}
    ds = Dataset.from_list([record], features=record_features())
    assert ds[0] == record
    assert list(ds.features["dimension_scores"]) == list(DIMENSIONS)


def test_weights_files_that_would_mislead_are_refused(tmp_path):
    """A misspelt discipline would hand its papers to the default vector: refused wherever the disciplines are
    known (the build's taxonomy, the index's); a number too large for a float and a file that is not UTF-8 are
    one-line errors."""
    from pathlib import Path

    from scitaste_hf.builder.pipeline import Build, BuildConfig
    from scitaste_hf.scale.disciplines import paper_disciplines

    vector = {"citation_impact": 1.0, **{d: 0.0 for d in DIMENSIONS[1:]}}
    path = tmp_path / "typo.json"
    path.write_text(json.dumps({"weights": {"phyiscs": vector, "default": vector}}))
    typo = load_weights(str(path))
    with pytest.raises(ScitasteError, match="no discipline 'phyiscs' in the build's taxonomy \\(physics, "):
        Build(BuildConfig(out=Path(tmp_path / "out"), mirror_url="http://127.0.0.1:9", weights=typo))
    with pytest.raises(ScitasteError, match="no discipline 'phyiscs' in the taxonomy default"):
        paper_disciplines(["Condensed Matter Physics"], typo, None)
    # a discipline of the extended taxonomy is unknown to the default one, and known to the extended one
    path.write_text(json.dumps({"weights": {"computer_science": vector, "default": vector}}))
    with pytest.raises(ScitasteError, match="no discipline 'computer_science'"):
        Build(BuildConfig(out=Path(tmp_path / "out"), mirror_url="http://127.0.0.1:9",
                          weights=load_weights(str(path))))
    assert paper_disciplines([None], load_weights(str(path)), "extended") == [None]
    huge = '"citation_impact": 1' + "0" * 400
    path.write_text(json.dumps({"weights": vector}).replace('"citation_impact": 1.0', huge))
    with pytest.raises(ScitasteError, match=r"typo\.json is not valid JSON \(a number of 401 characters is beyond"):
        load_weights(str(path))
    path.write_bytes(b'{"weights": "\xff"}')
    with pytest.raises(ScitasteError, match="is not UTF-8 text"):
        load_weights(str(path))


def test_hostile_weights_files_are_one_line_errors(tmp_path):
    """A weights file nested 200,000 deep (a RecursionError traceback before) and a FIFO (a hang before)."""
    import os

    deep = tmp_path / "deep.json"
    deep.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ScitasteError, match=r"^weights file \S+deep\.json is nested more than 64 deep$"):
        load_weights(str(deep))
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(ScitasteError, match=r"^weights file \S+fifo\.json is not a regular file"):
        load_weights(str(fifo))
    nan = tmp_path / "nan.json"
    nan.write_text('{"raw": {"citation_impact": NaN}}')
    with pytest.raises(ScitasteError, match=r"^weights file \S+nan\.json is not valid JSON \(NaN is not a JSON number"):
        load_weights(str(nan))


def test_raw_weights_whose_sum_overflows_are_refused(tmp_path):
    # seven numbers of 1e308 each are floats, their sum is inf: each share was 0 and the file read "must sum to 1"
    path = tmp_path / "raw.json"
    path.write_text(json.dumps({"raw": {k: 1e308 for k in DIMENSIONS}}))
    with pytest.raises(ScitasteError, match=r"^weights file \S+raw\.json: the 'raw' numbers sum beyond a float's "
                                            r"range; scale them down$"):
        load_weights(str(path))
    path.write_text(json.dumps({"raw": {k: 1e307 for k in DIMENSIONS}}))
    assert load_weights(str(path)) == {k: pytest.approx(1 / 7) for k in DIMENSIONS}
