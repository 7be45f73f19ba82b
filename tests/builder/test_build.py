"""`scitaste build` end to end against the offline mirror (a small simulated world) on 127.0.0.1: the dataset it
writes, same-seed reproducibility, the warm re-run and the resume that send nothing, a service failing
mid-build, and an existing output folder."""

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import httpx
import pytest

from scitaste_hf.schema import DIMENSIONS, DISCIPLINES, composite, record_features
from scitaste_hf.taxonomy import load_taxonomy

SCITASTE = str(Path(sys.executable).with_name("scitaste"))
PAPERS, SEED = 600, 5
#: Scaled-down quotas: 100 papers per discipline (the world has 100), 20 of them selected.
QUOTAS = ["--per-discipline", "100", "--selected-per-discipline", "20"]


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


def test_dataset_has_the_benchmark_shape(built):
    import datasets

    out, sent = built
    assert sent > 0
    ds = datasets.load_dataset(str(out))
    assert set(ds) == {"selected", "backup"}
    for split in ds.values():
        assert split.features == record_features()
    selected, backup = ds["selected"].to_list(), ds["backup"].to_list()
    assert len(selected) == 120 and len(backup) == 480
    assert Counter(r["discipline"] for r in selected) == dict.fromkeys(DISCIPLINES, 20)
    assert Counter(r["discipline"] for r in backup) == dict.fromkeys(DISCIPLINES, 80)
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


def test_an_unreadable_checkpoint_is_recomputed_from_the_cache(built, mirror, tmp_path):
    import shutil

    out, _ = built
    work = tmp_path / "copy.work"
    shutil.copytree(f"{out}.work", work)
    (checkpoint,) = (work / "stages").glob("label-*.json")
    checkpoint.write_bytes(checkpoint.read_bytes()[:100])  # cut short, as by a crash
    before = requests_seen(mirror)
    resumed = build(mirror, tmp_path / "resumed", "--work-dir", str(work), "--resume")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "unreadable checkpoint" in resumed.stderr
    assert "resumed collect, snowball, index, sample" in " ".join(resumed.stdout.split())
    assert requests_seen(mirror) == before
    assert files(tmp_path / "resumed") == files(out)


def test_existing_output_is_refused(built, mirror):
    out, _ = built
    before = files(out)
    refused = build(mirror, out)
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        f"scitaste: error: {out} already exists; choose another --out or pass --overwrite"]
    assert files(out) == before


def test_service_failing_mid_build_stops_and_resumes_without_refetching(built, servers, tmp_path_factory,
                                                                       tmp_path):
    """A mirror whose request budget runs out part-way: the build stops with one line, then resumes (after the
    budget is reset) and sends only what it had not fetched, ending with the same dataset as the cold build."""
    reference, cold_requests = built
    limit = cold_requests * 2 // 3  # the reset gives the resumed build as many again: more than it needs
    proc, url = _mirror(servers, tmp_path_factory, "--daily-limit", str(limit))
    url = url.rstrip("/")
    try:
        out = tmp_path / "ds"
        failed = build(url, out)
        assert failed.returncode == 2
        errors = [line for line in failed.stderr.splitlines() if line.startswith("scitaste: error:")]
        assert len(errors) == 1 and "--resume" in errors[0] and "Traceback" not in failed.stderr
        assert not out.exists()
        httpx.post(f"{url}/_control/reset", timeout=10)
        resumed = build(url, out, "--resume")
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert requests_seen(url) == cold_requests - limit
        assert files(out) == files(reference)
    finally:
        servers[1](proc)


def test_too_few_candidates_completes_and_says_which_are_short(built, mirror, tmp_path):
    out, _ = built
    short = subprocess.run([SCITASTE, "build", "--mirror-url", mirror, "--out", str(tmp_path / "short"),
                            "--work-dir", f"{out}.work", "--per-discipline", "110", "--selected-per-discipline", "20"],
                           capture_output=True, text=True, timeout=300)
    assert short.returncode == 0, short.stderr[-3000:]
    table = short.stdout[short.stdout.index("\nshort"):]  # the summary's table of short cells and disciplines
    rows = {line.split("│")[1].strip(): [c.strip() for c in line.split("│")[2:4]]
            for line in table.splitlines() if line.count("│") == 4}
    assert all(rows[d] == ["100", "110"] for d in DISCIPLINES)  # the world has 100 per discipline
    import datasets

    ds = datasets.load_dataset(str(tmp_path / "short"))
    bibcodes = [r for s in ("selected", "backup") for r in ds[s]["bibcode"]]
    assert len(bibcodes) == len(set(bibcodes)) == 600  # nothing padded
