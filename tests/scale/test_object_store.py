"""A snapshot in an object store (a moto S3 server on 127.0.0.1, a real process) gives the same index as the same
snapshot in a local folder, with the DuckDB, in-memory and Spark engines, in both formats; an --out in the store
gets the same files as a local one, uploaded from a staging folder where a rerun resumes; a store that does not
answer, a missing bucket and an unknown protocol are each one line, for --works and for --out. A fake GCS
(gcp-storage-emulator) does the same for gs://, snapshot and output."""

import gzip
import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from scitaste_hf.errors import ScitasteError
from scitaste_hf.progress import StageProgress
from scitaste_hf.scale.options import IndexOptions
from scitaste_hf.scale.run import index_snapshot
from scitaste_hf.snapshot.focal import parse_focal
from scitaste_hf.snapshot.writer import write_snapshot

BUCKET = "snapshots"
#: What a store's client reads to reach the fake server (the AWS SDK's own variables).
FAKE_AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def store(tmp_path_factory, servers):
    """A moto S3 server holding a 300-work snapshot (both formats) under s3://snapshots/snap, with the variables
    that point the AWS client at it set for the module; (local snapshot, its URL)."""
    pytest.importorskip("s3fs")
    start, stop = servers
    folder = tmp_path_factory.mktemp("store")
    moto = os.path.join(os.path.dirname(sys.executable), "moto_server")
    if not os.path.exists(moto):
        pytest.skip("moto[server] is not installed (pip install '.[test]' installs it)")
    proc, url = start([moto, "-H", "127.0.0.1", "-p", "{port}"], log=folder / "moto.log", ready="/moto-api/")
    local = folder / "snap"
    write_snapshot(local, 300, seed=5, parquet=True, part_records=80)
    with pytest.MonkeyPatch.context() as mp:
        for name, value in {**FAKE_AWS, "AWS_ENDPOINT_URL": url.rstrip("/")}.items():
            mp.setenv(name, value)
        import fsspec

        fs = fsspec.filesystem("s3", skip_instance_cache=True)
        fs.mkdir(BUCKET)
        fs.put(str(local) + "/", f"{BUCKET}/snap/", recursive=True)
        try:
            yield local, f"s3://{BUCKET}/snap"
        finally:
            stop(proc)


def _index(snapshot, out, engine, **options):
    summary = index_snapshot(snapshot, out, engine, IndexOptions(focal=parse_focal("all"), **options),
                             StageProgress(enabled=False))
    return pq.read_table(out / "index.parquet"), summary


@pytest.fixture(scope="module")
def local_index(store, tmp_path_factory):
    """``local_index(fmt)``: the DuckDB engine's index of the local folder, each format once: (table, summary,
    the folder)."""
    made = {}

    def get(fmt):
        if fmt not in made:
            out = tmp_path_factory.mktemp(f"local-{fmt}")
            made[fmt] = (*_index(store[0], out, "duckdb", format=fmt), out)
        return made[fmt]

    return get


def _same(a, b, atol: float = 0.0) -> None:
    """Every column equal (NaN where the other has NaN): identical, or within ``atol``."""
    assert a.column_names == b.column_names and a.num_rows == b.num_rows == 300
    assert a.column("id").equals(b.column("id"))
    for name in a.column_names[1:]:
        x, y = (t.column(name).to_numpy(zero_copy_only=False).astype(float) for t in (a, b))
        assert np.allclose(x, y, rtol=0, atol=atol, equal_nan=True), name


@pytest.mark.parametrize(("engine", "fmt"), [("duckdb", "jsonl"), ("duckdb", "parquet"), ("memory", "jsonl")])
def test_a_snapshot_in_a_store_gives_the_local_index(store, local_index, tmp_path, engine, fmt):
    local, url = store
    here, summary_here = local_index(fmt)[:2] if engine == "duckdb" else _index(local, tmp_path / "local", engine)
    there, summary_there = _index(url, tmp_path / "store", engine, format=fmt)
    _same(there, here)
    assert summary_there["citations"] == summary_here["citations"] > 300
    assert summary_there["snapshot"] == url


@pytest.mark.slow
def test_spark_reads_a_store_through_its_executors(store, local_index, tmp_path, spark_missing):
    """Spark's readers cannot reach s3:// without Maven jars: the executors read each file through fsspec, and the
    index is the DuckDB engine's from the local folder (to 1e-12, as tests/scale/test_spark_engine.py finds Spark's
    from a local folder), JSON Lines and Parquet, the second with its --out in the store too; a record the contract
    refuses is one line."""
    from scitaste_hf.scale.spark_session import spark_session

    if spark_missing:
        pytest.skip(f"Spark engine: {spark_missing}")
    url = store[1]
    # the executors' Python workers get the store's variables as a cluster's would (docs/scale.md): from the
    # session's settings, not from the environment the JVM started in, which an earlier test's session may have set
    store_env = {**FAKE_AWS, "AWS_ENDPOINT_URL": os.environ["AWS_ENDPOINT_URL"]}
    conf = {"spark.sql.shuffle.partitions": "2",
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
            **{f"spark.executorEnv.{name}": value for name, value in store_env.items()}}
    options = {"threads": 2, "memory_limit": "1GB", "spark_conf": conf}
    with spark_session(IndexOptions(focal=parse_focal("all"), **options), tmp_path / "spill"):
        there, _ = _index(url, tmp_path / "store-jsonl", "spark", format="jsonl", **options)
        _same(there, local_index("jsonl")[0], atol=1e-12)
        out = f"s3://{BUCKET}/runs/spark"
        index_snapshot(url, out, "spark", IndexOptions(focal=parse_focal("all"), format="parquet", **options),
                       StageProgress(enabled=False), stage_dir=tmp_path / "stage")
        _same(pq.read_table(pa.BufferReader(_bucket()[f"{BUCKET}/runs/spark/index.parquet"])),
              local_index("parquet")[0], atol=1e-12)
        # the executors check the record contract and the driver says a refusal in the contract's one line
        broken = shutil.copytree(store[0], tmp_path / "broken")
        part = sorted((broken / "data" / "works").glob("updated_date=*/part_*.gz"))[0]
        lines = gzip.decompress(part.read_bytes()).split(b"\n")
        lines[2] = json.dumps({**json.loads(lines[2]), "referenced_works": "W1"}).encode()
        part.write_bytes(gzip.compress(b"\n".join(lines)))
        with pytest.raises(ScitasteError, match=rf"^reading the snapshot failed: {re.escape(str(part))}: line 3: "
                                                r"referenced_works must be a list, not 'W1'$"):
            _index(broken, tmp_path / "refused", "spark", **options)


def _cli(*args, env=None):
    """``scitaste index ARGS`` started in a process of its own; ``finish()`` waits for it: (its result, seconds)."""
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "scitaste_hf", "index", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})})

    def finish():
        out, err = proc.communicate(timeout=120)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), time.monotonic() - started

    return finish


def test_bad_stores_are_one_line(store, tmp_path):
    """For --works and for --out, before anything is computed or written; the --out cases leave the bucket as it
    was and create no staging folder."""
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = {**FAKE_AWS, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{s.getsockname()[1]}"}
    local, stage = str(store[0]), ["--stage-dir", str(tmp_path / "stage")]
    cases = [(["--works", "s3://snapshots/snap"], closed, r"s3://snapshots/snap: cannot reach the store: "),
             (["--works", "s3://no-such-bucket/snap"], None, r"no snapshot at s3://no-such-bucket/snap: the path"),
             (["--works", "nosuch://x/snap"], None, r"nosuch://x/snap: .*nosuch"),
             (["--works", local, "--out", "s3://snapshots/run", *stage], closed,
              r"s3://snapshots/run: cannot reach the store: "),
             (["--works", local, "--out", "s3://no-such-bucket/run", *stage], None,
              r"^scitaste: error: s3://no-such-bucket/run: its root s3://no-such-bucket/ does not exist"),
             (["--works", local, "--out", "nosuch://x/run", *stage], None, r"nosuch://x/run: .*nosuch")]
    before = _bucket()
    # at once: most of each case's time is its client's retries against the closed port
    started = [_cli(*args, *(() if "--out" in args else ("--out", str(tmp_path / "run"))), env=env)
               for args, env, _ in cases]
    for (_, _, message), finish in zip(cases, started):
        done, seconds = finish()
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
        assert re.search(message, lines[0]), lines[0]
        assert seconds < 60
    assert not (tmp_path / "run").exists() and not (tmp_path / "stage").exists()
    assert _bucket() == before
    for out, message in (("s3://", r"^s3://: name the bucket"), ("memory://bucket/run", r"ends with the process")):
        with pytest.raises(ScitasteError, match=message):  # refused before the store is asked
            index_snapshot(local, out, "duckdb", IndexOptions(focal=parse_focal("all")), stage_dir=tmp_path / "s")
    assert not (tmp_path / "s").exists()
    with pytest.raises(ScitasteError, match=r"^--stage-dir is for an --out URL"):
        index_snapshot(local, tmp_path / "run", "duckdb", IndexOptions(focal=parse_focal("all")),
                       stage_dir=tmp_path / "stage")


def _bucket() -> dict[str, bytes]:
    """Every file of the bucket, by key, with its bytes."""
    import fsspec

    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    return {key: fs.cat_file(key) for key in fs.find(BUCKET)}


def _summaries_agree(a: dict, b: dict) -> None:
    """The same fields, with the same values but for the seconds each run took."""
    timing = ("seconds", "stage_seconds")
    assert a.keys() == b.keys()
    assert {k: v for k, v in a.items() if k not in timing} == {k: v for k, v in b.items() if k not in timing}


@pytest.mark.parametrize("engine", ["duckdb", "memory"])
def test_an_out_in_a_store_gets_the_local_files(store, local_index, tmp_path, capsys, engine):
    """index.parquet in the bucket has the bytes of a local run's, index.json its fields; a rerun with the same
    --out resumes from the staging folder's stages (the DuckDB engine computes none of them again)."""
    local, _ = store
    url, stage = f"s3://{BUCKET}/runs/{engine}", tmp_path / "stage"
    if engine == "duckdb":
        summary_here, folder = local_index("jsonl")[1:]
    else:
        folder = tmp_path / "local"
        summary_here = _index(local, folder, engine)[1]
    options = IndexOptions(focal=parse_focal("all"), format="jsonl")
    summary = index_snapshot(local, url, engine, options, StageProgress(enabled=False), stage_dir=stage)
    files = _bucket()
    parquet, written = files[f"{BUCKET}/runs/{engine}/index.parquet"], files[f"{BUCKET}/runs/{engine}/index.json"]
    assert parquet == (folder / "index.parquet").read_bytes() == (stage / "index.parquet").read_bytes()
    assert written == (stage / "index.json").read_bytes()
    _summaries_agree(json.loads(written), summary_here)
    _summaries_agree(summary, summary_here)
    assert not [key for key in files if "write-check" in key]  # the store's write check leaves nothing
    if engine == "duckdb":
        assert (stage / "stages" / "edges.parquet").is_file()
        with StageProgress(enabled=True, bars=False) as progress:
            again = index_snapshot(local, url, engine, options, progress, stage_dir=stage)
        notes = capsys.readouterr().err
        assert {"read", "tables", "features", "cd", "embed", "neighbours", "semantic"} == set(
            re.findall(r"^(\w+): done before, skipped$", notes, re.MULTILINE)), notes
        assert re.search(rf"^uploaded to {url} in ", notes, re.MULTILINE), notes
        _summaries_agree(again, summary)
        assert _bucket()[f"{BUCKET}/runs/{engine}/index.parquet"] == parquet


def test_the_cli_names_the_url_and_the_staging_folder(store, tmp_path, capsys, monkeypatch):
    """Without --stage-dir the run works in the user's cache, in a folder named by the URL, which it empties once
    the upload is done (but for the lock file); a --stage-dir keeps its stages and outputs."""
    from scitaste_hf.cli import main

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    url = f"s3://{BUCKET}/runs/cli/"
    assert main(["index", "--works", str(store[0]), "--out", url, "--quiet"]) == 0
    printed = capsys.readouterr().out
    stage = re.search(rf": {url}index.parquet \(worked in (\S+), emptied after the upload\)$", printed.strip())
    assert stage, printed
    assert stage.group(1).startswith(str(tmp_path / "cache" / "scitaste" / "index"))
    assert [p.name for p in Path(stage.group(1)).iterdir()] == [".lock"]
    assert {f"{BUCKET}/runs/cli/index.json", f"{BUCKET}/runs/cli/index.parquet"} <= set(_bucket())
    kept = tmp_path / "kept"
    assert main(["index", "--works", str(store[0]), "--out", url, "--stage-dir", str(kept), "--quiet"]) == 0
    assert capsys.readouterr().out.strip().endswith(f"index.parquet (stages kept in {kept})")
    assert (kept / "index.json").is_file() and (kept / "stages" / "edges.parquet").is_file()


def test_an_upload_the_store_stops_taking_is_cut_at_its_time_bound(store, tmp_path, capsys, monkeypatch):
    """A store that stops answering while index.parquet goes up: the upload is given CONTACT_SECONDS and a second
    a UPLOAD_BYTES_PER_SECOND of the file, then the run ends in one line, its outputs kept for a rerun."""
    import threading

    from upath import UPath

    from scitaste_hf.cli import main
    from scitaste_hf.snapshot import store as stores

    url, stage = f"s3://{BUCKET}/runs/stalled", tmp_path / "stage"
    fs, put_file, release = UPath(url).fs, UPath(url).fs.put_file, threading.Event()

    def stalled(local, remote, **kwargs):
        if remote.endswith("index.parquet"):
            release.wait(60)  # the store never answers (until the test ends)
        return put_file(local, remote, **kwargs)

    monkeypatch.setattr(fs, "put_file", stalled)
    monkeypatch.setattr(stores, "CONTACT_SECONDS", 3.0)
    monkeypatch.setattr(stores, "UPLOAD_BYTES_PER_SECOND", 40_000)
    started = time.monotonic()
    try:
        assert main(["index", "--works", str(store[0]), "--out", url, "--stage-dir", str(stage), "--quiet"]) == 2
    finally:
        release.set()
    size = (stage / "index.parquet").stat().st_size
    bound = 3.0 + size / 40_000
    err = capsys.readouterr().err.strip()
    assert err == (f"scitaste: error: uploading {stage}/index.parquet to {url}/index.parquet: the store did not "
                   f"answer within {bound:.0f} s; the outputs and stages are kept in {stage}: the same command again "
                   "skips the stages done there and uploads")
    assert time.monotonic() - started < 60  # the stalled upload was not waited for
    assert f"{BUCKET}/runs/stalled/index.json" not in _bucket()


def test_a_failed_upload_leaves_no_index_json_and_a_rerun_uploads(store, tmp_path, capsys, monkeypatch):
    """The store fails while index.parquet goes up, after an earlier run's outputs are there: one line saying
    where the outputs are kept, and no index.json in the bucket (the earlier one is removed first, so that it does
    not stand beside other scores); the same command again uploads them, its stages all skipped."""
    from upath import UPath

    from scitaste_hf.cli import main

    url, stage = f"s3://{BUCKET}/runs/failed", tmp_path / "stage"
    argv = ["index", "--works", str(store[0]), "--out", url, "--stage-dir", str(stage)]
    assert main([*argv, "--quiet"]) == 0
    key = f"{BUCKET}/runs/failed/index.json"
    assert key in _bucket()
    capsys.readouterr()
    fs, put_file = UPath(url).fs, UPath(url).fs.put_file

    def failing(local, remote, **kwargs):
        if remote.endswith("index.parquet"):
            raise ConnectionError("Connection was closed before we received a valid response\nmore detail")
        return put_file(local, remote, **kwargs)

    monkeypatch.setattr(fs, "put_file", failing)
    assert main([*argv, "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"scitaste: error: uploading {stage}/index.parquet to {url}/index.parquet: the store failed: "
                   f"ConnectionError: Connection was closed before we received a valid response; the outputs and "
                   f"stages are kept in "
                   f"{stage}: the same command again skips the stages done there and uploads")
    assert key not in _bucket()
    assert (stage / "index.json").is_file() and (stage / "index.parquet").is_file()
    monkeypatch.undo()
    assert main(argv) == 0
    notes = capsys.readouterr().err
    assert notes.count("done before, skipped") == 7, notes
    files = _bucket()
    assert files[key] == (stage / "index.json").read_bytes()
    assert files[f"{BUCKET}/runs/failed/index.parquet"] == (stage / "index.parquet").read_bytes()


@pytest.fixture(scope="module")
def gcs(store, tmp_path_factory, servers):
    """A fake GCS (gcp-storage-emulator, a real process on 127.0.0.1) holding the same snapshot under
    gs://snapshots/snap, with the variables that point gcsfs at it set for the module; the snapshot's URL."""
    start, stop = servers
    emulator = os.path.join(os.path.dirname(sys.executable), "gcp-storage-emulator")
    if not os.path.exists(emulator) or importlib.util.find_spec("gcsfs") is None:
        pytest.skip("gcp-storage-emulator or gcsfs is not installed (pip install '.[test]' installs them)")
    folder = tmp_path_factory.mktemp("gcs")
    proc, url = start([emulator, "start", "--host", "127.0.0.1", "--port", "{port}", "--in-memory"],
                      log=folder / "emulator.log", cwd=folder, ready="/storage/v1/b")
    # gcsfs's default since 2025 asks each bucket's type over gRPC, which the emulator does not serve (a minute's
    # wait a bucket)
    fake = {"STORAGE_EMULATOR_HOST": url.rstrip("/"), "GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT": "false"}
    with pytest.MonkeyPatch.context() as mp:
        for name, value in fake.items():
            mp.setenv(name, value)
        import fsspec
        import gcsfs

        # what FSSPEC_GCS_TOKEN=anon would say, had it been set before fsspec read the variables at its import: the
        # emulator wants no credentials (gcsfs would look for Google's), and a project to make a bucket in
        mp.setitem(fsspec.config.conf, "gcs", {"token": "anon", "project": "test"})

        # the variable is read when gcsfs is imported: an earlier import would make every call wait
        assert gcsfs.GCSFileSystem is gcsfs.core.GCSFileSystem, "gcsfs was imported before the fixture"
        fs = fsspec.filesystem("gs", skip_instance_cache=True)
        fs.mkdir(BUCKET)
        fs.put(str(store[0]) + "/", f"{BUCKET}/snap/", recursive=True)
        try:
            yield f"gs://{BUCKET}/snap"
        finally:
            stop(proc)


def test_a_snapshot_in_gcs_gives_the_local_index_in_gcs(gcs, local_index, tmp_path):
    """Read from gs:// and written to gs://, through the same code as s3://: the local run's index.parquet."""
    import fsspec

    summary = index_snapshot(gcs, f"gs://{BUCKET}/run", "duckdb", IndexOptions(focal=parse_focal("all")),
                             StageProgress(enabled=False), stage_dir=tmp_path / "stage")
    _, summary_here, folder = local_index("jsonl")
    fs = fsspec.filesystem("gs", skip_instance_cache=True)
    assert fs.credentials.method == "anon"
    assert sorted(fs.find(f"{BUCKET}/run")) == [f"{BUCKET}/run/index.json", f"{BUCKET}/run/index.parquet"]
    assert fs.cat_file(f"{BUCKET}/run/index.parquet") == (folder / "index.parquet").read_bytes()
    assert summary["snapshot"] == gcs and summary["citations"] == summary_here["citations"]
    assert json.loads(fs.cat_file(f"{BUCKET}/run/index.json")) == summary
