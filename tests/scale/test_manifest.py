"""A snapshot's manifest: a malformed one is one line, an entry cannot lead outside the snapshot (scitaste index and
build --source snapshot find files the same way), and a focal id file that is not UTF-8 is one line."""

import gzip
import json

import pytest

from scitaste_hf.builder.snapshot_source import open_snapshot
from scitaste_hf.cli import main
from scitaste_hf.errors import ScitasteError
from scitaste_hf.snapshot.layout import find_entity
from scitaste_hf.snapshot.writer import write_snapshot


@pytest.fixture(scope="module")
def snap(tmp_path_factory):
    root = tmp_path_factory.mktemp("snap")
    write_snapshot(root, 60, seed=1, part_records=30)
    return root


def _with_manifest(snap, tmp_path, content: bytes):
    import shutil

    copy = shutil.copytree(snap, tmp_path / "snap")
    (copy / "data" / "works" / "manifest").write_bytes(content)
    return copy


ENTRY = "data/works/updated_date=2025-12-31/part_000.gz"


@pytest.mark.parametrize(("content", "why"), [
    (b"not json", "is not valid JSON (Expecting value at line 1 column 1)"),
    (b"[" * 100_000, "is nested more than 64 deep"),
    (b"\xff\xfe{}", "is not UTF-8 text (byte 0 is 0xff)"),
    (b'{"entries": [], "entries": []}', "is not valid JSON"),
    (b'[{"url": "x"}]', "is not a Redshift manifest: it has no 'entries' list"),
    (b'{"entries": "updated_date=x/part_000.gz"}', "is not a Redshift manifest: it has no 'entries' list"),
    (b'{"entries": ["updated_date=x/part_000.gz"]}', "is not a Redshift manifest: entry 0 has no 'url' string"),
    (b'{"entries": [{"url": 5}]}', "is not a Redshift manifest: entry 0 has no 'url' string"),
    (json.dumps({"entries": [{"url": ENTRY, "meta": {"record_count": "many"}}]}).encode(),
     "is not a Redshift manifest: entry 0's meta.record_count is not a count of records"),
    (json.dumps({"entries": [{"url": ENTRY, "meta": [1]}]}).encode(),
     "is not a Redshift manifest: entry 0's meta.record_count is not a count of records"),
])
def test_a_malformed_manifest_is_one_line(snap, tmp_path, capsys, content, why):
    copy = _with_manifest(snap, tmp_path, content)
    manifest = copy / "data" / "works" / "manifest"
    with pytest.raises(ScitasteError) as info:
        find_entity(copy)
    assert str(info.value).startswith(f"snapshot manifest {manifest} {why}"), info.value
    assert main(["index", "--works", str(copy), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"scitaste: error: snapshot manifest {manifest} {why}") and err.count("\n") == 1


def test_a_manifest_entry_cannot_lead_outside_the_snapshot(snap, tmp_path, capsys):
    outside = tmp_path / "elsewhere" / "updated_date=x"
    outside.mkdir(parents=True)
    (outside / "secret.gz").write_bytes(gzip.compress(b'{"id": "W1"}\n'))
    url = "data/works/updated_date=2025-12-31/../../../../elsewhere/updated_date=x/secret.gz"
    copy = _with_manifest(snap, tmp_path, json.dumps({"entries": [{"url": url}]}).encode())
    expected = f"{copy / 'data' / 'works' / 'manifest'} lists {url!r}"
    assert (copy / "data" / "works" / url[len("data/works/"):]).resolve() == outside / "secret.gz"
    for read in (find_entity, open_snapshot):
        with pytest.raises(ScitasteError, match="leads outside the snapshot's folder") as info:
            read(copy)
        assert str(info.value).startswith(expected)
    assert main(["index", "--works", str(copy), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    assert "leads outside the snapshot's folder" in capsys.readouterr().err


def test_a_focal_id_file_that_is_not_utf8_is_one_line(snap, tmp_path, capsys):
    ids = tmp_path / "ids.txt"
    ids.write_bytes("W1 # Müller\n".encode("latin-1"))
    assert main(["index", "--works", str(snap), "--out", str(tmp_path / "out"), "--focal", str(ids),
                 "--quiet"]) == 2
    assert capsys.readouterr().err == (f"scitaste: error: the focal id file {ids} is not UTF-8 text (byte 6): save "
                                       "it as UTF-8\n")
