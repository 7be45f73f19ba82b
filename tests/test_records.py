"""Reading records and a dataset's bibcode map."""

import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.records import load_bibcode_map, load_records
from scitaste_hf.schema import BIBCODE_MAP_FILE


def test_bibcode_map(tmp_path):
    assert load_bibcode_map(tmp_path) == {}
    (tmp_path / BIBCODE_MAP_FILE).write_text('{"STB.MATH.W1": "W1", "2018PhRvB.1..1A": "W2"}')
    assert load_bibcode_map(tmp_path) == {"STB.MATH.W1": "W1", "2018PhRvB.1..1A": "W2"}
    (tmp_path / BIBCODE_MAP_FILE).write_text("[1, 2]")
    with pytest.raises(ScitasteError, match="must hold a JSON object"):
        load_bibcode_map(tmp_path)
    (tmp_path / BIBCODE_MAP_FILE).write_text("{")
    with pytest.raises(ScitasteError, match="is not valid JSON"):
        load_bibcode_map(tmp_path)


def test_record_files(tmp_path):
    (tmp_path / "r.json").write_text('{"bibcode": "x"}')
    with pytest.raises(ScitasteError, match="expected a JSON array"):
        load_records(tmp_path / "r.json")
    (tmp_path / "r.csv").write_text("bibcode\nx\n")
    with pytest.raises(ScitasteError, match=r"unsupported gold file type '\.csv'"):
        load_records(tmp_path / "r.csv")
    (tmp_path / "r.parquet").write_bytes(b"not parquet")
    with pytest.raises(ScitasteError, match="cannot read"):
        load_records(tmp_path / "r.parquet")
