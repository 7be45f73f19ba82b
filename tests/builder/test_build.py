"""`scitaste build` end to end against the offline mirror (a small simulated world) on 127.0.0.1: the dataset it
writes, same-seed reproducibility, the warm re-run and the resume that send nothing, a service failing
mid-build, an existing output folder, a service that caps its pages or cuts a listing short, what a killed build
leaves behind, destinations that cannot be written, and two builds on one work directory."""

import json
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import httpx
import pytest

from scitaste_hf.schema import DIMENSIONS, DISCIPLINES, record_features
from scitaste_hf.taxonomy import load_taxonomy
from scitaste_hf.weights import composite

pytestmark = pytest.mark.slow

SCITASTE = str(Path(sys.executable).with_name("scitaste"))
PAPERS, SEED = 300, 5
#: Scaled-down quotas: every paper of a discipline (the world has PAPERS / 6), a fifth of them selected.
PER_DISCIPLINE, SELECTED = PAPERS // len(DISCIPLINES), PAPERS // len(DISCIPLINES) // 5
QUOTAS = ["--per-discipline", str(PER_DISCIPLINE), "--selected-per-discipline", str(SELECTED)]


def _mirror(servers, tmp_path_factory, *extra):
    start, _ = servers
    log = tmp_path_factory.mktemp("mirror") / "log.txt"
    return start([SCITASTE, "mirror", "serve", "--papers", str(PAPERS), "--seed", str(SEED), "--port", "{port}",
                  *extra], log=log, ready="/health")


@pytest.fixture(scope="module")
def mirror(servers, tmp_path_factory):
    proc, url = _mirror(servers, tmp_path_factory)
    yield url.rstrip("/")
    servers[1](proc)


def requests_seen(url: str) -> int:
    return len(httpx.get(f"{url}/_control/log", timeout=10).json()["requests"])


def build(url: str, out: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([SCITASTE, "build", "--source", "mirror", "--mirror-url", url, "--out", str(out),
                           "--seed", "3", *QUOTAS, *extra], capture_output=True, text=True, timeout=300)


def refused(capsys, url: str, out: Path, *extra: str) -> list[str]:
    """The stderr lines of a build that must stop before any work, run in this process (the command's own
    entry, as ``scitaste`` calls it, without a process start of its own); asserts exit status 2."""
    from scitaste_hf.cli import main

    capsys.readouterr()
    assert main(["build", "--source", "mirror", "--mirror-url", url, "--out", str(out), "--seed", "3", *QUOTAS,
                 *extra]) == 2
    return capsys.readouterr().err.strip().splitlines()


@pytest.fixture(scope="module")
def built(mirror, tmp_path_factory):
    """A cold build: its folder and the requests it sent."""
    out = tmp_path_factory.mktemp("build") / "ds"
    before = requests_seen(mirror)
    done = build(mirror, out)
    assert done.returncode == 0, done.stderr[-3000:]
    return out, requests_seen(mirror) - before


def files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def work_copy(out: Path, tmp_path: Path) -> Path:
    """A copy of a build's work directory (cache and checkpoints), for a test to change."""
    return Path(shutil.copytree(f"{out}.work", tmp_path / "copy.work"))


def test_dataset_has_the_benchmark_shape(built):
    import datasets

    out, sent = built
    assert sent > 0
    ds = datasets.load_dataset(str(out))
    assert set(ds) == {"selected", "backup"}
    for split in ds.values():
        assert split.features == record_features()
    selected, backup = ds["selected"].to_list(), ds["backup"].to_list()
    assert len(selected) == SELECTED * len(DISCIPLINES)
    assert len(backup) == (PER_DISCIPLINE - SELECTED) * len(DISCIPLINES)
    assert Counter(r["discipline"] for r in selected) == dict.fromkeys(DISCIPLINES, SELECTED)
    assert Counter(r["discipline"] for r in backup) == dict.fromkeys(DISCIPLINES, PER_DISCIPLINE - SELECTED)
    assert {r["subcategory_id"] for r in selected} == {c.id for c in load_taxonomy().cells}
    assert not {r["bibcode"] for r in selected} & {r["bibcode"] for r in backup}
    for r in selected + backup:
        dims = r["dimension_scores"]
        assert set(dims) == set(DIMENSIONS)
        assert all(0 <= v <= 100 for v in dims.values()) and 0 <= r["innovation_score"] <= 100
        assert abs(r["innovation_score"] - composite(dims)) <= 0.01
        assert r["title"] and r["abstract"] and 1995 <= r["year"] <= 2024
    physics = [r for r in selected + backup if r["discipline"] == "physics"]
    assert all(len(r["bibcode"]) == 19 for r in physics)  # ADS bibcodes
    assert any(r["arxiv_id"] for r in physics)
    mapping = json.loads((out / "openalex_bibcode_map.json").read_text())
    others = [r for r in selected + backup if r["discipline"] != "physics"]
    assert all(mapping[r["bibcode"]] == r["openalex_id"] and r["bibcode"].endswith(r["openalex_id"])
               for r in others)
    assert "synthetic" in (out / "README.md").read_text().lower()


def test_warm_rerun_sends_nothing_and_is_byte_identical(built, mirror, tmp_path):
    out, _ = built
    before = requests_seen(mirror)
    again = build(mirror, tmp_path / "again", "--work-dir", f"{out}.work")  # every stage recomputed from the cache
    assert again.returncode == 0, again.stderr[-3000:]
    assert "0 requests" in again.stdout
    assert requests_seen(mirror) == before
    assert files(tmp_path / "again") == files(out)


def test_resume_skips_finished_stages(built, mirror, tmp_path):
    out, _ = built
    before = requests_seen(mirror)
    resumed = build(mirror, tmp_path / "resumed", "--work-dir", f"{out}.work", "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "resumed collect, snowball, label, index, sample" in " ".join(resumed.stdout.split())
    assert requests_seen(mirror) == before
    assert files(tmp_path / "resumed") == files(out)


def test_existing_output_is_refused(built, mirror, capsys):
    out, _ = built
    before = files(out)
    assert refused(capsys, mirror, out) == [
        f"scitaste: error: {out} already exists; choose another --out or pass --overwrite"]
    assert files(out) == before


def test_service_failing_mid_build_stops_and_resumes_without_refetching(built, servers, tmp_path_factory,
                                                                       tmp_path):
    """A mirror whose request budget runs out part-way: the build stops with one line, then resumes (after the
    budget is reset) and sends only what it had not fetched (or had in flight when it stopped), ending with the same
    dataset as the cold build."""
    reference, cold_requests = built
    limit = cold_requests * 2 // 3  # the reset gives the resumed build as many again: more than it needs
    proc, url = _mirror(servers, tmp_path_factory, "--daily-limit", str(limit))
    url = url.rstrip("/")
    try:
        out = tmp_path / "ds"
        failed = build(url, out)
        assert failed.returncode == 2
        errors = [line for line in failed.stderr.splitlines() if line.startswith("scitaste: error:")]
        assert len(errors) == 1 and "--resume once the budget resets" in errors[0] and "Traceback" not in failed.stderr
        assert "--offline" not in errors[0]  # an option `scitaste build` does not have
        assert not out.exists()
        httpx.post(f"{url}/_control/reset", timeout=10)
        resumed = build(url, out, "--resume")
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        # what the stopped build had fetched is not sent again; the only repeats are the answers that were still in
        # flight on its other connections when the budget ran out (the stage stops and cancels them unread)
        from scitaste_hf.sources.options import ClientOptions

        in_flight = ClientOptions.__dataclass_fields__["max_connections"].default
        assert cold_requests - limit <= requests_seen(url) <= cold_requests - limit + in_flight
        assert files(out) == files(reference)
    finally:
        servers[1](proc)


def test_too_few_candidates_completes_and_says_which_are_short(built, mirror, tmp_path):
    out, _ = built
    short = subprocess.run([SCITASTE, "build", "--mirror-url", mirror, "--out", str(tmp_path / "short"),
                            "--work-dir", f"{out}.work", "--per-discipline", str(3 * PER_DISCIPLINE),
                            "--selected-per-discipline", str(SELECTED)],
                           capture_output=True, text=True, timeout=300)
    assert short.returncode == 0, short.stderr[-3000:]
    table = short.stdout[short.stdout.index("\nshort"):]  # the summary's table of short cells and disciplines
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:4]]
            for line in table.splitlines() if line.count("│") == 4}
    # the world has about 1.5 x PER_DISCIPLINE candidates per discipline (cells rounded up; physics: less those no
    # cascade stage labels)
    available = {d: rows[d] for d in DISCIPLINES}
    assert all(q == str(3 * PER_DISCIPLINE) and PER_DISCIPLINE < int(n) <= 1.6 * PER_DISCIPLINE
               for n, q in available.values()), available
    import datasets

    ds = datasets.load_dataset(str(tmp_path / "short"))
    bibcodes = [r for s in ("selected", "backup") for r in ds[s]["bibcode"]]
    assert len(bibcodes) == len(set(bibcodes)) == sum(int(rows[d][0]) for d in DISCIPLINES)  # nothing padded


def _listings_row(stdout: str) -> str:
    """The count of the summary's table of listings that ended short of their announced count."""
    line = next(line for line in stdout.splitlines() if "ended short of the count" in line)
    return line.split("│")[2].strip()


def test_a_service_that_caps_its_pages_gives_the_same_dataset(built, servers, tmp_path_factory, tmp_path):
    """Every listing longer than a page pages on past pages shorter than asked: capped at 50 records a page (so
    that the build sends about three times the cold build's requests), the mirror gives the dataset of the cold
    build, and no listing ends short."""
    reference, cold_requests = built
    proc, url = _mirror(servers, tmp_path_factory, "--max-page", "50")
    try:
        capped = build(url.rstrip("/"), tmp_path / "ds")
        requests = requests_seen(url.rstrip("/"))
    finally:
        servers[1](proc)
    assert capped.returncode == 0, capped.stderr[-3000:]
    assert requests > 2 * cold_requests  # the pages were short, and the build paged on
    assert files(tmp_path / "ds") == files(reference)
    assert _listings_row(capped.stdout) == "0"


def test_a_listing_cut_short_is_counted_in_the_summary_and_the_card(built, mirror, tmp_path):
    from urllib.parse import parse_qs, urlsplit

    from scitaste_hf.builder.collect import ads_cell_query

    out, _ = built
    work = work_copy(out, tmp_path)
    first = ads_cell_query(load_taxonomy().of("physics")[0])  # the build's first request
    for path in work.glob("cache/*/*.json"):
        query = parse_qs(urlsplit(json.loads(path.read_text())["request"]["url"]).query)
        if query.get("q") == [first] and query.get("cursorMark") == ["*"]:
            path.unlink()
    short = {"response": {"numFound": 7, "docs": []}, "nextCursorMark": "*"}  # 7 announced, none delivered
    httpx.post(f"{mirror}/_control/faults", json=[{"status": 200, "headers": {"content-type": "application/json"},
                                                   "body": json.dumps(short)}], timeout=10).raise_for_status()
    done = build(mirror, tmp_path / "ds", "--work-dir", str(work))
    assert done.returncode == 0, done.stderr[-3000:]
    assert _listings_row(done.stdout) == "1"
    assert "| ended short of the count the service announced | 1 |" in (tmp_path / "ds" / "README.md").read_text()
    assert "NASA ADS: a listing ended after 0 of the 7 records" in done.stderr


def test_stale_temporaries_go_and_an_unreadable_checkpoint_is_recomputed_from_the_cache(built, mirror, tmp_path):
    """What a build killed mid-write leaves (hidden checkpoint and cache temporaries, an unfinished dataset folder
    holding a whole-looking Parquet) goes on the next run; look-alikes that are not its own stay; a checkpoint cut
    short, as by a crash, is recomputed from the cache (one resumed build checks both)."""

    out, _ = built
    work = work_copy(out, tmp_path)
    # cut short, as by a crash (every label checkpoint: the work directory also holds those of the other tests'
    # builds with other quotas)
    for checkpoint in (work / "stages").glob("label-*.json"):
        checkpoint.write_bytes(checkpoint.read_bytes()[:100])
    (host,) = (work / "cache").iterdir()
    stale = [work / "stages" / ".sample-0123456789ab.json.k3j2h1x9.tmp", host / ".entry.json.abcd1234.tmp"]
    for path in stale:
        path.write_bytes(b'{"cut": ')
    partial = tmp_path / ".ds.partial-abcd1234"
    shutil.copytree(out, partial)
    kept = [work / "stages" / "notes.tmp", tmp_path / ".ds.partial-keep", tmp_path / ".ds.backup",
            tmp_path / ".other.partial-abcd1234"]
    kept[0].write_text("mine")
    for folder in kept[1:]:
        folder.mkdir()
    before = requests_seen(mirror)
    resumed = build(mirror, tmp_path / "ds", "--work-dir", str(work), "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert not any(p.exists() for p in [*stale, partial])
    assert all(p.exists() for p in kept)
    assert "removed 2 temporary files and 1 unfinished dataset folders" in resumed.stderr
    assert "unreadable checkpoint" in resumed.stderr
    assert "resumed collect, snowball, index, sample" in " ".join(resumed.stdout.split())
    assert requests_seen(mirror) == before and files(tmp_path / "ds") == files(out)


def test_a_write_killed_midway_leaves_nothing_that_looks_complete(built, tmp_path):
    """A kill -9 between writing a split and finishing the folder: what is left is named as unfinished, holds no
    file named as a split, and is what the next build removes."""
    import signal
    import textwrap

    from scitaste_hf.builder.layout import stale_partials

    out, _ = built
    script = textwrap.dedent(f"""
        import os, signal
        import pyarrow.parquet as pq
        from scitaste_hf.builder import layout
        from scitaste_hf.weights import DEFAULT_WEIGHTS

        rows = pq.read_table({str(out / "data" / "selected-00000-of-00001.parquet")!r}).to_pylist()
        write = pq.write_table

        def write_then_die(table, where, **kwargs):
            write(table, where, **kwargs)
            os.kill(os.getpid(), signal.SIGKILL)

        pq.write_table = write_then_die
        layout.write_dataset({str(tmp_path / "ds")!r}, {{"selected": rows, "backup": []}}, DEFAULT_WEIGHTS,
                             synthetic=True)
    """)
    killed = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-3000:]
    left = [p for p in tmp_path.iterdir() if p.name.startswith(".ds.")]
    assert len(left) == 1 and left[0].name.startswith(".ds.partial-")
    assert not list(left[0].rglob("*.parquet")) and list(left[0].rglob("*.parquet.part"))
    assert stale_partials(tmp_path / "ds") == left and not (tmp_path / "ds").exists()


def _sys_is_read_only() -> bool:
    import tempfile

    try:
        with tempfile.TemporaryFile(dir="/sys"):
            return False
    except OSError:
        return True


@pytest.mark.parametrize("where", ["out under a file", "out under /sys", "work dir /sys"])
def test_an_unwritable_destination_fails_before_any_request(mirror, tmp_path, capsys, where):
    if "/sys" in where and not _sys_is_read_only():
        pytest.skip("needs /sys to be a read-only file system")
    (tmp_path / "afile").write_text("")
    out, work = {"out under a file": (tmp_path / "afile" / "ds", tmp_path / "w"),
                 "out under /sys": (Path("/sys/scitaste-ds"), tmp_path / "w"),
                 "work dir /sys": (tmp_path / "ds", Path("/sys"))}[where]
    before = requests_seen(mirror)
    (line,) = refused(capsys, mirror, out, "--work-dir", str(work))
    folder = work if where == "work dir /sys" else out.parent
    assert line.startswith("scitaste: error: cannot ") and str(folder) in line
    assert requests_seen(mirror) == before


def test_a_second_build_on_the_same_work_dir_is_refused(built, mirror, tmp_path, capsys):
    import fcntl

    out, _ = built
    work = work_copy(out, tmp_path)
    with open(work / ".lock", "a") as held:
        # a build still running (flock locks conflict between open files, in one process too)
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lines = refused(capsys, mirror, tmp_path / "ds", "--work-dir", str(work), "--resume")
    assert lines == [
        f"scitaste: error: another build is using the work directory {work}; wait for it to end or give this one "
        "another --work-dir"]
    assert not (tmp_path / "ds").exists()
