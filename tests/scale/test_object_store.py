"""A snapshot in an object store (a moto S3 server on 127.0.0.1, a real process) gives the same index as the same
snapshot in a local folder, with the DuckDB, in-memory and Spark engines, in both formats; a store that does not
answer, a missing bucket, an unknown protocol and an --out URL are each one line."""

import gzip
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time

import numpy as np
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
    """``local_index(fmt)``: the DuckDB engine's index of the local folder, each format once: (table, summary)."""
    made = {}

    def get(fmt):
        if fmt not in made:
            made[fmt] = _index(store[0], tmp_path_factory.mktemp(f"local-{fmt}"), "duckdb", format=fmt)
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
    here, summary_here = local_index(fmt) if engine == "duckdb" else _index(local, tmp_path / "local", engine)
    there, summary_there = _index(url, tmp_path / "store", engine, format=fmt)
    _same(there, here)
    assert summary_there["citations"] == summary_here["citations"] > 300
    assert summary_there["snapshot"] == url


@pytest.mark.slow
def test_spark_reads_a_store_through_its_executors(store, local_index, tmp_path, spark_missing):
    """Spark's readers cannot reach s3:// without Maven jars: the executors read each file through fsspec, and the
    index is the DuckDB engine's from the local folder (to 1e-12, as tests/scale/test_spark_engine.py finds Spark's
    from a local folder), JSON Lines and Parquet; a record the contract refuses is one line."""
    from scitaste_hf.scale.spark_session import spark_session

    if spark_missing:
        pytest.skip(f"Spark engine: {spark_missing}")
    url = store[1]
    conf = {"spark.sql.shuffle.partitions": "2",
            "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
    options = {"threads": 2, "memory_limit": "1GB", "spark_conf": conf}
    # the session starts with the store's variables set, so that its Python workers inherit them
    with spark_session(IndexOptions(focal=parse_focal("all"), **options), tmp_path / "spill"):
        for fmt in ("jsonl", "parquet"):
            there, _ = _index(url, tmp_path / f"store-{fmt}", "spark", format=fmt, **options)
            _same(there, local_index(fmt)[0], atol=1e-12)
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
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "scitaste_hf", "index", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=120)
    return done, time.monotonic() - started


def test_bad_stores_are_one_line(store, tmp_path):
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = {**FAKE_AWS, "AWS_ENDPOINT_URL": f"http://127.0.0.1:{s.getsockname()[1]}"}
    cases = [(["--works", "s3://snapshots/snap"], closed, r"s3://snapshots/snap: cannot reach the store: "),
             (["--works", "s3://no-such-bucket/snap"], None, r"no snapshot at s3://no-such-bucket/snap: the path"),
             (["--works", "nosuch://x/snap"], None, r"nosuch://x/snap: .*nosuch"),
             (["--works", "s3://snapshots/snap", "--out", "s3://snapshots/run"], None,
              r"--out s3://snapshots/run: the output must be a local folder")]
    for args, env, message in cases:
        done, seconds = _cli(*args, *(() if "--out" in args else ("--out", str(tmp_path / "run"))), env=env)
        assert done.returncode == 2, done.stderr
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
        assert re.search(message, lines[0]), lines[0]
        assert seconds < 60
    assert not (tmp_path / "run").exists()
