"""The record contract (scitaste_hf.snapshot.records): every engine accepts and refuses the same records of a hostile
snapshot, with the same one line naming the file and the line, and the reader streams its lines within a bound."""

import gzip
import shutil
import zlib

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scitaste_hf.cli import main
from scitaste_hf.errors import ScitasteError
from scitaste_hf.scale.options import IndexOptions
from scitaste_hf.scale.run import index_snapshot
from scitaste_hf.snapshot import records
from scitaste_hf.snapshot.focal import parse_focal
from scitaste_hf.snapshot.writer import write_snapshot

ENGINES = ("duckdb", "memory")


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """A 120-work snapshot in both formats, 40 records a data file."""
    root = tmp_path_factory.mktemp("small")
    write_snapshot(root, 120, seed=5, parquet=True, part_records=40)
    return root


def _first_part(snap, fmt="jsonl"):
    folder = snap / "data" / ("works" if fmt == "jsonl" else "parquet/works")
    return sorted(folder.rglob("*.gz" if fmt == "jsonl" else "*.parquet"))[0]


def _lines(part):
    return gzip.decompress(part.read_bytes()).split(b"\n")


def _hostile(small, tmp_path, edit):
    """A copy of ``small`` whose first JSON part's lines are ``edit(lines)`` (a list of bytes, record 1 first)."""
    snap = shutil.copytree(small, tmp_path / "snap")
    part = _first_part(snap)
    part.write_bytes(gzip.compress(b"\n".join(edit(_lines(part)))))
    return snap, part


def _record_line(record_edit):
    """An edit of the first record of the part (line 1) through ``record_edit(dict) -> bytes``."""
    def edit(lines):
        lines[0] = record_edit(orjson.loads(lines[0]))
        return lines
    return edit


def _set(**fields):
    return _record_line(lambda r: orjson.dumps({**r, **fields}))


def _run(snap, out, engine, fmt="auto"):
    summary = index_snapshot(snap, out, engine, IndexOptions(focal=parse_focal("all"), format=fmt))
    return pq.read_table(out / "index.parquet"), summary


def _outcomes(snap, tmp_path, fmt="auto"):
    """Each engine's result: ('refused', message) or ('scored', table, summary)."""
    out = {}
    for engine in ENGINES:
        try:
            out[engine] = ("scored", *_run(snap, tmp_path / f"out-{engine}", engine, fmt))
        except ScitasteError as exc:
            out[engine] = ("refused", str(exc))
            assert not (tmp_path / f"out-{engine}" / "index.parquet").exists()
    return out


REFUSED = {
    "a string year": (_set(publication_year="2015"), "line 1: publication_year must be a year"),
    "a year beyond the calendar": (_set(publication_year=20000), "line 1: publication_year must be a year"),
    "a fractional count": (_set(cited_by_count=1.5), "line 1: cited_by_count must be a count"),
    "a negative count": (_set(cited_by_count=-3), "line 1: cited_by_count must be a count"),
    "an object where a list belongs": (_set(topics={"score": 1}), "line 1: topics must be a list"),
    "a number where a string belongs": (_set(title=5), "line 1: title must be a string, not 5"),
    "a null id": (_set(id=None), "line 1: the record has no id"),
    "no id": (_record_line(lambda r: orjson.dumps({k: v for k, v in r.items() if k != "id"})),
              "line 1: the record has no id"),
    "a numeric id": (_set(id=123), "line 1: id must be an OpenAlex work id"),
    "an id that is not a work's": (_set(id="https://openalex.org/A5"), "line 1: id must be an OpenAlex work id"),
    "a string of references": (_set(referenced_works="W1,W2,W3"), "line 1: referenced_works must be a list"),
    "a null reference": (_set(referenced_works=["W1", None]), "line 1: referenced_works[1] must be not null"),
    "a numeric reference": (_set(referenced_works=[7]), "line 1: referenced_works[0] must be an OpenAlex work id"),
    "a nested wrong type": (_set(primary_location={"source": {"issn_l": ["x"]}}),
                            "line 1: primary_location.source.issn_l must be a string"),
    "an impossible date": (_set(publication_date="2015-02-30"), "line 1: publication_date must be a date"),
    "a date of another form": (_set(publication_date="20150203"), "line 1: publication_date must be a date"),
    "an abstract of strings": (_set(abstract_inverted_index={"word": ["1"]}),
                               "line 1: abstract_inverted_index must be an object of word"),
    "an array, not an object": (_record_line(lambda r: b"[1, 2]"), "line 1: the record is not a JSON object"),
    "a NUL byte": (_record_line(lambda r: orjson.dumps(r).replace(b'"title":"', b'"title":"\x00')),
                   "line 1 is not JSON"),
    "invalid UTF-8": (_record_line(lambda r: orjson.dumps(r).replace(b'"title":"', b'"title":"\xff\xfe')),
                      "line 1 is not JSON"),
    "a malformed line": (_record_line(lambda r: orjson.dumps(r)[:-5]), "line 1 is not JSON"),
    "a bad record after blank lines": (lambda lines: [lines[0], b"", b"  \t", b"\r", b'{"id": 5}', *lines[1:]],
                                       "line 5: id must be an OpenAlex work id"),
}


@pytest.mark.parametrize("case", REFUSED)
def test_both_engines_refuse_the_same_records_with_the_same_line(small, tmp_path, case):
    edit, expected = REFUSED[case]
    snap, part = _hostile(small, tmp_path, edit)
    out = _outcomes(snap, tmp_path)
    assert out["duckdb"][0] == out["memory"][0] == "refused", out
    assert out["duckdb"][1] == out["memory"][1]
    message = out["duckdb"][1]
    assert message.startswith(f"reading the snapshot failed: {part}: ") and expected in message, message
    assert "\n" not in message


def test_a_work_listed_twice_is_refused_alike(small, tmp_path):
    snap, _ = _hostile(small, tmp_path, lambda lines: [lines[1], *lines])
    work = orjson.loads(_lines(_first_part(small))[1])["id"].rsplit("/", 1)[-1]
    out = _outcomes(snap, tmp_path)
    assert out["duckdb"] == out["memory"] == ("refused", f"the snapshot lists works twice, first: {work}")


def _padded(size):
    return _record_line(lambda r: orjson.dumps({**r, "padding": "x" * size}))


ACCEPTED = {
    # fields outside the contract are not read, whatever their type
    "other fields of any type": _set(ids="not an object", doi=5, counts_by_year="x", language=["en"]),
    "null where a field may be unknown": _set(primary_location=None, topics=None, concepts=[{"score": None}],
                                              authorships=[{"countries": None}], cited_by_count=None),
    "an escaped NUL in a title": _set(title="a\u0000b"),
    "an id as a URL": _set(id="https://openalex.org/W123456789012"),
    "blank and whitespace lines": lambda lines: [b"", b" \t\r", *lines[:3], b"\n\n\n", *lines[3:], b"   "],
    # past DuckDB's own default maximum_object_size (16 MB), within MAX_RECORD_BYTES
    "a record of 17 MB": _padded(17 * 2**20),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", ACCEPTED)
def test_both_engines_accept_the_same_records_with_the_same_results(small, tmp_path, case):
    snap, _ = _hostile(small, tmp_path, ACCEPTED[case])
    out = _outcomes(snap, tmp_path)
    assert out["duckdb"][0] == out["memory"][0] == "scored", out
    (_, duck, d), (_, memory, m) = out["duckdb"], out["memory"]
    assert d["papers"] == m["papers"] == 120 and d["works"] == m["works"]
    assert d["citations"] == m["citations"] and d["blank_lines"] == m["blank_lines"]
    assert duck.column("id").to_pylist() == memory.column("id").to_pylist()
    for name in ("n_i", "n_j", "n_k", "knowledge_breadth.reference_count", "team_collaboration.country_count",
                 "conceptual_innovation.concept_count"):
        assert duck.column(name).to_pylist() == memory.column(name).to_pylist(), name
    assert np.allclose(duck.column("innovation_score").to_numpy(), memory.column("innovation_score").to_numpy(),
                       atol=0.05, equal_nan=True)
    if case.startswith("blank"):
        # "", " \t\r", four between the newlines around "\n\n\n", the part's last line ("" after its final newline,
        # now followed by one), "   "
        assert d["blank_lines"] == 8


def test_a_record_longer_than_the_bound_is_refused_by_both(small, tmp_path, monkeypatch):
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 50_000)
    monkeypatch.setattr(records, "CHUNK_BYTES", 4096)  # the line spans many chunks
    snap, part = _hostile(small, tmp_path, lambda lines: [*lines[:2], *_padded(60_000)(lines[2:])])
    out = _outcomes(snap, tmp_path)
    assert out["duckdb"] == out["memory"] == (
        "refused", f"reading the snapshot failed: {part}: line 3 is longer than 50,000 bytes, the longest record "
                   "read (MAX_RECORD_BYTES)")


def test_a_parquet_part_of_the_wrong_types_or_truncated_is_refused_by_both(small, tmp_path):
    snap = shutil.copytree(small, tmp_path / "snap")
    shutil.rmtree(snap / "data" / "works")
    part = _first_part(snap, "parquet")
    table = pq.read_table(part)
    column = table.schema.get_field_index("publication_year")
    pq.write_table(table.set_column(column, "publication_year", table.column(column).cast(pa.string())), part)
    out = _outcomes(snap, tmp_path / "types")
    assert out["duckdb"] == out["memory"] == (
        "refused", f"reading the snapshot failed: {part}: its column publication_year is of type string, which "
                   "does not hold the record's field (docs/scale.md#the-record-contract)")
    ids = table.column("id").to_pylist()
    pq.write_table(table.set_column(0, "id", pa.array([None, *ids[1:]], pa.string())), part)
    out = _outcomes(snap, tmp_path / "null-id")
    assert out["duckdb"] == out["memory"] == (
        "refused", f"reading the snapshot failed: {part}: row 1: the record has no id")
    part.write_bytes(part.read_bytes()[:1000])
    out = _outcomes(snap, tmp_path / "truncated")
    assert out["duckdb"][0] == out["memory"][0] == "refused" and out["duckdb"] == out["memory"]
    assert f"{part}: not a readable Parquet file" in out["duckdb"][1]


def test_scitaste_index_gives_one_line_and_exit_2(small, tmp_path, capsys):
    snap, part = _hostile(small, tmp_path, _set(referenced_works="W1"))
    for engine in ENGINES:
        assert main(["index", "--works", str(snap), "--out", str(tmp_path / engine), "--engine", engine,
                     "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err == (f"scitaste: error: reading the snapshot failed: {part}: line 1: referenced_works must be a "
                       "list, not 'W1'\n")


# --- the streamed reader ---

def test_lines_are_numbered_and_blank_lines_counted_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "CHUNK_BYTES", 7)
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 64)
    lines = [b"", b'{"id": "W1"}', b"\t \r", b"", b'  {"id": "W22", "title": "x"}  ', *[b""] * 30,
             b'{"id": "W3"}', b'{"id": "W4"}']
    path = tmp_path / "part.gz"
    # two gzip members, as a concatenation of files gives
    path.write_bytes(gzip.compress(b"\n".join(lines[:4]) + b"\n") + gzip.compress(b"\n".join(lines[4:])))
    counts = records.ReadCounts()
    assert [r["id"] for r in records.read_part(path, "jsonl", counts=counts)] == ["W1", "W22", "W3", "W4"]
    assert counts.blank_lines == len(lines) - 4
    path.write_bytes(gzip.compress(b"\n".join([*lines[:-1], b'{"id": "W4", "type": 1}'])))
    with pytest.raises(ScitasteError, match=rf"line {len(lines)}: type must be a string, not 1$"):
        records.check_part(path, "jsonl")
    path.write_bytes(gzip.compress(b"\n".join([*lines, b'{"id": "W5", "title": "' + b"y" * 80 + b'"}'])))
    with pytest.raises(ScitasteError, match=rf"line {len(lines) + 1} is longer than 64 bytes"):
        records.check_part(path, "jsonl")


def test_a_gzip_bomb_costs_its_bound_not_its_size(tmp_path, monkeypatch):
    """A part that inflates to one line of 64 MiB is refused after MAX_RECORD_BYTES (here 1 MiB) were read, and
    one that inflates to 64 MiB of blank lines is counted without splitting it into lines."""
    monkeypatch.setattr(records, "MAX_RECORD_BYTES", 2**20)
    deflate = zlib.compressobj(1, zlib.DEFLATED, 31)
    long_line = tmp_path / "long.gz"
    long_line.write_bytes(deflate.compress(b'{"id": "W1", "title": "') + b"".join(
        deflate.compress(b"a" * 2**20) for _ in range(64)) + deflate.flush())
    with pytest.raises(ScitasteError, match=f"{long_line}: line 1 is longer than 1,048,576 bytes"):
        records.check_part(long_line, "jsonl")
    deflate = zlib.compressobj(1, zlib.DEFLATED, 31)
    blanks = tmp_path / "blank.gz"
    blanks.write_bytes(b"".join(deflate.compress(b"\n" * 2**20) for _ in range(64))
                       + deflate.compress(b'{"id": "W1"}') + deflate.flush())
    assert blanks.stat().st_size < 2**20
    counts = records.check_part(blanks, "jsonl")
    assert counts.blank_lines == 64 * 2**20


def test_a_truncated_or_foreign_gzip_file_is_one_line(tmp_path):
    path = tmp_path / "part.gz"
    path.write_bytes(gzip.compress(b'{"id": "W1"}\n' * 1000)[:-20])
    with pytest.raises(ScitasteError, match=f"{path}: the gzip file ends before its end-of-stream marker"):
        records.check_part(path, "jsonl")
    path.write_bytes(b'{"id": "W1"}\n')
    with pytest.raises(ScitasteError, match=rf"reading the snapshot failed: {path}: Not a gzipped file \(b'{{\"'\)"):
        records.check_part(path, "jsonl")


def test_worker_processes_check_as_this_process_does(small, tmp_path, monkeypatch):
    """The SQL engines check a large snapshot's files ahead in worker processes: the same counts, the same line."""
    monkeypatch.setattr(records, "PARALLEL_CHECK_BYTES", 0)
    snap, part = _hostile(small, tmp_path, lambda lines: [b"", *lines, b" "])
    parts = sorted((snap / "data" / "works").rglob("*.gz"))
    # "", the part's last line (empty after its final newline, now followed by one), " "
    assert [c.blank_lines for c in records.check_parts(parts, "jsonl", 2)] == [3] + [0] * (len(parts) - 1)
    part.write_bytes(gzip.compress(b'{"id": "W1"}\n{"id": "W2", "cited_by_count": "9"}\n'))
    inline = pytest.raises(ScitasteError)
    with inline:
        records.check_part(part, "jsonl")
    with pytest.raises(ScitasteError) as workers:
        list(records.check_parts(parts[::-1], "jsonl", 2))
    assert str(workers.value) == str(inline.excinfo.value) == (
        f"reading the snapshot failed: {part}: line 2: cited_by_count must be a count (an integer >= 0), not '9'")


def test_a_build_from_the_snapshot_refuses_a_field_it_keeps_of_the_wrong_type_in_one_line(small, tmp_path):
    """A field the index does not read but a build keeps (``ids``) is outside the contract; the build's reading of
    it is one line naming the work."""
    from scitaste_hf.builder.snapshot_source import _full_records, open_snapshot

    snap, part = _hostile(small, tmp_path, _set(ids="not an object"))
    work = orjson.loads(_lines(part)[0])["id"].rsplit("/", 1)[-1]
    with pytest.raises(ScitasteError, match=f"the snapshot's record of {work} is not an OpenAlex work as a build "
                                            "reads it: AttributeError: 'str' object has no attribute 'get'"):
        _full_records(open_snapshot(snap), {work})


@pytest.mark.parametrize("size", [0, 1, 999, 1000, 1001, 4000, 30_000])
def test_inflating_gives_what_the_gzip_module_gives(tmp_path, monkeypatch, size):
    """Every byte of every member, in pieces of at most CHUNK_BYTES, whatever the sizes against the pieces (zero
    padding between members skipped, as gzip does)."""
    import random

    monkeypatch.setattr(records, "CHUNK_BYTES", 1000)
    noise = random.Random(size).randbytes(size)
    path = tmp_path / "part.gz"
    path.write_bytes(gzip.compress(noise) + b"\0\0\0" + gzip.compress(b"ab\n" * size))
    pieces = list(records._inflate(path))
    assert b"".join(pieces) == gzip.decompress(path.read_bytes()) == noise + b"ab\n" * size
    assert all(0 < len(p) <= 1000 for p in pieces)


def test_a_source_record_of_the_wrong_type_is_one_line_in_both_engines(small, tmp_path):
    snap = shutil.copytree(small, tmp_path / "snap")
    part = sorted((snap / "data" / "sources").rglob("*.gz"))[0]
    lines = _lines(part)
    lines[0] = orjson.dumps({**orjson.loads(lines[0]), "summary_stats": {"2yr_mean_citedness": "high"}})
    part.write_bytes(gzip.compress(b"\n".join(lines)))
    out = _outcomes(snap, tmp_path)
    assert out["duckdb"] == out["memory"] == (
        "refused", f"reading the snapshot failed: {part}: line 1: summary_stats.2yr_mean_citedness must be a number, "
                   "not 'high'")


def test_a_fifo_among_the_data_files_is_not_read(small, tmp_path):
    import os

    from scitaste_hf.snapshot.layout import find_entity

    snap = shutil.copytree(small, tmp_path / "snap")
    (snap / "data" / "works" / "manifest").unlink()
    fifo = _first_part(snap).parent / "part_999.gz"
    os.mkfifo(fifo)
    assert fifo not in [p.path for p in find_entity(snap).parts] and len(find_entity(snap).parts) >= 3
