import pyarrow as pa
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.index import Population
from scitaste_hf.index.cd import UNDATED


def paper(pid, date="2020-01-01", citations=0, **extra):
    return {"id": pid, "date": date, "citation_count": citations, **extra}


def test_ids_dates_and_metadata_are_columnar(build):
    pop = build(
        [paper("P1", "2020-01-02", journal="J", field="Physics"), paper("P2")],
        [("P1", "R1"), ("P1", "X9"), ("P1", "R1"), ("P2", "P2")],
        [{"id": "R1", "date": "1999-12-31", "field": "Physics"}],
    )
    # Papers first, then works, then ids known only from an edge (no metadata, no date).
    assert pop.ids.to_pylist() == ["P1", "P2", "R1", "X9"]
    assert pop.n_papers == 2
    assert pop.times.tolist() == [18263, 18262, 10956, UNDATED]
    assert [pop.field_names[c] if c >= 0 else None for c in pop.field] == ["Physics", None, "Physics", None]
    # The duplicate edge counts once and the self-citation is dropped.
    assert pop.graph.out.nnz == 2
    rows, refs = pop.references()
    assert rows.tolist() == [0, 0] and sorted(pop.ids.take(pa.array(refs)).to_pylist()) == ["R1", "X9"]


@pytest.mark.parametrize(
    ("papers", "works", "message"),
    [
        ([], None, "no papers"),
        ([{"id": "P1", "date": "2020-01-01"}], None, "missing required column"),
        ([paper("P1"), paper("P1")], None, "duplicate paper ids"),
        ([paper("P1"), paper(None)], None, "null id"),
        ([paper("P1", date=None)], None, "has no date"),
        ([paper("P1", citations=None)], None, "citation_count must be given"),
        ([paper("P1", citations=-1)], None, "citation_count must be >= 0"),
        ([paper("P1", author_count=-2)], None, "author_count must be >= 0"),
        ([paper("P1", date="not a date")], None, "cannot be read as date32"),
        ([paper("P1")], [{"id": "P1"}], "listed twice"),
    ],
)
def test_bad_populations_are_rejected_with_a_clear_message(papers, works, message):
    schema = pa.schema([("id", pa.string()), ("date", pa.string()), ("citation_count", pa.int64())])
    table = pa.Table.from_pylist(papers) if papers else schema.empty_table()
    works_table = pa.Table.from_pylist(works) if works else None
    with pytest.raises(ScitasteError, match=message):
        Population.from_arrow(table, None, works_table)


def test_precomputed_embeddings_need_one_length():
    table = pa.Table.from_pylist([paper("P1", embedding=[1.0, 0.0]), paper("P2", embedding=[1.0])])
    with pytest.raises(ScitasteError, match="one non-zero length"):
        Population.from_arrow(table)
    ok = Population.from_arrow(pa.Table.from_pylist([paper("P1", embedding=[1.0, 0.0]), paper("P2")]))
    assert ok.embeddings.row.tolist() == [0, -1] and ok.embeddings.vectors.tolist() == [[1.0, 0.0]]
