"""The simulated snapshot: OpenAlex's layout, a closed world, the same records in JSON Lines and Parquet."""

import gzip
import json

import orjson
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.simworld.stream import generate
from scitaste_hf.snapshot.layout import find_entity
from scitaste_hf.snapshot.reader import iter_records, read_journals
from scitaste_hf.snapshot.writer import write_snapshot

pytestmark = pytest.mark.slow


def test_layout_partitions_and_manifest(snapshot):
    works = snapshot / "data" / "works"
    parts = sorted(works.glob("updated_date=*/part_*.gz"))
    # Four updated_date partitions of 750 records, split at 700 records a file.
    assert [p.relative_to(works).as_posix() for p in parts] == [
        f"updated_date={d}/part_00{k}.gz" for d in ("2025-09-30", "2025-10-31", "2025-11-30", "2025-12-31")
        for k in (0, 1)]
    manifest = json.loads((works / "manifest").read_text())
    assert manifest["meta"]["record_count"] == 3000
    assert [e["meta"]["record_count"] for e in manifest["entries"]] == [700, 50] * 4
    for entry in manifest["entries"]:
        path = snapshot / entry["url"]
        assert entry["meta"]["content_length"] == path.stat().st_size
        with gzip.open(path) as fh:
            assert sum(1 for _ in fh) == entry["meta"]["record_count"]
    files = find_entity(snapshot)
    assert (files.format, files.records, len(files.parts)) == ("jsonl", 3000, 8)
    assert json.loads((snapshot / "snapshot.json").read_text())["synthetic"] is True


def test_closed_world_with_openalex_records(snapshot):
    records = list(iter_records(find_entity(snapshot)))
    ids = {r["id"] for r in records}
    assert len(ids) == 3000
    cited = {}
    for r in records:
        assert set(r["referenced_works"]) <= ids
        assert r["referenced_works_count"] == len(r["referenced_works"])
        for ref in r["referenced_works"]:
            cited[ref] = cited.get(ref, 0) + 1
    # Every citer is inside: cited_by_count is the number of citing works in the snapshot.
    assert all(r["cited_by_count"] == cited.get(r["id"], 0) for r in records)
    r = records[0]
    assert r["id"].startswith("https://openalex.org/W8")
    assert {"publication_date", "publication_year", "authorships", "topics", "concepts", "primary_location",
            "abstract_inverted_index", "primary_topic", "title"} <= set(r)
    assert r["authorships"][0]["institutions"][0]["country_code"]
    assert r["primary_location"]["source"]["issn_l"]
    # About twenty references a work at scale; fewer in a small world, whose early works have little to cite.
    assert 10 < sum(len(r["referenced_works"]) for r in records) / len(records) < 25


def test_parquet_holds_the_same_records(snapshot):
    as_json = {r["id"]: r for r in iter_records(find_entity(snapshot, fmt="jsonl"))}
    as_parquet = list(iter_records(find_entity(snapshot, fmt="parquet")))
    assert len(as_parquet) == 3000
    for row in as_parquet[::97]:
        original = as_json[row["id"]]
        for key in ("referenced_works", "publication_date", "cited_by_count", "abstract_inverted_index", "title"):
            assert row[key] == original[key]
        assert [t["score"] for t in row["topics"]] == [t["score"] for t in original["topics"]]
        assert [a["countries"] for a in row["authorships"]] == [a["countries"] for a in original["authorships"]]


def test_same_seed_same_world_streamed_in_bounded_memory():
    a, b = generate(5000, seed=1), generate(5000, seed=1)
    assert (a.ref_idx == b.ref_idx).all() and (a.day == b.day).all()
    assert a.ref_idx.dtype.itemsize == 4  # 4 bytes a citation: 80 MB for 2x10^7
    # References are earlier works: the world is generated in date order.
    owner = (a.ref_ptr[1:] > a.ref_ptr[:-1]).nonzero()[0][-1]
    assert (a.day[a.ref_idx[a.ref_ptr[owner]:a.ref_ptr[owner + 1]]] <= a.day[owner]).all()


def test_sources_give_the_journal_table(snapshot):
    table = read_journals(snapshot)
    assert table.proxy and len(table.entries) == 657
    record = orjson.loads(gzip.open(next((snapshot / "data" / "works").glob("*/*.gz"))).readline())
    assert table.lookup(record["primary_location"]["source"]["issn_l"]).impact_factor > 0


def test_refuses_to_overwrite_and_bad_paths(snapshot, tmp_path):
    with pytest.raises(ScitasteError, match="already holds a snapshot"):
        write_snapshot(snapshot, 10)
    with pytest.raises(ScitasteError, match="does not exist"):
        find_entity(tmp_path / "missing")
    with pytest.raises(ScitasteError, match="no OpenAlex works snapshot"):
        find_entity(tmp_path)
    copy = tmp_path / "copy" / "data" / "works"
    copy.mkdir(parents=True)
    (copy / "manifest").write_text((snapshot / "data" / "works" / "manifest").read_text())
    (copy / "updated_date=2025-09-30").mkdir()
    with pytest.raises(ScitasteError, match="the snapshot is incomplete"):
        find_entity(tmp_path / "copy")
