"""The focal selection: the same works in SQL and in Python; bad input refused in one line."""

from datetime import date

import duckdb
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.scale.options import memory_limit
from scitaste_hf.snapshot.focal import parse_focal

ROWS = [
    {"id": "W1", "year": 2015, "publication_date": date(2015, 3, 1), "citation_count": 12, "type": "article",
     "field_id": "26", "subfield_id": "2603", "issn_l": "1234-5678"},
    {"id": "W2", "year": 2016, "publication_date": date(2016, 1, 1), "citation_count": 0, "type": "preprint",
     "field_id": "31", "subfield_id": "3103", "issn_l": None},
    {"id": "W3", "year": None, "publication_date": None, "citation_count": None, "type": "article",
     "field_id": None, "subfield_id": None, "issn_l": "1234-5678"},
    {"id": "W4", "year": 2010, "publication_date": date(2010, 12, 31), "citation_count": 300, "type": "article",
     "field_id": "26", "subfield_id": "2604", "issn_l": "9999-0000"},
]
FILTERS = {
    "all": ["W1", "W2", "W3", "W4"],
    "publication_year:2015": ["W1"],
    "publication_year:2015-2016": ["W1", "W2"],
    "publication_year:>2014": ["W1", "W2"],
    "publication_year:<2015|2016": ["W2", "W4"],
    "publication_year:!2015": ["W2", "W4"],
    "type:article": ["W1", "W3", "W4"],
    "type:article,cited_by_count:>10": ["W1", "W4"],
    "from_publication_date:2015-01-01,to_publication_date:2015-12-31": ["W1"],
    "primary_topic.field.id:https://openalex.org/fields/26": ["W1", "W4"],
    "primary_topic.subfield.id:subfields/2604|3103": ["W2", "W4"],
    "primary_location.source.issn:1234-5678": ["W1", "W3"],
    "openalex:W2|https://openalex.org/W4": ["W2", "W4"],
}


@pytest.mark.parametrize("spec", FILTERS)
def test_sql_and_python_select_the_same_works(spec):
    focal = parse_focal(spec)
    python = [r["id"] for r in ROWS if focal.matches(r)]
    con = duckdb.connect()
    con.execute("CREATE TABLE works (id VARCHAR, year INTEGER, publication_date DATE, citation_count BIGINT, "
                "type VARCHAR, field_id VARCHAR, subfield_id VARCHAR, issn_l VARCHAR)")
    con.executemany("INSERT INTO works VALUES (?, ?, ?, ?, ?, ?, ?, ?)", [list(r.values()) for r in ROWS])
    sql = [r[0] for r in con.execute(f"SELECT id FROM works WHERE {focal.sql()} ORDER BY id").fetchall()]
    assert python == sql == FILTERS[spec]


def test_id_file(tmp_path):
    path = tmp_path / "ids.txt"
    path.write_text("# the papers\nhttps://openalex.org/W4\n\nW1  # first\n")
    focal = parse_focal(str(path))
    assert focal.ids == {"W1", "W4"} and [r["id"] for r in ROWS if focal.matches(r)] == ["W1", "W4"]
    assert focal.key.startswith("ids:")
    path.write_text("# nothing\n")
    with pytest.raises(ScitasteError, match="lists no work id"):
        parse_focal(str(path))


@pytest.mark.parametrize(("spec", "message"), [
    ("year:2015", "unknown filter key 'year'"),
    ("publication_year:soon", "expected N, N-M, >N or <N"),
    ("from_publication_date:2015", "expected a date YYYY-MM-DD"),
    ("from_publication_date:2015-02-30", "not a valid date"),
    ("publication_year", "not a file, 'all', or a filter"),
])
def test_bad_filters(spec, message):
    with pytest.raises(ScitasteError, match=message):
        parse_focal(spec)


def test_memory_limit():
    assert memory_limit("6GB") == "6GB"
    assert memory_limit("512 mib") == "512MiB"
    for bad in ("lots", "6", "-1GB", "10MB"):
        with pytest.raises(ScitasteError, match="--memory-limit"):
            memory_limit(bad)
