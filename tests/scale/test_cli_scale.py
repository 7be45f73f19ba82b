"""`scitaste mirror snapshot` and `scitaste index` from the command line: results, and one-line errors."""

import json

import pyarrow.parquet as pq
import pytest

from scitaste_hf.cli import main


@pytest.mark.slow
def test_snapshot_then_index(tmp_path, capsys):
    snap, out = tmp_path / "snap", tmp_path / "run"
    assert main(["mirror", "snapshot", "--works", "400", "--out", str(snap), "--seed", "2"]) == 0
    assert "SYNTHETIC snapshot" in capsys.readouterr().out
    assert main(["index", "--works", str(snap), "--out", str(out), "--focal", "publication_year:>1990",
                 "--quiet", "--memory-limit", "1GB"]) == 0
    printed = capsys.readouterr().out
    table = pq.read_table(out / "index.parquet")
    summary = json.loads((out / "index.json").read_text())
    assert f"scored {table.num_rows:,} focal papers among 400 works with duckdb" in printed
    assert summary["engine"] == "duckdb" and summary["papers"] == table.num_rows and summary["memory_limit"] == "1GB"
    assert table.column_names[:9] == ["id", "citation_impact", "knowledge_breadth", "semantic_novelty",
                                      "disruptiveness", "conceptual_innovation", "team_collaboration",
                                      "journal_impact", "innovation_score"]
    assert (out / "stages" / "edges.parquet").is_file()


@pytest.mark.parametrize(("args", "message"), [
    (["--works", "{tmp}/missing"], "no snapshot at {tmp}/missing: the path does not exist"),
    (["--works", "{tmp}"], "no OpenAlex works snapshot at {tmp}"),
    (["--works", "{tmp}", "--focal", "year:2015"], "unknown filter key 'year'"),
    (["--works", "{tmp}", "--memory-limit", "lots"], "--memory-limit 'lots': expected a size"),
    (["--works", "{tmp}", "--weights", "{tmp}/none.json"], "weights file not found"),
])
def test_bad_input_is_one_line(tmp_path, capsys, args, message):
    argv = ["index", "--out", str(tmp_path / "out"), *(a.replace("{tmp}", str(tmp_path)) for a in args)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("scitaste: error: ") and message.replace("{tmp}", str(tmp_path)) in err
    assert err.count("\n") == 1 and not (tmp_path / "out").exists()


def test_one_run_at_a_time_per_output_folder(tmp_path, capsys):
    import fcntl

    snap, out = tmp_path / "snap", tmp_path / "run"
    assert main(["mirror", "snapshot", "--works", "50", "--out", str(snap)]) == 0
    out.mkdir()
    with open(out / ".lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        assert main(["index", "--works", str(snap), "--out", str(out), "--quiet"]) == 2
    assert f"another index run is using {out}" in capsys.readouterr().err
    assert not (out / "index.parquet").exists()


def test_a_damaged_data_file_is_one_line(tmp_path, capsys):
    """A truncated gzip part, of the works (read by DuckDB) or of the sources (read in Python), stops the run with
    one line naming the file, not a traceback, and no index.parquet is written."""
    import shutil

    whole = tmp_path / "snap"
    assert main(["mirror", "snapshot", "--works", "200", "--out", str(whole)]) == 0
    for entity in ("works", "sources"):
        snap = shutil.copytree(whole, tmp_path / f"snap-{entity}")
        part = sorted((snap / "data" / entity).rglob("*.gz"))[0]
        part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
        capsys.readouterr()
        out = tmp_path / f"run-{entity}"
        assert main(["index", "--works", str(snap), "--out", str(out), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("scitaste: error: reading the snapshot") and str(part.relative_to(snap)) in err, err
        assert err.count("\n") == 1 and not (out / "index.parquet").exists()
