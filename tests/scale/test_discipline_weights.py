"""Per-discipline weights in `scitaste index`: each paper's composite takes the vector of its discipline, the
taxonomy discipline of its primary topic's subfield, in both engines."""

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from scitaste_hf.cli import main
from scitaste_hf.errors import ScitasteError
from scitaste_hf.progress import StageProgress
from scitaste_hf.scale.disciplines import paper_disciplines
from scitaste_hf.scale.options import IndexOptions
from scitaste_hf.scale.run import index_snapshot
from scitaste_hf.schema import DIMENSIONS
from scitaste_hf.snapshot.focal import parse_focal
from scitaste_hf.snapshot.layout import find_entity
from scitaste_hf.snapshot.reader import iter_records
from scitaste_hf.sources.openalex import parse_work
from scitaste_hf.taxonomy import load_taxonomy
from scitaste_hf.weights import load_weights, parse_weights

DISCIPLINES = load_taxonomy().names


def _vector(i):
    """A vector that is different for each discipline: most of the weight on one dimension."""
    return {k: (0.7 if j == i % len(DIMENSIONS) else 0.05) for j, k in enumerate(DIMENSIONS)}


def _discipline_of(snapshot):
    """Each work's discipline, read from the records and the taxonomy independently of the engines."""
    by_subfield = {f"https://openalex.org/subfields/{c.openalex_subfield}": c.discipline
                   for c in load_taxonomy().cells}
    out = {}
    for data in iter_records(find_entity(snapshot, "works", "jsonl")):
        work = parse_work(data)
        subfield = data["primary_topic"]["subfield"]["id"] if data.get("primary_topic") else None
        out[work.id] = by_subfield.get(subfield)
    return out


def _run(snapshot, out, engine, weights):
    options = IndexOptions(focal=parse_focal("all"), weights=weights)
    index_snapshot(snapshot, out, engine, options, StageProgress(bars=False))
    return pq.read_table(out / "index.parquet")


def test_each_paper_gets_its_disciplines_vector(snapshot, tmp_path):
    vectors = {d: _vector(i) for i, d in enumerate(DISCIPLINES)}
    path = tmp_path / "weights.json"
    path.write_text(json.dumps({"weights": vectors}))
    weights = load_weights(str(path))
    discipline = _discipline_of(snapshot)
    assert set(discipline.values()) == set(DISCIPLINES)  # every discipline is exercised
    tables = {engine: _run(snapshot, tmp_path / engine, engine, weights) for engine in ("duckdb", "memory")}
    for table in tables.values():
        ids = table.column("id").to_pylist()
        dims = {k: table.column(k).to_numpy() for k in DIMENSIONS}
        expected = [round(sum(vectors[discipline[w]][k] * float(dims[k][i]) for k in DIMENSIONS), 2)
                    for i, w in enumerate(ids)]
        assert table.column("innovation_score").to_pylist() == expected
    duck, memory = (np.asarray(tables[e].column("innovation_score").to_pylist()) for e in ("duckdb", "memory"))
    assert tables["duckdb"].column("id").equals(tables["memory"].column("id"))
    # As in test_engines_agree: the dimensions, hence the composites, agree but for near-tied ranks.
    assert (duck != memory).mean() <= 0.01 and np.abs(duck - memory).max() <= 0.05


def test_the_default_vector_serves_the_disciplines_not_named(snapshot, tmp_path):
    weights = parse_weights({"weights": {"physics": _vector(0), "default": _vector(3)}}, "w.json")
    discipline = _discipline_of(snapshot)
    table = _run(snapshot, tmp_path / "duck", "duckdb", weights)
    for i, w in enumerate(table.column("id").to_pylist()):
        vector = _vector(0) if discipline[w] == "physics" else _vector(3)
        score = round(sum(vector[k] * float(table.column(k)[i].as_py()) for k in DIMENSIONS), 2)
        assert table.column("innovation_score")[i].as_py() == score


@pytest.mark.parametrize("engine", ["duckdb", "memory"])
def test_papers_without_a_vector_are_one_line(snapshot, tmp_path, engine):
    weights = parse_weights({"weights": {"physics": _vector(0)}}, "w.json")
    others = sum(d != "physics" for d in _discipline_of(snapshot).values())
    with pytest.raises(ScitasteError, match=rf"^w\.json has no 'default' vector and {others:,} are in "):
        _run(snapshot, tmp_path / engine, engine, weights)


def test_a_subfield_in_no_cell():
    weights = parse_weights({"weights": {"physics": _vector(0)}}, "w.json")
    with pytest.raises(ScitasteError, match=r"2 of 3 focal works have a primary-topic subfield in no discipline"):
        paper_disciplines(["9999", None, "3107"], weights)
    with_default = parse_weights({"weights": {"physics": _vector(0), "default": _vector(1)}}, "w.json")
    assert paper_disciplines(["9999", None, "3107"], with_default) == [None, None, "physics"]
    assert paper_disciplines(["3107"], _vector(1)) is None


def test_the_cli_takes_a_per_discipline_file(snapshot, tmp_path, capsys):
    path = tmp_path / "weights.json"
    path.write_text(json.dumps({"raw": {"physics": {k: 1 for k in DIMENSIONS}, "default": _vector(2)}}))
    out = tmp_path / "run"
    assert main(["index", "--works", str(snapshot), "--out", str(out), "--weights", str(path),
                 "--taxonomy", "extended", "--quiet"]) == 0
    assert pq.read_table(out / "index.parquet").num_rows == 3000
